// Helpers of the table model's tests: placements, files, and checks of error messages.
#ifndef PPB_TESTS_TABLE_SUPPORT_HPP
#define PPB_TESTS_TABLE_SUPPORT_HPP

#include <ppb/abi.h>
#include <ppb/placement.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

namespace ppb::table_test {

using Layers = std::array<std::uint32_t, PPB_KIND_COUNT>;

inline const std::filesystem::path samples_dir = PPB_SAMPLES_DIR;
inline const std::filesystem::path build_plugin_dir = PPB_BUILD_PLUGIN_DIR;

// Layers by kind: {none, select, comm, both, full}.
inline ppb_chunk chunk(Layers layers, std::uint32_t in_flight) {
    ppb_chunk c{};
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
        c.layers[k] = layers[k];
    c.in_flight = in_flight;
    return c;
}

// Stage `s` of `p` with one chunk.
inline StagePlacement stage(std::uint32_t p, std::uint32_t s, Layers layers,
                            std::uint32_t in_flight) {
    return StagePlacement{p, s, {chunk(layers, in_flight)}};
}

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    BOOST_TEST_REQUIRE(in.good(), "cannot read " << path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// Runs `call`, which must throw `Error`, and checks that its message holds every part.
template <class Error, class Call>
void check_throws(Call&& call, std::initializer_list<std::string_view> parts) {
    try {
        call();
        BOOST_ERROR("no exception thrown; expected one mentioning '" << *parts.begin() << "'");
    } catch (const Error& e) {
        const std::string message = e.what();
        for (const std::string_view part : parts)
            BOOST_TEST(contains(message, part), "'" << part << "' not in: " << message);
    }
}

}  // namespace ppb::table_test

#endif  // PPB_TESTS_TABLE_SUPPORT_HPP
