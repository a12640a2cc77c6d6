// The host's in-flight counts for tests that cannot include ppb/schedule.hpp (the command-line
// tests call their process helper `ppb`, which the namespace would make ambiguous).
#ifndef PPB_TESTS_IMPORT_IN_FLIGHT_HPP
#define PPB_TESTS_IMPORT_IN_FLIGHT_HPP

#include <cstdint>
#include <vector>

namespace ppb_test {

// ppb::in_flight_counts(Schedule::interleaved, stages, stage, micro_batches, chunks).
[[nodiscard]] std::vector<std::uint32_t> interleaved_in_flight(std::uint32_t stages,
                                                               std::uint32_t stage,
                                                               std::uint32_t micro_batches,
                                                               std::uint32_t chunks);

}  // namespace ppb_test

#endif  // PPB_TESTS_IMPORT_IN_FLIGHT_HPP
