#include <ppb/limits.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/placement_checks.hpp>
#include <ppb/plugin/report_support.hpp>

#include <cmath>
#include <string>

namespace ppb::plugin {

namespace {

// Only the failing path builds strings: the checks run on every prediction of a search.
[[noreturn]] void reject(std::string_view context, std::string_view index_or_empty,
                         const std::string& problem) {
    std::string message(context);
    message += index_or_empty;
    message += ": ";
    message += problem;
    throw InvalidInput(message);
}

void check(const ppb_placement& placement, std::string_view context, std::string_view index) {
    if (placement.num_stages == 0) {
        reject(context, index, "num_stages is 0; a pipeline has at least one stage");
    }
    if (placement.num_stages > limits::stages.max) {
        reject(context, index,
               "num_stages: " +
                   limits::out_of_range(std::to_string(placement.num_stages), limits::stages));
    }
    if (placement.stage >= placement.num_stages) {
        reject(context, index,
               "stage " + std::to_string(placement.stage) + " is out of range for a pipeline of " +
                   std::to_string(placement.num_stages) + " stages (0.." +
                   std::to_string(placement.num_stages - 1) + ")");
    }
    if (placement.num_chunks == 0) {
        reject(context, index, "num_chunks is 0; a stage holds at least one chunk");
    }
    if (placement.num_chunks > limits::chunks.max) {
        reject(context, index,
               "num_chunks: " +
                   limits::out_of_range(std::to_string(placement.num_chunks), limits::chunks));
    }
    if (placement.chunks == nullptr) {
        reject(context, index,
               "chunks is null although num_chunks is " + std::to_string(placement.num_chunks));
    }
    for (std::uint32_t c = 0; c < placement.num_chunks; ++c) {
        if (placement.chunks[c].in_flight == 0) {
            reject(context, index,
                   "chunk " + std::to_string(c) +
                       ": in_flight is 0; a chunk holds the activations of at least one "
                       "micro-batch at its peak");
        }
        if (placement.chunks[c].in_flight > limits::in_flight.max) {
            reject(context, index,
                   "chunk " + std::to_string(c) + ": in_flight: " +
                       limits::out_of_range(std::to_string(placement.chunks[c].in_flight),
                                            limits::in_flight));
        }
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            if (placement.chunks[c].layers[k] > limits::layers_or_none.max) {
                reject(context, index,
                       "chunk " + std::to_string(c) + ": layers[" + std::to_string(k) + "]: " +
                           limits::out_of_range(std::to_string(placement.chunks[c].layers[k]),
                                                limits::layers_or_none));
            }
        }
    }
}

void check_groups(const ppb_grouped_placement& grouped, std::string_view context,
                  std::string_view index) {
    check(grouped.placement, context, index);
    const std::uint32_t groups = grouped.num_groups;
    if (groups == 0)
        reject(context, index, "num_groups is 0; a model has at least one group of layers");
    if (groups > limits::groups.max) {
        reject(context, index,
               "num_groups: " + limits::out_of_range(std::to_string(groups), limits::groups));
    }
    if (grouped.group_layers == nullptr) {
        reject(context, index,
               "group_layers is null although num_groups is " + std::to_string(groups));
    }
    const ppb_placement& p = grouped.placement;
    for (std::uint32_t c = 0; c < p.num_chunks; ++c) {
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            std::uint64_t sum = 0;
            for (std::uint32_t g = 0; g < groups; ++g)
                sum += grouped.group_layers[(std::size_t{c} * groups + g) * PPB_KIND_COUNT + k];
            if (sum != p.chunks[c].layers[k]) {
                reject(context, index,
                       "chunk " + std::to_string(c) + ": layers[" + std::to_string(k) + "] is " +
                           std::to_string(p.chunks[c].layers[k]) +
                           " but the groups' layers of that kind add up to " + std::to_string(sum));
            }
        }
    }
}

// " 12" without allocating: indices are at most 20 digits.
struct IndexText {
    char buffer[24];
    std::size_t size = 0;
    explicit IndexText(std::size_t i) noexcept {
        char digits[24];
        std::size_t n = 0;
        do {
            digits[n++] = static_cast<char>('0' + i % 10);
            i /= 10;
        } while (i != 0);
        buffer[size++] = ' ';
        while (n != 0)
            buffer[size++] = digits[--n];
    }
    [[nodiscard]] std::string_view view() const noexcept { return {buffer, size}; }
};

void check_peak(double peak, std::string_view index) {
    if (!std::isfinite(peak) || peak <= 0.0) {
        reject("observation", index,
               "peak_memory_mb is " + format_number(peak, 10) +
                   "; it must be a finite number of MB greater than 0");
    }
    if (!limits::positive_memory_mb.contains(peak)) {
        reject("observation", index,
               "peak_memory_mb: " +
                   limits::out_of_range(format_number(peak, 10), limits::positive_memory_mb));
    }
}

}  // namespace

void check_placement(const ppb_placement& placement, std::string_view context) {
    check(placement, context, {});
}

void check_placements(std::span<const ppb_placement> placements) {
    for (std::size_t i = 0; i < placements.size(); ++i)
        check(placements[i], "placement", IndexText(i).view());
}

void check_observations(std::span<const ppb_observation> observations) {
    for (std::size_t i = 0; i < observations.size(); ++i) {
        const IndexText index(i);
        check(observations[i].placement, "observation", index.view());
        check_peak(observations[i].peak_memory_mb, index.view());
    }
}

void check_grouped_placement(const ppb_grouped_placement& placement, std::string_view context) {
    check_groups(placement, context, {});
}

void check_grouped_placements(std::span<const ppb_grouped_placement> placements) {
    for (std::size_t i = 0; i < placements.size(); ++i)
        check_groups(placements[i], "placement", IndexText(i).view());
}

void check_grouped_observations(std::span<const ppb_grouped_observation> observations) {
    for (std::size_t i = 0; i < observations.size(); ++i) {
        const IndexText index(i);
        check_groups(observations[i].placement, "observation", index.view());
        check_peak(observations[i].peak_memory_mb, index.view());
    }
}

}  // namespace ppb::plugin
