// The report's page: its style (a layout that reflows down to a phone's width: bars scroll
// sideways inside their box, tables too) and its one script (the copy buttons), both inline so
// that the file needs nothing else.
#include "report_parts.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ppb::cli::report {
namespace {

constexpr std::string_view style = R"css(
:root { --ink: #1f2933; --muted: #5f6b7a; --line: #d5dbe3; --accent: #2457a6; --bar: 260px; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.4rem; margin: 0.2rem 0 0.4rem; }
h2 { font-size: 1.1rem; margin: 0 0 0.6rem; }
h3 { font-size: 0.95rem; margin: 0.8rem 0 0.4rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
          padding: 14px 16px; margin: 14px 0; }
p { margin: 0.3rem 0; }
.muted { color: var(--muted); font-size: 0.9rem; }
.figures { display: flex; flex-wrap: wrap; gap: 8px 22px; margin: 8px 0 0; padding: 0; }
.figures div { min-width: 8rem; }
.figures dt { color: var(--muted); font-size: 0.8rem; }
.figures dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
.chart { display: flex; gap: 6px; align-items: stretch; }
.y-axis { position: relative; width: 4.6rem; flex: none; height: var(--bar);
          font-size: 0.75rem; color: var(--muted); text-align: right; }
.y-axis span { position: absolute; right: 4px; transform: translateY(50%); white-space: nowrap; }
.plot { position: relative; flex: 1 1 auto; min-width: 0; overflow-x: auto; }
.bars { position: relative; display: flex; gap: 8px; min-width: min-content;
        justify-content: center; padding: 0 4px; }
.grid { position: absolute; left: 0; right: 0; top: 0; height: var(--bar); pointer-events: none; }
.grid i { position: absolute; left: 0; right: 0; border-top: 1px solid #eef1f4; }
.limit { position: absolute; left: 0; right: 0; top: 0; border-top: 2px dashed #c0392b;
         pointer-events: none; z-index: 2; }
.stage { flex: 1 0 1.6rem; max-width: 7rem; display: flex; flex-direction: column; align-items: stretch; }
.bar { position: relative; height: var(--bar); display: flex; flex-direction: column-reverse;
       background: #fbfcfd; }
.seg { width: 100%; flex: none; }
.bar-label { text-align: center; font-size: 0.75rem; color: var(--muted); padding-top: 3px; }
.p-constant { background: #8d99ae; } .p-runtime { background: #c3cad5; }
.p-head, .p-embedding { background: #2a9d8f; } .p-tail, .p-lm_head { background: #1b4965; }
.p-parameters { background: #3d6fb6; } .p-weights { background: #4a7fc1; }
.p-gradients { background: #7fa6db; } .p-optimizer { background: #b5cdef; }
.p-embedding_activations { background: #83d0c6; } .p-lm_head_activations { background: #a47148; }
.p-logits { background: #c9a227; } .p-transient { background: #b56576; }
.p-none { background: #e76f51; } .p-select { background: #f4a261; } .p-comm { background: #9b5de5; }
.p-both { background: #f15bb5; } .p-full { background: #90be6d; }
.p-activations { background: #e9a23b; } .p-other { background: #7d8ba1; } .p-memory { background: #7d8ba1; }
.p-margin { background: repeating-linear-gradient(45deg, #d1495b 0 3px, #f3c1c7 3px 6px); }
.p-headroom { background: repeating-linear-gradient(45deg, #9fd8b0 0 3px, #f4fbf6 3px 8px); }
.p-reserved { background: repeating-linear-gradient(45deg, #c9ced6 0 3px, #eef0f3 3px 6px); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; padding: 0;
          margin: 10px 0 0; font-size: 0.85rem; }
.legend li { display: flex; align-items: center; gap: 6px; }
.legend b { display: inline-block; width: 12px; height: 12px; border-radius: 2px; }
.legend .limit-key { width: 18px; height: 0; border-top: 2px dashed #c0392b; border-radius: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85rem; font-variant-numeric: tabular-nums;
        margin-top: 4px; }
.caption { color: var(--muted); font-size: 0.8rem; margin: 10px 0 0; }
th, td { padding: 4px 7px; border-bottom: 1px solid #edf0f3; text-align: right; white-space: nowrap; }
table.stages th.text { position: sticky; left: 0; z-index: 1; background: #fff; text-align: left;
                       font-weight: 400; color: var(--ink); }
table.stages thead th.text { background: #fafbfc; }
table.stages tr.total td, table.stages tr.total th { font-weight: 600; border-top: 1px solid var(--line); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px;
          vertical-align: baseline; }
th { font-weight: 600; color: var(--muted); background: #fafbfc; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
tr.best td { background: #eef4fd; font-weight: 600; }
.timeline .picture { margin: 0 auto; }
.timeline .picture svg { display: block; width: 100%; height: auto; }
.config { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 8px 0; }
.copy-block { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 8px; margin: 6px 0; }
.copy-block pre { flex: 1 1 20rem; min-width: 0; margin: 0; padding: 6px 8px;
                  white-space: pre-wrap; overflow-wrap: anywhere; background: #f3f5f8;
                  border-radius: 4px; font-size: 0.85rem; line-height: 1.4; }
.copy-block .flag { display: inline-block; max-width: 100%; }
.why-not { color: var(--muted); }
code { overflow-wrap: anywhere; }
button.copy { flex: none; font: inherit; font-size: 0.8rem; padding: 4px 10px; border-radius: 4px;
              border: 1px solid #9fb3cf; background: #fff; color: var(--accent); cursor: pointer; }
button.copy:hover { background: #eef4fd; }
button.copy.done { color: #2f7a24; border-color: #8cd17d; }
.scatter svg { display: block; width: 100%; height: auto; max-height: 420px; }
.scatter .point { fill: #3d6fb6; fill-opacity: 0.75; stroke: #fff; stroke-width: 1; }
.scatter .point.best { fill: #d1495b; fill-opacity: 1; }
.scatter text { font-size: 12px; fill: #5f6b7a; }
.scatter text.axis-title { font-size: 13px; fill: #1f2933; }
@media (max-width: 560px) {
  main { padding: 8px; } section { padding: 10px; }
  :root { --bar: 200px; }
  .y-axis { width: 3.6rem; }
  .stage { flex-basis: 1.2rem; }
  .scatter text { font-size: 20px; }
  .scatter text.axis-title { font-size: 18px; }
}
)css";

// Copies the button's data-copy: the Clipboard API, or a selected textarea where it is refused.
constexpr std::string_view script = R"js(
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const text = button.dataset.copy;
  try {
    await navigator.clipboard.writeText(text);
  } catch (refused) {
    const area = document.createElement("textarea");
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.classList.add("done");
  button.textContent = "Copied";
  setTimeout(() => { button.classList.remove("done"); button.textContent = "Copy"; }, 1500);
});
)js";

}  // namespace

std::string escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

double number_or_zero(const boost::json::value& value) {
    return value.is_null() ? 0.0 : value.to_number<double>();
}

std::string mb(double value) {
    // -0.0 from rounding a tiny negative reads as 0.
    const double shown = std::abs(value) < 0.05 ? 0.0 : value;
    return fmt::format("{:.1f} MB", shown);
}

std::string time_text(double value, std::string_view unit) {
    return unit.empty() ? fmt::format("{:.1f}", value) : fmt::format("{:.1f} {}", value, unit);
}

std::string unit_name(std::string_view unit) {
    return unit.empty() ? std::string("layer file's unit") : std::string(unit);
}

std::string page(std::string_view title, std::string_view body) {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n<style>{}</style>\n</head>\n"
        "<body>\n<main>\n{}</main>\n<script>{}</script>\n</body>\n</html>\n",
        escape(title), style, body, script);
}

}  // namespace ppb::cli::report
