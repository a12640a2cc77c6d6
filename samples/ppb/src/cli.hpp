// The ppb command line, declared with CLI11: each option once, with its description, type,
// default and check, so that the help text is generated from what is parsed.
#ifndef PPB_CLI_HPP
#define PPB_CLI_HPP

#include <ppb/abi.h>
#include <ppb/errors.hpp>
#include <ppb/limits.hpp>
#include <ppb/output_file.hpp>

// Only CLI11's App and what it needs (options, validators): its help formatter and config
// readers (CLI/Formatter.hpp, CLI/Config.hpp) are inline virtual functions that every file
// including them compiles again, about 60 % of the cost of CLI/CLI.hpp (4.7 s of CPU of 7.3 per
// file under the sanitizers). cli.cpp alone constructs the App and includes them; the commands
// add their subcommands through add_command (App's constructor needs the formatter's
// definitions), so no other file uses a function it does not define.
#include <CLI/App.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ppb::cli {

// Results go through these: stdout and files written whole and checked (OutputError: exit 1).
using ppb::OutputError;
using ppb::write_output_file;
using ppb::write_stdout;

// A usage mistake: exit status 2, with a hint to read the command's --help.
class UsageError : public InputError {
  public:
    using InputError::InputError;
    UsageError(const std::string& message, std::string command)
        : InputError(message), command_(std::move(command)) {}
    // The command whose --help to read: "ppb", "ppb fit", "ppb import megatron".
    [[nodiscard]] const std::string& command() const noexcept { return command_; }

  private:
    std::string command_ = "ppb";
};

// A subcommand, and what runs it once the command line is parsed.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
    std::string subcommand_noun;  // what its subcommands are ("log format"), if it has some
    // Where the words after the command line's first '--' go, verbatim, for a command that passes
    // them on to another tool: CLI11 reads a bracketed word ("[0,1]", "[attn mlp]") given to a
    // list as a list of its own, without the brackets and split at its commas.
    std::vector<std::string>* words_after_terminator = nullptr;
};
using Commands = std::vector<Command>;

// Adds the subcommand `name` to `parent`: `summary` is its line in the parent's help and the
// first line of its own; `details` (what it does, its exit statuses) end its help. The commands'
// files add subcommands only through it (see the include of CLI/App.hpp above).
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& details);

// Checks for option values; CLI11 puts the option's name before the message.
// A whole number, at least `min`.
[[nodiscard]] CLI::Validator whole_number(std::uint32_t min = 0);
// A finite number.
[[nodiscard]] CLI::Validator finite_number();
// A whole number within `range` (ppb/limits.hpp): "4294967295 is out of range (1 to 1024 stages)".
[[nodiscard]] CLI::Validator count_in(const limits::CountRange& range);
// A number within `range`: "1e307 is out of range (greater than 0, at most 1e9 MB)".
[[nodiscard]] CLI::Validator number_in(const limits::RealRange& range);
// A fraction in [0, 1).
[[nodiscard]] CLI::Validator fraction();
// One recompute kind: none, select, comm, both or full.
[[nodiscard]] CLI::Validator recompute_kind();
// A schedule's name: "unknown schedule 'interleave' (did you mean 'interleaved'? expected …)".
[[nodiscard]] CLI::Validator schedule_choice();
// KIND=N, a recompute kind and a layer count.
[[nodiscard]] CLI::Validator kind_count();

// The items of a comma-separated list option: each occurrence takes one word, split at commas,
// each item checked on its own.
CLI::Option* as_comma_list(CLI::Option* option);

// Layer counts per kind from KIND=N items (checked by kind_count); a kind given twice is an
// error naming `option`.
[[nodiscard]] ppb_chunk chunk_from_items(const std::vector<std::string>& items,
                                         std::string_view option);
// A mask of PPB_KIND_BIT from kind names (checked by recompute_kind).
[[nodiscard]] std::uint32_t kind_mask(const std::vector<std::string>& names);

// Parses argv and runs the selected command; CLI11's parse errors are usage errors (exit 2,
// with a hint naming the command's --help), help and version go to stdout (exit 0).
int run(int argc, char** argv);

}  // namespace ppb::cli

#endif  // PPB_CLI_HPP
