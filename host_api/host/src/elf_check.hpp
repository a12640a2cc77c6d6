// Internal: a bounds check of an ELF file's headers before anything parses its tables.
#ifndef PPB_SRC_ELF_CHECK_HPP
#define PPB_SRC_ELF_CHECK_HPP

#include <filesystem>
#include <string>

namespace ppb::detail {

enum class ElfCheck { ok, not_elf, malformed };

struct ElfCheckResult {
    ElfCheck status = ElfCheck::not_elf;
    std::string reason;  // for not_elf and malformed
};

// Verifies that `path` is a 64-bit little-endian ELF shared object for this machine whose
// section headers, and every section they describe, lie inside the file, and whose section
// names, symbol tables and their string tables are well formed: everything
// boost::dll::library_info reads (elf_check.cpp lists it). A truncated or corrupt library is
// reported here instead of being handed to a parser that trusts its sizes.
[[nodiscard]] ElfCheckResult check_elf_file(const std::filesystem::path& path);

}  // namespace ppb::detail

#endif  // PPB_SRC_ELF_CHECK_HPP
