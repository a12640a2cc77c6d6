// The Boost.Test module of the analytic model's tests; the cases live in the other files.
#define BOOST_TEST_MODULE ppb_analytic
#include <boost/test/unit_test.hpp>
