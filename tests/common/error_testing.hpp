// Helpers for tests that check error messages.
#ifndef PPB_TESTS_COMMON_ERROR_TESTING_HPP
#define PPB_TESTS_COMMON_ERROR_TESTING_HPP

#include <boost/test/unit_test.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace ppb_test {

// The message of the `Error` that `f` throws; fails the test if it throws nothing (or
// something else, which Boost.Test reports as an uncaught exception).
template <class Error, class F>
std::string error_message(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    BOOST_ERROR("expected an exception, none was thrown");
    return {};
}

// Checks that `message` contains each of `parts`.
inline void check_contains(const std::string& message,
                           std::initializer_list<std::string_view> parts) {
    for (const auto part : parts) {
        BOOST_TEST((message.find(part) != std::string::npos),
                   "message \"" << message << "\" should contain \"" << part << "\"");
    }
}

}  // namespace ppb_test

// Checks that `expr` throws `Error` whose message contains each of the strings that follow.
#define PPB_CHECK_ERROR(Error, expr, ...)                                               \
    ::ppb_test::check_contains(::ppb_test::error_message<Error>([&] { (void)(expr); }), \
                               {__VA_ARGS__})

#endif  // PPB_TESTS_COMMON_ERROR_TESTING_HPP
