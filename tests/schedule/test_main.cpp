// Boost.Test entry point of test_simulator.
#define BOOST_TEST_MODULE ppb simulator
#include <boost/test/unit_test.hpp>
