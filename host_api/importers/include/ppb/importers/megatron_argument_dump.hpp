// ppb/importers/megatron_argument_dump.hpp — what a Megatron-LM (or MindSpeed-LLM) log says about
// the run that wrote it: the argument dump printed at start-up, the "using world size" line and
// the micro-batch line.
//
// The argument dump (NVIDIA/Megatron-LM, _print_args; every version prints through print(), one
// argument a line, sorted by lower-cased line):
//   current, megatron/training/arguments.py (commit d98e8a64ddf34856e74b24714e3bedb2f5a39553; the
//   same shape since commit 98989693a21c6f25bb37d2098789a4cd2ae2aefc, megatron/arguments.py):
//     ------------------------ arguments ------------------------
//       decoder_first_pipeline_num_layers ............... 7
//     -------------------- end of arguments ---------------------
//     each line '  ' + name + ' ' + '.' * (48 - len(name)) + ' ' + str(value);
//   old, megatron/arguments.py (commit 94e2ca575c34593bd66c5c14d09c5c143155d707):
//     -------------------- arguments --------------------
//       num_layers ...................... 24
//     ---------------- end of arguments ----------------
//     the same line with 32 in place of 48.
// A name as long as the width gets no dots ('.' * a negative number is ''): "  name  value".
// MindSpeed-LLM prints the same shape under its own title (Ascend/MindSpeed-LLM,
// mindspeed_llm/training/utils.py print_args, commit c77308a14bfcb1aa7ca61da9c1aa24a893cb1b91:
// "MindSpeed-LLM Arguments"), after its own validation (noop_layers then a Python set); Megatron
// titles it "arguments" (commit 17a6044dedf7b6e8573338e7201097f4dd837e5b made the title a
// parameter). So any title is read, and the block ends at "end of <title>".
// Values are Python's str() of the argument: 7, None, True, selective (strings bare),
// [0, 0, 1] (lists), {61, 62, 63} (sets); None means the argument is unset.
//
// "using world size: 8, data-parallel size: 1, context-parallel size: 1, ..., tensor-model-parallel
// size: 2, ..., pipeline-model-parallel size: 4" (validate_args; its older forms, since commit
// 6ea23928deb0830377cde977e8e3413586b2f7bd, spell "data-parallel-size" and have no context
// parallelism) states the world, data-, context-, tensor- and pipeline-parallel sizes;
// "setting number of microbatches to constant 32" (megatron/core/num_microbatches_calculator.py;
// "micro-batches" before commit 50c5e2deaa657715f140dd9315bf42a3cc923463, and through print()
// before commit ef6600903b4179586473611e4fba2a4c9b78cd85 moved it to logging) the micro-batch
// count.
//
// Lines may carry a prefix of the launcher or logger — "[default0]:", "[rank0]:", "0: " (srun
// -l), "INFO:megatron.core.num_microbatches_calculator:", a time stamp — which varies from line
// to line: every line is searched for its shape (a dump line by its exact dot count), not read
// from its first column, and lines of other ranks interleaved in a dump are passed over.
#ifndef PPB_IMPORTERS_MEGATRON_ARGUMENT_DUMP_HPP
#define PPB_IMPORTERS_MEGATRON_ARGUMENT_DUMP_HPP

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ppb::importers {

// One value a log states, as printed.
struct StatedValue {
    std::string text;   // str() of the value: "7", "None", "selective", "[0, 1]"
    std::string label;  // how the log names it: "decoder_first_pipeline_num_layers",
                        // "pipeline-model-parallel size" (the "using world size" line)
    std::string file;
    std::size_t line = 0;

    [[nodiscard]] std::string where() const;  // "<file>:<line>"
    [[nodiscard]] bool is_none() const { return text == "None"; }
    // "pipeline_model_parallel_size 4 (selective.log:11)"
    [[nodiscard]] std::string described() const;
};

// The statements of a run's logs, by key: the argument dump's names (pipeline_model_parallel_size,
// num_layers, ...) for the keys 'ppb import megatron' reads (is_read_key), the "using world size"
// line's sizes under the dump's names (world_size, data_parallel_size, context_parallel_size,
// tensor_model_parallel_size, pipeline_model_parallel_size) and the micro-batch line as
// "num_microbatches".
class MegatronArgumentDump {
  public:
    // Reads one line of `file` (lines of one file in order, files one after the other). Throws
    // InputError "<file>:<line>: ..." when a key is stated twice with different values (the logs
    // are not of one run), or a line a value is read from is not UTF-8.
    void read_line(std::string_view file, std::size_t line, std::string_view text);
    // Ends `file`: a dump left open (a cut log) keeps what it stated.
    void end_of_file();

    [[nodiscard]] const StatedValue* find(std::string_view key) const;
    [[nodiscard]] bool empty() const noexcept { return values_.empty(); }
    [[nodiscard]] const std::map<std::string, StatedValue, std::less<>>& values() const noexcept {
        return values_;
    }

    // Whether `key` of the argument dump is read.
    [[nodiscard]] static bool is_read_key(std::string_view key);

  private:
    void state(std::string key, StatedValue value);

    struct OpenDump {
        std::string title;
        std::size_t width = 48;  // the dump's name + dots width
    };
    std::optional<OpenDump> open_;
    std::map<std::string, StatedValue, std::less<>> values_;
};

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_MEGATRON_ARGUMENT_DUMP_HPP
