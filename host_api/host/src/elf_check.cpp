// The ELF check before Boost.DLL reads a plugin file's symbol names.
//
// boost::dll::library_info (Boost 1.81, boost/dll/detail/elf_info.hpp) trusts every size and
// offset it reads. For symbols(), the call discovery makes, it
//   1. reads the ELF header, then the section header at e_shoff + e_shstrndx * 64: the
//      section-name table, which it copies whole (sh_size bytes at sh_offset, whatever its type);
//   2. walks e_shnum section headers from e_shoff, looks each name up in that table, and keeps
//      the last SYMTAB named ".symtab", STRTAB named ".strtab", DYNSYM named ".dynsym" and
//      STRTAB named ".dynstr" (by name, not by sh_link);
//   3. uses .symtab with .strtab when both are non-empty, else .dynsym with .dynstr; copies the
//      string table whole and the symbol table as sh_size / 24 entries, through a reference to
//      entry 0 (undefined behaviour when sh_size < 24: there is no entry 0);
//   4. takes each visible symbol's name from the string table at st_name.
// sections() and symbols(section) read the same structures (symbols(section) through
// names.at(sh_name), which throws for a name offset beyond the table).
//
// So a file passes only if every structure of that walk is well formed, which the ELF
// specification requires anyway and every linker produces:
//   - the header: 64-bit, little-endian, a shared object for this machine, 64-byte section
//     headers, a section-name table index within the section count;
//   - the section header table and every section with file contents (not NOBITS or NULL; the
//     section-name table whatever its type) inside the file;
//   - the section-name table a string table, every section's name offset inside it;
//   - every SYMTAB and DYNSYM section: 24-byte entries, a non-zero whole number of them (entry
//     0 is the undefined symbol), sh_link naming a string table, every symbol's name offset
//     inside that table;
//   - the string table Boost.DLL pairs with the symbol table it reads (by name) the one that
//     symbol table's sh_link names, so the names checked are the names read.
// A file that fails is refused with the structure and the numbers that are wrong.
#include "elf_check.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace ppb::detail {
namespace fs = std::filesystem;
namespace {

ElfCheckResult malformed(std::string reason) {
    return {ElfCheck::malformed, std::move(reason)};
}

// "5 bytes", and "a 9016-byte file".
std::string bytes(std::uint64_t n) {
    return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}
std::string sized(std::uint64_t n) {
    return std::to_string(n) + "-byte";
}

// Reads whole objects at file offsets already checked to lie inside the file.
class ElfFile {
  public:
    explicit ElfFile(std::ifstream& in) : in_(in) {}

    template <class T>
    bool read_at(std::uint64_t offset, T* out, std::size_t count = 1) {
        in_.clear();
        in_.seekg(static_cast<std::streamoff>(offset));
        return static_cast<bool>(in_.read(reinterpret_cast<char*>(out),
                                          static_cast<std::streamsize>(count * sizeof(T))));
    }

  private:
    std::ifstream& in_;
};

// The header checks: what the file is, and where its section header table is.
std::optional<ElfCheckResult> check_header(const Elf64_Ehdr& header, std::uint64_t size) {
    if (header.e_type != ET_DYN)
        return malformed("an ELF file, but not a shared object");
    if (header.e_machine != EM_X86_64 && header.e_machine != EM_AARCH64) {
        return malformed("a shared object for another machine (e_machine " +
                         std::to_string(header.e_machine) + ")");
    }
    if (header.e_shentsize != sizeof(Elf64_Shdr)) {
        return malformed("corrupt ELF file: section headers of " + bytes(header.e_shentsize) +
                         ", not " + std::to_string(sizeof(Elf64_Shdr)));
    }
    if (header.e_shnum == 0)
        return malformed("corrupt ELF file: no section header table");
    if (header.e_shstrndx >= header.e_shnum) {
        return malformed("corrupt ELF file: the section-name table index " +
                         std::to_string(header.e_shstrndx) + " is not one of its " +
                         std::to_string(header.e_shnum) + " sections");
    }
    const std::uint64_t table_end =
        header.e_shoff + std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
    if (header.e_shoff > size || table_end > size) {
        return malformed("truncated ELF file: its " + std::to_string(header.e_shnum) +
                         " section headers end at byte " + std::to_string(table_end) + " of a " +
                         sized(size) + " file");
    }
    return std::nullopt;
}

// "section 4 (.dynsym)", from a name table already known to hold every name offset.
std::string section_label(std::size_t index, const Elf64_Shdr& s, const std::vector<char>& names) {
    const char* name = &names[s.sh_name];
    return "section " + std::to_string(index) + (*name ? std::string(" (") + name + ")" : "");
}

// One SYMTAB or DYNSYM section: its entries, its string table, and every name in it.
std::optional<ElfCheckResult> check_symbol_table(ElfFile& file, std::size_t index,
                                                 const std::vector<Elf64_Shdr>& sections,
                                                 const std::vector<char>& names) {
    const auto& s = sections[index];
    const std::string what = "the symbol table " + section_label(index, s, names);
    if (s.sh_entsize != sizeof(Elf64_Sym)) {
        return malformed("corrupt ELF file: " + what + " has entries of " + bytes(s.sh_entsize) +
                         ", not " + std::to_string(sizeof(Elf64_Sym)));
    }
    if (s.sh_size < sizeof(Elf64_Sym) || s.sh_size % sizeof(Elf64_Sym) != 0) {
        return malformed("corrupt ELF file: " + what + " holds " + bytes(s.sh_size) +
                         ", not a whole, non-zero number of " + std::to_string(sizeof(Elf64_Sym)) +
                         "-byte entries");
    }
    if (s.sh_link >= sections.size() || sections[s.sh_link].sh_type != SHT_STRTAB) {
        return malformed("corrupt ELF file: " + what + " links to section " +
                         std::to_string(s.sh_link) + ", which is not a string table");
    }
    const auto& strings = sections[s.sh_link];
    std::vector<Elf64_Sym> symbols(s.sh_size / sizeof(Elf64_Sym));
    if (!file.read_at(s.sh_offset, symbols.data(), symbols.size()))
        return malformed("cannot read " + what);
    for (std::size_t k = 0; k < symbols.size(); ++k) {
        if (symbols[k].st_name >= strings.sh_size) {
            return malformed("corrupt ELF file: symbol " + std::to_string(k) + " of " + what +
                             " has its name at byte " + std::to_string(symbols[k].st_name) +
                             " of a " + sized(strings.sh_size) + " string table (" +
                             section_label(s.sh_link, strings, names) + ")");
        }
    }
    return std::nullopt;
}

// Boost.DLL pairs the symbol table it reads with a string table by name (step 2 and 3 above):
// that must be the one the symbol table's sh_link names, or the names checked are not the
// names read.
std::optional<ElfCheckResult> check_boost_pairing(const std::vector<Elf64_Shdr>& sections,
                                                  const std::vector<char>& names) {
    std::optional<std::size_t> symtab;
    std::optional<std::size_t> strtab;
    std::optional<std::size_t> dynsym;
    std::optional<std::size_t> dynstr;
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const auto& s = sections[i];
        const char* name = &names[s.sh_name];
        if (s.sh_type == SHT_SYMTAB && std::strcmp(name, ".symtab") == 0)
            symtab = i;
        else if (s.sh_type == SHT_STRTAB && std::strcmp(name, ".strtab") == 0)
            strtab = i;
        else if (s.sh_type == SHT_STRTAB && std::strcmp(name, ".dynstr") == 0)
            dynstr = i;
        else if (s.sh_type == SHT_DYNSYM && std::strcmp(name, ".dynsym") == 0)
            dynsym = i;
    }
    const auto non_empty = [&](std::optional<std::size_t> i) {
        return i && sections[*i].sh_size != 0;
    };
    auto symbols = symtab;
    auto strings = strtab;
    if (!non_empty(symbols) || !non_empty(strings)) {
        symbols = dynsym;
        strings = dynstr;
    }
    if (!non_empty(symbols) || !non_empty(strings) || sections[*symbols].sh_link == *strings)
        return std::nullopt;
    return malformed(
        "corrupt ELF file: the symbol table " + section_label(*symbols, sections[*symbols], names) +
        " links to the string table in section " + std::to_string(sections[*symbols].sh_link) +
        ", but the string table named " + &names[sections[*strings].sh_name] + " is section " +
        std::to_string(*strings));
}

}  // namespace

ElfCheckResult check_elf_file(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec)
        return {ElfCheck::not_elf, "cannot read the file: " + ec.message()};
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return {ElfCheck::not_elf, "cannot open the file"};
    ElfFile file(in);

    Elf64_Ehdr header{};
    if (size < EI_NIDENT || !file.read_at(0, header.e_ident, EI_NIDENT) ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
        return {ElfCheck::not_elf, "not a shared library (no ELF header)"};
    }
    if (header.e_ident[EI_CLASS] != ELFCLASS64) {
        return malformed(header.e_ident[EI_CLASS] == ELFCLASS32
                             ? "a 32-bit ELF file: ppb plugins are 64-bit"
                             : "an ELF file of unknown class " +
                                   std::to_string(header.e_ident[EI_CLASS]) +
                                   ": ppb plugins are 64-bit");
    }
    if (header.e_ident[EI_DATA] != ELFDATA2LSB) {
        return malformed(header.e_ident[EI_DATA] == ELFDATA2MSB
                             ? "a big-endian ELF file: ppb plugins are little-endian"
                             : "an ELF file of unknown byte order " +
                                   std::to_string(header.e_ident[EI_DATA]) +
                                   ": ppb plugins are little-endian");
    }
    if (size < sizeof(Elf64_Ehdr))
        return malformed("truncated ELF file (" + bytes(size) + ")");
    if (!file.read_at(0, &header))
        return malformed("cannot read the ELF header");
    if (auto bad = check_header(header, size))
        return *bad;

    std::vector<Elf64_Shdr> sections(header.e_shnum);
    if (!file.read_at(header.e_shoff, sections.data(), sections.size()))
        return malformed("cannot read the section header table");
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const auto& s = sections[i];
        // The section-name table is read by its index, whatever type it claims (Boost.DLL sizes
        // a buffer from it), so it must lie within the file even when typed NOBITS or NULL.
        if ((s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL) && i != header.e_shstrndx)
            continue;
        if (s.sh_offset > size || s.sh_size > size - s.sh_offset) {
            return malformed("truncated ELF file: section " + std::to_string(i) +
                             " extends past the end of the " + sized(size) + " file");
        }
    }

    const auto& name_table = sections[header.e_shstrndx];
    if (name_table.sh_type != SHT_STRTAB) {
        return malformed("corrupt ELF file: the section-name table (section " +
                         std::to_string(header.e_shstrndx) + ") is not a string table (type " +
                         std::to_string(name_table.sh_type) + ")");
    }
    // One byte more than the table, always 0: every name read from it ends inside the buffer.
    std::vector<char> names(name_table.sh_size + 1, '\0');
    if (!file.read_at(name_table.sh_offset, names.data(), name_table.sh_size))
        return malformed("cannot read the section-name table");
    for (std::size_t i = 0; i < sections.size(); ++i) {
        if (sections[i].sh_name >= name_table.sh_size) {
            return malformed("corrupt ELF file: section " + std::to_string(i) +
                             " has its name at byte " + std::to_string(sections[i].sh_name) +
                             " of a " + sized(name_table.sh_size) + " section-name table");
        }
    }

    for (std::size_t i = 0; i < sections.size(); ++i) {
        if (sections[i].sh_type != SHT_SYMTAB && sections[i].sh_type != SHT_DYNSYM)
            continue;
        if (auto bad = check_symbol_table(file, i, sections, names))
            return *bad;
    }
    if (auto bad = check_boost_pairing(sections, names))
        return *bad;
    return {ElfCheck::ok, {}};
}

}  // namespace ppb::detail
