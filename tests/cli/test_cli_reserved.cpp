// Reserved memory end to end: the allocator's reserve fitted where dry runs give reserved_mb
// (ppb/allocator_reserve.hpp), shown by ppb fit and ppb predict, planned against by ppb partition.
// The ground truth is made here: reserved peaks generated from known κ and ρ over the activation
// memory the fitted model itself gives each observation (or, for the analytic model, its own
// slope measured through ppb predict), so the fit must give them back.
#include "cli_fixture.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace ppb_test;
namespace json = boost::json;

namespace cli_reserved_tests {
namespace {

constexpr double kappa = 640.0;  // MB
constexpr double rho = 0.18;     // MB reserved per MB of activations

double num(const json::value& v) {
    return v.to_number<double>();
}

// The sample's observations, and the fitted dryrun-lsq coefficients.
struct Sample {
    json::object dryrun;
    json::object parameters;
};
Sample sample() {
    const auto fit = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST_REQUIRE(fit.exit_code == 0, fit.err);
    std::ifstream in(sample_dryrun);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return Sample{parse_json(text).as_object(),
                  parse_json(fit.out).as_object().at("parameters").as_object()};
}

// A of an observation of the sample (one chunk, 1F1B): Σ_k activation_k · n_k · min(p − s, m).
double activation_of(const Sample& s, const json::object& o) {
    const auto p = num(s.dryrun.at("num_stages"));
    const auto m = num(s.dryrun.at("micro_batches"));
    const double in_flight = std::min(p - num(o.at("stage")), m);
    double a = 0.0;
    for (const auto& [kind, count] : o.at("layers").as_object())
        a += num(s.parameters.at("activation_mb").at(kind)) * num(count) * in_flight;
    return a;
}

// The sample with reserved_mb = peak + reserve(A) on the observations `which` selects.
template <class Reserve, class Which>
std::string with_reserved(const Sample& s, Reserve reserve, Which which) {
    json::object doc = s.dryrun;
    std::size_t i = 0;
    for (auto& v : doc.at("observations").as_array()) {
        auto& o = v.as_object();
        if (which(i++))
            o["reserved_mb"] = num(o.at("peak_memory_mb")) + reserve(activation_of(s, o));
    }
    return write_file(json::serialize(doc), "reserved.json");
}

std::string truth_file(const Sample& s) {
    return with_reserved(
        s, [](double a) { return kappa + rho * a; }, [](std::size_t) { return true; });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_reserved)

BOOST_AUTO_TEST_CASE(fit_gives_back_the_reserve_the_observations_were_made_with) {
    const Sample s = sample();
    const std::string file = truth_file(s);
    const auto r = ppb({"fit", file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object reserve = parse_json(r.out).as_object().at("allocator_reserve").as_object();
    BOOST_TEST(std::abs(num(reserve.at("constant_mb")) - kappa) < 1e-3);
    BOOST_TEST(std::abs(num(reserve.at("activation_ratio")) - rho) < 1e-7);
    BOOST_TEST(num(reserve.at("observations")) == 13.0);
    BOOST_TEST(reserve.at("constant_fitted").as_bool());
    BOOST_TEST(reserve.at("ratio_fitted").as_bool());
    BOOST_TEST(num(reserve.at("residual_std_mb")) < 1e-3);
    BOOST_TEST(reserve.at("notes").as_array().empty());
    // For people: the model stated with its figures.
    const auto table = ppb({"fit", file});
    BOOST_TEST_REQUIRE(table.exit_code == 0, table.err);
    BOOST_TEST(
        table.out.find("Reserved memory (the caching allocator's segments), fitted to 13 "
                       "observations with reserved_mb:\n  reserved = allocated + 640.0 MB") !=
            std::string::npos,
        table.out);
    BOOST_TEST(table.out.find("+ 0.180 ± 0.000 × activation memory in flight") != std::string::npos,
               table.out);
    // A file without reserved_mb: no reserve in the fit.
    const auto plain = ppb({"fit", sample_dryrun, "--json"});
    BOOST_TEST(!parse_json(plain.out).as_object().contains("allocator_reserve"));
}

BOOST_AUTO_TEST_CASE(noisy_reserved_peaks_give_the_truth_within_the_stated_uncertainty) {
    const Sample s = sample();
    // ±30 MB, alternating: what rounding to segments and a run's own noise add.
    std::size_t i = 0;
    const std::string file = with_reserved(
        s, [&](double a) { return kappa + rho * a + ((i++ % 2) == 0 ? 30.0 : -30.0); },
        [](std::size_t) { return true; });
    const auto r = ppb({"fit", file, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object reserve = parse_json(r.out).as_object().at("allocator_reserve").as_object();
    const double se_k = num(reserve.at("std_error").at("constant_mb"));
    const double se_r = num(reserve.at("std_error").at("activation_ratio"));
    BOOST_TEST(se_k > 0.0);
    BOOST_TEST(se_r > 0.0);
    BOOST_TEST(std::abs(num(reserve.at("constant_mb")) - kappa) < 3 * se_k);
    BOOST_TEST(std::abs(num(reserve.at("activation_ratio")) - rho) < 3 * se_r);
    BOOST_TEST(std::abs(num(reserve.at("residual_std_mb")) - 30.0) < 5.0);
}

BOOST_AUTO_TEST_CASE(predict_reports_allocated_and_reserved) {
    const Sample s = sample();
    const std::string file = truth_file(s);
    const std::vector<std::string> args = {"predict",  file,       "--stage",  "1",
                                           "--layers", "select=7", "--layers", "full=3"};
    const auto text = ppb(args);
    BOOST_TEST_REQUIRE(text.exit_code == 0, text.err);
    BOOST_TEST(text.out.find("predicted peak allocated memory") != std::string::npos, text.out);
    BOOST_TEST(text.out.find("predicted peak reserved memory") != std::string::npos, text.out);
    auto json_args = args;
    json_args.push_back("--json");
    const auto r = ppb(json_args);
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    // Stage 1 of 8 holds 7 micro-batches: A = 7 · (7 a_select + 3 a_full).
    const auto& act = s.parameters.at("activation_mb");
    const double a = 7.0 * (7.0 * num(act.at("select")) + 3.0 * num(act.at("full")));
    BOOST_TEST(std::abs(num(doc.at("reserved_memory_mb")) -
                        (num(doc.at("peak_memory_mb")) + kappa + rho * a)) < 1e-3);
    BOOST_TEST(num(doc.at("reserved_std_error_mb")) >= num(doc.at("std_error_mb")));
    // Without reserved_mb in the file: the allocated prediction alone, as before.
    const auto plain = ppb({"predict", sample_dryrun, "--stage", "1", "--layers", "select=7",
                            "--layers", "full=3", "--json"});
    BOOST_TEST(!parse_json(plain.out).as_object().contains("reserved_memory_mb"));
    BOOST_TEST(num(parse_json(plain.out).at("peak_memory_mb")) == num(doc.at("peak_memory_mb")));
}

BOOST_AUTO_TEST_CASE(partition_plans_against_reserved_memory_and_says_so) {
    const Sample s = sample();
    const std::string file = truth_file(s);
    const std::vector<std::string> common = {"partition", "--dryrun", file, "--model-desc",
                                             layers_file, "--stages", "8",  "--memory-limit-mb",
                                             "40000",     "--json"};
    const auto reserved = ppb(common);
    BOOST_TEST_REQUIRE(reserved.exit_code == 0, reserved.err);
    BOOST_TEST(reserved.err.find("ppb: note: 13 observations of " + file +
                                 " give reserved_mb: planning against reserved memory") !=
                   std::string::npos,
               reserved.err);
    const auto plan = parse_json(reserved.out).as_object();
    BOOST_TEST(plan.at("memory").as_string() == "reserved");
    BOOST_TEST(std::abs(num(plan.at("allocator_reserve").at("constant_mb")) - kappa) < 1e-3);
    // Every stage's memory is its reserved prediction, within the limit: what ppb predict says
    // for the same stage.
    const auto& stages = plan.at("stages").as_array();
    for (std::size_t st = 0; st < stages.size(); ++st) {
        const auto& stage = stages[st].as_object();
        BOOST_TEST(num(stage.at("memory_mb")) <= 40000.0);
        std::vector<std::string> args = {"predict", file, "--stage", std::to_string(st), "--json"};
        for (const auto& [kind, count] : stage.at("layers").as_object()) {
            if (num(count) > 0)
                args.insert(args.end(), {"--layers", std::string(kind) + "=" +
                                                         std::to_string(count.to_number<int>())});
        }
        const auto p = ppb(args);
        BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
        const auto predicted = parse_json(p.out);
        BOOST_TEST(
            std::abs(num(predicted.at("reserved_memory_mb")) - num(stage.at("memory_mb"))) < 1e-6,
            "stage " << st);
        // Both numbers in the plan: the allocated memory beside it, and the reserve a part of the
        // breakdown of its own (κ + ρ × the stage's allocated activations).
        BOOST_TEST(
            std::abs(num(stage.at("allocated_mb")) - num(predicted.at("peak_memory_mb"))) < 1e-6,
            "stage " << st);
        const auto& parts = stage.at("memory_breakdown_mb").as_object();
        BOOST_TEST(std::abs(num(parts.at("allocator_reserve")) -
                            (kappa + rho * num(parts.at("activations_total")))) < 1e-3);
        BOOST_TEST(std::abs(num(parts.at("allocator_reserve")) + num(stage.at("allocated_mb")) -
                            num(stage.at("memory_mb"))) < 1e-6);
    }
    // On request, allocated memory: the plan is the allocated one, which would not fit reserved.
    auto allocated_args = common;
    allocated_args.insert(allocated_args.end(), {"--memory", "allocated"});
    const auto allocated = ppb(allocated_args);
    BOOST_TEST_REQUIRE(allocated.exit_code == 0, allocated.err);
    BOOST_TEST(allocated.err.find("reserved") == std::string::npos, allocated.err);
    const auto allocated_plan = parse_json(allocated.out).as_object();
    BOOST_TEST(allocated_plan.at("memory").as_string() == "allocated");
    BOOST_TEST(!allocated_plan.contains("allocator_reserve"));
    BOOST_TEST(json::serialize(allocated_plan.at("stages")) != json::serialize(plan.at("stages")));
    // The table says which memory the limit is of.
    auto table_args = common;
    table_args.pop_back();
    const auto table = ppb(table_args);
    BOOST_TEST(table.out.find("memory limit 40000.0 MB of reserved memory") != std::string::npos,
               table.out);
}

BOOST_AUTO_TEST_CASE(too_few_or_uninformative_observations_are_said_plainly) {
    const Sample s = sample();
    // One observation with reserved_mb: κ alone, no uncertainty.
    const std::string one = with_reserved(
        s, [](double a) { return kappa + rho * a; }, [](std::size_t i) { return i == 2; });
    const auto r = ppb({"fit", one, "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const json::object reserve = parse_json(r.out).as_object().at("allocator_reserve").as_object();
    BOOST_TEST(num(reserve.at("activation_ratio")) == 0.0);
    BOOST_TEST(!reserve.at("ratio_fitted").as_bool());
    BOOST_TEST(reserve.at("residual_std_mb").is_null());
    const std::string notes = json::serialize(reserve.at("notes"));
    BOOST_TEST(notes.find("one observation gives reserved_mb") != std::string::npos, notes);
    BOOST_TEST(notes.find("no degrees of freedom") != std::string::npos, notes);
    // A reserve that shrinks as activations grow is not believed: a constant.
    const std::string falling = with_reserved(
        s, [](double a) { return 5000.0 - 0.05 * a; }, [](std::size_t) { return true; });
    const auto f = ppb({"fit", falling, "--json"});
    BOOST_TEST_REQUIRE(f.exit_code == 0, f.err);
    const json::object flat = parse_json(f.out).as_object().at("allocator_reserve").as_object();
    BOOST_TEST(num(flat.at("activation_ratio")) == 0.0);
    BOOST_TEST(json::serialize(flat.at("notes")).find("slope fitted below 0") != std::string::npos);
    // Partition says the caveat on stderr.
    const auto p = ppb({"partition", "--dryrun", one, "--model-desc", layers_file, "--stages", "8",
                        "--memory-limit-mb", "40000"});
    BOOST_TEST_REQUIRE(p.exit_code == 0, p.err);
    BOOST_TEST(p.err.find("ppb: note: one observation gives reserved_mb") != std::string::npos,
               p.err);
}

BOOST_AUTO_TEST_CASE(bad_memory_requests_are_refused) {
    const auto none = ppb({"partition", "--dryrun", sample_dryrun, "--model-desc", layers_file,
                           "--stages", "8", "--memory-limit-mb", "40000", "--memory", "reserved"});
    expect_failure(none, 2,
                   {"--memory reserved: no observation of", "gives reserved_mb", "ppb import"});
    BOOST_TEST(none.out.empty());
    const auto bogus = ppb({"partition", "--dryrun", sample_dryrun, "--model-desc", layers_file,
                            "--stages", "8", "--memory-limit-mb", "40000", "--memory", "segments"});
    expect_failure(bogus, 2, {"--memory", "segments"});
    BOOST_TEST(bogus.out.empty());
}

BOOST_AUTO_TEST_CASE(a_model_without_coefficients_is_asked_its_own_slope) {
    // The analytic model is configured, not fitted: A is its answer with one more micro-batch
    // less its answer, times the count, measured here through ppb predict.
    const std::string shape = std::string(PPB_SAMPLES_DIR) + "/llama70b-shape.json";
    const auto predict_at = [&](std::uint32_t stage, std::uint32_t in_flight) {
        const auto r = ppb({"predict", "--model", "analytic", "--model-options", shape, "--stages",
                            "8", "--stage", std::to_string(stage), "--layers", "none=10",
                            "--in-flight", std::to_string(in_flight), "--json"});
        BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
        return num(parse_json(r.out).at("peak_memory_mb"));
    };
    json::array observations;
    for (std::uint32_t stage : {1u, 4u, 6u}) {
        const std::uint32_t f = 8 - stage;
        const double m = predict_at(stage, f);
        const double a = f * (predict_at(stage, f + 1) - m);
        observations.push_back(json::object{{"stage", stage},
                                            {"layers", json::object{{"none", 10}}},
                                            {"peak_memory_mb", m},
                                            {"reserved_mb", m + kappa + rho * a}});
    }
    const std::string file =
        write_file(json::serialize(json::object{{"format", "ppb.dryrun/1"},
                                                {"num_stages", 8},
                                                {"micro_batches", 32},
                                                {"observations", std::move(observations)}}),
                   "analytic-reserved.json");
    const auto r = ppb({"predict", "--model", "analytic", "--model-options", shape, file, "--stage",
                        "2", "--layers", "none=10", "--json"});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    const auto doc = parse_json(r.out).as_object();
    BOOST_TEST(std::abs(num(doc.at("allocator_reserve").at("constant_mb")) - kappa) < 1e-3);
    BOOST_TEST(std::abs(num(doc.at("allocator_reserve").at("activation_ratio")) - rho) < 1e-7);
    const double a2 = 6 * (predict_at(2, 7) - predict_at(2, 6));
    BOOST_TEST(std::abs(num(doc.at("reserved_memory_mb")) -
                        (num(doc.at("peak_memory_mb")) + kappa + rho * a2)) < 1e-3);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace cli_reserved_tests
