// Boost.Test entry point of test_formats.
#define BOOST_TEST_MODULE ppb formats
#include <boost/test/unit_test.hpp>
