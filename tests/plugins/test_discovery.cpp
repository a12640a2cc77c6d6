// Discovery judges files without running their code; every broken fixture gets its verdict.
#include "temp_dir.hpp"

#include <ppb/abi.h>
#include <ppb/discovery.hpp>
#include <ppb/search_path.hpp>

#include <boost/test/unit_test.hpp>

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

namespace fs = std::filesystem;
using ppb::Verdict;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace discovery_tests {

namespace {

const fs::path fixture_dir = PPB_FIXTURE_DIR;
const fs::path versions_dir = PPB_VERSIONS_DIR;
const fs::path build_plugin_dir = PPB_BUILD_PLUGIN_DIR;

ppb::SearchPath only(std::vector<fs::path> dirs) {
    ppb::SearchPath path;
    for (auto& d : dirs)
        path.dirs.push_back({std::move(d), "test"});
    return path;
}

const ppb::PluginCandidate& by_file(const std::vector<ppb::PluginCandidate>& all,
                                    const std::string& file) {
    const auto it = std::find_if(all.begin(), all.end(),
                                 [&](const auto& c) { return c.path.filename() == file; });
    BOOST_TEST_REQUIRE((it != all.end()), "no candidate " << file);
    return *it;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(discovery)

BOOST_AUTO_TEST_CASE(every_broken_fixture_gets_its_verdict_without_loading) {
    // abort-on-load aborts in static initialisation: reaching the checks proves nothing was run.
    const auto all = ppb::discover_plugins(only({fixture_dir}));

    const auto& wrong_abi = by_file(all, "ppb-wrong-abi-1.0.0.so");
    BOOST_TEST((wrong_abi.verdict == Verdict::incompatible));
    BOOST_TEST(wrong_abi.abi_major == 2u);
    const std::string host_minor = std::to_string(PPB_API_MINOR);
    BOOST_TEST(wrong_abi.reason ==
                   "built for plugin ABI 2 (API 2.0, entry point ppb_memory_model_v2_0); this ppb "
                   "supports ABI 1 only (plugin API 1.x, its own being 1." +
                       host_minor + "): rebuild the plugin against this ppb's headers",
               wrong_abi.reason);

    // A newer API minor of the same major: usable; the host ignores what it does not know.
    const auto& newer = by_file(all, "ppb-newer-api-1.0.0.so");
    BOOST_TEST((newer.verdict == Verdict::usable), newer.reason);
    BOOST_TEST(newer.api_minor == 9u);
    BOOST_TEST(newer.entry_point == "ppb_memory_model_v1_9");
    BOOST_TEST(newer.reason == "plugin API 1.9 > host 1." + host_minor + ": fields beyond 1." +
                                   host_minor + " not used",
               newer.reason);

    // Its entry point claims 1.2: discovery cannot see the table, so it is listed as usable.
    const auto& short_table = by_file(all, "ppb-short-table-1.0.0.so");
    BOOST_TEST((short_table.verdict == Verdict::usable), short_table.reason);

    const auto& no_entry = by_file(all, "ppb-no-entry-1.0.0.so");
    BOOST_TEST((no_entry.verdict == Verdict::not_a_plugin));
    BOOST_TEST(contains(no_entry.reason, "entry point"), no_entry.reason);

    // Built for an older API minor: compatible, listed as such.
    const auto& older = by_file(all, "ppb-older-api-1.0.0.so");
    BOOST_TEST((older.verdict == Verdict::usable), older.reason);
    BOOST_TEST(older.api_minor == 0u);
    BOOST_TEST(older.reason == "plugin API 1.0");

    const auto& text = by_file(all, "ppb-not-a-library-1.0.0.so");
    BOOST_TEST((text.verdict == Verdict::not_a_plugin));
    BOOST_TEST(contains(text.reason, "no ELF header"), text.reason);

    // Problems only loading can reveal: listed as usable, with name and version from the file.
    for (const char* file :
         {"ppb-no-factory-1.0.0.so", "ppb-throwing-factory-1.0.0.so", "ppb-throwing-fit-1.0.0.so",
          "ppb-abort-on-load-1.0.0.so", "ppb-unresolved-1.0.0.so", "ppb-mismatch-1.0.0.so"}) {
        const auto& c = by_file(all, file);
        BOOST_TEST((c.verdict == Verdict::usable), file << ": " << c.reason);
        BOOST_TEST(c.version.has_value());
        BOOST_TEST(c.entry_point == "ppb_memory_model_v1_" + std::to_string(PPB_API_MINOR));
    }
    BOOST_TEST(by_file(all, "ppb-abort-on-load-1.0.0.so").name == "abort-on-load");
}

BOOST_AUTO_TEST_CASE(the_real_plugin_is_usable) {
    const auto all = ppb::discover_plugins(only({build_plugin_dir}));
    const auto& c = by_file(all, "ppb-dryrun-lsq-1.0.0.so");
    BOOST_TEST((c.verdict == Verdict::usable), c.reason);
    BOOST_TEST(c.name == "dryrun-lsq");
    BOOST_TEST(c.version->to_string() == "1.0.0");
    BOOST_TEST(c.abi_major == 1u);
    BOOST_TEST(c.api_minor == std::uint32_t{PPB_API_MINOR});
}

BOOST_AUTO_TEST_CASE(truncated_library_fails_with_a_reason) {
    ppb_test::TempDir dir;
    std::ifstream in(build_plugin_dir / "ppb-dryrun-lsq-1.0.0.so", std::ios::binary);
    std::string bytes(4096, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(dir.path() / "ppb-truncated-1.0.0.so", std::ios::binary) << bytes;
    const auto c = ppb::inspect_plugin_file(dir.path() / "ppb-truncated-1.0.0.so");
    BOOST_TEST((c.verdict == Verdict::failed), c.reason);
    BOOST_TEST(contains(c.reason, "truncated ELF file"), c.reason);
}

// Found by fuzz_plugin_file: a section-name table typed NOBITS with a huge size made Boost.DLL
// allocate that size. The name table must lie within the file whatever type it claims.
BOOST_AUTO_TEST_CASE(a_section_name_table_beyond_the_file_is_refused) {
    ppb_test::TempDir dir;
    std::ifstream in(build_plugin_dir / "ppb-dryrun-lsq-1.0.0.so", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Elf64_Ehdr header{};
    std::memcpy(&header, bytes.data(), sizeof header);
    const std::size_t at = header.e_shoff + std::size_t{header.e_shstrndx} * sizeof(Elf64_Shdr);
    Elf64_Shdr names{};
    std::memcpy(&names, bytes.data() + at, sizeof names);
    names.sh_type = SHT_NOBITS;
    names.sh_size = std::uint64_t{1} << 50;
    std::memcpy(bytes.data() + at, &names, sizeof names);
    std::ofstream(dir.path() / "ppb-huge-names-1.0.0.so", std::ios::binary) << bytes;
    const auto c = ppb::inspect_plugin_file(dir.path() / "ppb-huge-names-1.0.0.so");
    BOOST_TEST((c.verdict == Verdict::failed), c.reason);
    BOOST_TEST(contains(c.reason, "truncated ELF file: section"), c.reason);
}

BOOST_AUTO_TEST_CASE(unsafe_permissions_are_refused) {
    ppb_test::TempDir dir;
    const fs::path source = versions_dir / "ppb-fixed-1.0.0.so";
    const fs::path file = dir.path() / "ppb-fixed-1.0.0.so";
    fs::copy_file(source, file);
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read |
                                    fs::perms::others_exec);
    BOOST_TEST((ppb::inspect_plugin_file(file).verdict == Verdict::usable));

    fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
    auto c = ppb::inspect_plugin_file(file);
    BOOST_TEST((c.verdict == Verdict::refused));
    BOOST_TEST(contains(c.reason, "file is writable by others (mode 0"), c.reason);

    fs::permissions(file, fs::perms::others_write, fs::perm_options::remove);
    fs::permissions(dir.path(), fs::perms::others_write, fs::perm_options::add);
    c = ppb::inspect_plugin_file(file);
    BOOST_TEST((c.verdict == Verdict::refused));
    BOOST_TEST(contains(c.reason, "directory " + dir.path().string() + " is writable by others"),
               c.reason);

    // Like /tmp: a root-owned sticky directory is safe (the tests run as root in CI; elsewhere
    // the directory is ours, not root's, and must stay refused).
    fs::permissions(dir.path(), fs::perms::sticky_bit, fs::perm_options::add);
    c = ppb::inspect_plugin_file(file);
    if (::geteuid() == 0) {
        BOOST_TEST((c.verdict == Verdict::usable), c.reason);
    } else {
        BOOST_TEST((c.verdict == Verdict::refused), c.reason);
    }
}

BOOST_AUTO_TEST_CASE(same_name_and_version_later_on_the_path_is_shadowed) {
    ppb_test::TempDir first;
    ppb_test::TempDir second;
    for (const auto* dir : {&first, &second}) {
        fs::copy_file(versions_dir / "ppb-fixed-1.4.2.so", dir->path() / "ppb-fixed-1.4.2.so");
    }
    const auto all = ppb::discover_plugins(only({first.path(), second.path()}));
    BOOST_TEST_REQUIRE(all.size() == 2u);
    BOOST_TEST((all[0].verdict == Verdict::usable));
    BOOST_TEST((all[1].verdict == Verdict::shadowed));
    BOOST_TEST(contains(all[1].reason, (first.path() / "ppb-fixed-1.4.2.so").string()));
}

BOOST_AUTO_TEST_CASE(file_names_outside_the_scheme_are_not_plugins) {
    ppb_test::TempDir dir;
    fs::copy_file(versions_dir / "ppb-fixed-1.0.0.so", dir.path() / "libfixed.so");
    fs::copy_file(versions_dir / "ppb-fixed-1.0.0.so", dir.path() / "ppb-fixed-1.0.so");
    std::ofstream(dir.path() / "README.txt") << "not a candidate";
    const auto all = ppb::discover_plugins(only({dir.path()}));
    BOOST_TEST_REQUIRE(all.size() == 2u);  // *.so files only
    for (const auto& c : all) {
        BOOST_TEST((c.verdict == Verdict::not_a_plugin));
        BOOST_TEST(contains(c.reason, "ppb-<name>-<MAJOR.MINOR.PATCH>.so"));
    }
}

// Sets HOME for one test case, and back.
class ScopedHome {
  public:
    explicit ScopedHome(const fs::path& home) {
        if (const char* old = std::getenv("HOME"))
            saved_ = old;
        ::setenv("HOME", home.c_str(), 1);
    }
    ScopedHome(const ScopedHome&) = delete;
    ScopedHome& operator=(const ScopedHome&) = delete;
    ~ScopedHome() {
        if (saved_)
            ::setenv("HOME", saved_->c_str(), 1);
        else
            ::unsetenv("HOME");
    }

  private:
    std::optional<std::string> saved_;
};

BOOST_AUTO_TEST_CASE(search_path_order_and_skipped_entries) {
    ppb_test::TempDir home;  // without ~/.local/lib/ppb/plugins: not searched, not mentioned
    const ScopedHome scoped(home.path());
    ppb_test::TempDir a;
    ppb_test::TempDir b;
    ppb_test::TempDir exe_root;
    fs::create_directories(exe_root.path() / "bin");
    fs::create_directories(exe_root.path() / "lib/ppb/plugins");
    std::ofstream(a.path() / "plain-file") << "x";
    const std::string env = b.path().string() + "::" + (a.path() / "missing").string() + ":" +
                            (a.path() / "plain-file").string();
    const auto path =
        ppb::make_search_path({a.path().string()}, env.c_str(), exe_root.path() / "bin/ppb");
    BOOST_TEST_REQUIRE(path.dirs.size() == 3u);
    BOOST_TEST(path.dirs[0].path == a.path());
    BOOST_TEST(path.dirs[0].origin == "--plugin-path");
    BOOST_TEST(path.dirs[1].path == b.path());
    BOOST_TEST(path.dirs[1].origin == "PPB_PLUGIN_PATH");
    BOOST_TEST(path.dirs[2].path == exe_root.path() / "lib/ppb/plugins");
    BOOST_TEST(path.dirs[2].origin == "install location");
    BOOST_TEST_REQUIRE(path.warnings.size() == 2u);
    BOOST_TEST(contains(path.warnings[0], "does not exist"), path.warnings[0]);
    BOOST_TEST(contains(path.warnings[1], "is not a directory"), path.warnings[1]);
}

BOOST_AUTO_TEST_CASE(the_users_plugins_come_last_and_the_install_location_once) {
    ppb_test::TempDir home;
    const ScopedHome scoped(home.path());
    fs::create_directories(home.path() / ".local/lib/ppb/plugins");
    ppb_test::TempDir exe_root;
    fs::create_directories(exe_root.path() / "lib/ppb/plugins");
    const auto path = ppb::make_search_path({}, nullptr, exe_root.path() / "bin/ppb");
    BOOST_TEST_REQUIRE(path.dirs.size() == 2u);
    BOOST_TEST(path.dirs[0].origin == "install location");
    BOOST_TEST(path.dirs[1].path == home.path() / ".local/lib/ppb/plugins");
    BOOST_TEST(path.dirs[1].origin == "user plugins");
    BOOST_TEST(path.warnings.empty());
    // ppb installed into ~/.local: one directory, searched once, as the install location.
    const auto installed = ppb::make_search_path({}, nullptr, home.path() / ".local/bin/ppb");
    BOOST_TEST_REQUIRE(installed.dirs.size() == 1u);
    BOOST_TEST(installed.dirs[0].origin == "install location");
}

BOOST_AUTO_TEST_CASE(relative_entries_are_resolved_once_against_the_working_directory) {
    ppb_test::TempDir dir;
    fs::create_directories(dir.path() / "plugins");
    const auto saved = fs::current_path();
    fs::current_path(dir.path());
    const auto path = ppb::make_search_path({"plugins"}, nullptr, {});
    fs::current_path(saved);
    BOOST_TEST_REQUIRE(path.dirs.size() == 1u);
    BOOST_TEST(path.dirs[0].path == dir.path() / "plugins");
    BOOST_TEST(path.dirs[0].path.is_absolute());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace discovery_tests
