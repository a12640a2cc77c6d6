// The canonical definitions of stage time, stage memory and the iteration estimate: the solver
// and its tests both count with these.
#include <ppb/partition/problem.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ppb::partition {

std::uint32_t Problem::in_flight(std::uint32_t stage) const {
    return std::min(num_stages - stage, micro_batches);
}

std::uint32_t Problem::in_flight(std::uint32_t stage, std::uint32_t chunk) const {
    if (!chunked())
        return in_flight(stage);
    return ppb::in_flight_counts(schedule, num_stages, stage, micro_batches, chunks).at(chunk);
}

std::vector<InFlightVector> Problem::in_flight_profile(std::uint32_t stage) const {
    if (!chunked())
        return {{in_flight(stage)}};
    return ppb::in_flight_profile(schedule, num_stages, stage, micro_batches, chunks);
}

std::uint32_t Problem::min_layers(std::uint32_t stage) const {
    std::uint32_t sum = 0;
    for (std::uint32_t c = 0; c < chunks; ++c)
        sum += min_layers(stage, c);
    return sum;
}

std::uint32_t Problem::min_layers(std::uint32_t stage, std::uint32_t chunk) const {
    const std::uint32_t position = model_position(schedule, num_stages, chunks, {stage, chunk});
    return (position == 0 || position + 1 == num_stages * chunks) ? 0 : 1;
}

std::uint32_t StagePlan::total_layers() const {
    return std::accumulate(layers.begin(), layers.end(), 0u);
}

double iteration_time(std::span<const double> stage_times, std::uint32_t micro_batches) {
    double sum = 0.0;
    double max = 0.0;
    for (const double t : stage_times) {
        sum += t;
        max = std::max(max, t);
    }
    return sum + static_cast<double>(micro_batches - 1) * max;
}

double schedule_iteration_time(std::span<const std::vector<double>> chunk_times,
                               std::uint32_t micro_batches, ChunkObjective objective) {
    double busiest = 0.0;
    double slowest_sum = 0.0;
    double slowest_max = 0.0;
    for (const auto& stage : chunk_times) {
        double total = 0.0;
        double slowest = 0.0;
        for (const double t : stage) {
            total += t;
            slowest = std::max(slowest, t);
        }
        busiest = std::max(busiest, total);
        slowest_sum += slowest;
        slowest_max = std::max(slowest_max, slowest);
    }
    if (objective == ChunkObjective::slots) {
        const double chunks = chunk_times.empty() ? 1.0 : chunk_times.front().size();
        return (static_cast<double>(micro_batches) * chunks - 1.0) * slowest_max + slowest_sum;
    }
    return static_cast<double>(micro_batches) * busiest + (slowest_sum - slowest_max);
}

double stage_time(const Problem& problem, std::uint32_t stage, const KindCounts& layers) {
    double t = 0.0;
    if (stage == 0)
        t += problem.time.head_time;
    if (stage + 1 == problem.num_stages)
        t += problem.time.tail_time;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        t += static_cast<double>(layers[k]) * problem.time.body_time[k];
    }
    return t;
}

double grouped_stage_time(const Problem& problem, std::uint32_t stage,
                          std::span<const KindCounts> group_layers) {
    double t = 0.0;
    if (stage == 0)
        t += problem.time.head_time;
    if (stage + 1 == problem.num_stages)
        t += problem.time.tail_time;
    for (std::size_t g = 0; g < group_layers.size(); ++g) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            t += static_cast<double>(group_layers[g][k]) * problem.time.groups[g].time[k];
        }
    }
    return t;
}

double grouped_linear_stage_memory(std::span<const ppb_linear_parameters> c, const Problem& problem,
                                   std::uint32_t stage, std::span<const KindCounts> group_layers) {
    const double f = problem.in_flight(stage);
    double m = c[0].const_mb;
    if (stage == 0)
        m += c[0].head_mb;
    if (stage + 1 == problem.num_stages)
        m += c[0].tail_mb;
    for (std::size_t g = 0; g < group_layers.size(); ++g) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const double n = group_layers[g][k];
            m += n * c[g].per_layer_mb + n * c[g].activation_mb[k] * f;
        }
    }
    return m;
}

std::vector<KindCounts> positional_group_layers(const Problem& problem, std::uint32_t first,
                                                std::uint32_t n, const MindFormersCounts& counts) {
    std::vector<KindCounts> out(problem.time.groups.size(), KindCounts{});
    const std::uint32_t both_end = std::min(counts.select_recompute, counts.select_comm_recompute);
    for (std::uint32_t i = 0; i < n; ++i) {
        std::size_t kind = PPB_KIND_NONE;
        if (i < counts.recompute)
            kind = PPB_KIND_FULL;
        else if (i < both_end)
            kind = PPB_KIND_BOTH;
        else if (i < counts.select_recompute)
            kind = PPB_KIND_SELECT;
        else if (i < counts.select_comm_recompute)
            kind = PPB_KIND_COMM;
        ++out[problem.time.sequence.at(first + i)][kind];
    }
    return out;
}

bool planned_through_one_group(const Problem& problem) {
    return problem.time.grouped() && problem.chunked() &&
           (problem.chunks != 2 || splits_backward(problem.schedule) ||
            problem.rule == RecomputeRule::megatron || problem.rule == RecomputeRule::torchtitan);
}

bool expressible(const KindCounts& layers, RecomputeRule rule) {
    switch (rule) {
        case RecomputeRule::any:
            return true;
        case RecomputeRule::mindformers:
            return layers[PPB_KIND_SELECT] == 0 || layers[PPB_KIND_COMM] == 0;
        case RecomputeRule::megatron: {
            // All 'select', or 'full' and 'none' only (block, uniform, none).
            const std::uint32_t n = std::accumulate(layers.begin(), layers.end(), 0u);
            return layers[PPB_KIND_SELECT] == n ||
                   layers[PPB_KIND_FULL] + layers[PPB_KIND_NONE] == n;
        }
        case RecomputeRule::torchtitan: {
            const std::uint32_t n = std::accumulate(layers.begin(), layers.end(), 0u);
            return layers[PPB_KIND_NONE] == n || layers[PPB_KIND_SELECT] == n ||
                   layers[PPB_KIND_FULL] == n;
        }
    }
    return false;
}

bool admits(const Problem& problem, const KindCounts& layers) {
    if (!expressible(layers, problem.rule))
        return false;
    if (!problem.recompute_setting)
        return true;
    const std::uint32_t n = std::accumulate(layers.begin(), layers.end(), 0u);
    return layers == problem.recompute_setting->chunk_layers(n);
}

std::optional<MindFormersCounts> mindformers_counts(const KindCounts& layers) {
    if (!expressible(layers, RecomputeRule::mindformers))
        return std::nullopt;
    // Full layers first, then 'both', then the 'select' or the 'comm' ones, then 'none'.
    const std::uint32_t full = layers[PPB_KIND_FULL];
    const std::uint32_t both = layers[PPB_KIND_BOTH];
    return MindFormersCounts{full, full + both + layers[PPB_KIND_SELECT],
                             full + both + layers[PPB_KIND_COMM]};
}

double linear_stage_memory(const ppb_linear_parameters& c, const Problem& problem,
                           std::uint32_t stage, const KindCounts& layers) {
    const double f = problem.in_flight(stage);
    double m = c.const_mb;
    if (stage == 0)
        m += c.head_mb;
    if (stage + 1 == problem.num_stages)
        m += c.tail_mb;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        const double n = layers[k];
        m += n * c.per_layer_mb + n * c.activation_mb[k] * f;
    }
    return m;
}

}  // namespace ppb::partition
