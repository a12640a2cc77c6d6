// ppb/partition/request_error.hpp — a host's request refused field by field, in the host's words.
//
// The library checks what every host asks of it (a partition, a search, a saved plan's
// simulation) once; the command line and Python name the same settings differently
// ("--memory-margin-mb", "memory_margin_mb"). A refusal carries the field it is about
// (RequestError::field(), the request's own name) and words it through the host's FieldName, so
// that no user is told about a flag they never typed.
#ifndef PPB_PARTITION_REQUEST_ERROR_HPP
#define PPB_PARTITION_REQUEST_ERROR_HPP

#include <ppb/errors.hpp>
#include <ppb/limits.hpp>
#include <ppb/schedule.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace ppb::partition {

// A field's name in the host's words: "memory_margin_mb" -> "--memory-margin-mb".
using FieldName = std::function<std::string(std::string_view field)>;
// The fields as Python's keywords name them (the request's own names).
[[nodiscard]] std::string keyword_name(std::string_view field);
// The fields as the command's flags name them: "--" and '-' for '_'.
[[nodiscard]] std::string flag_name(std::string_view field);

// A request's field that cannot be planned: field() is its name in the request ("chunks").
class RequestError : public InputError {
  public:
    RequestError(std::string field, const std::string& message)
        : InputError(message), field_(std::move(field)) {}
    [[nodiscard]] const std::string& field() const noexcept { return field_; }

  private:
    std::string field_;
};

// A RequestError about `field`: "<the field in name's words>: <what>".
[[noreturn]] void refuse(std::string_view field, const FieldName& name, std::string_view what);
// A count within `range`, or a RequestError about `field`: "<field>: 0 is out of range (1 to 1024
// stages)".
void check_count(std::string_view field, std::uint64_t value, const limits::CountRange& range,
                 const FieldName& name);
// The schedule named `text`, or a RequestError about "schedule" (ppb::unknown_schedule's words).
[[nodiscard]] Schedule schedule_named(std::string_view text, const FieldName& name);
}  // namespace ppb::partition

#endif  // PPB_PARTITION_REQUEST_ERROR_HPP
