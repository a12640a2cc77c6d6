// Helpers of the importer tests: scratch directories with files, error-message checks, and a
// stage's layer counts per recomputation kind.
#ifndef PPB_TESTS_IMPORT_SCRATCH_HPP
#define PPB_TESTS_IMPORT_SCRATCH_HPP

#include "../common/error_testing.hpp"

#include <ppb/abi.h>

#include <boost/test/unit_test.hpp>

#include <cstdint>

#include <array>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ppb_test {

// A stage's layers by recomputation kind, in ppb_kind order.
inline std::array<std::uint32_t, PPB_KIND_COUNT> kinds(std::uint32_t none, std::uint32_t select,
                                                       std::uint32_t comm, std::uint32_t both,
                                                       std::uint32_t full) {
    return {none, select, comm, both, full};
}

// A fresh directory under the system's temporary directory, removed with the object.
class Scratch {
  public:
    Scratch();
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::filesystem::path operator/(const std::string& relative) const {
        return path_ / relative;
    }
    // Writes `text` to `relative` (creating directories) and returns the file's path.
    std::filesystem::path write(const std::string& relative, std::string_view text) const;

  private:
    std::filesystem::path path_;
};

[[nodiscard]] std::string read_file(const std::filesystem::path& path);

// The bytes written in `hex` as pairs of hexadecimal digits, spaces between them ignored:
// "80 02 4e 2e" (how the tests spell pickles byte by byte).
[[nodiscard]] std::string from_hex(std::string_view hex);

// The end of a MindSpore dry-run log: the memory lines MindSpore prints, after some noise.
[[nodiscard]] std::string mindspore_log(int used_mb, int actual_mb);

// error_message and check_contains: ../common/error_testing.hpp.
}  // namespace ppb_test

// Checks that `expr` throws `Error` whose message contains each of the strings that follow.
#define PPB_CHECK_THROWS(Error, expr, ...)                                              \
    ::ppb_test::check_contains(::ppb_test::error_message<Error>([&] { (void)(expr); }), \
                               {__VA_ARGS__})

#endif  // PPB_TESTS_IMPORT_SCRATCH_HPP
