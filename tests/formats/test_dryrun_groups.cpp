// ppb/dryrun_format.hpp: the "ppb.dryrun/3" revision — groups of body layers (dense and MoE
// layers), layers counted per group, and every way to get it wrong, with its JSON path.
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>

#include "../common/error_testing.hpp"
#include "dryrun_text.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

using ppb::DryRunSet;
using ppb::InputError;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace dryrun_groups_tests {

namespace {

// A ppb.dryrun/3 document of groups dense and moe with the given observations.
std::string document_v3(const std::string& observations,
                        const std::string& groups = R"(["dense", "moe"])") {
    return R"({"format": "ppb.dryrun/3", "groups": )" + groups +
           R"(, "num_stages": 4, "micro_batches": 8, "observations": [)" + observations + "]}";
}

const std::string stage0 =
    R"({"stage": 0, "layers": {"dense": {"none": 3}, "moe": {"full": 1, "none": 2}},
        "peak_memory_mb": 50000})";

}  // namespace

BOOST_AUTO_TEST_SUITE(dryrun_groups)

BOOST_AUTO_TEST_CASE(layers_are_counted_per_group_and_summed_per_chunk) {
    const DryRunSet set = read_dryrun(document_v3(
        stage0 + R"(, {"stage": 2, "layers": {"moe": {"select": 4}}, "peak_memory_mb": 40000})"));
    BOOST_TEST(set.revision == 3u);
    const std::vector<std::string> groups = {"dense", "moe"};
    BOOST_TEST(set.groups == groups, boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(set.observations.size() == 2u);

    const auto& first = set.observations[0].placement;
    BOOST_TEST(first.grouped());
    BOOST_TEST(first.num_groups() == 2u);
    // chunk 0: dense none=3; moe none=2 full=1
    const std::vector<std::uint32_t> expected = {3, 0, 0, 0, 0, 2, 0, 0, 0, 1};
    BOOST_TEST(first.group_layers == expected, boost::test_tools::per_element());
    BOOST_TEST(first.chunks[0].layers[PPB_KIND_NONE] == 5u);
    BOOST_TEST(first.chunks[0].layers[PPB_KIND_FULL] == 1u);
    BOOST_TEST(first.chunks[0].in_flight == 4u);  // 1F1B: min(p - s, m)

    const auto& second = set.observations[1].placement;
    BOOST_TEST(second.group_layer(0, 0, PPB_KIND_SELECT) == 0u);
    BOOST_TEST(second.group_layer(0, 1, PPB_KIND_SELECT) == 4u);
    BOOST_TEST(second.chunks[0].layers[PPB_KIND_SELECT] == 4u);
    BOOST_TEST(second.chunks[0].in_flight == 2u);
}

BOOST_AUTO_TEST_CASE(chunks_count_their_layers_per_group) {
    const DryRunSet set = read_dryrun(R"({"format": "ppb.dryrun/3", "groups": ["dense", "moe"],
        "num_stages": 2, "micro_batches": 8, "schedule": "interleaved", "num_chunks": 2,
        "observations": [{"stage": 1, "chunks": [
            {"layers": {"dense": {"none": 1}, "moe": {"none": 2}}, "in_flight": 5},
            {"layers": {"moe": {"full": 3}}, "in_flight": 2}], "peak_memory_mb": 30000}]})");
    const auto& p = set.observations[0].placement;
    BOOST_TEST_REQUIRE(p.chunks.size() == 2u);
    BOOST_TEST(p.group_layers.size() == 2u * 2u * PPB_KIND_COUNT);
    BOOST_TEST(p.group_layer(0, 0, PPB_KIND_NONE) == 1u);
    BOOST_TEST(p.group_layer(0, 1, PPB_KIND_NONE) == 2u);
    BOOST_TEST(p.group_layer(1, 1, PPB_KIND_FULL) == 3u);
    BOOST_TEST(p.group_layer(1, 0, PPB_KIND_FULL) == 0u);
    BOOST_TEST(p.chunks[0].layers[PPB_KIND_NONE] == 3u);
    BOOST_TEST(p.chunks[1].layers[PPB_KIND_FULL] == 3u);
    BOOST_TEST(p.chunks[0].in_flight == 5u);
    BOOST_TEST(p.chunks[1].in_flight == 2u);
}

BOOST_AUTO_TEST_CASE(v1_and_v2_documents_have_no_groups) {
    const DryRunSet set =
        read_dryrun(R"({"format": "ppb.dryrun/2", "num_stages": 2, "observations": [
        {"stage": 0, "layers": {"none": 3}, "peak_memory_mb": 100}]})");
    BOOST_TEST(set.groups.empty());
    BOOST_TEST(!set.observations[0].placement.grouped());
}

BOOST_AUTO_TEST_CASE(an_unknown_group_names_its_path_and_the_declared_groups) {
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v3(
                        R"({"stage": 1, "layers": {"moe ": {"none": 1}}, "peak_memory_mb": 9})")),
                    "dryrun.json: observations[0].layers: unknown group 'moe ' (did you mean "
                    "'moe'? expected one of: dense, moe)");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(R"({"format": "ppb.dryrun/3", "groups": ["dense", "moe"],
        "num_stages": 2, "schedule": "interleaved", "num_chunks": 2, "micro_batches": 4,
        "observations": [{"stage": 1, "chunks": [{"layers": {"dense": {"none": 1}}},
                                                  {"layers": {"mlp": {"none": 1}}}],
                          "peak_memory_mb": 9}]})"),
                    "dryrun.json: observations[0].chunks[1].layers: unknown group 'mlp' "
                    "(did you mean 'moe'? expected one of: dense, moe)");
}

BOOST_AUTO_TEST_CASE(the_groups_member_is_required_and_checked) {
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/3", "num_stages": 2,
        "observations": [{"stage": 0, "layers": {}, "peak_memory_mb": 1}]})"),
                    "dryrun.json: missing required field 'groups' (ppb.dryrun/3 counts layers "
                    "per group");
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, R"(["dense", "moe", "dense"])")),
                    "dryrun.json: groups[2]: group 'dense' is named twice (also groups[0]): "
                    "names must be distinct");
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, R"([])")),
                    "dryrun.json: groups: has 0 names (expected 1 to 64 groups of body layers)");
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, R"(["dense", ""])")),
                    "dryrun.json: groups[1]: the name of a group is empty");
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, R"(["dense", 3])")),
                    "dryrun.json: groups[1]: expected the name of a group of body layers (a "
                    "string), got 3");
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, R"("dense")")),
                    "dryrun.json: groups: expected an array, got \"dense\"");
    std::string many = "[";
    for (int g = 0; g < 65; ++g)
        many += (g == 0 ? "\"g" : ", \"g") + std::to_string(g) + "\"";
    PPB_CHECK_ERROR(InputError, read_dryrun(document_v3(stage0, many + "]")),
                    "dryrun.json: groups: has 65 names (expected 1 to 64 groups of body layers)");
}

BOOST_AUTO_TEST_CASE(wrong_types_inside_grouped_layers) {
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v3(R"({"stage": 1, "layers": {"moe": 3}, "peak_memory_mb": 9})")),
        "dryrun.json: observations[0].layers.moe: expected an object, got 3");
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(
            document_v3(R"({"stage": 1, "layers": {"moe": {"fulll": 1}}, "peak_memory_mb": 9})")),
        "dryrun.json: observations[0].layers.moe: unknown recompute kind 'fulll' (did you mean "
        "'full'?");
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(document_v3(
                        R"({"stage": 1, "layers": {"moe": {"full": 1.5}}, "peak_memory_mb": 9})")),
                    "dryrun.json: observations[0].layers.moe.full: expected an integer");
    // Kinds directly under "layers", as in /2: each is an unknown group.
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v3(R"({"stage": 1, "layers": {"none": 3}, "peak_memory_mb": 9})")),
        "dryrun.json: observations[0].layers: 'none' is a recompute kind, but ppb.dryrun/3 counts "
        "layers per group: write \"layers\": {\"dense\": {\"none\": ...}} with a group of: "
        "dense, moe");
}

BOOST_AUTO_TEST_CASE(groups_in_an_older_revision_name_the_revision_that_has_them) {
    PPB_CHECK_ERROR(InputError,
                    read_dryrun(R"({"format": "ppb.dryrun/2", "groups": ["dense", "moe"],
        "num_stages": 2, "observations": [{"stage": 0, "layers": {"none": 1},
        "peak_memory_mb": 1}]})"),
                    "dryrun.json: groups: 'groups' needs \"format\": \"ppb.dryrun/3\" (in "
                    "ppb.dryrun/2 every layer is of one group");
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/1", "groups": ["dense"],
        "num_stages": 2, "observations": [{"stage": 0, "layers": {"none": 1},
        "peak_memory_mb": 1}]})"),
                    "dryrun.json: groups: 'groups' needs \"format\": \"ppb.dryrun/3\" (in "
                    "ppb.dryrun/1 every layer is of one group");
    // Layers per group in a /2 document: its layers are kinds.
    PPB_CHECK_ERROR(InputError, read_dryrun(R"({"format": "ppb.dryrun/2", "num_stages": 2,
        "observations": [{"stage": 0, "layers": {"moe": {"none": 1}}, "peak_memory_mb": 1}]})"),
                    "dryrun.json: observations[0].layers: unknown recompute kind 'moe'");
}

BOOST_AUTO_TEST_CASE(duplicates_compare_the_layers_of_each_group) {
    // The same totals (none = 3) split differently between the groups: two placements, so their
    // different memories do not contradict each other.
    const DryRunSet set = read_dryrun(document_v3(
        R"({"stage": 1, "layers": {"dense": {"none": 3}}, "peak_memory_mb": 20000},
           {"stage": 1, "layers": {"moe": {"none": 3}}, "peak_memory_mb": 30000})"));
    BOOST_TEST(set.observations.size() == 2u);
    // The same split: a contradiction, described per group.
    PPB_CHECK_ERROR(
        InputError,
        read_dryrun(document_v3(
            R"({"stage": 1, "layers": {"dense": {"none": 1}, "moe": {"none": 2}},
                "peak_memory_mb": 20000},
               {"stage": 1, "layers": {"moe": {"none": 2}, "dense": {"none": 1}},
                "peak_memory_mb": 30000})")),
        "dryrun.json: observations[0] and observations[1] describe the same placement (stage 1 "
        "of 4, 3 in flight, layers dense: none=1, moe: none=2) but their memories differ by "
        "33.3 %");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dryrun_groups_tests
