// The ELF check before Boost.DLL reads a plugin's symbol names (host_api/host/src/elf_check.cpp):
// the fuzz finding, and one crafted variant of the real dryrun-lsq plugin per structure Boost.DLL
// 1.81's library_info walks, each refused as `failed` with the structure and numbers named,
// before Boost.DLL reads it (the ASan/UBSan stage runs these: a file that got through would be
// read by Boost.DLL there).
#include "temp_dir.hpp"

#include <ppb/discovery.hpp>

#include <boost/test/unit_test.hpp>

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ppb::Verdict;

// The file's own namespace: its helpers keep their short names in a unity build too.
namespace elf_check_tests {

namespace {

const fs::path build_plugin_dir = PPB_BUILD_PLUGIN_DIR;
const fs::path data_dir = PPB_PLUGIN_TEST_DATA_DIR;

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
T get(const std::string& bytes, std::size_t at) {
    BOOST_TEST_REQUIRE(at + sizeof(T) <= bytes.size());
    T value{};
    std::memcpy(&value, bytes.data() + at, sizeof value);
    return value;
}

template <class T>
void put(std::string& bytes, std::size_t at, const T& value) {
    BOOST_TEST_REQUIRE(at + sizeof(T) <= bytes.size());
    std::memcpy(bytes.data() + at, &value, sizeof value);
}

// The real plugin's bytes, with its header and section headers decoded, to patch.
struct Library {
    std::string bytes = read_bytes(build_plugin_dir / "ppb-dryrun-lsq-1.0.0.so");

    Elf64_Ehdr header() const { return get<Elf64_Ehdr>(bytes, 0); }
    void set_header(const Elf64_Ehdr& h) { put(bytes, 0, h); }

    std::size_t section_at(std::size_t index) const {
        return header().e_shoff + index * sizeof(Elf64_Shdr);
    }
    Elf64_Shdr section(std::size_t index) const {
        return get<Elf64_Shdr>(bytes, section_at(index));
    }
    void set_section(std::size_t index, const Elf64_Shdr& s) { put(bytes, section_at(index), s); }

    std::string name_of(const Elf64_Shdr& s) const {
        const auto names = section(header().e_shstrndx);
        return bytes.c_str() + names.sh_offset + s.sh_name;
    }
    std::optional<std::size_t> find(const std::string& name) const {
        for (std::size_t i = 0; i < header().e_shnum; ++i) {
            if (name_of(section(i)) == name)
                return i;
        }
        return std::nullopt;
    }
    std::size_t require(const std::string& name) const {
        const auto index = find(name);
        BOOST_TEST_REQUIRE(index.has_value(), "the plugin has no section " << name);
        return *index;
    }

    ppb::PluginCandidate inspect(const ppb_test::TempDir& dir) const {
        const fs::path file = dir.path() / "ppb-crafted-1.0.0.so";
        std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
        return ppb::inspect_plugin_file(file);
    }
};

void check_refused(const Library& library, const std::string& reason) {
    ppb_test::TempDir dir;
    const auto c = library.inspect(dir);
    BOOST_TEST((c.verdict == Verdict::failed), c.reason);
    BOOST_TEST(c.reason == reason);
}

std::string label(std::size_t index, const std::string& name) {
    return "section " + std::to_string(index) + " (" + name + ")";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(elf_check)

BOOST_AUTO_TEST_CASE(the_unpatched_plugin_passes) {
    ppb_test::TempDir dir;
    const auto c = Library{}.inspect(dir);
    BOOST_TEST((c.verdict == Verdict::usable), c.reason);
}

// Found by fuzz_plugin_file: .dynsym holds 5 bytes, no whole entry, and Boost.DLL bound a
// reference to entry 0 of an empty vector (UBSan: reference binding to null pointer of type
// 'boost::dll::detail::Elf_Sym_template<boost::uint64_t>').
BOOST_AUTO_TEST_CASE(the_fuzz_finding_a_symbol_table_without_entries_is_refused) {
    ppb_test::TempDir dir;
    const fs::path file = dir.path() / "ppb-fuzz-1.0.0.so";
    fs::copy_file(data_dir / "empty-dynsym.so.bin", file);
    const auto c = ppb::inspect_plugin_file(file);
    BOOST_TEST((c.verdict == Verdict::failed), c.reason);
    BOOST_TEST(c.reason ==
               "corrupt ELF file: the symbol table section 4 (.dynsym) holds 5 bytes, not a "
               "whole, non-zero number of 24-byte entries");
}

BOOST_AUTO_TEST_CASE(a_section_header_table_past_the_end_is_refused) {
    Library library;
    auto h = library.header();
    const auto size = library.bytes.size();
    h.e_shoff = size - sizeof(Elf64_Shdr);  // the last header fits, the others do not
    library.set_header(h);
    check_refused(library, "truncated ELF file: its " + std::to_string(h.e_shnum) +
                               " section headers end at byte " +
                               std::to_string(h.e_shoff + h.e_shnum * sizeof(Elf64_Shdr)) +
                               " of a " + std::to_string(size) + "-byte file");

    Library cut;
    cut.bytes.resize(cut.header().e_shoff + sizeof(Elf64_Shdr));
    check_refused(
        cut, "truncated ELF file: its " + std::to_string(cut.header().e_shnum) +
                 " section headers end at byte " +
                 std::to_string(cut.header().e_shoff + cut.header().e_shnum * sizeof(Elf64_Shdr)) +
                 " of a " + std::to_string(cut.bytes.size()) + "-byte file");
}

BOOST_AUTO_TEST_CASE(a_header_boost_dll_would_misread_is_refused) {
    Library wrong_entry_size;
    auto h = wrong_entry_size.header();
    h.e_shentsize = sizeof(Elf64_Shdr) / 2;
    wrong_entry_size.set_header(h);
    check_refused(wrong_entry_size, "corrupt ELF file: section headers of 32 bytes, not 64");

    Library no_sections;
    h = no_sections.header();
    h.e_shnum = 0;
    no_sections.set_header(h);
    check_refused(no_sections, "corrupt ELF file: no section header table");

    Library elf32;
    elf32.bytes[EI_CLASS] = ELFCLASS32;
    check_refused(elf32, "a 32-bit ELF file: ppb plugins are 64-bit");

    Library big_endian;
    big_endian.bytes[EI_DATA] = ELFDATA2MSB;
    check_refused(big_endian, "a big-endian ELF file: ppb plugins are little-endian");
}

BOOST_AUTO_TEST_CASE(a_section_name_table_index_out_of_range_is_refused) {
    Library library;
    auto h = library.header();
    h.e_shstrndx = h.e_shnum;
    library.set_header(h);
    check_refused(library, "corrupt ELF file: the section-name table index " +
                               std::to_string(h.e_shnum) + " is not one of its " +
                               std::to_string(h.e_shnum) + " sections");

    // SHN_XINDEX (the index is in section 0) is not used by any plugin: refused alike.
    h.e_shstrndx = SHN_XINDEX;
    library.set_header(h);
    check_refused(library, "corrupt ELF file: the section-name table index " +
                               std::to_string(SHN_XINDEX) + " is not one of its " +
                               std::to_string(h.e_shnum) + " sections");
}

BOOST_AUTO_TEST_CASE(a_section_name_table_that_is_no_string_table_is_refused) {
    Library library;
    const auto index = library.header().e_shstrndx;
    auto names = library.section(index);
    names.sh_type = SHT_PROGBITS;
    library.set_section(index, names);
    check_refused(library, "corrupt ELF file: the section-name table (section " +
                               std::to_string(index) + ") is not a string table (type 1)");
}

BOOST_AUTO_TEST_CASE(a_section_name_beyond_the_name_table_is_refused) {
    Library library;
    const auto names_size = library.section(library.header().e_shstrndx).sh_size;
    const auto index = library.require(".text");
    auto text = library.section(index);
    text.sh_name = static_cast<std::uint32_t>(names_size);
    library.set_section(index, text);
    check_refused(library, "corrupt ELF file: section " + std::to_string(index) +
                               " has its name at byte " + std::to_string(names_size) + " of a " +
                               std::to_string(names_size) + "-byte section-name table");
}

BOOST_AUTO_TEST_CASE(a_zero_entry_dynsym_is_refused) {
    for (const std::uint64_t size : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{24 + 7}}) {
        Library library;
        const auto index = library.require(".dynsym");
        auto dynsym = library.section(index);
        dynsym.sh_size = size;
        library.set_section(index, dynsym);
        check_refused(library, "corrupt ELF file: the symbol table " + label(index, ".dynsym") +
                                   " holds " + std::to_string(size) +
                                   " bytes, not a whole, non-zero number of 24-byte entries");
    }
}

BOOST_AUTO_TEST_CASE(a_symbol_entry_size_other_than_24_is_refused) {
    for (const std::uint64_t entsize : {std::uint64_t{0}, std::uint64_t{16}}) {
        Library library;
        const auto index = library.require(".dynsym");
        auto dynsym = library.section(index);
        dynsym.sh_entsize = entsize;
        library.set_section(index, dynsym);
        check_refused(library, "corrupt ELF file: the symbol table " + label(index, ".dynsym") +
                                   " has entries of " + std::to_string(entsize) + " bytes, not 24");
    }
}

BOOST_AUTO_TEST_CASE(a_string_table_link_out_of_range_is_refused) {
    Library library;
    const auto index = library.require(".dynsym");
    auto dynsym = library.section(index);
    dynsym.sh_link = library.header().e_shnum;  // one past the last section
    library.set_section(index, dynsym);
    check_refused(library, "corrupt ELF file: the symbol table " + label(index, ".dynsym") +
                               " links to section " + std::to_string(dynsym.sh_link) +
                               ", which is not a string table");

    // In range, but the section linked to is the symbol table itself.
    dynsym.sh_link = static_cast<std::uint32_t>(index);
    library.set_section(index, dynsym);
    check_refused(library, "corrupt ELF file: the symbol table " + label(index, ".dynsym") +
                               " links to section " + std::to_string(index) +
                               ", which is not a string table");
}

BOOST_AUTO_TEST_CASE(a_string_table_past_the_end_is_refused) {
    Library library;
    const auto index = library.require(".dynstr");
    auto dynstr = library.section(index);
    dynstr.sh_size = library.bytes.size();
    library.set_section(index, dynstr);
    check_refused(library, "truncated ELF file: section " + std::to_string(index) +
                               " extends past the end of the " +
                               std::to_string(library.bytes.size()) + "-byte file");
}

BOOST_AUTO_TEST_CASE(a_symbol_name_beyond_its_string_table_is_refused) {
    Library library;
    const auto index = library.require(".dynsym");
    const auto dynsym = library.section(index);
    const auto strings = library.section(dynsym.sh_link);
    // The last symbol: the plugin's entry point or another exported name.
    const std::size_t last = dynsym.sh_size / sizeof(Elf64_Sym) - 1;
    const std::size_t at = dynsym.sh_offset + last * sizeof(Elf64_Sym);
    auto symbol = get<Elf64_Sym>(library.bytes, at);
    symbol.st_name = static_cast<std::uint32_t>(strings.sh_size);
    put(library.bytes, at, symbol);
    check_refused(library, "corrupt ELF file: symbol " + std::to_string(last) +
                               " of the symbol table " + label(index, ".dynsym") +
                               " has its name at byte " + std::to_string(strings.sh_size) +
                               " of a " + std::to_string(strings.sh_size) + "-byte string table (" +
                               label(dynsym.sh_link, ".dynstr") + ")");
}

// Boost.DLL takes the string table by name, not by sh_link: a file where the two differ would
// have one table's names checked and another's read.
BOOST_AUTO_TEST_CASE(a_string_table_named_otherwise_than_linked_is_refused) {
    Library library;
    const bool has_symtab = library.find(".symtab").has_value();
    const std::string symbols_name = has_symtab ? ".symtab" : ".dynsym";
    const std::string strings_name = has_symtab ? ".strtab" : ".dynstr";
    const auto symbols = library.require(symbols_name);
    const auto strings = library.require(strings_name);
    const auto names_index = library.header().e_shstrndx;
    // The section-name table takes the string table's name; the string table loses it.
    auto real = library.section(strings);
    auto names = library.section(names_index);
    names.sh_name = real.sh_name;
    real.sh_name = 0;
    library.set_section(strings, real);
    library.set_section(names_index, names);
    check_refused(library, "corrupt ELF file: the symbol table " + label(symbols, symbols_name) +
                               " links to the string table in section " + std::to_string(strings) +
                               ", but the string table named " + strings_name + " is section " +
                               std::to_string(names_index));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace elf_check_tests
