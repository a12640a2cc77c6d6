// Megatron-LM's --pipeline-model-parallel-layout (ppb/importers/megatron.hpp).
#include <ppb/importers/megatron.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <cctype>
#include <string>

namespace ppb::importers {
namespace {

constexpr std::string_view flag = "--pipeline-model-parallel-layout";
// A layout longer than this after unrolling describes more layers than ppb plans.
constexpr std::size_t most_characters = 1U << 22;

[[noreturn]] void fail(std::string_view text, const std::string& problem) {
    throw FlagError(fmt::format("{} '{}': {}", flag, text, problem));
}

// The repeat count after "*" at `pos` (which is just past the '*'); advances pos.
std::size_t repeat_count(std::string_view text, std::string_view s, std::size_t& pos) {
    std::size_t n = 0;
    const std::size_t start = pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])) != 0) {
        n = n * 10 + static_cast<std::size_t>(s[pos] - '0');
        if (n > most_characters)
            fail(text, "a repeat count is too large");
        ++pos;
    }
    if (pos == start)
        fail(text, "'*' must be followed by a repeat count");
    return n;
}

void append_repeated(std::string_view text, std::string& out, std::string_view what,
                     std::size_t n) {
    if (what.size() * n + out.size() > most_characters)
        fail(text, "the layout is too long");
    for (std::size_t i = 0; i < n; ++i)
        out += what;
}

}  // namespace

std::vector<std::vector<std::uint32_t>> megatron_pp_layout(std::string_view text, std::uint32_t p,
                                                           std::uint32_t num_layers) {
    std::string s;
    for (const char c : text) {
        if (c != ',')
            s += c;
    }
    // (X)*n first, as Megatron's first pattern, then c*n.
    std::string groups;
    for (std::size_t i = 0; i < s.size();) {
        if (s[i] != '(') {
            groups += s[i++];
            continue;
        }
        const std::size_t close = s.find(')', i + 1);
        if (close == std::string::npos || close == i + 1 || close + 1 >= s.size() ||
            s[close + 1] != '*')
            fail(text, "a parenthesis must enclose a non-empty group followed by '*n'");
        const std::string_view inner = std::string_view(s).substr(i + 1, close - i - 1);
        if (inner.find('(') != std::string_view::npos)
            fail(text, "nested parentheses are not part of the layout grammar");
        std::size_t pos = close + 2;
        append_repeated(text, groups, inner, repeat_count(text, s, pos));
        i = pos;
    }
    std::string unrolled;
    for (std::size_t i = 0; i < groups.size();) {
        if (i + 1 < groups.size() && groups[i + 1] == '*') {
            std::size_t pos = i + 2;
            append_repeated(text, unrolled, std::string_view(groups).substr(i, 1),
                            repeat_count(text, groups, pos));
            i = pos;
        } else {
            unrolled += groups[i++];
        }
    }
    std::vector<std::uint32_t> virtual_stages(1, 0);
    std::uint64_t decoders = 0;
    for (const char c : unrolled) {
        switch (c) {
            case '|':
                virtual_stages.push_back(0);
                break;
            case 't':
                ++virtual_stages.back();
                ++decoders;
                break;
            case 'E':
            case 'L':
                break;
            case 'm':
                fail(text, "MTP layers ('m') are not part of ppb's memory model");
            default:
                fail(text, fmt::format("'{}' is not a layer (E embedding, t decoder, L loss, | "
                                       "between stages)",
                                       c));
        }
    }
    if (virtual_stages.size() % p != 0)
        fail(text, fmt::format("{} virtual stages are not a multiple of "
                               "--pipeline-model-parallel-size {}",
                               virtual_stages.size(), p));
    const std::size_t chunks = virtual_stages.size() / p;
    if (!limits::chunks.contains(static_cast<std::uint32_t>(chunks)))
        fail(text, fmt::format("{} chunks per stage: {}", chunks,
                               limits::out_of_range(std::to_string(chunks), limits::chunks)));
    if (decoders != num_layers)
        fail(text,
             fmt::format("{} decoder layers ('t'), but --num-layers is {}", decoders, num_layers));
    std::vector<std::vector<std::uint32_t>> out(p, std::vector<std::uint32_t>(chunks, 0));
    for (std::size_t i = 0; i < virtual_stages.size(); ++i)
        out[i % p][i / p] = virtual_stages[i];
    return out;
}

}  // namespace ppb::importers
