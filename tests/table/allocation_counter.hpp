// Counts the calls of the global operator new of the test program, which
// allocation_counter.cpp replaces: the table core is linked statically, so its allocations are
// counted too.
#ifndef PPB_TESTS_TABLE_ALLOCATION_COUNTER_HPP
#define PPB_TESTS_TABLE_ALLOCATION_COUNTER_HPP

#include <cstddef>

namespace ppb::table_test {

[[nodiscard]] std::size_t allocation_count() noexcept;

}  // namespace ppb::table_test

#endif  // PPB_TESTS_TABLE_ALLOCATION_COUNTER_HPP
