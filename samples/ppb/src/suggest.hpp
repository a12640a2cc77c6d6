// "Did you mean ...?": the names closest to a mistyped one (a command, a subcommand, an option).
//
// Distance is the optimal string alignment distance (Levenshtein with adjacent transpositions,
// so '--stagse' is one edit from '--stages'), counted without the leading dashes. A name is
// suggested when it is within 1 + n/4 edits of the word (n its length without dashes: one edit
// for a short word, two for 'stagse', three for 'memory-limit'), or when the word is the start of
// it (at least three letters: '--memory-limit' for '--memory-limit-mb'). Every name at the
// smallest distance is suggested, in the order given.
#ifndef PPB_SUGGEST_HPP
#define PPB_SUGGEST_HPP

#include <string>
#include <string_view>
#include <vector>

namespace ppb::cli {

// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

// The names of `names` to suggest for `word` (empty: none is close).
[[nodiscard]] std::vector<std::string> closest_names(std::string_view word,
                                                     const std::vector<std::string>& names);

// "; did you mean 'a'?" or "; did you mean 'a' or 'b'?", or "" when `suggestions` is empty.
[[nodiscard]] std::string did_you_mean(const std::vector<std::string>& suggestions);

}  // namespace ppb::cli

#endif  // PPB_SUGGEST_HPP
