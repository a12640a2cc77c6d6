// The Boost.Test module of the dryrun-lsq fit tests; the cases live in the other files.
#define BOOST_TEST_MODULE ppb_dryrun_lsq_fit
#include <boost/test/unit_test.hpp>
