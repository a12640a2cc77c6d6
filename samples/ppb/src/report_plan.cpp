// A plan's sections of the report (report_html.hpp): the memory of each stage as a stacked bar
// against the limit, the timeline, the configuration with copy buttons, and the plan's page.
#include "array_text.hpp"
#include "report_input.hpp"
#include "report_parts.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace ppb::cli::report {
namespace json = boost::json;
namespace {

// One part of a stage's bar, bottom up.
struct Part {
    std::string key;    // the CSS class p-<key> and data-part
    std::string label;  // for people
    double mb = 0.0;
};

std::string kind_label(std::string_view kind) {
    return fmt::format("activations, '{}' layers", kind);
}

// The parts a stage's memory_mb is made of, as far as the document says (memory_breakdown_mb,
// ppb/partition/memory_breakdown.hpp). A negative fitted constant (dryrun-lsq, from dry runs that
// do not pin it down) cannot be drawn as a height: it is taken off the parameters, and said so.
std::vector<Part> memory_parts(const json::object& stage) {
    std::vector<Part> parts;
    const json::value* breakdown = stage.if_contains("memory_breakdown_mb");
    if (breakdown == nullptr) {
        parts.push_back({"memory", "memory (the model gives no breakdown)",
                         number_or_zero(stage.at("memory_mb"))});
        return parts;
    }
    const json::object& b = breakdown->as_object();
    if (b.contains("constant")) {
        double constant = number_or_zero(b.at("constant"));
        double parameters = number_or_zero(b.at("parameters"));
        std::string parameters_label = "parameters, gradients, optimizer state (body layers)";
        if (constant < 0.0) {
            parameters += constant;
            parameters_label += fmt::format(" less the fitted constant, {}", mb(constant));
            constant = 0.0;
        }
        parts.push_back({"constant", "constant", constant});
        parts.push_back({"head", "head (embedding)", number_or_zero(b.at("head"))});
        parts.push_back({"tail", "tail (LM head, loss)", number_or_zero(b.at("tail"))});
        parts.push_back({"parameters", parameters_label, parameters});
        for (const auto& [kind, value] : b.at("activations").as_object())
            parts.push_back({std::string(kind), kind_label(kind), number_or_zero(value)});
    } else {
        if (const json::value* a = b.if_contains("activations_total"))
            parts.push_back({"activations", "activations (all kinds)", number_or_zero(*a)});
        parts.push_back({"other", "parameters, optimizer state, constant (not broken down)",
                         number_or_zero(b.at("other"))});
    }
    std::erase_if(parts, [](const Part& p) { return p.mb <= 0.0; });
    return parts;
}

// The bar's parts above the memory: the uncertainty margin (K standard errors), the headroom and
// the reserved --memory-margin-mb, so that the whole bar is the limit.
std::vector<Part> above_memory(const json::object& plan, const json::object& stage) {
    std::vector<Part> parts = {
        {"margin", "uncertainty margin (K standard errors)",
         number_or_zero(stage.at("uncertainty_margin_mb"))},
        {"headroom", "headroom", std::max(0.0, number_or_zero(stage.at("headroom_mb")))},
        {"reserved", "reserved (--memory-margin-mb)", number_or_zero(plan.at("memory_margin_mb"))}};
    std::erase_if(parts, [](const Part& p) { return p.mb <= 0.0; });
    return parts;
}

// Where a part goes in the legend and the table: bottom up, as the bars stack them.
std::size_t canonical_place(std::string_view key) {
    constexpr std::array<std::string_view, 15> order = {
        "constant", "head",        "tail",  "parameters", "none",   "select",   "comm",    "both",
        "full",     "activations", "other", "memory",     "margin", "headroom", "reserved"};
    const auto* it = std::find(order.begin(), order.end(), key);
    return static_cast<std::size_t>(it - order.begin());
}

// The parts `stages` use, each once, in canonical order.
template <typename Parts>
std::vector<std::pair<std::string, std::string>> parts_used(const Parts& stages) {
    std::vector<std::pair<std::string, std::string>> used;
    for (const auto& parts : stages) {
        for (const Part& p : parts) {
            if (std::none_of(used.begin(), used.end(),
                             [&](const auto& u) { return u.first == p.key; }))
                used.emplace_back(p.key, p.label);
        }
    }
    std::stable_sort(used.begin(), used.end(), [](const auto& a, const auto& b) {
        return canonical_place(a.first) < canonical_place(b.first);
    });
    return used;
}

std::string segment(const Part& part, double limit) {
    return fmt::format(
        "<div class=\"seg p-{0}\" data-part=\"{0}\" data-mb=\"{1:.17g}\" style=\"height:{2:.6f}%\" "
        "title=\"{3}: {4}\"></div>",
        part.key, part.mb, 100.0 * part.mb / limit, escape(part.label), mb(part.mb));
}

// The limit's quarters in MB, beside the bars, and their lines across them.
std::string y_axis(double limit) {
    std::string ticks;
    for (int quarter = 0; quarter <= 4; ++quarter)
        ticks += fmt::format("<span style=\"bottom:{}%\">{:.0f} MB</span>", 25 * quarter,
                             limit * quarter / 4.0);
    return fmt::format("<div class=\"y-axis\" aria-hidden=\"true\">{}</div>", ticks);
}

std::string grid_lines() {
    std::string grid;
    for (int quarter = 0; quarter <= 4; ++quarter)
        grid += fmt::format("<i style=\"bottom:{}%\"></i>", 25 * quarter);
    return grid;
}

}  // namespace

std::string memory_section(const json::object& plan) {
    const double limit = number_or_zero(plan.at("memory_limit_mb"));
    const json::array& stages = plan.at("stages").as_array();

    std::string bars;
    std::vector<std::vector<Part>> table_parts;  // each stage's memory parts
    std::vector<std::vector<Part>> bar_parts;    // and everything its bar draws
    bool any_margin = false;
    for (const json::value& sv : stages) {
        const json::object& stage = sv.as_object();
        std::vector<Part> parts = memory_parts(stage);
        table_parts.push_back(parts);
        for (Part& p : above_memory(plan, stage)) {
            any_margin = any_margin || p.key == "margin";
            parts.push_back(std::move(p));
        }
        std::string segments;
        for (const Part& p : parts)
            segments += segment(p, limit);
        bar_parts.push_back(std::move(parts));
        const auto s = stage.at("stage").to_number<std::uint32_t>();
        bars += fmt::format(
            "<div class=\"stage\"><div class=\"bar\" data-stage=\"{0}\" "
            "data-memory-mb=\"{1:.17g}\" "
            "data-limit-mb=\"{2:.17g}\" title=\"stage {0}: {3} of {4}\">{5}</div>"
            "<div class=\"bar-label\">{0}</div></div>",
            s, number_or_zero(stage.at("memory_mb")), limit,
            mb(number_or_zero(stage.at("memory_mb"))), mb(limit), segments);
    }
    std::string legend_html;
    for (const auto& [key, label] : parts_used(bar_parts))
        legend_html += fmt::format("<li><b class=\"p-{}\"></b>{}</li>", key, escape(label));
    legend_html += fmt::format("<li><b class=\"limit-key\"></b>memory limit, {}</li>", mb(limit));

    // The numbers behind the bars: one column per part any stage has.
    const auto columns = parts_used(table_parts);
    std::string head = "<th>stage</th><th>layers</th><th>in flight</th>";
    for (const auto& [key, label] : columns)
        head += fmt::format("<th title=\"{}\">{}</th>", escape(label), escape(key));
    head += fmt::format("<th>memory</th>{}<th>headroom</th>", any_margin ? "<th>margin</th>" : "");
    std::string rows;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const json::object& stage = stages[i].as_object();
        std::uint64_t layers = 0;
        for (const auto& [kind, n] : stage.at("layers").as_object())
            layers += n.to_number<std::uint64_t>();
        std::string row = fmt::format("<td>{}</td><td>{}</td><td>{}</td>",
                                      stage.at("stage").to_number<std::uint32_t>(), layers,
                                      stage.at("in_flight").to_number<std::uint32_t>());
        for (const auto& column : columns) {
            const auto it = std::find_if(table_parts[i].begin(), table_parts[i].end(),
                                         [&](const Part& p) { return p.key == column.first; });
            row += fmt::format("<td>{:.1f}</td>", it == table_parts[i].end() ? 0.0 : it->mb);
        }
        row += fmt::format("<td>{:.1f}</td>", number_or_zero(stage.at("memory_mb")));
        if (any_margin)
            row +=
                fmt::format("<td>{:.1f}</td>", number_or_zero(stage.at("uncertainty_margin_mb")));
        row += fmt::format("<td>{:.1f}</td>", number_or_zero(stage.at("headroom_mb")));
        rows += "<tr>" + row + "</tr>";
    }
    const bool explained = !stages.empty() && stages[0].as_object().contains("memory_breakdown_mb");
    return fmt::format(
        "<section class=\"memory\" id=\"memory\"><h2>Memory per stage</h2>"
        "<p class=\"muted\">One bar per stage; a bar's full height is the memory limit, {} "
        "(dashed). {}</p>"
        "<div class=\"chart\">{}<div class=\"plot\"><div class=\"bars\"><div class=\"grid\">{}"
        "</div><div class=\"limit\"></div>{}</div></div></div>"
        "<ul class=\"legend\">{}</ul>"
        "<p class=\"caption\">Per stage, in MB (in flight: micro-batches)</p>"
        "<div class=\"scroll\"><table class=\"stages\"><thead><tr>{}</tr></thead><tbody>{}"
        "</tbody></table></div></section>\n",
        mb(limit),
        explained ? "The parts are the memory model's, bottom up; the hatched top is what is left."
                  : "The memory model predicts each stage's whole memory: it says nothing of "
                    "its parts.",
        y_axis(limit), grid_lines(), bars, legend_html, head, rows);
}

std::string timeline_section(std::string_view svg) {
    if (svg.empty())
        return {};
    // The SVG document inline: without its XML declaration, which HTML does not take.
    if (svg.starts_with("<?xml"))
        svg.remove_prefix(svg.find("?>") + 2);
    return fmt::format(
        "<section class=\"timeline\" id=\"timeline\"><h2>Schedule</h2>"
        "<p class=\"muted\">The iteration as the schedule runs it (simulated): one row per stage, "
        "forwards light, backwards dark, recomputation hatched; each stage's memory beneath.</p>"
        "<div class=\"scroll\">{}</div></section>\n",
        svg);
}

namespace {

std::string framework_title(std::string_view key) {
    if (key == "mindformers")
        return "MindFormers / SAPP";
    if (key == "megatron")
        return "Megatron-LM";
    if (key == "torchtitan")
        return "torchtitan";
    return std::string(key);
}

std::string copy_row(std::string_view shown, std::string_view copied, std::string_view key) {
    return fmt::format(
        "<div class=\"copy-row\"><pre><code>{}</code></pre><button type=\"button\" "
        "class=\"copy\" data-key=\"{}\" data-copy=\"{}\" aria-label=\"copy {}\">Copy</button>"
        "</div>",
        escape(shown), escape(key), escape(copied), escape(key));
}

// A member of a framework's object as text: a string as it is, a list of strings one per line,
// anything else as its JSON.
std::string member_text(const json::value& v) {
    if (v.is_string())
        return std::string(v.get_string());
    if (v.is_array() && !v.get_array().empty() &&
        std::all_of(v.get_array().begin(), v.get_array().end(),
                    [](const json::value& e) { return e.is_string(); })) {
        std::string out;
        for (const json::value& e : v.get_array())
            out += (out.empty() ? "" : "\n") + std::string(e.get_string());
        return out;
    }
    return json::serialize(v);
}

}  // namespace

std::string configuration_section(const json::object& plan) {
    std::string blocks;
    for (const auto& [key, value] : plan) {
        if (key == "mindformers") {
            if (value.is_null()) {
                blocks +=
                    "<div class=\"config\"><h3>MindFormers / SAPP</h3><p class=\"muted\">"
                    "No arrays: a stage mixes 'select' and 'comm' layers, which "
                    "MindFormers' per-stage counts cannot express (plan with "
                    "--recompute-rule mindformers for a plan it can build).</p></div>";
                continue;
            }
            std::string rows;
            std::string all;
            for (const auto& [name, array] : value.as_object()) {
                const std::string line =
                    fmt::format("{}: {}", std::string(name), array_text(array));
                rows += copy_row(line, line, fmt::format("mindformers.{}", std::string(name)));
                all += (all.empty() ? "" : "\n") + line;
            }
            blocks += fmt::format(
                "<div class=\"config\" data-framework=\"mindformers\"><h3>MindFormers / SAPP</h3>"
                "<p class=\"muted\">Into the MindFormers YAML as they are: "
                "<code>model.model_config.offset</code>, <code>recompute_config.*</code>.</p>{}"
                "<p><button type=\"button\" class=\"copy\" data-key=\"mindformers\" "
                "data-copy=\"{}\">Copy</button> all four lines</p></div>",
                rows, escape(all));
            continue;
        }
        // Any other framework's settings: an object of the document other than its model, its
        // simulated times and their breakdown.
        if (!value.is_object() || key == "model" || key == "simulated" ||
            key == "iteration_breakdown")
            continue;
        std::string rows;
        for (const auto& [name, member] : value.as_object()) {
            const std::string text = member_text(member);
            rows += fmt::format("<h4 class=\"muted\">{}</h4>", escape(std::string(name))) +
                    copy_row(text, text, fmt::format("{}.{}", std::string(key), std::string(name)));
        }
        blocks += fmt::format("<div class=\"config\" data-framework=\"{}\"><h3>{}</h3>{}</div>",
                              escape(std::string(key)), escape(framework_title(key)), rows);
    }
    if (blocks.empty())
        return {};
    return "<section class=\"configuration\" id=\"configuration\"><h2>Configuration</h2>" + blocks +
           "</section>\n";
}

std::string plan_summary(const json::object& plan, const ReportTexts& texts) {
    const auto chunks = plan.at("num_chunks").to_number<std::uint32_t>();
    const std::string schedule(plan.at("schedule").as_string());
    const std::string schedule_text =
        schedule == "1f1b" && chunks == 1
            ? std::string("1F1B")
            : fmt::format("{}, {} chunks per stage", schedule, chunks);
    double peak = 0.0;
    double least_headroom = 0.0;
    bool first = true;
    for (const json::value& s : plan.at("stages").as_array()) {
        peak = std::max(peak, number_or_zero(s.at("memory_mb")));
        const double h = number_or_zero(s.at("headroom_mb"));
        least_headroom = first ? h : std::min(least_headroom, h);
        first = false;
    }
    const json::object& model = plan.at("model").as_object();
    const json::object& simulated = plan.at("simulated").as_object();
    return fmt::format(
        "<p>{} body layers over {} stages, {} micro-batches, {}; memory limit {}; recompute rule "
        "{}.</p><p class=\"muted\">memory model {} {}{}</p>"
        "<dl class=\"figures\"><div><dt>simulated iteration</dt><dd>{}</dd></div>"
        "<div><dt>partitioner objective</dt><dd>{}</dd></div>"
        "<div><dt>bubble</dt><dd>{:.1f} %</dd></div>"
        "<div><dt>peak stage memory</dt><dd>{}</dd></div>"
        "<div><dt>least headroom</dt><dd>{}</dd></div></dl>"
        "<p class=\"muted\">Times are per iteration, in the {}.</p>",
        plan.at("num_layers").to_number<std::uint64_t>(), plan.at("num_stages").to_number<int>(),
        plan.at("micro_batches").to_number<std::uint64_t>(), escape(schedule_text),
        mb(number_or_zero(plan.at("memory_limit_mb"))),
        escape(std::string(plan.at("recompute_rule").as_string())),
        escape(std::string(model.at("name").as_string())),
        escape(std::string(model.at("version").as_string())),
        texts.source.empty() ? std::string() : escape(" (" + texts.source + ")"),
        time_text(number_or_zero(simulated.at("makespan")), texts.time_unit),
        time_text(number_or_zero(plan_objective(plan)), texts.time_unit),
        100.0 * number_or_zero(simulated.at("bubble_fraction")), mb(peak), mb(least_headroom),
        texts.time_unit.empty() ? std::string("layer file's time unit")
                                : fmt::format("unit {}", texts.time_unit));
}

}  // namespace ppb::cli::report

namespace ppb::cli {

std::string plan_report_html(const boost::json::object& plan, std::string_view timeline_svg,
                             const ReportTexts& texts) {
    report::check_plan_document(boost::json::value(plan), "the ppb.partition/1 document");
    const std::string body = "<header><h1>ppb partition</h1>" + report::plan_summary(plan, texts) +
                             "</header>\n" + report::memory_section(plan) +
                             report::timeline_section(timeline_svg) +
                             report::configuration_section(plan);
    return report::page("ppb partition report", body);
}

}  // namespace ppb::cli
