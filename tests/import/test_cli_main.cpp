#define BOOST_TEST_MODULE ppb import command line
#include <boost/test/unit_test.hpp>
