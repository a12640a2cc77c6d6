// Rows of a chunked stage's memory over its in-flight profile (profile_memory.hpp).
#include "profile_memory.hpp"
#include "stage_table.hpp"

#include <stdexcept>

namespace ppb::partition::detail {

StageRows::StageRows(std::vector<double> base, std::vector<InFlightVector> profile)
    : base_(std::move(base)), profile_(std::move(profile)) {
    if (base_.empty() || base_.size() != profile_.size())
        throw std::logic_error("a stage's rows need one base per vector of its profile");
}

void StageRows::rows(std::span<const ChunkMemory> chunks, std::vector<double>& out) const {
    out.assign(base_.begin(), base_.end());
    for (std::size_t j = 0; j < out.size(); ++j) {
        for (std::size_t c = 0; c < chunks.size(); ++c)
            out[j] += chunks[c].fixed + count(j, c) * chunks[c].activation;
    }
}

StageRows::Peak StageRows::peak(std::span<const ChunkMemory> chunks) const {
    std::vector<double> all;
    rows(chunks, all);
    Peak out{all[0], 0};
    for (std::size_t j = 1; j < all.size(); ++j) {
        if (all[j] > out.memory)
            out = {all[j], j};
    }
    return out;
}

}  // namespace ppb::partition::detail
