// The Boost.Test module of the table memory model's tests; the cases live in the other files.
#define BOOST_TEST_MODULE ppb_table
#include <boost/test/unit_test.hpp>
