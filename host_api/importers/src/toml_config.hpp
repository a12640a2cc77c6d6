// Reading TOML configurations for the importers (torchtitan's training configurations): values
// that know where they came from, so that every message names the file, the line and the key
// path ("llama3_8b.toml:24: parallelism.tensor_parallel_degree: ..."), as yaml_config.hpp does
// for YAML. Parsed with toml++ (a TOML 1.0 parser). Internal to ppb_importers.
#ifndef PPB_IMPORTERS_SRC_TOML_CONFIG_HPP
#define PPB_IMPORTERS_SRC_TOML_CONFIG_HPP

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toml {
inline namespace v3 {
class node;
class table;
}  // namespace v3
}  // namespace toml

namespace ppb::importers::detail {

// One value of the file (or an absent one) and where it is.
class TomlValue {
  public:
    TomlValue() = default;
    TomlValue(const std::string* file, const toml::node* node, std::string path)
        : file_(file), node_(node), path_(std::move(path)) {}

    [[nodiscard]] bool present() const noexcept { return node_ != nullptr; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    // "llama3_8b.toml:24: parallelism.tensor_parallel_degree".
    [[nodiscard]] std::string where() const;
    [[noreturn]] void fail(std::string_view problem) const;

    // The value as the kind asked for; absent when not given; an InputError naming the key
    // when given as another kind ("expected an integer, got the string \"8\"").
    [[nodiscard]] std::optional<std::int64_t> integer() const;
    [[nodiscard]] std::optional<double> number() const;  // an integer or a float
    [[nodiscard]] std::optional<bool> boolean() const;
    [[nodiscard]] std::optional<std::string> text() const;
    [[nodiscard]] std::optional<std::vector<std::string>> texts() const;  // an array of strings
    // An integer in [min, max], or absent.
    [[nodiscard]] std::optional<std::int64_t> integer_in(std::int64_t min, std::int64_t max) const;
    // The keys of a table, each with its value; empty when absent. A value that is not a table
    // is an InputError.
    [[nodiscard]] std::vector<TomlValue> members() const;
    // The last part of the path ("tensor_parallel_degree").
    [[nodiscard]] std::string key() const;

  private:
    [[nodiscard]] std::string described() const;
    const std::string* file_ = nullptr;
    const toml::node* node_ = nullptr;
    std::string path_;
};

class TomlConfig {
  public:
    // Reads and parses `file`; an unreadable file or a TOML syntax error is an InputError naming
    // the file and, for syntax, the line and column.
    explicit TomlConfig(const std::filesystem::path& file);
    ~TomlConfig();
    TomlConfig(const TomlConfig&) = delete;
    TomlConfig& operator=(const TomlConfig&) = delete;

    // The value at `path` ({"parallelism", "tensor_parallel_degree"}), absent when the file does
    // not give it. A section on the path that is not a table is an InputError.
    [[nodiscard]] TomlValue lookup(std::initializer_list<std::string_view> path) const;
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

  private:
    std::string name_;
    std::unique_ptr<toml::table> root_;
};

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_TOML_CONFIG_HPP
