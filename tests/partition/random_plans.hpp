// Random plans of 1F1B and interleaved pipelines that follow one Megatron recompute setting, for
// the tests of the frameworks' flags (test_framework_args.cpp) and of their import
// (tests/import/test_megatron_layout.cpp). Built directly, not solved: every shape the writers
// may meet, empty first and last positions included.
#ifndef PPB_TESTS_PARTITION_RANDOM_PLANS_HPP
#define PPB_TESTS_PARTITION_RANDOM_PLANS_HPP

#include <ppb/partition/problem.hpp>
#include <ppb/schedule.hpp>

#include <random>
#include <vector>

namespace ppb::partition::test {

struct RandomPlan {
    Problem problem;
    Plan plan;
    std::vector<std::uint32_t> positions;  // layers per model position
};

// P in 1..8 (2..8 interleaved, v in 2..4), positions holding 0..6 layers (the first and last may
// be empty, the others hold one at least), one setting of the four methods; with `even` every
// stage's chunks equal and the middle stages equal (the legacy flags' shape).
inline RandomPlan random_plan(std::mt19937& rng, bool even = false) {
    const auto pick = [&](std::uint32_t low, std::uint32_t high) {
        return std::uniform_int_distribution<std::uint32_t>(low, high)(rng);
    };
    RandomPlan r;
    Problem& p = r.problem;
    const bool interleaved = pick(0, 2) == 0;
    p.num_stages = interleaved ? pick(2, 8) : pick(1, 8);
    p.schedule = interleaved ? Schedule::interleaved : Schedule::one_f_one_b;
    p.chunks = interleaved ? pick(2, 4) : 1;
    p.micro_batches = p.num_stages * pick(1, 4);
    const std::uint32_t q = p.num_stages * p.chunks;
    r.positions.assign(q, 0);
    if (even) {
        const std::uint32_t middle = pick(1, 5);
        const std::uint32_t first = pick(0, 2) == 0 ? pick(1, 6) : middle;
        const std::uint32_t last = pick(0, 2) == 0 ? pick(1, 6) : middle;
        for (std::uint32_t i = 0; i < q; ++i) {
            const std::uint32_t stage = i % p.num_stages;
            r.positions[i] = stage == 0 ? first : stage + 1 == p.num_stages ? last : middle;
        }
    } else {
        for (std::uint32_t i = 0; i < q; ++i)
            r.positions[i] = (i == 0 || i + 1 == q) ? pick(0, 6) : pick(1, 6);
    }
    std::uint32_t layers = 0;
    for (const auto n : r.positions)
        layers += n;
    if (layers == 0)
        r.positions[0] = layers = 1;
    p.time.body_layers = layers;
    using Method = MegatronRecompute::Method;
    const Method method = static_cast<Method>(pick(0, 3));
    const MegatronRecompute setting{method, method == Method::block ? pick(1, 4) : 0};
    r.plan.recompute_setting = setting;
    for (std::uint32_t s = 0; s < p.num_stages; ++s) {
        StagePlan stage;
        stage.stage = s;
        for (std::uint32_t c = 0; c < p.chunks; ++c) {
            ChunkPlan chunk;
            chunk.chunk = c;
            chunk.layers = setting.chunk_layers(r.positions[c * p.num_stages + s]);
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k)
                stage.layers[k] += chunk.layers[k];
            stage.chunks.push_back(chunk);
        }
        r.plan.stages.push_back(std::move(stage));
    }
    return r;
}

}  // namespace ppb::partition::test

#endif  // PPB_TESTS_PARTITION_RANDOM_PLANS_HPP
