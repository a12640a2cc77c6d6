// Shared by the libFuzzer harnesses (tests/fuzz): the input as text, a scratch file for readers
// that take a path, and the one rule every harness checks: a reader refuses bad input with the
// error its header documents, never with anything else (and never crashes, leaks or overflows,
// which the sanitizers see).
#ifndef PPB_TESTS_FUZZ_SUPPORT_HPP
#define PPB_TESTS_FUZZ_SUPPORT_HPP

#include <ppb/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <unistd.h>

namespace ppb::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) noexcept {
    return {reinterpret_cast<const char*>(data), size};
}

// A file in this process's own temporary directory (removed at exit), rewritten with each
// input: for the readers that only take a path.
class ScratchFile {
  public:
    explicit ScratchFile(const std::string& name) {
        std::string pattern = (std::filesystem::temp_directory_path() / "ppb-fuzz-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            std::perror("mkdtemp");
            std::abort();
        }
        dir_ = pattern;
        path_ = dir_ / name;
    }
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;
    ~ScratchFile() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    const std::filesystem::path& write(std::string_view bytes) {
        {
            std::ofstream out(path_, std::ios::binary | std::ios::trunc);
            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            if (!out) {
                std::perror("ScratchFile::write");
                std::abort();
            }
        }
        std::filesystem::permissions(
            path_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                       std::filesystem::perms::group_read | std::filesystem::perms::others_read);
        return path_;
    }
    const std::filesystem::path& path() const noexcept { return path_; }

  private:
    std::filesystem::path dir_;
    std::filesystem::path path_;
};

// An exception nothing throws: expect_only<Nothing> allows no exception at all.
struct Nothing {};

// Runs `read`; the documented refusal (`Refusal`, ppb::InputError by default) is fine, any other
// exception is a finding: its message is printed and the process aborts, which libFuzzer
// reports as a crash with the input that caused it.
template <class Refusal = ppb::InputError, class F>
void expect_only(F&& read) {
    try {
        read();
    } catch (const Refusal&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "undocumented exception: %s\n", e.what());
        std::abort();
    } catch (...) {
        std::fprintf(stderr, "undocumented exception that is not a std::exception\n");
        std::abort();
    }
}

}  // namespace ppb::fuzz

#endif  // PPB_TESTS_FUZZ_SUPPORT_HPP
