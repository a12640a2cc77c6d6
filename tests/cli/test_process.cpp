// ppb::run_process, the one process runner (plugins --check and the tests use it).
#include <ppb/process.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <system_error>

BOOST_AUTO_TEST_SUITE(process_runner)

BOOST_AUTO_TEST_CASE(captures_output_status_stdin_and_environment) {
    ppb::ProcessOptions options;
    options.stdin_text = "from stdin\n";
    options.env = {{"PPB_TEST_SET", "yes"}, {"HOME", ""}};
    const auto r = ppb::run_process(
        "/bin/sh", {"-c", "cat; echo \"$PPB_TEST_SET-${HOME:-unset}\"; echo oops >&2; exit 3"},
        options);
    BOOST_TEST(r.exit_code == 3);
    BOOST_TEST(r.signal == 0);
    BOOST_TEST(!r.timed_out);
    BOOST_TEST(r.out == "from stdin\nyes-unset\n");
    BOOST_TEST(r.err == "oops\n");

    options = {};
    options.working_directory = "/";
    BOOST_TEST(ppb::run_process("/bin/pwd", {}, options).out == "/\n");
}

BOOST_AUTO_TEST_CASE(signals_time_limits_and_programs_that_cannot_start) {
    auto r = ppb::run_process("/bin/sh", {"-c", "kill -ABRT $$"});
    BOOST_TEST(r.exit_code == -1);
    BOOST_TEST(r.signal == SIGABRT);
    BOOST_TEST(ppb::signal_text(SIGABRT) == "signal 6, SIGABRT");

    ppb::ProcessOptions options;
    options.timeout = std::chrono::milliseconds(200);
    r = ppb::run_process("/bin/sleep", {"10"}, options);
    BOOST_TEST(r.timed_out);
    BOOST_TEST(r.signal == SIGKILL);

    BOOST_CHECK_THROW((void)ppb::run_process("/nonexistent/program", {}), std::system_error);
}

BOOST_AUTO_TEST_SUITE_END()
