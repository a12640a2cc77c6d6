// Internal: the memory of a chunked stage over its in-flight profile (host_api/docs/design.md,
// "Every schedule: several chunks per stage").
//
// A chunk holding n_k layers of each kind k keeps `fixed` = Σ_k u_k n_k MB whatever is in flight
// (parameters, gradients, optimizer state) and `activation` = Σ_k w_k n_k MB per micro-batch in
// flight. At vector j of the stage's profile (ppb::in_flight_profile: the counts f_jc each chunk
// holds at one moment) the stage holds
//     row_j = base_j + Σ_c (fixed_c + f_jc · activation_c),
// and its memory is the largest row. It fits a budget when every row does. Chunk by chunk, a
// partial stage (the chunks so far, the others empty) has rows no larger than the whole stage's
// when no kind frees memory, so a partial stage over budget in some row cannot be completed.
// These functions are the one place the rows are formed; the chunk tables (chunk_tables.cpp)
// build frontiers and combine chunks with them.
#ifndef PPB_PARTITION_PROFILE_MEMORY_HPP
#define PPB_PARTITION_PROFILE_MEMORY_HPP

#include <ppb/in_flight_profile.hpp>
#include <ppb/partition/problem.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace ppb::partition::detail {

// What one chunk's layers hold: MB, and MB per in-flight micro-batch.
struct ChunkMemory {
    double fixed = 0.0;
    double activation = 0.0;
};

class StageRows {
  public:
    StageRows() = default;
    // `base[j]`: the stage's MB with no body layer at vector j of `profile` (equal sizes, not
    // empty; every vector one count per chunk).
    StageRows(std::vector<double> base, std::vector<InFlightVector> profile);

    [[nodiscard]] std::size_t size() const noexcept { return base_.size(); }
    [[nodiscard]] const std::vector<InFlightVector>& profile() const noexcept { return profile_; }
    [[nodiscard]] std::uint32_t count(std::size_t row, std::size_t chunk) const {
        return profile_[row][chunk];
    }

    // rows[j] = base_j + Σ_c over chunks[c] (chunk c of the stage, from chunk 0).
    void rows(std::span<const ChunkMemory> chunks, std::vector<double>& out) const;
    // `rows` with chunk `chunk` holding `add` as well.
    [[nodiscard]] double row_with(std::span<const double> rows, std::size_t row, std::size_t chunk,
                                  ChunkMemory add) const {
        return rows[row] + add.fixed + count(row, chunk) * add.activation;
    }
    // Whether every row of `rows` plus `add` in chunk `chunk`, plus scale x extra[j], fits
    // `budget` (extra empty: none).
    // (Inline: the chunk tables ask it for every candidate point.)
    [[nodiscard]] bool fits_with(std::span<const double> rows, std::size_t chunk, ChunkMemory add,
                                 std::span<const double> extra, double budget,
                                 double scale = 1.0) const {
        for (std::size_t j = 0; j < rows.size(); ++j) {
            const double row =
                row_with(rows, j, chunk, add) + (extra.empty() ? 0.0 : scale * extra[j]);
            if (!within_budget(row, budget))
                return false;
        }
        return true;
    }
    // The largest row of a whole stage and the vector where it is (the first on a tie).
    struct Peak {
        double memory = 0.0;
        std::size_t row = 0;
    };
    [[nodiscard]] Peak peak(std::span<const ChunkMemory> chunks) const;

  private:
    std::vector<double> base_;
    std::vector<InFlightVector> profile_;
};

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_PROFILE_MEMORY_HPP
