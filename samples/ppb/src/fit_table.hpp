// The human form of a ppb.fit/1 document.
#ifndef PPB_FIT_TABLE_HPP
#define PPB_FIT_TABLE_HPP

#include <boost/json/object.hpp>

#include <string>
#include <string_view>

namespace ppb::cli {

[[nodiscard]] std::string render_fit(const boost::json::object& fit_document,
                                     std::string_view source, std::size_t observations);

}  // namespace ppb::cli

#endif  // PPB_FIT_TABLE_HPP
