#define BOOST_TEST_MODULE ppb partitioner
#include <boost/test/unit_test.hpp>
