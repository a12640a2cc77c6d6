// ppb partition/search --report FILE.html: the page is written where asked, as every result file
// is (a directory refused, exit 2, nothing on stdout), needs nothing outside itself, and holds
// the document's numbers; the document's memory_breakdown_mb is the fit's coefficients times the
// plan's counts. (The page's layout is checked in a browser: tests/report.)
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ppb_test;
namespace fs = std::filesystem;
namespace json = boost::json;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace cli_report_tests {

namespace {

const std::string layers = std::string(PPB_SAMPLES_DIR) + "/llama70b-layers.json";
const std::string shape = std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json";

std::vector<std::string> plan_args(const std::string& report) {
    return {"partition",   "--model-desc",
            layers,        "--dryrun",
            sample_dryrun, "--stages",
            "8",           "--micro-batches",
            "32",          "--memory-limit-mb",
            "30000",       "--json",
            "--report",    report};
}

std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

// "[[-1, 0, 1]]" as the MindFormers YAML takes an array.
std::string array_text(const json::value& v) {
    if (!v.is_array())
        return json::serialize(v);
    std::string out = "[";
    for (const auto& item : v.get_array())
        out += (out.size() > 1 ? ", " : "") + array_text(item);
    return out + "]";
}

// Nothing fetched from anywhere: no script or image source, no stylesheet or link but the empty
// data: icon, no url() but the timeline's references to its own patterns (url(#...)).
void expect_self_contained(const std::string& page) {
    BOOST_TEST(page.starts_with("<!DOCTYPE html>"));
    BOOST_TEST(count(page, " src=") == 0u);
    BOOST_TEST(count(page, "url(") == count(page, "url(#"));  // the SVG's own patterns only
    BOOST_TEST(count(page, "@import") == 0u);
    BOOST_TEST(count(page, "<link") == 1u);
    BOOST_TEST(count(page, "<link rel=\"icon\" href=\"data:,\">") == 1u);
    BOOST_TEST(count(page, "href=\"http") == 0u);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_report)

BOOST_AUTO_TEST_CASE(a_plan_page_holds_the_documents_numbers) {
    const fs::path dir = fs::path(write_file("", "report-dir-marker")).parent_path();
    const fs::path page_path = dir / "plan-report.html";
    const auto r = ppb(plan_args(page_path.string()));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object plan = parse_json(r.out).as_object();
    const std::string page = read(page_path);
    expect_self_contained(page);
    const json::array& stages = plan.at("stages").as_array();
    BOOST_TEST(count(page, "<div class=\"bar\" data-stage=") == stages.size());
    // The MindFormers block to copy: the keys where a MindFormers YAML has them, the document's
    // arrays as `ppb partition` prints them (the page escapes the quotes it has none of).
    const json::object& arrays = plan.at("mindformers").as_object();
    const std::string yaml = fmt::format(
        "model:\n  model_config:\n    offset: {}\nrecompute_config:\n  recompute: {}\n"
        "  select_recompute: {}\n  select_comm_recompute: {}",
        array_text(arrays.at("offset")), array_text(arrays.at("recompute")),
        array_text(arrays.at("select_recompute")), array_text(arrays.at("select_comm_recompute")));
    BOOST_TEST(count(page, fmt::format("data-copy=\"{}\"", yaml)) == 1u, yaml);
    BOOST_TEST(count(page, "button type=\"button\" class=\"copy\"") == 1u);
    // The text output has the same block, indented.
    std::vector<std::string> without = plan_args("");
    without.resize(without.size() - 3);  // no --json, no --report
    const auto text = ppb(without);
    BOOST_TEST_REQUIRE(text.exit_code == 0, text.err);
    std::string indented = "  " + yaml;
    for (std::size_t at = indented.find('\n'); at != std::string::npos;
         at = indented.find('\n', at + 3))
        indented.insert(at + 1, "  ");
    BOOST_TEST(
        text.out.find("MindFormers / SAPP configuration:\n" + indented + "\n") != std::string::npos,
        text.out);
    // Nothing the document holds as null, and no member's name, outside the blocks.
    const std::size_t section = page.find("<section class=\"configuration\"");
    BOOST_TEST_REQUIRE(section != std::string::npos);
    const std::string configuration =
        page.substr(section, page.find("</section>", section) - section);
    BOOST_TEST(configuration.find("null") == std::string::npos, configuration);
    BOOST_TEST(configuration.find("legacy_why_not") == std::string::npos, configuration);
    // stdout is what it is without --report.
    without = plan_args("");
    without.resize(without.size() - 2);
    BOOST_TEST(ppb(without).out == r.out);
}

// The analytic model's memory in its own terms (plugin API 1.4): per stage, the body layers'
// weights, gradients and optimizer state at 2, 4 and 12 / 4 bytes a parameter of its 106 971 136
// per layer (204.03125, 408.0625 and 306.046875 MB a layer: tests/analytic/test_model.cpp), the
// embedding on the first stage and the LM head on the last, adding up to the stage's memory; no
// part is left "not broken down", and the page draws each.
BOOST_AUTO_TEST_CASE(an_analytic_plan_is_broken_into_the_models_terms) {
    const fs::path dir = fs::path(write_file("", "report-dir-marker")).parent_path();
    const fs::path page_path = dir / "analytic-report.html";
    const auto r =
        ppb({"partition", "--model-desc", layers, "--model", "analytic", "--model-options", shape,
             "--stages", "4", "--micro-batches", "64", "--memory-limit-mb", "80000", "--schedule",
             "interleaved", "--json", "--report", page_path.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const std::string page = read(page_path);
    const json::array stages = parse_json(r.out).at("stages").as_array();
    const auto number = [](const json::value& v) { return v.to_number<double>(); };
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const json::object& stage = stages[s].as_object();
        const json::object& b = stage.at("memory_breakdown_mb").as_object();
        BOOST_TEST(!b.contains("other"));
        double layers_total = 0.0;
        for (const auto& [kind, n] : stage.at("layers").as_object())
            layers_total += number(n);
        std::map<std::string, double> parts;
        double sum = 0.0;
        for (const json::value& part : b.at("parts").as_array()) {
            const std::string name(part.at("name").as_string());
            BOOST_TEST(parts.count(name) == 0u, name);
            parts[name] = number(part.at("mb"));
            sum += number(part.at("mb"));
            BOOST_TEST(!part.at("label").as_string().empty());
            if (number(part.at("mb")) > 0.0) {
                BOOST_TEST(count(page, fmt::format("data-part=\"{}\" data-mb=\"{:.17g}\"", name,
                                                   number(part.at("mb")))) >= 1u,
                           name);
            }
        }
        BOOST_TEST(sum == number(stage.at("memory_mb")), boost::test_tools::tolerance(1e-9));
        BOOST_TEST(parts.at("weights") == layers_total * 204.03125,
                   boost::test_tools::tolerance(1e-12));
        BOOST_TEST(parts.at("gradients") == layers_total * 408.0625,
                   boost::test_tools::tolerance(1e-12));
        BOOST_TEST(parts.at("optimizer") == layers_total * 306.046875,
                   boost::test_tools::tolerance(1e-12));
        BOOST_TEST(parts.at("constant") == 3072.0);
        BOOST_TEST(parts.count("embedding") == (s == 0 ? 1u : 0u));
        BOOST_TEST(parts.count("lm_head") == (s + 1 == stages.size() ? 1u : 0u));
    }
    BOOST_TEST(page.find("not broken down") == std::string::npos);
    BOOST_TEST(page.find("The parts are the memory model's own terms") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_breakdown_is_the_fit_times_the_plan) {
    const auto fit = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST_REQUIRE(fit.exit_code == 0, fit.err);
    const json::object c = parse_json(fit.out).at("parameters").as_object();
    const auto r = ppb({"partition", "--model-desc", layers, "--dryrun", sample_dryrun, "--stages",
                        "8", "--micro-batches", "32", "--memory-limit-mb", "30000", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::array stages = parse_json(r.out).at("stages").as_array();
    const auto number = [](const json::value& v) { return v.to_number<double>(); };
    const auto close = [](double a, double b) {
        return std::abs(a - b) <= 1e-9 * std::abs(b) + 1e-9;
    };
    for (std::size_t s = 0; s < stages.size(); ++s) {
        const json::object& stage = stages[s].as_object();
        const json::object& b = stage.at("memory_breakdown_mb").as_object();
        const double f = number(stage.at("in_flight"));
        double layers_total = 0.0;
        double activations = 0.0;
        for (const auto& [kind, n] : stage.at("layers").as_object()) {
            layers_total += number(n);
            const double a =
                number(n) == 0.0 ? 0.0 : number(c.at("activation_mb").at(kind)) * number(n) * f;
            BOOST_TEST(close(number(b.at("activations").at(kind)), a), kind);
            activations += a;
        }
        BOOST_TEST(close(number(b.at("constant")), number(c.at("const_mb"))));
        BOOST_TEST(close(number(b.at("head")), s == 0 ? number(c.at("head_mb")) : 0.0));
        BOOST_TEST(
            close(number(b.at("tail")), s + 1 == stages.size() ? number(c.at("tail_mb")) : 0.0));
        BOOST_TEST(
            close(number(b.at("parameters")), layers_total * number(c.at("param_per_layer_mb"))));
        BOOST_TEST(close(number(b.at("activations_total")), activations));
        const double sum = number(b.at("constant")) + number(b.at("head")) + number(b.at("tail")) +
                           number(b.at("parameters")) + activations;
        BOOST_TEST(close(sum, number(stage.at("memory_mb"))), s);
    }
}

// A model that is not linear and gives no terms (a plugin older than API 1.4 is the same to the
// page), a fixture predicting 1000 + 100 MB a layer whatever its kind. With one chunk as with
// several the plan carries the model's memory per in-flight micro-batch (its own slope, what
// `ppb simulate` reads; none here: it does not depend on the in-flight count), and the rest, all
// of the memory, is one part "not broken down", as the page says.
BOOST_AUTO_TEST_CASE(a_model_without_terms_is_shown_as_it_is) {
    const fs::path dir = fs::path(write_file("", "report-dir-marker")).parent_path();
    for (const bool chunks : {false, true}) {
        BOOST_TEST_CONTEXT((chunks ? "interleaved" : "1F1B")) {
            const fs::path page_path = dir / "opaque-report.html";
            std::vector<std::string> args = {"partition",
                                             "--model-desc",
                                             layers,
                                             "--dryrun",
                                             sample_dryrun,
                                             "--plugin-path",
                                             fixture_dir,
                                             "--model",
                                             "bad-parts",
                                             "--model-options",
                                             R"({"mode": "opaque"})",
                                             "--stages",
                                             "8",
                                             "--micro-batches",
                                             "32",
                                             "--memory-limit-mb",
                                             "30000",
                                             "--json",
                                             "--report",
                                             page_path.string()};
            if (chunks)
                args.insert(args.end(), {"--schedule", "interleaved"});
            const auto r = ppb(args);
            BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
            const std::string page = read(page_path);
            const json::value plan = parse_json(r.out);
            const json::array& stages = plan.at("stages").as_array();
            for (const json::value& sv : stages) {
                const json::object& stage = sv.as_object();
                const json::value* b = stage.if_contains("memory_breakdown_mb");
                BOOST_TEST_REQUIRE(b != nullptr);
                BOOST_TEST(!b->as_object().contains("parts"));
                BOOST_TEST(b->at("activations_total").to_number<double>() == 0.0);
                BOOST_TEST(b->at("other").to_number<double>() ==
                           stage.at("memory_mb").to_number<double>());
            }
            BOOST_TEST(page.find("The memory model does not say what its predictions are "
                                 "made of") != std::string::npos);
            BOOST_TEST(count(page, "data-part=\"other\"") == stages.size());
        }
    }
}

BOOST_AUTO_TEST_CASE(a_search_page_has_a_point_per_configuration) {
    const fs::path dir = fs::path(write_file("", "report-dir-marker")).parent_path();
    const fs::path page_path = dir / "search-report.html";
    const auto r = ppb({"search", "--model-desc", layers, "--model", "analytic", "--model-options",
                        shape, "--devices", "64", "--global-batch", "256", "--memory-limit-mb",
                        "80000", "--top", "0", "--json", "--report", page_path.string()});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::array ranking = parse_json(r.out).at("ranking").as_array();
    BOOST_TEST_REQUIRE(ranking.size() > 3u);
    const std::string page = read(page_path);
    expect_self_contained(page);
    BOOST_TEST(count(page, "<circle class=\"point") == ranking.size());
    for (const json::value& e : ranking) {
        BOOST_TEST(count(page, fmt::format("data-rank=\"{}\" data-iteration-time=\"{:.17g}\"",
                                           e.at("rank").to_number<std::uint64_t>(),
                                           e.at("iteration_time").to_number<double>())) == 1u);
    }
    // The best plan's bars: one per stage of rank 1's plan.
    BOOST_TEST(count(page, "<div class=\"bar\" data-stage=") ==
               ranking.at(0).at("plan").at("stages").as_array().size());
}

BOOST_AUTO_TEST_CASE(a_report_into_a_directory_is_refused) {
    const fs::path dir = fs::path(write_file("", "report-dir-marker")).parent_path();
    expect_input_error(ppb(plan_args(dir.string())), {dir.string(), "cannot write"});
    expect_input_error(ppb({"search", "--model-desc", layers, "--model", "analytic",
                            "--model-options", shape, "--devices", "64", "--global-batch", "256",
                            "--memory-limit-mb", "80000", "--report", dir.string()}),
                       {dir.string(), "cannot write"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_report_tests
