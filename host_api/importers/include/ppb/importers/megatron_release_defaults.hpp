// ppb/importers/megatron_release_defaults.hpp — the defaults and behaviours of Megatron-LM that
// change memory and changed between releases, with the commit that changed each: the data
// 'ppb import megatron-options' follows so that an older run is never read with today's defaults.
//
// Two kinds of row:
//   * a flag's default (flag set): the value argparse gives the attribute when the flag is not
//     given, as JSON. These repeat facts of the flag table (megatron_flags.hpp) and a test checks
//     that they agree release by release; they are here to carry the commit and the reason;
//   * a behaviour of Megatron's code (flag empty): which GPT model pretrain_gpt.py builds, how
//     many tokens the NullTokenizer adds, up to which key length the fused softmax kernel runs,
//     read from the file named in `source`.
// `changed_by` is the commit on Megatron-LM's main branch that made the row's value (short hash
// and date; empty for the oldest value); the release columns are those of megatron_flags.hpp.
#ifndef PPB_IMPORTERS_MEGATRON_RELEASE_DEFAULTS_HPP
#define PPB_IMPORTERS_MEGATRON_RELEASE_DEFAULTS_HPP

#include <ppb/importers/megatron_flags.hpp>

#include <span>
#include <string_view>

namespace ppb::importers::megatron {

struct ReleaseDefault {
    std::string_view setting;  // what the row is about, for people: "transformer implementation"
    std::string_view key;      // what the mapping asks for: "transformer_impl"
    std::string_view flag;     // the flag whose default it is, or empty for a behaviour
    std::string_view first;    // first and last release (names of megatron_flags.hpp)
    std::string_view last;
    std::string_view value;       // JSON for a flag's default; the behaviour's value otherwise
    std::string_view changed_by;  // "e7b74a4b7e (2024-04-03)"; empty for the oldest value
    std::string_view source;      // NVIDIA/Megatron-LM file it is read from
};

// Every row, grouped by key, oldest first.
[[nodiscard]] std::span<const ReleaseDefault> release_defaults();

// The value of `key` at `release`; empty when no row covers the release.
[[nodiscard]] std::string_view release_default(std::string_view key, ReleaseIndex release);

}  // namespace ppb::importers::megatron

#endif  // PPB_IMPORTERS_MEGATRON_RELEASE_DEFAULTS_HPP
