// Counts the calls of the global operator new of the test program, which
// allocation_counter.cpp replaces: a plugin core linked statically has its allocations
// counted too.
#ifndef PPB_TESTS_COMMON_ALLOCATION_COUNTER_HPP
#define PPB_TESTS_COMMON_ALLOCATION_COUNTER_HPP

#include <cstddef>

namespace ppb_test {

[[nodiscard]] std::size_t allocation_count() noexcept;

}  // namespace ppb_test

#endif  // PPB_TESTS_COMMON_ALLOCATION_COUNTER_HPP
