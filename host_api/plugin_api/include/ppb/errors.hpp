// ppb/errors.hpp — exceptions the host library throws, by whose fault.
#ifndef PPB_ERRORS_HPP
#define PPB_ERRORS_HPP

#include <stdexcept>
#include <string>

namespace ppb {

// The user's input is wrong (a file, an argument). The message names the place and the problem,
// e.g. "dryrun.json: observations[3].stage: 8 is not a stage of an 8-stage pipeline (0..7)".
// Hosts exit with status 2.
class InputError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// No usable plugin matches a request, or a plugin could not be loaded. Hosts exit with status 3.
// (Failures inside a loaded plugin are ppb::ModelError, ppb/memory_model.hpp.)
class PluginError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace ppb

#endif  // PPB_ERRORS_HPP
