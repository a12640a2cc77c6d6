// Reading a dry-run file's text as ppb reads one named dryrun.json, for the format suites (its
// name starts every message they check).
#ifndef PPB_TESTS_FORMATS_DRYRUN_TEXT_HPP
#define PPB_TESTS_FORMATS_DRYRUN_TEXT_HPP

#include <ppb/dryrun_format.hpp>

#include <string>

inline ppb::DryRunSet read_dryrun(const std::string& text,
                                  const ppb::DryRunReadOptions& options = {}) {
    return ppb::parse_dryrun(text, "dryrun.json", options);
}

#endif  // PPB_TESTS_FORMATS_DRYRUN_TEXT_HPP
