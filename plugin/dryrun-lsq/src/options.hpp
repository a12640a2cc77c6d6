// Options of the dryrun-lsq model, as given to create() in JSON.
#ifndef PPB_DRYRUN_LSQ_OPTIONS_HPP
#define PPB_DRYRUN_LSQ_OPTIONS_HPP

#include <string_view>

namespace ppb::dryrun_lsq {

struct FitOptions {
    // A singular value of the column-normalised design matrix counts towards its rank when it
    // exceeds rank_tolerance times the largest one.
    double rank_tolerance = 1e-10;
};

// Parses `{}` or `{"rank_tolerance": <number in (0, 1)>}`. Throws ppb::plugin::InvalidInput
// naming the offending key for malformed JSON, unknown keys, wrong types or values.
[[nodiscard]] FitOptions parse_options(std::string_view options_json);

}  // namespace ppb::dryrun_lsq

#endif  // PPB_DRYRUN_LSQ_OPTIONS_HPP
