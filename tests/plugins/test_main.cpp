#define BOOST_TEST_MODULE ppb plugin discovery and loading
#include <boost/test/unit_test.hpp>
