#define BOOST_TEST_MODULE ppb importers
#include <boost/test/unit_test.hpp>
