#define BOOST_TEST_MODULE ppb command line
#include <boost/test/unit_test.hpp>
