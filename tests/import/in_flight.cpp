#include "in_flight.hpp"

#include <ppb/schedule.hpp>

namespace ppb_test {

std::vector<std::uint32_t> interleaved_in_flight(std::uint32_t stages, std::uint32_t stage,
                                                 std::uint32_t micro_batches,
                                                 std::uint32_t chunks) {
    return ppb::in_flight_counts(ppb::Schedule::interleaved, stages, stage, micro_batches, chunks);
}

}  // namespace ppb_test
