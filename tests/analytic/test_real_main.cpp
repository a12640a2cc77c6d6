// The Boost.Test module of the analytic model against real runs (test_real_runs.cpp).
#define BOOST_TEST_MODULE ppb_analytic_real
#include <boost/test/unit_test.hpp>
