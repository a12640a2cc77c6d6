#include "array_text.hpp"

#include <boost/json/array.hpp>
#include <ppb/json_output.hpp>

namespace ppb::cli {

std::string array_text(const boost::json::value& v) {
    if (!v.is_array())
        return to_compact_json(v);
    std::string out = "[";
    for (const auto& item : v.get_array())
        out += (out.size() > 1 ? ", " : "") + array_text(item);
    return out + "]";
}

}  // namespace ppb::cli
