#include "fit_table.hpp"

#include "text_table.hpp"

#include <ppb/kinds.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <set>

namespace ppb::cli {
namespace json = boost::json;
namespace {

const json::value* find(const json::object& o, std::string_view key) {
    const auto it = o.find(key);
    return it == o.end() ? nullptr : &it->value();
}

const json::object& object_at(const json::object& o, std::string_view key) {
    static const json::object empty;
    const auto* v = find(o, key);
    return v != nullptr && v->is_object() ? v->get_object() : empty;
}

const json::array& array_at(const json::object& o, std::string_view key) {
    static const json::array empty;
    const auto* v = find(o, key);
    return v != nullptr && v->is_array() ? v->get_array() : empty;
}

std::string text_at(const json::object& o, std::string_view key) {
    const auto* v = find(o, key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// An integer member as text, "?" when it is not a number.
std::string int_at_of(const json::object& o, std::string_view key) {
    const auto* v = find(o, key);
    return v != nullptr && v->is_number() ? fmt::format("{}", v->to_number<std::int64_t>()) : "?";
}

double number(const json::value& v) {
    return v.is_double() ? v.get_double() : v.to_number<double>();
}

}  // namespace

std::string render_fit(const json::object& doc, std::string_view source, std::size_t observations) {
    const auto& model = object_at(doc, "model");
    const auto& params = object_at(doc, "parameters");
    const auto& diag = object_at(doc, "diagnostics");
    const auto& std_errors = object_at(diag, "std_errors_mb");

    std::set<std::string> not_considered;
    for (const auto& v : array_at(diag, "not_considered")) {
        if (v.is_string())
            not_considered.insert(std::string(v.get_string()));
    }
    std::set<std::string> not_identifiable;
    for (const auto& v : array_at(diag, "not_identifiable")) {
        if (v.is_object())
            not_identifiable.insert(text_at(v.get_object(), "parameter"));
    }

    std::string out =
        fmt::format("Memory model {} {} fitted to {} observations of {}\n\n",
                    text_at(model, "name"), text_at(model, "version"), observations, source);
    TextTable table({"PARAMETER", "ESTIMATE", "STD. ERROR", "MEANING"},
                    {TextTable::Align::left, TextTable::Align::right, TextTable::Align::right,
                     TextTable::Align::left});
    const auto add = [&](const std::string& key, const json::value* value, std::string meaning) {
        std::string estimate = "-";
        std::string error;
        if (value != nullptr && !value->is_null()) {
            estimate = format_mb(number(*value));
            if (const auto* se = find(std_errors, key); se != nullptr && !se->is_null()) {
                error = "± " + format_mb(number(*se));
            }
        } else if (not_considered.count(key) != 0) {
            meaning += " — not considered: never observed";
        } else if (key == "const_mb" && diag.contains("const_folded") &&
                   diag.at("const_folded").is_bool() && diag.at("const_folded").get_bool()) {
            meaning += " — folded into the others (see below)";
        } else {
            meaning += " — not identifiable (see below)";
        }
        table.add_row({key, std::move(estimate), std::move(error), std::move(meaning)});
    };
    add("const_mb", find(params, "const_mb"), "constant per stage");
    add("head_mb", find(params, "head_mb"), "extra on stage 0 (embedding)");
    add("tail_mb", find(params, "tail_mb"), "extra on the last stage (LM head, loss)");
    // A model of several groups of body layers (dense and MoE layers): each group's per-layer
    // and activation coefficients, named as the diagnostics name them ("param_per_layer_mb[moe]").
    const auto& groups = object_at(params, "groups");
    if (groups.empty()) {
        add("param_per_layer_mb", find(params, "param_per_layer_mb"), "per body layer");
        const auto& activation = object_at(params, "activation_mb");
        for (const auto name : kind_names) {
            const std::string key = "activation_mb." + std::string(name);
            add(key, find(activation, name),
                fmt::format("per '{}' layer and in-flight micro-batch", name));
        }
    }
    for (const auto& [group_key, group_value] : groups) {
        if (!group_value.is_object())
            continue;
        const std::string group(group_key);
        const auto& group_params = group_value.get_object();
        add(fmt::format("param_per_layer_mb[{}]", group), find(group_params, "param_per_layer_mb"),
            fmt::format("per '{}' layer", group));
        const auto& activation = object_at(group_params, "activation_mb");
        for (const auto name : kind_names) {
            add(fmt::format("activation_mb.{}[{}]", name, group), find(activation, name),
                fmt::format("per '{}' {} layer and in-flight micro-batch", group, name));
        }
    }
    out += table.render(2);

    const auto int_at = [&](std::string_view key) { return int_at_of(diag, key); };
    const std::string dof = int_at("degrees_of_freedom");
    out +=
        fmt::format("\nFit: rank {} of {} unknowns from {} observations ({} degree{} of freedom)",
                    int_at("rank"), array_at(diag, "unknowns").size(), int_at("rows"), dof,
                    dof == "1" ? "" : "s");
    if (const auto* rms = find(diag, "rms_residual_mb"); rms != nullptr && rms->is_number()) {
        out += fmt::format("; residual rms {}", format_mb(number(*rms)));
        if (const auto* mx = find(diag, "max_abs_residual_mb"); mx != nullptr && mx->is_number()) {
            out += fmt::format(", max {}", format_mb(number(*mx)));
        }
    }
    out += "\n";
    // The allocator's reserve beyond allocated memory, where observations gave reserved_mb
    // (ppb/allocator_reserve.hpp).
    if (const auto* reserve = find(doc, "allocator_reserve");
        reserve != nullptr && reserve->is_object()) {
        const auto& r = reserve->get_object();
        const auto& error = object_at(r, "std_error");
        const auto plus_minus = [&](std::string_view key, bool mb) -> std::string {
            const auto* e = find(error, key);
            if (e == nullptr || !e->is_number())
                return "";
            return mb ? fmt::format(" ± {}", format_mb(number(*e)))
                      : fmt::format(" ± {:.3f}", number(*e));
        };
        const auto& range = array_at(r, "activation_range_mb");
        out += fmt::format(
            "\nReserved memory (the caching allocator's segments), fitted to {} observation{} "
            "with reserved_mb:\n  reserved = allocated + {}{} + {:.3f}{} × activation memory in "
            "flight\n",
            int_at_of(r, "observations"), int_at_of(r, "observations") == "1" ? "" : "s",
            format_mb(number(r.at("constant_mb"))), plus_minus("constant_mb", true),
            number(r.at("activation_ratio")), plus_minus("activation_ratio", false));
        if (const auto* s = find(r, "residual_std_mb"); s != nullptr && s->is_number())
            out += fmt::format("  residual standard error {}", format_mb(number(*s)));
        else
            out += "  no residual degrees of freedom";
        if (range.size() == 2) {
            out += fmt::format("; activation memory of the observations {} to {}",
                               format_mb(number(range[0])), format_mb(number(range[1])));
        }
        out += "\n";
        for (const auto& note : array_at(r, "notes")) {
            if (note.is_string())
                out += fmt::format("  note: {}\n", std::string_view(note.get_string()));
        }
    }
    // Observations whose peak is the largest row of an in-flight profile: the vector each was
    // fitted at (ppb/profile_fit.hpp).
    if (const auto* profiles = find(doc, "in_flight_profiles");
        profiles != nullptr && profiles->is_object()) {
        const auto& p = profiles->get_object();
        out += fmt::format(
            "\nIn-flight profiles: fitted by alternating, {} fits{}; the vector at each peak:\n",
            p.at("fits").to_number<std::uint64_t>(),
            p.at("converged").as_bool()
                ? ""
                : " (the active vectors did not settle: the best set seen is kept)");
        for (const auto& v : p.at("observations").as_array()) {
            const auto& o = v.as_object();
            std::string counts;
            for (const auto& c : o.at("in_flight").as_array())
                counts +=
                    fmt::format("{}{}", counts.empty() ? "" : ", ", c.to_number<std::uint64_t>());
            out += fmt::format(
                "  observation {} ({}, stage {}): ({}) of {} vectors\n",
                o.at("index").to_number<std::uint64_t>(),
                o.at("config").as_string().empty() ? "-" : std::string(o.at("config").as_string()),
                o.at("stage").to_number<std::uint64_t>(), counts,
                o.at("profile").as_array().size());
        }
    }

    const auto& unidentified = array_at(diag, "not_identifiable");
    if (!unidentified.empty()) {
        out += "\nNot identifiable from these observations:\n";
        for (const auto& v : unidentified) {
            if (!v.is_object())
                continue;
            const auto& o = v.get_object();
            out += fmt::format("  {}: {}\n", text_at(o, "parameter"), text_at(o, "reason"));
            if (const auto s = text_at(o, "suggestion"); !s.empty()) {
                out += fmt::format("    to fix: {}\n", s);
            }
        }
    }
    const auto& combos = array_at(diag, "estimable_combinations");
    if (!combos.empty()) {
        out += "\nDetermined only in combination:\n";
        for (const auto& v : combos) {
            if (v.is_string())
                out += fmt::format("  {}\n", std::string_view(v.get_string()));
        }
    }
    const auto& warnings = array_at(diag, "warnings");
    if (!warnings.empty()) {
        out += "\nWarnings:\n";
        for (const auto& v : warnings) {
            if (v.is_string())
                out += fmt::format("  {}\n", std::string_view(v.get_string()));
        }
    }
    return out;
}

}  // namespace ppb::cli
