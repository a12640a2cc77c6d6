// ppb/importers/sapp_problem.hpp — the planning problem that SAPP's -init YAML states in its
// pipeline_config, read and checked as the public SAPP balancer reads and checks it
// (mindspore-ai/hyper-parallel, hyper_parallel/auto_parallel/sapp_ppb, commit 0e81ad83:
// pp_config_builder/yaml_parser.py, parse_yaml_for_optimization and YamlOptimizationConfig):
//
//   pipeline_config:
//     pipeline_num: P          required by SAPP, an integer > 0: the pipeline stages
//     micro_batch_num: M       required by SAPP, an integer > 0: micro-batches per iteration
//     num_layer: L             an integer > 0: the body layers (checked against the layer file)
//     num_of_interleave: V     an integer > 0, default 1: chunks per stage (interleaved when > 1)
//     vpp_less_memory: B       a boolean, default false: the less-memory interleaved schedule
//     optimization_level: O    0, 1 or 2, default 1: which of SAPP's ILP formulations it solves
//     memory_limit: X          an integer >= 0, default 0: MB available to a stage
//     constant_memory: C       an integer >= 0, default 0: MB SAPP adds to every stage
//     enable_simulation, use_backward_time: booleans; sim_comm_time: a finite number >= 0
//
// SAPP's rules, kept: SAPP requires pipeline_num and micro_batch_num; read_sapp_problem leaves
// them not given() when the file has neither, for its user to refuse unless a flag gives them
// ('ppb partition --sapp-config': --stages, --micro-batches). An integer field refuses a float (4.0
// included) and a boolean; a boolean field takes true/false (YAML's spellings), 0/1, 0.0/1.0 and
// the strings "true", "yes", "1", "false", "no", "0" (any case), nothing else. PyYAML reads a plain
// 010 as octal 8 and 0x10 as 16, which ppb refuses rather than reading otherwise. Keys other than
// these are not read.
#ifndef PPB_IMPORTERS_SAPP_PROBLEM_HPP
#define PPB_IMPORTERS_SAPP_PROBLEM_HPP

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ppb::importers {

// A value of pipeline_config and where it is ("init.yaml:4: pipeline_config.pipeline_num"), or
// SAPP's default where the file does not give it (`where` empty).
template <typename T>
struct SappValue {
    T value{};
    std::string where;

    [[nodiscard]] bool given() const noexcept { return !where.empty(); }
};

struct SappProblem {
    std::string file;                          // as the user named it
    SappValue<std::uint32_t> pipeline_num;     // not given(): absent from the file
    SappValue<std::uint32_t> micro_batch_num;  // not given(): absent from the file
    std::optional<SappValue<std::uint32_t>> num_layer;
    SappValue<std::uint32_t> num_of_interleave{1, {}};
    SappValue<bool> vpp_less_memory{false, {}};
    SappValue<std::uint32_t> optimization_level{1, {}};
    SappValue<std::uint64_t> memory_limit{0, {}};
    SappValue<std::uint64_t> constant_memory{0, {}};
    SappValue<bool> enable_simulation{true, {}};
    SappValue<double> sim_comm_time{0.0, {}};
    SappValue<bool> use_backward_time{false, {}};
};

// Reads pipeline_config of a SAPP -init YAML. Throws InputError "<file>:<line>:
// pipeline_config.<key>: <problem>" for what SAPP's validator refuses in the keys given (a float
// or boolean where it wants an integer, an ambiguous boolean, a value out of its range) and for
// integers PyYAML would read otherwise than ppb (octal, hex); a missing pipeline_num or
// micro_batch_num is left not given().
[[nodiscard]] SappProblem read_sapp_problem(const std::filesystem::path& file);

// The names SAPP's ILP solver keeps its own variables under (SappSolver's upper-case string
// constants, same commit, sapp/sapp_solver.py): a BODY group of one of these names would
// overwrite one, so SAPP refuses it (pp_config_builder/layer_loader.py,
// LayerBuilder._validate_group_names).
inline constexpr std::array<std::string_view, 9> sapp_solver_names = {
    "memory_overhead", "var_sum_FPi_BPi", "chunks_sum",     "prev_diff",         "next_diff",
    "max_stage_time",  "max_last_chunk",  "layer_frontier", "recompute_frontier"};

// The first of `body_names` that SAPP's solver keeps a variable under, or nothing.
[[nodiscard]] std::optional<std::string> sapp_reserved_name(
    std::span<const std::string> body_names);

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_SAPP_PROBLEM_HPP
