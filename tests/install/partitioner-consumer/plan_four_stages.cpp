// Plans 4 stages x 16 layers with known linear memory coefficients through the installed
// ppb::partitioner and checks the answer against what the numbers force. Stage memory is
// 1000 + 100 n MB, plus 700 MB of head on stage 0, under a 2000 MB limit: stage 0 holds at most
// 3 layers, the others at most 10. With equal layer times the optimum puts 3 layers on stage 0
// and the other 13 on three stages, so the slowest stage holds ceil(13 / 3) = 5 layers and the
// iteration takes 16 + (8 - 1) * 5 = 51 time units.
#include <ppb/partition/problem.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>

int main() {
    try {
        ppb::partition::Problem problem;
        problem.num_stages = 4;
        problem.micro_batches = 8;
        problem.memory_limit_mb = 2000.0;
        problem.kinds = PPB_KIND_BIT(PPB_KIND_NONE);
        problem.time.body_name = "layer";
        problem.time.body_layers = 16;
        problem.time.body_time = {1.0, 1.0, 1.0, 1.0, 1.0};

        ppb_linear_parameters c{};
        c.struct_size = sizeof c;
        c.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER |
                       PPB_PARAM_ACTIVATION(PPB_KIND_NONE);
        c.const_mb = 1000.0;
        c.head_mb = 700.0;
        c.per_layer_mb = 100.0;
        ppb::partition::MemorySource memory;
        memory.linear = c;
        memory.kinds = PPB_KIND_BIT(PPB_KIND_NONE);

        const auto plan = ppb::partition::solve(problem, memory);
        std::uint32_t placed = 0;
        double slowest = 0.0;
        for (const auto& stage : plan.stages) {
            placed += stage.total_layers();
            slowest = std::fmax(slowest, stage.time);
            std::printf("stage %u: %u layers, %.1f MB\n", stage.stage, stage.total_layers(),
                        stage.memory_mb);
            if (!ppb::partition::within_budget(stage.memory_mb, problem.budget_mb())) {
                std::fprintf(stderr, "stage %u is over the limit\n", stage.stage);
                return 1;
            }
        }
        if (plan.stages.size() != 4 || placed != 16 || plan.stages[0].total_layers() > 3 ||
            std::fabs(slowest - 5.0) > 1e-9 || std::fabs(plan.iteration_time - 51.0) > 1e-9) {
            std::fprintf(stderr, "unexpected plan: %zu stages, %u layers, slowest %.1f\n",
                         plan.stages.size(), placed, slowest);
            return 1;
        }
        std::printf("iteration time %.1f\n", plan.iteration_time);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "plan_four_stages: %s\n", e.what());
        return 1;
    }
}
