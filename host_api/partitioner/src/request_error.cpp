// A refusal in the host's words (ppb/partition/request_error.hpp).
#include <ppb/partition/request_error.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace ppb::partition {

void refuse(std::string_view field, const FieldName& name, std::string_view what) {
    throw RequestError(std::string(field), fmt::format("{}: {}", name(field), what));
}

void check_count(std::string_view field, std::uint64_t value, const limits::CountRange& range,
                 const FieldName& name) {
    if (!range.contains(value))
        refuse(field, name, limits::out_of_range(std::to_string(value), range));
}

Schedule schedule_named(std::string_view text, const FieldName& name) {
    const auto schedule = schedule_from_name(text);
    if (!schedule)
        refuse("schedule", name, unknown_schedule(text));
    return *schedule;
}

std::string keyword_name(std::string_view field) {
    return std::string(field);
}

std::string flag_name(std::string_view field) {
    std::string out = "--";
    for (const char c : field)
        out += c == '_' ? '-' : c;
    return out;
}

}  // namespace ppb::partition
