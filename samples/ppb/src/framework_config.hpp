// A plan's configuration for each framework that runs it, as that framework takes it, made from
// the members of the plan's ppb.partition/1 document (ppb/partition/plan_document.hpp,
// framework_settings): the one owner of these formats. `ppb partition` prints them
// (partition_output.cpp) and the report shows them with copy buttons (report_plan.cpp), so that
// what a person copies from the page is what the command printed.
//
//   MindFormers / SAPP: a block of a MindFormers training YAML, the keys where MindFormers reads
//     them — model.model_config.offset and recompute_config.{recompute, select_recompute,
//     select_comm_recompute} (mindspore-lab/mindformers, configs/qwen3/pretrain_qwen3_32b_4k.yaml
//     at commit b18b9a6a4b2d7c39db738baf9944ae8cd2e2f941: top-level recompute_config, offset
//     under model.model_config), each array as array_text() writes it.
//   Megatron-LM, Megatron-LM before --pipeline-model-parallel-layout, MindSpeed-LLM: the flags as
//     one shell line (shell_line()).
//   torchtitan: the job configuration's TOML tables [parallelism] and [activation_checkpoint].
// MindFormers' always; the others under the recompute rules made for them (megatron,
// torchtitan), where a plan is one they can run. A framework that cannot run the plan (or a
// torchtitan table that cannot be written) has no text and says why.
//
// The members are read with ppb/json_input.hpp's checked reader: a document whose members are not
// of the types ppb writes is refused with a ppb::InputError naming the member, never printed or
// drawn wrong.
#ifndef PPB_CLI_FRAMEWORK_CONFIG_HPP
#define PPB_CLI_FRAMEWORK_CONFIG_HPP

#include <ppb/json_input.hpp>
#include <ppb/partition/configuration_flags.hpp>
#include <ppb/partition/search.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::cli {

struct FrameworkConfig {
    // What it is for, for programs and the page's data-framework: "mindformers", "megatron",
    // "megatron-legacy", "mindspeed-llm", "torchtitan", "torchtitan-parallelism",
    // "torchtitan-activation-checkpoint" (the last two only to say why a table is missing).
    std::string framework;
    std::string title;    // for people: "Megatron-LM flags"
    std::string text;     // to paste: lines joined by '\n', no final newline; empty when none
    std::string why_not;  // when text is empty: why, for people
    std::string syntax;   // of `text`: "yaml", "shell" (one line of flags) or "toml"
};

// The configurations of the plan whose document (or framework_settings() object) is `plan`;
// `source` names it in messages. MindFormers' first.
[[nodiscard]] std::vector<FrameworkConfig> framework_configs(const boost::json::object& plan,
                                                             std::string_view source);
// The same for a plan inside a larger document (messages name the member from the document's
// root: "ranking[0].plan.megatron.args: ...").
[[nodiscard]] std::vector<FrameworkConfig> framework_configs(const JsonNode& plan);

// A searched configuration's degrees and batch in the frameworks' own settings
// (ppb/partition/configuration_flags.hpp), to put before a plan's flags and tables.
struct FrameworkDegrees {
    std::vector<std::string> megatron;  // "--tensor-model-parallel-size", "8", ...
    // ("parallelism.tensor_parallel_degree", 8), ...; empty when torchtitan_why_not says why.
    std::vector<std::pair<std::string, std::uint64_t>> torchtitan;
    std::string torchtitan_why_not;
    // ("parallel_config.data_parallel", 2), ("model.model_config.pp_interleave_num", 2), ...;
    // empty when mindformers_why_not says why (documents before them: both empty).
    std::vector<std::pair<std::string, std::uint64_t>> mindformers;
    std::string mindformers_why_not;
};

// A searched configuration's, from the library's mapping, with what the search's ranking assumed
// in its Megatron-LM flags.
[[nodiscard]] FrameworkDegrees framework_degrees(const partition::Configuration& configuration,
                                                 const partition::AssumedSettings& assumed);
// A ppb.search/1 ranking entry's degrees ("megatron_parallelism", "torchtitan_parallelism" and
// its "_why_not", "mindformers_parallelism" where the document has it), read with the checked
// reader.
[[nodiscard]] FrameworkDegrees framework_degrees(const JsonNode& ranking_entry);

// The configurations of a searched configuration's plan, each with its degrees and batch: the
// Megatron-LM and MindSpeed-LLM lines start with the degrees' flags (the plan's own
// --pipeline-model-parallel-size left out: the same), torchtitan's TOML has the degrees in
// [parallelism] before the plan's schedule and model parts, and the batch in [training].
// MindFormers' block has the degrees' parallel_config and runner_config (and pp_interleave_num
// beside the plan's offset). Every framework's under any recompute rule: a framework
// that cannot run the plan says why (e.g. the rule to plan with), and torchtitan's degrees are
// there even when its [activation_checkpoint] cannot be.
[[nodiscard]] std::vector<FrameworkConfig> framework_configs(const JsonNode& plan,
                                                             const FrameworkDegrees& degrees);

// As `ppb partition` prints them: each title and its text indented by two spaces ("none (why)"
// when it has none); a blank line before MindFormers' and one before the other frameworks'.
[[nodiscard]] std::string framework_configs_text(const std::vector<FrameworkConfig>& configs);

}  // namespace ppb::cli

#endif  // PPB_CLI_FRAMEWORK_CONFIG_HPP
