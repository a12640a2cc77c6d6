#include "elf_check.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace ppb::detail {
namespace fs = std::filesystem;

ElfCheckResult check_elf_file(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec)
        return {ElfCheck::not_elf, "cannot read the file: " + ec.message()};
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return {ElfCheck::not_elf, "cannot open the file"};

    Elf64_Ehdr header{};
    if (size < EI_NIDENT || !in.read(reinterpret_cast<char*>(header.e_ident), EI_NIDENT) ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
        return {ElfCheck::not_elf, "not a shared library (no ELF header)"};
    }
    if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
        return {ElfCheck::malformed, "an ELF file, but not 64-bit little-endian"};
    }
    if (size < sizeof(Elf64_Ehdr)) {
        return {ElfCheck::malformed, "truncated ELF file (" + std::to_string(size) + " bytes)"};
    }
    in.seekg(0);
    in.read(reinterpret_cast<char*>(&header), sizeof header);
    if (header.e_type != ET_DYN)
        return {ElfCheck::malformed, "an ELF file, but not a shared object"};
    if (header.e_machine != EM_X86_64 && header.e_machine != EM_AARCH64) {
        return {ElfCheck::malformed, "a shared object for another machine (e_machine " +
                                         std::to_string(header.e_machine) + ")"};
    }
    if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum == 0 ||
        header.e_shstrndx >= header.e_shnum) {
        return {ElfCheck::malformed, "corrupt ELF file: no usable section header table"};
    }
    const std::uint64_t table_end =
        header.e_shoff + std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
    if (header.e_shoff > size || table_end > size) {
        return {ElfCheck::malformed, "truncated ELF file: its section headers end at byte " +
                                         std::to_string(table_end) + " of a " +
                                         std::to_string(size) + "-byte file"};
    }
    std::vector<Elf64_Shdr> sections(header.e_shnum);
    in.seekg(static_cast<std::streamoff>(header.e_shoff));
    if (!in.read(reinterpret_cast<char*>(sections.data()),
                 static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr)))) {
        return {ElfCheck::malformed, "cannot read the section header table"};
    }
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const auto& s = sections[i];
        // The section-name table is read by its index, whatever type it claims (Boost.DLL sizes
        // a buffer from it), so it must lie within the file even when typed NOBITS or NULL.
        if ((s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL) && i != header.e_shstrndx)
            continue;
        if (s.sh_offset > size || s.sh_size > size - s.sh_offset) {
            return {ElfCheck::malformed, "truncated ELF file: section " + std::to_string(i) +
                                             " extends past the end of the " +
                                             std::to_string(size) + "-byte file"};
        }
    }
    return {ElfCheck::ok, {}};
}

}  // namespace ppb::detail
