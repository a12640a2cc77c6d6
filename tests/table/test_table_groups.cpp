// The table model of a layer file with several groups of BODY layers (plugin API 1.3): the
// DeepSeek-like sample (3 dense layers, then 12 MoE layers) predicted by hand, group_parameters
// against predict_grouped bit for bit, the errors of grouped placements, and the same through
// the built plugin's C table.
#include "model.hpp"
#include "table_support.hpp"

#include <ppb/discovery.hpp>
#include <ppb/loader.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/placement.hpp>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace ppb::table_test;
using ppb::plugin::InvalidInput;
using ppb::plugin::Unsupported;
using ppb::table::TableModel;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace table_groups_tests {

namespace {

// C = 2048, H = 3584, T = 4608.
// dense: P = 1536, none 640, select 128, full 16 (no comm, no both), 3 layers.
// moe: P = 6144, none 896, select 192, comm 768, both 160, full 16, 12 layers.
std::string deepseek_like() {
    return read_text(samples_dir / "moe" / "deepseek-like-layers.json");
}

constexpr std::uint32_t dense = 0;
constexpr std::uint32_t moe = 1;

// Layers per group of one chunk: {dense kinds, moe kinds}.
using ChunkGroups = std::pair<Layers, Layers>;

// Stage `s` of `p`, its chunks holding the groups' layers with the in-flight counts given.
ppb::StagePlacement grouped_stage(std::uint32_t p, std::uint32_t s,
                                  std::vector<std::pair<ChunkGroups, std::uint32_t>> chunks) {
    ppb::StagePlacement placement{p, s, {}};
    std::vector<std::uint32_t> counts;
    for (const auto& [groups, in_flight] : chunks) {
        placement.chunks.push_back(chunk({}, in_flight));
        counts.insert(counts.end(), groups.first.begin(), groups.first.end());
        counts.insert(counts.end(), groups.second.begin(), groups.second.end());
    }
    placement.set_group_layers(std::move(counts));
    return placement;
}

// The ABI's formula of group_parameters(), evaluated inline in its order:
// C + H [s = 0] + T [s = p-1] + sum_g (P_g n_g + sum_k A_g,k n_g,k f).
double inline_formula(const TableModel& model, const ppb::StagePlacement& placement) {
    const auto first = model.group_parameters(0);
    BOOST_TEST_REQUIRE(first.has_value());
    double memory = 0.0;
    memory += 1.0 * first->const_mb;
    memory += (placement.stage == 0 ? 1.0 : 0.0) * first->head_mb;
    memory += (placement.stage + 1 == placement.num_stages ? 1.0 : 0.0) * first->tail_mb;
    for (std::uint32_t g = 0; g < placement.num_groups(); ++g) {
        const auto p = model.group_parameters(g);
        BOOST_TEST_REQUIRE(p.has_value());
        double layers = 0.0;
        std::array<double, PPB_KIND_COUNT> x{};
        for (std::size_t c = 0; c < placement.chunks.size(); ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                layers += placement.group_layer(c, g, k);
                x[k] += static_cast<double>(placement.group_layer(c, g, k)) *
                        static_cast<double>(placement.chunks[c].in_flight);
            }
        }
        memory += layers * p->per_layer_mb;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
            memory += x[k] * p->activation_mb[k];
    }
    return memory;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(table_groups)

BOOST_AUTO_TEST_CASE(each_body_name_is_a_group_with_its_own_memory) {
    const TableModel model(deepseek_like());
    BOOST_TEST(model.groups() == (std::vector<std::string>{"dense", "moe"}));
    const auto& t = model.table();
    BOOST_TEST_REQUIRE(t.groups.size() == 2u);
    BOOST_TEST(t.const_mb == 2048.0);
    BOOST_TEST(t.head_mb == 3584.0);
    BOOST_TEST(t.tail_mb == 4608.0);
    BOOST_TEST(t.groups[dense].num_layers == 3u);
    BOOST_TEST(t.groups[dense].param_per_layer_mb == 1536.0);
    BOOST_TEST(t.groups[dense].activation_mb[PPB_KIND_NONE].value() == 640.0);
    BOOST_TEST(!t.groups[dense].activation_mb[PPB_KIND_COMM].has_value());
    BOOST_TEST(t.groups[moe].num_layers == 12u);
    BOOST_TEST(t.groups[moe].param_per_layer_mb == 6144.0);
    BOOST_TEST(t.groups[moe].activation_mb[PPB_KIND_BOTH].value() == 160.0);
}

BOOST_AUTO_TEST_CASE(grouped_placements_predicted_by_hand) {
    const TableModel model(deepseek_like());
    // Stage 0 of 4, 4 in flight: dense none 3; moe full 1, none 1.
    // 2048 + 3584 + (3 x 1536 + 3 x 640 x 4) + (2 x 6144 + 896 x 4 + 16 x 4)
    const auto first = grouped_stage(4, 0, {{{{3, 0, 0, 0, 0}, {1, 0, 0, 0, 1}}, 4}});
    BOOST_TEST(model.predict_grouped(first.grouped_view()) ==
               2048.0 + 3584.0 + (4608.0 + 7680.0) + (12288.0 + 3584.0 + 64.0));
    BOOST_TEST(model.predict_grouped(first.grouped_view()) == 33856.0);
    // The last stage, 1 in flight: moe none 4. 2048 + 4608 + 4 x 6144 + 4 x 896.
    const auto last = grouped_stage(4, 3, {{{{}, {4, 0, 0, 0, 0}}, 1}});
    BOOST_TEST(model.predict_grouped(last.grouped_view()) == 34816.0);
    // Stage 1 of 4, two chunks: chunk 0 (5 in flight) dense select 1, moe both 2; chunk 1 (3 in
    // flight) moe comm 1, none 1. 2048 + (1536 + 128 x 5) + (4 x 6144 + 2 x 5 x 160 + 3 x 768
    // + 3 x 896).
    const auto middle =
        grouped_stage(4, 1, {{{{0, 1, 0, 0, 0}, {0, 0, 0, 2, 0}}, 5}, {{{}, {1, 0, 1, 0, 0}}, 3}});
    BOOST_TEST(model.predict_grouped(middle.grouped_view()) ==
               2048.0 + 2176.0 + (24576.0 + 1600.0 + 2304.0 + 2688.0));
    BOOST_TEST(model.predict_grouped(middle.grouped_view()) == 35392.0);
    // One stage holds the whole model, head and tail too.
    const auto whole = grouped_stage(1, 0, {{{{3, 0, 0, 0, 0}, {12, 0, 0, 0, 0}}, 1}});
    BOOST_TEST(model.predict_grouped(whole.grouped_view()) ==
               2048.0 + 3584.0 + 4608.0 + (4608.0 + 1920.0) + (73728.0 + 10752.0));

    const std::vector<ppb_grouped_placement> batch = {first.grouped_view(), last.grouped_view(),
                                                      middle.grouped_view()};
    std::vector<double> out(batch.size());
    model.predict_grouped_batch(batch, out);
    BOOST_TEST(out == (std::vector<double>{33856.0, 34816.0, 35392.0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(group_parameters_agree_with_predict_grouped_to_the_bit) {
    const TableModel model(deepseek_like());
    const auto d = model.group_parameters(dense);
    const auto m = model.group_parameters(moe);
    BOOST_TEST_REQUIRE(d.has_value());
    BOOST_TEST_REQUIRE(m.has_value());
    for (const auto* p : {&*d, &*m}) {
        BOOST_TEST(p->const_mb == 2048.0);
        BOOST_TEST(p->head_mb == 3584.0);
        BOOST_TEST(p->tail_mb == 4608.0);
    }
    BOOST_TEST(d->per_layer_mb == 1536.0);
    BOOST_TEST(d->activation_mb[PPB_KIND_NONE] == 640.0);
    BOOST_TEST(d->activation_mb[PPB_KIND_SELECT] == 128.0);
    BOOST_TEST(d->activation_mb[PPB_KIND_COMM] == 0.0);
    BOOST_TEST(d->activation_mb[PPB_KIND_FULL] == 16.0);
    constexpr std::uint32_t shared =
        PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
    BOOST_TEST(d->identified ==
               (shared | PPB_PARAM_ACTIVATION(PPB_KIND_NONE) |
                PPB_PARAM_ACTIVATION(PPB_KIND_SELECT) | PPB_PARAM_ACTIVATION(PPB_KIND_FULL)));
    BOOST_TEST(m->per_layer_mb == 6144.0);
    BOOST_TEST(m->activation_mb[PPB_KIND_COMM] == 768.0);
    BOOST_TEST(m->activation_mb[PPB_KIND_BOTH] == 160.0);
    BOOST_TEST(m->identified == (shared | 0x1f0u));

    // Numbers that are not exact in binary: the inline formula still gives the same bits.
    const TableModel inexact(R"({"stage_const_mem": 1000.1, "layers_description": [
        {"name": "embedding", "type": "HEAD", "nb_layer": 1, "memory_parameter": 3000.3},
        {"name": "dense", "type": "BODY", "nb_layer": 3, "memory_parameter": 1234.567,
         "memory_activation": 333.3, "memory_recompute": 0.7},
        {"name": "moe", "type": "BODY", "nb_layer": 9, "memory_parameter": 5555.1,
         "memory_activation": 777.7, "memory_select_rec": 99.9},
        {"name": "lm_head", "type": "TAIL", "nb_layer": 1, "memory_parameter": 4000.9}]})");
    const std::vector<ppb::StagePlacement> placements = {
        grouped_stage(3, 0, {{{{2, 0, 0, 0, 1}, {1, 0, 0, 0, 0}}, 3}}),
        grouped_stage(3, 1, {{{{}, {2, 2, 0, 0, 0}}, 2}, {{{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}}, 7}}),
        grouped_stage(3, 2, {{{{}, {1, 3, 0, 0, 0}}, 1}}),
    };
    for (const auto& placement : placements) {
        const double predicted = inexact.predict_grouped(placement.grouped_view());
        BOOST_TEST(std::bit_cast<std::uint64_t>(predicted) ==
                       std::bit_cast<std::uint64_t>(inline_formula(inexact, placement)),
                   predicted << " vs " << inline_formula(inexact, placement));
    }
}

BOOST_AUTO_TEST_CASE(a_kind_is_predicted_per_group) {
    const TableModel model(deepseek_like());
    // 'comm' is given for moe: predicted. For dense it is not: InvalidInput naming both.
    const auto moe_comm = grouped_stage(4, 2, {{{{1, 0, 0, 0, 0}, {0, 0, 2, 0, 0}}, 2}});
    BOOST_TEST(model.predict_grouped(moe_comm.grouped_view()) ==
               2048.0 + (1536.0 + 1280.0) + (12288.0 + 3072.0));
    const auto dense_comm = grouped_stage(4, 2, {{{{0, 0, 1, 0, 0}, {3, 0, 0, 0, 0}}, 2}});
    check_throws<InvalidInput>(
        [&] { (void)model.predict_grouped(dense_comm.grouped_view()); },
        {"stage 2 of 4 holds 1 'comm' layer of group 'dense', but the layer file gives no "
         "memory_select_comm for it (layers_description[1], BODY 'dense')",
         "add memory_select_comm to its BODY entries, or place no 'comm' layers of group "
         "'dense'"});
    // In a batch the message names the placement.
    const std::vector<ppb_grouped_placement> batch = {moe_comm.grouped_view(),
                                                      dense_comm.grouped_view()};
    std::vector<double> out(batch.size());
    check_throws<InvalidInput>([&] { model.predict_grouped_batch(batch, out); },
                               {"placement 1: stage 2 of 4 holds 1 'comm' layer of group 'dense'"});
}

BOOST_AUTO_TEST_CASE(more_layers_of_a_group_than_the_file_gives_are_refused) {
    const TableModel model(deepseek_like());
    const auto too_many_moe = grouped_stage(2, 1, {{{{}, {13, 0, 0, 0, 0}}, 1}});
    check_throws<InvalidInput>([&] { (void)model.predict_grouped(too_many_moe.grouped_view()); },
                               {"stage 1 of 2 holds 13 layers of group 'moe', more than the 12 "
                                "the layer file gives it (the nb_layer of its BODY entries)"});
    // Counted over every chunk of the stage.
    const auto too_many_dense =
        grouped_stage(2, 0, {{{{2, 0, 0, 0, 0}, {}}, 3}, {{{0, 1, 0, 0, 1}, {1, 0, 0, 0, 0}}, 1}});
    check_throws<InvalidInput>(
        [&] { (void)model.predict_grouped(too_many_dense.grouped_view()); },
        {"stage 0 of 2 holds 4 layers of group 'dense', more than the 3 the layer file gives it"});
}

BOOST_AUTO_TEST_CASE(plain_calls_are_refused_on_several_groups) {
    const TableModel model(deepseek_like());
    check_throws<Unsupported>([&] { (void)model.parameters(); },
                              {"the layer file has 2 groups of BODY layers: each has its "
                               "coefficients (group_parameters)"});
    const auto plain = stage(4, 1, {4, 0, 0, 0, 0}, 1);
    check_throws<InvalidInput>([&] { (void)model.predict(plain.view()); },
                               {"the layer file has 2 groups of BODY layers: a placement must "
                                "count its layers per group (predict_grouped)"});
}

BOOST_AUTO_TEST_CASE(a_group_without_memory_is_refused_naming_it) {
    check_throws<InvalidInput>(
        [] {
            const TableModel model(R"({"layers_description": [
            {"name": "dense", "type": "BODY", "nb_layer": 3, "memory_parameter": 1536,
             "memory_activation": 640},
            {"name": "moe", "type": "BODY", "nb_layer": 12, "memory_activation": 896}]})");
        },
        {"layers_description[1]: the BODY entry \"moe\" has no memory_parameter"});
    check_throws<InvalidInput>(
        [] {
            const TableModel model(R"({"layers_description": [
            {"name": "dense", "type": "BODY", "nb_layer": 3, "memory_parameter": 1536},
            {"name": "moe", "type": "BODY", "nb_layer": 12, "memory_parameter": 6144,
             "memory_activation": 896}]})");
        },
        {"layers_description[0]: the BODY entry \"dense\" gives no activation memory"});
}

BOOST_AUTO_TEST_CASE(repeated_entries_of_a_group_add_up_its_layers) {
    // dense, moe, dense, moe: two groups of 4 + 4 and 6 + 6 layers, in order of first
    // appearance.
    const TableModel model(R"({"layers_description": [
        {"name": "dense", "type": "BODY", "nb_layer": 4, "memory_parameter": 10,
         "memory_activation": 2},
        {"name": "moe", "type": "BODY", "nb_layer": 6, "memory_parameter": 40,
         "memory_activation": 3},
        {"name": "dense", "type": "BODY", "nb_layer": 4, "memory_parameter": 10,
         "memory_activation": 2},
        {"name": "moe", "type": "BODY", "nb_layer": 6, "memory_parameter": 40,
         "memory_activation": 3}]})");
    BOOST_TEST(model.groups() == (std::vector<std::string>{"dense", "moe"}));
    BOOST_TEST(model.table().groups[0].num_layers == 8u);
    BOOST_TEST(model.table().groups[1].num_layers == 12u);
    // 8 dense and 12 moe layers fit one stage; 0 + 8 x 10 + 8 x 2 x 2 + 12 x 40 + 12 x 3 x 2.
    const auto whole = grouped_stage(1, 0, {{{{8, 0, 0, 0, 0}, {12, 0, 0, 0, 0}}, 2}});
    BOOST_TEST(model.predict_grouped(whole.grouped_view()) == 80.0 + 32.0 + 480.0 + 72.0);
}

BOOST_AUTO_TEST_CASE(a_file_of_one_group_predicts_grouped_as_plain) {
    const TableModel model(read_text(samples_dir / "llama70b-layers.json"));
    BOOST_TEST(model.groups() == (std::vector<std::string>{"decoder"}));
    ppb::StagePlacement placement{8, 7, {chunk({3, 5, 2, 0, 1}, 1)}};
    placement.set_group_layers({3, 5, 2, 0, 1});
    BOOST_TEST(model.predict_grouped(placement.grouped_view()) == model.predict(placement.view()));
    const auto group = model.group_parameters(0);
    const auto plain = model.parameters();
    BOOST_TEST_REQUIRE((group.has_value() && plain.has_value()));
    BOOST_TEST(group->per_layer_mb == plain->per_layer_mb);
    BOOST_TEST(group->identified == plain->identified);
}

BOOST_AUTO_TEST_CASE(the_report_gives_each_group) {
    const TableModel model(deepseek_like());
    const auto report = boost::json::parse(model.report()).as_object();
    const auto& parameters = report.at("parameters").as_object();
    BOOST_TEST(parameters.at("const_mb").to_number<double>() == 2048.0);
    BOOST_TEST(!parameters.contains("param_per_layer_mb"));
    const auto& groups = parameters.at("groups").as_object();
    BOOST_TEST(groups.at("dense").at("param_per_layer_mb").to_number<double>() == 1536.0);
    BOOST_TEST(groups.at("dense").at("activation_mb").at("comm").is_null());
    BOOST_TEST(groups.at("moe").at("activation_mb").at("both").to_number<double>() == 160.0);
    const auto& diagnostics = report.at("diagnostics").as_object();
    BOOST_TEST(diagnostics.at("groups").at("moe").to_number<int>() == 12);
    const auto& not_considered = diagnostics.at("not_considered").as_array();
    BOOST_TEST_REQUIRE(not_considered.size() == 2u);
    BOOST_TEST(not_considered[0].as_string() == "groups.dense.activation_mb.comm");
    BOOST_TEST(not_considered[1].as_string() == "groups.dense.activation_mb.both");
}

BOOST_AUTO_TEST_CASE(the_built_plugin_predicts_groups_through_the_c_boundary) {
    const auto candidate = ppb::inspect_plugin_file(build_plugin_dir / "ppb-table-1.0.0.so");
    BOOST_TEST_REQUIRE((candidate.verdict == ppb::Verdict::usable), candidate.reason);
    const ppb::MemoryModel model = ppb::open_model(candidate, deepseek_like());
    BOOST_TEST(model.supports_groups());
    BOOST_TEST(model.groups() == (std::vector<std::string>{"dense", "moe"}));
    const auto first = grouped_stage(4, 0, {{{{3, 0, 0, 0, 0}, {1, 0, 0, 0, 1}}, 4}});
    BOOST_TEST(model.predict_grouped(first.grouped_view()) == 33856.0);
    const auto p = model.group_parameters(moe);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->per_layer_mb == 6144.0);
    // A plain placement and parameters() are refused by the generated table.
    const auto plain = stage(4, 1, {4, 0, 0, 0, 0}, 1);
    try {
        (void)model.predict(plain.view());
        BOOST_ERROR("a plain placement was predicted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT, e.what());
        BOOST_TEST(contains(e.what(), "2 groups (dense, moe)"), e.what());
    }
    const auto too_many = grouped_stage(2, 1, {{{{}, {13, 0, 0, 0, 0}}, 1}});
    try {
        (void)model.predict_grouped(too_many.grouped_view());
        BOOST_ERROR("13 moe layers were predicted");
    } catch (const ppb::ModelError& e) {
        BOOST_TEST(e.status() == PPB_ERR_INVALID_INPUT, e.what());
        BOOST_TEST(contains(e.what(), "13 layers of group 'moe', more than the 12"), e.what());
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace table_groups_tests
