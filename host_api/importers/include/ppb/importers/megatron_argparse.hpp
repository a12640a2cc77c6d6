// ppb/importers/megatron_argparse.hpp — a Megatron-LM argument list read exactly as one release's
// argparse parser reads it (the flags of megatron_flags.hpp), and the release a run's arguments
// belong to.
//
// Reading follows Python's argparse (Lib/argparse.py, _parse_known_args, as in Python 3.10 to
// 3.12, the versions of the PyTorch containers Megatron-LM runs in), with Megatron's parser
// settings (allow_abbrev=False, prefix "-", no positional arguments):
//   * each argument is a flag if it is one of the release's flags exactly, or "FLAG=VALUE" with
//     FLAG one of them ("--lr=3e-4"); a token starting with '-' that is a negative number
//     ("-1", "-.5": ^-\d+$|^-\d*\.\d+$), contains a space, or is "-" alone is a value; "--" makes
//     every later argument a value; any other token starting with '-' is an unknown flag;
//   * a flag takes the values after it as its nargs says: one (None), any number ('*'), at
//     least one ('+'), exactly N, none for switches. A value never starts a new flag, so
//     "--recompute-modules core_attn mlp --bf16" gives two modules. "FLAG=VALUE" gives exactly
//     one value (a switch refuses it: argparse's "ignored explicit argument");
//   * each value is converted with the flag's type (int() and float() as Python reads them:
//     surrounding spaces, a sign, '_' between digits; float() also inf and nan) and checked
//     against its choices. A value outside the choices is kept apart (choice_errors): choices
//     change between commits (a branch's config may give one its release lacks), so the caller
//     refuses it only where the value matters;
//   * a flag given twice keeps the last (argparse stores each occurrence), and flags that set
//     the same attribute (dest) overwrite each other in order: "--disable-bias-linear" then
//     "--add-bias-linear" leaves biases on;
//   * values no flag takes, and unknown flags, are errors ("unrecognized arguments").
// Every attribute of the release starts at the parser's default (megatron_flags.hpp); argparse's
// mutually exclusive groups (only kitchen's recipe and config file) are not checked.
//
// The release: Megatron-LM's flags come and go (--use-legacy-models exists from 0.8 to 0.17,
// --hybrid-layer-pattern from 0.17), and their defaults change (--transformer-impl is "local" up
// to 0.5). read_megatron_arguments() reads the list with every release's parser; the run's
// release is the one the caller names (--megatron-version), else the newest release whose parser
// accepts the whole list — the note says which releases accept it and which flag decided.
#ifndef PPB_IMPORTERS_MEGATRON_ARGPARSE_HPP
#define PPB_IMPORTERS_MEGATRON_ARGPARSE_HPP

#include <ppb/importers/megatron_flags.hpp>
#include <ppb/importers/setting_words.hpp>

#include <boost/json/value.hpp>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::importers::megatron {

// One flag as given, in order.
struct GivenFlag {
    std::string name;                 // "--recompute-modules"
    std::vector<std::string> values;  // as given ("core_attn", "mlp"); empty for a switch
};

// The attributes argparse leaves after reading a list with one release's parser.
class ParsedArguments {
  public:
    // `values`: the attributes set beyond the release's own defaults (declared flags' defaults,
    // the values given), by dest; the release's defaults are its table's, shared by every parse.
    ParsedArguments(ReleaseIndex release,
                    std::map<std::string, boost::json::value, std::less<>> values,
                    std::vector<GivenFlag> given);

    [[nodiscard]] ReleaseIndex release() const { return release_; }

    // The value of the attribute `flag` sets, as argparse leaves it: the last value given to
    // any flag setting it, else the default. JSON: null, a bool, an integer, a real, a string,
    // or an array of them (nargs '*', '+', N). nullopt when the release does not know `flag`.
    [[nodiscard]] std::optional<boost::json::value> value(std::string_view flag) const;

    // Whether `flag` itself was given.
    [[nodiscard]] bool given(std::string_view flag) const;

    // The flags given, in order.
    [[nodiscard]] std::span<const GivenFlag> given_flags() const { return given_; }

  private:
    ReleaseIndex release_;
    std::map<std::string, boost::json::value, std::less<>> values_;           // dest -> value set
    const std::map<std::string, boost::json::value, std::less<>>* defaults_;  // the release's
    std::vector<GivenFlag> given_;
};

// A flag the run's Megatron-LM has and no release of the table does (a branch, a fork, a
// script's extra_args_provider), declared by the caller: read with `arity` values (store, text,
// no choices, default None) into the attribute named after it ("--my-flag": my_flag).
struct DeclaredFlag {
    std::string name;  // "--my-flag"
    FlagArity arity = FlagArity::one;
    std::uint8_t count = 1;  // for FlagArity::exactly
};

// "my-flag", "--my-flag", "--my-flag:0" (a switch), ":N" (exactly N values), ":*", ":+"; no
// suffix is one value. Throws FlagError naming --megatron-flag (in `words`) otherwise.
[[nodiscard]] DeclaredFlag declared_flag(std::string_view text,
                                         SettingWords words = SettingWords::flags);

// A value outside a flag's choices.
struct ChoiceError {
    std::string flag;     // "--distributed-backend"
    std::string value;    // "nccl2"
    std::string message;  // "--distributed-backend 'nccl2': not one of its choices (nccl, gloo)"
};

// Reads `arguments` with `release`'s parser (and the declared flags). On failure, every problem
// found, each a sentence naming the argument ("--num-layers: expected one value", "--lr 'x': not
// a number"). Values outside their choices do not fail the parse: they are listed and the
// attribute keeps its default.
struct ParseOutcome {
    std::optional<ParsedArguments> parsed;
    std::vector<std::string> errors;
    std::vector<std::string> unknown;  // flags the release does not know, as given
    std::vector<ChoiceError> choice_errors;
};
[[nodiscard]] ParseOutcome parse_megatron_arguments(std::span<const std::string> arguments,
                                                    ReleaseIndex release,
                                                    std::span<const DeclaredFlag> declared = {});

// The release `text` names: "0.8", "0.8.0", "core_r0.8.0", "core_v0.8.0", "v0.8.0" (Megatron
// Core's version; a patch release reads as its minor release), "23.04", "23.06", "2.6", "v2.6",
// "main". A core version newer than the table reads as "main" (newer_than_known is set).
// Throws FlagError naming --megatron-version (in `words`) for anything else or a release ppb does
// not know.
struct NamedRelease {
    ReleaseIndex release;
    bool newer_than_known = false;
};
[[nodiscard]] NamedRelease release_named(std::string_view text,
                                         SettingWords words = SettingWords::flags);

// "0.8 (core_v0.8.0)", "main (d98e8a6, 2026-08-22)".
[[nodiscard]] std::string describe_release(ReleaseIndex release);

// The arguments read as the run's release reads them, with what stderr should say.
struct MegatronArguments {
    ParsedArguments parsed;
    std::vector<ReleaseIndex> accepting;     // every release whose parser accepts the list
    std::vector<std::string> notes;          // the release taken, and why
    std::vector<ChoiceError> choice_errors;  // of the release taken
};

// Reads `arguments` as the release `version` names (release_named), or, without one, the newest
// release whose parser accepts them — among those, the newest where every value is one of its
// flag's choices, if any is. Throws FlagError: the errors of that release's parser (all unknown
// flags first, each with a "did you mean" and how to declare a flag of a branch); a flag the
// named release does not have, naming it, the release and the releases that have it; flags that
// no single release has together, naming two of them and their releases. The host's own settings
// (--megatron-version, --megatron-flag) are named in `words`.
[[nodiscard]] MegatronArguments read_megatron_arguments(std::span<const std::string> arguments,
                                                        std::optional<std::string_view> version,
                                                        std::span<const DeclaredFlag> declared = {},
                                                        SettingWords words = SettingWords::flags);

}  // namespace ppb::importers::megatron

#endif  // PPB_IMPORTERS_MEGATRON_ARGPARSE_HPP
