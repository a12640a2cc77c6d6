// Warnings for degenerate plans (ppb/partition/plan_warnings.hpp).
#include <ppb/partition/plan_warnings.hpp>

#include <ppb/schedule.hpp>

#include <fmt/format.h>

namespace ppb::partition {
namespace {

// "stage 80" or "stages 0 and 80" or "stages 0, 3 and 80".
std::string stage_list(const std::vector<std::uint32_t>& stages) {
    std::string out = stages.size() == 1 ? "stage " : "stages ";
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const char* separator = i == 0 ? "" : i + 1 == stages.size() ? " and " : ", ";
        out += fmt::format("{}{}", separator, stages[i]);
    }
    return out;
}

}  // namespace

std::vector<std::string> plan_warnings(const Problem& problem, const Plan& plan,
                                       const Simulation& simulation) {
    std::vector<std::string> out;
    std::vector<std::uint32_t> empty;
    std::string holds;  // what each empty stage holds: "the LM head", "the embedding"
    for (const StagePlan& stage : plan.stages) {
        if (stage.total_layers() != 0)
            continue;
        empty.push_back(stage.stage);
        const StageEnds ends =
            stage_ends(problem.schedule, problem.num_stages, problem.chunks, stage.stage);
        const char* what = ends.head && ends.tail ? "the embedding and the LM head"
                           : ends.head            ? "the embedding"
                                                  : "the LM head";
        holds += fmt::format("{}{}", holds.empty() ? "" : ", ", what);
    }
    if (!empty.empty()) {
        const std::uint32_t positions = problem.num_stages * problem.chunks;
        const std::string why = positions > problem.time.body_layers
                                    ? fmt::format("{} {} for {} body layers", positions,
                                                  problem.chunks == 1 ? "stages" : "stage chunks",
                                                  problem.time.body_layers)
                                    : std::string("the optimum of this request");
        out.push_back(
            fmt::format("{} {} no body layer, only {} ({}): {} of the pipeline's devices {} almost "
                        "nothing; plan with fewer stages",
                        stage_list(empty), empty.size() == 1 ? "holds" : "hold", holds, why,
                        empty.size() == 1 ? std::string("one") : std::to_string(empty.size()),
                        empty.size() == 1 ? "does" : "do"));
    }
    const std::uint32_t stages = problem.num_stages;
    const std::uint32_t micro_batches = problem.micro_batches;
    if (stages > 1 && (micro_batches < stages || simulation.bubble_fraction > dominant_bubble)) {
        out.push_back(fmt::format(
            "the pipeline bubble is {:.1f} % of the simulated iteration ({} micro-batch{} for {} "
            "stages): the devices wait for each other {} of the time; more micro-batches per "
            "iteration (at least as many as stages) or fewer stages would shrink it",
            100.0 * simulation.bubble_fraction, micro_batches, micro_batches == 1 ? "" : "es",
            stages, simulation.bubble_fraction > dominant_bubble ? "most" : "much"));
    }
    return out;
}

}  // namespace ppb::partition
