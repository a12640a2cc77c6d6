// Counts the calls of the global operator new of the test program, which
// allocation_counter.cpp replaces: the analytic core is linked statically, so its allocations
// are counted too.
#ifndef PPB_TESTS_ANALYTIC_ALLOCATION_COUNTER_HPP
#define PPB_TESTS_ANALYTIC_ALLOCATION_COUNTER_HPP

#include <cstddef>

namespace analytic_test {

[[nodiscard]] std::size_t allocation_count() noexcept;

}  // namespace analytic_test

#endif  // PPB_TESTS_ANALYTIC_ALLOCATION_COUNTER_HPP
