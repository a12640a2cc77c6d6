// 'ppb partition --sapp-config FILE': the planning problem of SAPP's -init YAML
// (pipeline_config, ppb/importers/sapp_problem.hpp) as the partition's settings, each flag given
// on the command line as well overriding the key it stands for:
//
//   pipeline_num        --stages          (SAPP requires the key: one of the two must give it)
//   micro_batch_num     --micro-batches   (the same)
//   memory_limit        --memory-limit-mb   (0, SAPP's default, is no limit ppb can plan for)
//   constant_memory     --memory-margin-mb  (SAPP adds it to every stage: X - C is the budget)
//   num_of_interleave   --chunks, and --schedule interleaved when above 1
//   vpp_less_memory     --schedule interleaved-less-memory (with chunks)
//   num_layer           checked against the layer file's body layers, as SAPP checks it
//
//   sim_comm_time       --comm-time (the simulator's communication time of every boundary)
//
// optimization_level (which ILP formulation SAPP solves), enable_simulation and
// use_backward_time (SAPP's simulator) have no ppb setting: they are read, checked as SAPP checks
// them, and reported as not used, with why. What was taken, overridden and not used goes to
// stderr as notes and into the ppb.partition/1 document as "sapp_config".
#ifndef PPB_SAPP_CONFIG_HPP
#define PPB_SAPP_CONFIG_HPP

#include <ppb/importers/sapp_problem.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ppb::cli {

// The partition settings SAPP's problem states, as flags: given (or taken) or not.
struct PartitionSettings {
    std::optional<std::uint32_t> stages;
    std::optional<std::uint32_t> micro_batches;
    std::optional<double> memory_limit_mb;
    std::optional<double> memory_margin_mb;
    std::optional<std::string> schedule;
    std::optional<std::uint32_t> chunks;
};

struct SappSettings {
    PartitionSettings settings;  // the flags where given, else what the file states
    importers::SappProblem problem;
    boost::json::object report;      // the document's "sapp_config"
    std::vector<std::string> notes;  // for stderr, each a sentence
};

// The settings of `problem` under `flags`. Throws InputError naming the key for a problem ppb
// cannot plan: pipeline_num or micro_batch_num (which SAPP requires) given by neither the file
// nor --stages / --micro-batches, memory_limit 0 without --memory-limit-mb, constant_memory not
// below the limit.
[[nodiscard]] SappSettings sapp_partition_settings(const importers::SappProblem& problem,
                                                   const PartitionSettings& flags);

// SAPP's checks of the layer file against its problem (pp_config_builder/layer_loader.py):
// num_layer must be the file's body layers, and no BODY group may have a name SAPP's solver
// keeps a variable under. `source` names the layer file. Throws InputError.
void check_sapp_layers(const SappSettings& sapp, std::uint32_t body_layers,
                       std::span<const std::string> body_names, const std::string& source);

}  // namespace ppb::cli

#endif  // PPB_SAPP_CONFIG_HPP
