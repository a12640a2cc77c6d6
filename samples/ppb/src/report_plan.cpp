// A plan's sections of the report (report_html.hpp): the memory of each stage as a stacked bar
// against the limit, the timeline, the configuration with copy buttons, and the plan's page.
#include "framework_config.hpp"
#include "report_input.hpp"
#include "report_parts.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <system_error>
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
    if (const json::value* terms = b.if_contains("parts")) {
        // The model's own terms (plugin API 1.4), in its order, in its words.
        for (const json::value& term : terms->as_array()) {
            const json::object& part = term.as_object();
            parts.push_back({std::string(part.at("name").as_string()),
                             std::string(part.at("label").as_string()),
                             number_or_zero(part.at("mb"))});
        }
    } else if (b.contains("constant")) {
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
    // On reserved memory: what the caching allocator reserves beyond the allocated parts.
    if (const json::value* reserve = b.if_contains("allocator_reserve"))
        parts.push_back({"allocator_reserve",
                         "the allocator's reserve (fragmentation, cached blocks)",
                         number_or_zero(*reserve)});
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

// The parts `stages` use, each once, bottom up as the bars stack them: each stage's parts keep
// their order, a part first met in a later stage going right below the next of that stage's
// parts already placed (the LM head of the last stage above the embedding of the first, both
// below the body layers' parameters).
template <typename Parts>
std::vector<std::pair<std::string, std::string>> parts_used(const Parts& stages) {
    std::vector<std::pair<std::string, std::string>> used;
    const auto place_of = [&](const std::string& key) {
        return static_cast<std::size_t>(
            std::find_if(used.begin(), used.end(), [&](const auto& u) { return u.first == key; }) -
            used.begin());
    };
    for (const auto& parts : stages) {
        for (std::size_t i = 0; i < parts.size(); ++i) {
            if (place_of(parts[i].key) != used.size())
                continue;
            std::size_t before = used.size();
            for (std::size_t j = i + 1; j < parts.size() && before == used.size(); ++j)
                before = place_of(parts[j].key);
            used.insert(used.begin() + static_cast<std::ptrdiff_t>(before),
                        {parts[i].key, parts[i].label});
        }
    }
    return used;
}

// The parts the page's style colours (report_page.cpp, .p-<name>); any other part a model names
// gets a colour of `palette` by its place in the legend.
bool styled_part(std::string_view key) {
    constexpr std::array<std::string_view, 25> styled = {"constant",
                                                         "runtime",
                                                         "head",
                                                         "embedding",
                                                         "tail",
                                                         "lm_head",
                                                         "parameters",
                                                         "weights",
                                                         "gradients",
                                                         "optimizer",
                                                         "none",
                                                         "select",
                                                         "comm",
                                                         "both",
                                                         "full",
                                                         "activations",
                                                         "embedding_activations",
                                                         "lm_head_activations",
                                                         "logits",
                                                         "transient",
                                                         "other",
                                                         "memory",
                                                         "margin",
                                                         "headroom",
                                                         "reserved"};
    return std::find(styled.begin(), styled.end(), key) != styled.end();
}

// Inline colours of the parts without a style of their own, by key.
std::vector<std::pair<std::string, std::string>> part_colours(
    const std::vector<std::pair<std::string, std::string>>& used) {
    constexpr std::array<std::string_view, 8> palette = {
        "#4e79a7", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};
    std::vector<std::pair<std::string, std::string>> colours;
    for (const auto& [key, label] : used) {
        if (!styled_part(key)) {
            colours.emplace_back(
                key, fmt::format("background:{};", palette[colours.size() % palette.size()]));
        }
    }
    return colours;
}

std::string colour_of(const std::vector<std::pair<std::string, std::string>>& colours,
                      std::string_view key) {
    const auto it =
        std::find_if(colours.begin(), colours.end(), [&](const auto& c) { return c.first == key; });
    return it == colours.end() ? std::string() : it->second;
}

std::string segment(const Part& part, double limit, std::string_view colour) {
    return fmt::format(
        "<div class=\"seg p-{0}\" data-part=\"{0}\" data-mb=\"{1:.17g}\" "
        "style=\"{5}height:{2:.6f}%\" title=\"{3}: {4}\"></div>",
        part.key, part.mb, 100.0 * part.mb / limit, escape(part.label), mb(part.mb), colour);
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
        bar_parts.push_back(std::move(parts));
    }
    const auto legend_parts = parts_used(bar_parts);
    const auto colours = part_colours(legend_parts);

    std::string bars;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const json::object& stage = stages[i].as_object();
        std::string segments;
        for (const Part& p : bar_parts[i])
            segments += segment(p, limit, colour_of(colours, p.key));
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
    for (const auto& [key, label] : legend_parts) {
        legend_html += fmt::format("<li><b class=\"p-{}\" style=\"{}\"></b>{}</li>", key,
                                   colour_of(colours, key), escape(label));
    }
    legend_html += fmt::format("<li><b class=\"limit-key\"></b>memory limit, {}</li>", mb(limit));

    // The numbers behind the bars: one column per stage, one row per part any stage has (bottom
    // up, as the bars stack them, with its colour), then the stage's memory, margin and headroom.
    const auto part_rows = parts_used(table_parts);
    std::string head = "<th class=\"text\">stage</th>";
    for (const json::value& sv : stages)
        head += fmt::format("<th>{}</th>", sv.as_object().at("stage").to_number<std::uint32_t>());
    const auto row = [&](std::string_view title, std::string_view extra, const auto& cell) {
        std::string cells;
        for (std::size_t i = 0; i < stages.size(); ++i)
            cells += "<td>" + cell(i, stages[i].as_object()) + "</td>";
        return fmt::format("<tr{}><th class=\"text\">{}</th>{}</tr>", extra, title, cells);
    };
    std::string rows = row("layers", "", [](std::size_t, const json::object& stage) {
        std::uint64_t layers = 0;
        for (const auto& [kind, n] : stage.at("layers").as_object())
            layers += n.to_number<std::uint64_t>();
        return std::to_string(layers);
    });
    rows += row("in flight (micro-batches)", "", [](std::size_t, const json::object& stage) {
        return std::to_string(stage.at("in_flight").to_number<std::uint32_t>());
    });
    for (const auto& [key, label] : part_rows) {
        const std::string title = fmt::format("<b class=\"swatch p-{}\" style=\"{}\"></b>{}", key,
                                              colour_of(colours, key), escape(label));
        rows += row(title, " class=\"part\"", [&, key = key](std::size_t i, const json::object&) {
            const auto it = std::find_if(table_parts[i].begin(), table_parts[i].end(),
                                         [&](const Part& p) { return p.key == key; });
            return fmt::format("{:.1f}", it == table_parts[i].end() ? 0.0 : it->mb);
        });
    }
    const auto column = [](const char* member) {
        return [member](std::size_t, const json::object& stage) {
            return fmt::format("{:.1f}", number_or_zero(stage.at(member)));
        };
    };
    rows += row("memory", " class=\"total\"", column("memory_mb"));
    if (!stages.empty() && stages[0].as_object().contains("allocated_mb"))
        rows += row("of which allocated", "", column("allocated_mb"));
    if (any_margin)
        rows += row("uncertainty margin", "", column("uncertainty_margin_mb"));
    rows += row("headroom", "", column("headroom_mb"));
    // What the parts are, as the first stage's breakdown says (every stage's has the same form).
    const json::value* breakdown =
        stages.empty() ? nullptr : stages[0].as_object().if_contains("memory_breakdown_mb");
    const std::string_view explained =
        breakdown == nullptr
            ? "The memory model predicts each stage's whole memory: it says nothing of its parts."
        : breakdown->as_object().contains("parts")
            ? "The parts are the memory model's own terms, bottom up; the hatched top is what is "
              "left."
        : breakdown->as_object().contains("constant")
            ? "The parts are the memory model's coefficients times the plan's layers, bottom up; "
              "the hatched top is what is left."
            : "The memory model does not say what its predictions are made of: the activations "
              "are what the partitioner measured of it, the rest one part; the hatched top is what "
              "is left.";
    return fmt::format(
        "<section class=\"memory\" id=\"memory\"><h2>Memory per stage</h2>"
        "<p class=\"muted\">One bar per stage; a bar's full height is the memory limit, {} "
        "(dashed). {}</p>"
        "<div class=\"chart\">{}<div class=\"plot\"><div class=\"bars\"><div class=\"grid\">{}"
        "</div><div class=\"limit\"></div>{}</div></div></div>"
        "<ul class=\"legend\">{}</ul>"
        "<p class=\"caption\">Per stage, in MB</p>"
        "<div class=\"scroll\"><table class=\"stages\"><thead><tr>{}</tr></thead><tbody>{}"
        "</tbody></table></div></section>\n",
        mb(limit), explained, y_axis(limit), grid_lines(), bars, legend_html, head, rows);
}

namespace {

// The width the SVG document says it is drawn at (its root's width attribute, in its own units),
// or 0 when it says none.
double svg_width(std::string_view svg) {
    const std::size_t root = svg.find("<svg");
    const std::size_t end = svg.find('>', root);
    if (root == std::string_view::npos || end == std::string_view::npos)
        return 0.0;
    const std::string_view tag = svg.substr(root, end - root);
    const std::size_t at = tag.find(" width=\"");
    if (at == std::string_view::npos)
        return 0.0;
    double width = 0.0;
    const char* from = tag.data() + at + 8;
    const auto [ptr, ec] = std::from_chars(from, tag.data() + tag.size(), width);
    return ec == std::errc() && std::isfinite(width) && width > 0.0 ? width : 0.0;
}

}  // namespace

std::string timeline_section(std::string_view svg) {
    if (svg.empty())
        return {};
    // The SVG document inline: without its XML declaration, which HTML does not take.
    if (svg.starts_with("<?xml"))
        svg.remove_prefix(svg.find("?>") + 2);
    // As wide as the column, but never narrower than it is drawn (its text stays at its size or
    // larger: in a narrower column its box scrolls sideways) nor more than 1.35 times wider.
    const double width = svg_width(svg);
    const std::string bounds =
        width > 0.0
            ? fmt::format(" style=\"min-width:{0:.0f}px;max-width:{1:.0f}px\"", width, 1.35 * width)
            : std::string();
    return fmt::format(
        "<section class=\"timeline\" id=\"timeline\"><h2>Schedule</h2>"
        "<p class=\"muted\">The iteration as the schedule runs it (simulated): one row per stage, "
        "forwards light, backwards dark, recomputation hatched; each stage's memory beneath.</p>"
        "<div class=\"scroll\"><div class=\"picture\"{}>{}</div></div></section>\n",
        bounds, svg);
}

namespace {

// What the page says of a framework's block besides its title, for people.
std::string_view config_note(std::string_view framework) {
    if (framework == "mindformers")
        return "Merge these keys into the MindFormers training YAML: offset under "
               "model.model_config, the recompute counts under recompute_config.";
    return {};
}

// A block's text as the page shows it: escaped, and a line of flags with each flag and its value
// in one box, so that a narrow column breaks the line between flags rather than inside one. The
// boxes add no character: the text is the block's, to select and copy as it is.
std::string shown_text(const FrameworkConfig& config) {
    if (config.syntax != "shell")
        return escape(config.text);
    std::string out;
    std::string group;
    const auto flush = [&] {
        if (!group.empty())
            out += (out.empty() ? "" : " ") + ("<span class=\"flag\">" + escape(group) + "</span>");
        group.clear();
    };
    std::size_t from = 0;
    while (from <= config.text.size()) {
        std::size_t to = config.text.find(' ', from);
        if (to == std::string::npos)
            to = config.text.size();
        const std::string_view token(config.text.data() + from, to - from);
        if (token.starts_with("--"))
            flush();
        group += (group.empty() ? "" : " ") + std::string(token);
        from = to + 1;
    }
    flush();
    return out;
}

std::string config_block(const FrameworkConfig& config) {
    const std::string_view note = config_note(config.framework);
    std::string body;
    if (config.text.empty()) {
        body = fmt::format("<p class=\"why-not\">None: {}.</p>", escape(config.why_not));
    } else {
        body = fmt::format(
            "{}<div class=\"copy-block\"><pre><code data-syntax=\"{}\">{}</code></pre><button "
            "type=\"button\" class=\"copy\" data-framework=\"{}\" data-copy=\"{}\" "
            "aria-label=\"copy the {}\">Copy</button></div>",
            note.empty() ? std::string() : fmt::format("<p class=\"muted\">{}</p>", escape(note)),
            escape(config.syntax), shown_text(config), escape(config.framework),
            escape(config.text), escape(config.title));
    }
    return fmt::format("<div class=\"config\" data-framework=\"{}\"><h3>{}</h3>{}</div>",
                       escape(config.framework), escape(config.title), body);
}

}  // namespace

std::string configuration_section(const json::object& plan, const FrameworkDegrees* degrees) {
    const json::value document(plan);
    const JsonNode node(document, "the ppb.partition/1 document");
    std::string blocks;
    for (const FrameworkConfig& config :
         degrees ? framework_configs(node, *degrees) : framework_configs(node))
        blocks += config_block(config);
    return fmt::format(
        "<section class=\"configuration\" id=\"configuration\"><h2>Configuration</h2>"
        "<p class=\"muted\">{}; a Copy button copies its block exactly.</p>{}</section>\n",
        degrees ? "This configuration and its plan as each framework takes them, as <code>ppb "
                  "search</code> prints them for rank 1"
                : "This plan as each framework takes it, as <code>ppb partition</code> prints it",
        blocks);
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
        "<p>{} body layers over {} stages, {} micro-batches, {}; memory limit {}{}; recompute rule "
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
        plan.contains("memory") && plan.at("memory") == "reserved" ? " of reserved memory" : "",
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
