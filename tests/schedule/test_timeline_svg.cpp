// ppb/timeline_svg.hpp: the picture is well-formed XML with exactly one block per operation.
#include <ppb/simulator.hpp>
#include <ppb/timeline_svg.hpp>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

namespace pt = boost::property_tree;
using ppb::Schedule;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace timeline_svg_tests {

namespace {

ppb::Simulation simulated(Schedule schedule, std::uint32_t p, std::uint32_t v, std::uint32_t m,
                          bool with_memory) {
    ppb::SimulationInput in;
    in.schedule = schedule;
    in.num_stages = p;
    in.num_chunks = v;
    in.micro_batches = m;
    in.with_memory = with_memory;
    for (std::uint32_t s = 0; s < p; ++s) {
        in.costs.emplace_back();
        for (std::uint32_t c = 0; c < v; ++c)
            in.costs.back().push_back({1.0 + 0.1 * s, 2.5, c == 0 ? 0.5 : 0.0, 100.0 + c});
        in.static_mb.push_back(1000.0 + s);
    }
    return ppb::simulate(in);
}

pt::ptree parse(const std::string& svg) {
    std::istringstream in(svg);
    pt::ptree tree;
    pt::read_xml(in, tree);  // throws on malformed XML
    return tree;
}

// Calls `visit` with every element below `node` and its tag.
void each_element(const pt::ptree& node,
                  const std::function<void(const std::string&, const pt::ptree&)>& visit) {
    for (const auto& [tag, child] : node) {
        if (tag == "<xmlattr>" || tag == "<xmlcomment>")
            continue;
        visit(tag, child);
        each_element(child, visit);
    }
}

std::string attribute(const pt::ptree& element, const std::string& name) {
    return element.get<std::string>("<xmlattr>." + name, "");
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_block_per_operation_with_its_data) {
    for (const auto& [schedule, p, v, m] : {std::tuple{Schedule::one_f_one_b, 4u, 1u, 6u},
                                            {Schedule::interleaved, 3u, 2u, 6u},
                                            {Schedule::interleaved_less_memory, 2u, 3u, 4u},
                                            {Schedule::dualpipe_v, 3u, 2u, 7u}}) {
        const ppb::Simulation sim = simulated(schedule, p, v, m, true);
        const pt::ptree tree = parse(ppb::timeline_svg(sim));
        BOOST_TEST_REQUIRE(tree.count("svg") == 1u);
        std::set<std::tuple<std::string, std::string, std::string, std::string>> blocks;
        std::size_t rects = 0;
        std::size_t recomputes = 0;
        std::size_t curves = 0;
        each_element(tree.get_child("svg"), [&](const std::string& tag, const pt::ptree& e) {
            if (tag == "script" || !attribute(e, "href").empty())
                BOOST_ERROR("the picture must have no script and no external resource");
            if (tag == "rect" && attribute(e, "class") == "op") {
                ++rects;
                blocks.insert({attribute(e, "data-stage"), attribute(e, "data-chunk"),
                               attribute(e, "data-micro-batch"), attribute(e, "data-pass")});
            }
            if (tag == "rect" && attribute(e, "class") == "recompute")
                ++recomputes;
            if (tag == "polyline" && attribute(e, "class") == "memory")
                ++curves;
        });
        BOOST_TEST(rects == sim.operations.size());
        BOOST_TEST(blocks.size() == sim.operations.size());  // each operation once
        for (const auto& op : sim.operations) {
            BOOST_TEST(blocks.count({std::to_string(op.stage), std::to_string(op.chunk),
                                     std::to_string(op.micro_batch),
                                     op.pass == ppb::Pass::forward ? "forward" : "backward"}) ==
                       1u);
        }
        // Chunk 0's backwards carry recomputation: one hatched part each.
        BOOST_TEST(recomputes == std::size_t{p} * m);
        BOOST_TEST(curves == p);
    }
}

BOOST_AUTO_TEST_CASE(block_times_read_back) {
    const ppb::Simulation sim = simulated(Schedule::one_f_one_b, 2, 1, 3, false);
    const pt::ptree tree = parse(ppb::timeline_svg(sim));
    std::size_t i = 0;
    std::size_t curves = 0;
    each_element(tree.get_child("svg"), [&](const std::string& tag, const pt::ptree& e) {
        if (tag == "polyline")
            ++curves;
        if (tag != "rect" || attribute(e, "class") != "op")
            return;
        BOOST_TEST_REQUIRE(i < sim.operations.size());
        BOOST_TEST(std::stod(attribute(e, "data-start")) == sim.operations[i].start);
        BOOST_TEST(std::stod(attribute(e, "data-end")) == sim.operations[i].end);
        ++i;
    });
    BOOST_TEST(i == sim.operations.size());
    BOOST_TEST(curves == 0u);  // no memory given, no memory panel
}

BOOST_AUTO_TEST_CASE(the_title_is_escaped) {
    const ppb::Simulation sim = simulated(Schedule::one_f_one_b, 1, 1, 1, false);
    const pt::ptree tree = parse(ppb::timeline_svg(sim, {"a < b & \"c\"", 600.0}));
    std::string title;
    each_element(tree.get_child("svg"), [&](const std::string& tag, const pt::ptree& e) {
        if (tag == "text" && attribute(e, "class") == "title")
            title = e.get_value<std::string>();
    });
    BOOST_TEST(title == "a < b & \"c\"");
}

}  // namespace timeline_svg_tests
