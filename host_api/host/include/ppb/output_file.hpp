// Writing a result where the user asked for it, without clobbering what is not a file and
// without losing it silently: the one way every ppb command writes -o FILE, --append FILE,
// --export-sapp FILE, --timeline FILE, --report FILE and stdout (ppb::host, so that every
// command and every host shares it).
#ifndef PPB_OUTPUT_FILE_HPP
#define PPB_OUTPUT_FILE_HPP

#include <filesystem>
#include <stdexcept>
#include <string_view>

namespace ppb {

// A result that could not be written (permission denied, a missing directory, a read-only file
// system, no space left, an I/O error, a closed stdout). ppb exits 1 on it, as
// host_api/docs/commands.md says.
class OutputError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Writes `text` to `path`:
//   - "-": standard output (written and flushed);
//   - a regular file or a new path: replaced atomically (a temporary file in the same
//     directory, flushed to disk, renamed over it; a symbolic link is followed; an existing
//     file's permission bits, and as far as allowed its owner, are kept);
//   - a FIFO or a character device (/dev/null, /dev/stdout, a terminal): written through, in
//     place;
//   - anything else (a directory, a socket, a block device) is left alone.
// Throws ppb::InputError "<path>: cannot write: <reason>" for a path ppb refuses to write
// (an empty name, a directory, a socket, a block device, a symbolic link to a missing file: a
// mistake in the command line, exit 2), and OutputError "<path>: cannot write: <reason>"
// ("cannot write to stdout: <reason>") when the file cannot be opened, written, flushed, closed
// or renamed (permission denied, missing directory, no space left, I/O error: exit 1); in the
// atomic case the old file is then unchanged.
void write_output_file(const std::filesystem::path& path, std::string_view text);

// Writes `text` to standard output and flushes it; throws OutputError
// "cannot write to stdout: <reason>".
void write_stdout(std::string_view text);

}  // namespace ppb

#endif  // PPB_OUTPUT_FILE_HPP
