// Reading YAML configurations for the importers (MindFormers training YAML, SAPP's -init
// description): values that know where they came from, so that every message names the file,
// the line and the key path ("llama.yaml:14: model.model_config.offset: ...").
// Internal to ppb_importers.
#ifndef PPB_IMPORTERS_SRC_YAML_CONFIG_HPP
#define PPB_IMPORTERS_SRC_YAML_CONFIG_HPP

#include <ppb/errors.hpp>
#include <ppb/importers/layout.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::importers::detail {

// Where settings come from: the configuration file, or one command-line flag.
struct Origin {
    std::string name;  // the file as the user named it, or the flag ("--offset")
    bool flag = false;
};

// One configuration value and where it is, for messages.
class Setting {
  public:
    Setting() = default;
    Setting(const Origin* origin, YAML::Node node, std::string path)
        : origin_(origin), node_(std::move(node)), path_(std::move(path)), present_(true) {}
    Setting(const Setting&) = default;
    // YAML::Node's assignment writes through to the node it refers to (it edits the document);
    // a Setting rebinds instead.
    Setting& operator=(const Setting& other) {
        origin_ = other.origin_;
        node_.reset(other.node_);
        path_ = other.path_;
        present_ = other.present_;
        return *this;
    }
    ~Setting() = default;

    [[nodiscard]] bool present() const noexcept { return present_; }
    [[nodiscard]] const YAML::Node& node() const noexcept { return node_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] bool from_flag() const noexcept { return origin_ != nullptr && origin_->flag; }

    // "llama.yaml:14: model.model_config.offset", "--offset", "--offset[2]".
    [[nodiscard]] std::string where() const {
        if (origin_ == nullptr || origin_->flag)
            return path_;
        const YAML::Mark mark = node_.Mark();
        if (mark.is_null() || mark.line < 0)
            return fmt::format("{}: {}", origin_->name, path_);
        return fmt::format("{}:{}: {}", origin_->name, mark.line + 1, path_);
    }

    [[nodiscard]] Setting element(std::size_t index) const {
        return Setting(origin_, node_[index], fmt::format("{}[{}]", path_, index));
    }
    [[nodiscard]] Setting member(const YAML::Node& value, std::string_view key) const {
        return Setting(origin_, value, fmt::format("{}.{}", path_, key));
    }

    [[noreturn]] void fail(std::string_view problem) const {
        const std::string message = fmt::format("{}: {}", where(), problem);
        if (from_flag())
            throw FlagError(message);
        throw InputError(message);
    }

  private:
    const Origin* origin_ = nullptr;
    YAML::Node node_;
    std::string path_;
    bool present_ = false;
};

// A short description of a YAML value for messages.
[[nodiscard]] std::string describe(const YAML::Node& node);

// A plain (unquoted) scalar: quoted text is a string in YAML, as PyYAML reads it.
[[nodiscard]] bool plain_scalar(const YAML::Node& node);

[[nodiscard]] std::optional<std::int64_t> integer_of(const YAML::Node& node);

// A finite number (an integer or a decimal), as PyYAML reads a plain scalar.
[[nodiscard]] std::optional<double> number_of(const YAML::Node& node);

// YAML 1.1 booleans, as PyYAML (and so MindFormers and SAPP) reads them.
[[nodiscard]] std::optional<bool> boolean_of(const YAML::Node& node);

[[nodiscard]] std::uint32_t positive_integer(const Setting& setting);

// A positive integer within its documented range (ppb/limits.hpp).
[[nodiscard]] std::uint32_t count_in(const Setting& setting, const limits::CountRange& range);

// One recompute count per stage from its entries: `true` is every layer of the stage, `false`
// none, an integer that many (more than the stage holds means all of them, as in MindFormers).
// layers[s] is stage s's layer count. Fails naming the entry that is none of these.
[[nodiscard]] std::vector<std::uint32_t> layer_counts(const std::vector<Setting>& entries,
                                                      std::span<const std::uint32_t> layers);

// The member `key` of a mapping (the last one, as PyYAML keeps it), or nothing.
[[nodiscard]] std::optional<YAML::Node> find_member(const YAML::Node& map, std::string_view key);

// A YAML file read whole; `what` says what it should be ("a MindFormers training
// configuration"), for the message when it is not a mapping.
class Config {
  public:
    Config(const std::filesystem::path& path, std::string_view what);
    // The same from `text`, the contents of a file named `name` (for messages).
    Config(const std::string& text, std::string name, std::string_view what);

    [[nodiscard]] const std::string& name() const noexcept { return origin_.name; }
    [[nodiscard]] bool empty() const noexcept { return root_.IsNull(); }

    // The value at `keys` (parallel_config, data_parallel), or an absent setting.
    [[nodiscard]] Setting lookup(std::initializer_list<std::string_view> keys) const;
    [[nodiscard]] Setting lookup(std::span<const std::string_view> keys) const;

  private:
    void load(const std::string& text, std::string_view what);

    Origin origin_;
    YAML::Node root_;
};

}  // namespace ppb::importers::detail

#endif  // PPB_IMPORTERS_SRC_YAML_CONFIG_HPP
