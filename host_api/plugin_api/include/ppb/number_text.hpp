// ppb/number_text.hpp — numbers for people, one rounding per quantity wherever ppb shows one.
//
// Tables, messages, notes and warnings all go through these, so a stage's memory reads the same
// in a plan's table and in the error that names it ("41234.5 MB", never -1896.7500000000448 MB).
// JSON documents carry the full numbers (ppb/json_output.hpp).
#ifndef PPB_NUMBER_TEXT_HPP
#define PPB_NUMBER_TEXT_HPP

#include <string>
#include <string_view>

namespace ppb {

// "41234.5 MB": memory, one decimal, with its unit.
[[nodiscard]] std::string format_mb(double mb);

// "1234.5": a time, one decimal; with a `unit` ("ms") "1234.5 ms". Times read from a layer file
// are in its own unit, which ppb does not know: they are shown without one, and the text says
// whose unit they are in (time_unit_phrase).
[[nodiscard]] std::string format_time(double time, std::string_view unit = {});

// How a text says which unit its times are in: "in ms", or "in the layer file's unit" when
// `unit` is empty.
[[nodiscard]] std::string time_unit_phrase(std::string_view unit);

}  // namespace ppb

#endif  // PPB_NUMBER_TEXT_HPP
