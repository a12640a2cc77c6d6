// shape_count.hpp — a whole number of a model shape (the analytic model's options), read without
// judging it: the requests and the search take the shape's degrees and layer counts where it
// gives them, and leave a wrong type or range to the memory model, which names it.
#ifndef PPB_PARTITION_SRC_SHAPE_COUNT_HPP
#define PPB_PARTITION_SRC_SHAPE_COUNT_HPP

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace ppb::partition::detail {

// `key` of `shape` when it is a whole number from 1 to 2^31 - 1; nullopt otherwise.
[[nodiscard]] inline std::optional<std::uint32_t> shape_count(const boost::json::object& shape,
                                                              std::string_view key) {
    const boost::json::value* v = shape.if_contains(key);
    if (v == nullptr)
        return std::nullopt;
    if (v->is_int64() && v->as_int64() > 0 && v->as_int64() <= 0x7fffffff)
        return static_cast<std::uint32_t>(v->as_int64());
    if (v->is_uint64() && v->as_uint64() <= 0x7fffffff && v->as_uint64() > 0)
        return static_cast<std::uint32_t>(v->as_uint64());
    return std::nullopt;  // the model names its own wrong types
}

}  // namespace ppb::partition::detail

#endif  // PPB_PARTITION_SRC_SHAPE_COUNT_HPP
