// What the importers of 'ppb import' share: their inputs (files, --rank), where the dry-run file
// goes (-o, --append, --label, --duplicate-tolerance) and how the import tells what it did. The
// log formats (cmd_import.cpp) and the memory snapshots and torchtitan logs
// (cmd_import_snapshot.cpp) declare their commands with these.
#ifndef PPB_IMPORT_COMMON_HPP
#define PPB_IMPORT_COMMON_HPP

#include "cli.hpp"

#include <ppb/dryrun_format.hpp>
#include <ppb/importers/dryrun_builder.hpp>
#include <ppb/importers/layout.hpp>
#include <ppb/importers/logs.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ppb::cli {

// What every format shares: the input files, the memory figure, where the result goes.
struct CommonArgs {
    std::vector<std::string> logs;
    std::string memory;
    std::string output;
    std::string append;
    std::string label = "A";
    std::vector<std::string> ranks;  // FILE=ID
    DryRunReadOptions read;
};

// Declares where the result goes: -o, --label, --append and --duplicate-tolerance.
void add_output_options(CLI::App& app, CommonArgs& args);

// Declares the input files: `name`, one or more, described by `help`.
void add_inputs(CLI::App& app, CommonArgs& args, const std::string& name, const std::string& help);
// Declares the output options and --rank (`rank_help`).
void add_output_and_ranks(CLI::App& app, CommonArgs& args, const std::string& rank_help);

// "layout: 4 stages of 2 ranks (world size 8 / ...), 16 micro-batches; stage 0: ...".
[[nodiscard]] std::string layout_summary(const importers::PipelineLayout& layout);

// The notes and warnings on stderr ("ppb: note: ...", "ppb: warning: ...").
void print_messages(const importers::Messages& messages);

// Builds the document of `runs` (the first a new document or appended to --append FILE, the
// others appended to it), checks it, writes it where the user asked; returns where it went.
std::string write_runs(const CommonArgs& destination,
                       const std::vector<importers::ImportedDryRun>& runs,
                       importers::Messages& messages);

// A dry run of `layout` under `label`, without observations yet: its stages, micro-batches,
// schedule, chunks and groups.
[[nodiscard]] importers::ImportedDryRun imported_run(const importers::PipelineLayout& layout,
                                                     std::string label);

// Builds the document of one dry run, checks it, writes it where the user asked, and tells what
// was done: "ppb: imported 4 observations (...) from 4 <what>s to stdout".
int finish(const CommonArgs& destination, const importers::PipelineLayout& layout,
           std::vector<importers::StageObservation> observations, std::string comment,
           std::size_t file_count, importers::Messages& messages,
           std::string_view what = "log file");

// What runs an import of `args`: importer complaints about flags (importers::FlagError) are usage
// errors.
template <typename Import, typename Args>
std::function<int()> runner(Import import, std::shared_ptr<Args> args) {
    return [import, args] {
        try {
            return import(*args);
        } catch (const importers::FlagError& e) {
            throw UsageError(e.what());
        }
    };
}

// The --rank assignments of `args`.
[[nodiscard]] std::vector<importers::RankAssignment> rank_assignments(const CommonArgs& args);

}  // namespace ppb::cli

#endif  // PPB_IMPORT_COMMON_HPP
