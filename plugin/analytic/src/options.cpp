#include "options.hpp"

#include <ppb/errors.hpp>
#include <ppb/json_input.hpp>
#include <ppb/limits.hpp>
#include <ppb/plugin.hpp>
#include <ppb/plugin/report_support.hpp>

#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace ppb::analytic {

namespace {

using ppb::plugin::InvalidInput;
namespace json = boost::json;

constexpr std::int64_t max_integer = 2147483647;  // keeps every product finite and exact enough

struct IntegerOption {
    std::string_view key;
    std::uint32_t ShapeOptions::*member;
    bool required;
    std::string_view meaning;
    std::int64_t max = max_integer;
};

struct BoolOption {
    std::string_view key;
    bool ShapeOptions::*member;
};

struct NumberOption {
    std::string_view key;
    double ShapeOptions::*member;
    double min;  // inclusive unless min_exclusive
    bool min_exclusive;
    double max;
};

constexpr std::array<IntegerOption, 10> integer_options = {{
    {"hidden_size", &ShapeOptions::hidden_size, true, "the hidden size h"},
    {"num_attention_heads", &ShapeOptions::num_attention_heads, true,
     "the number of attention (query) heads a"},
    {"ffn_hidden_size", &ShapeOptions::ffn_hidden_size, true, "the MLP's inner size F"},
    {"seq_length", &ShapeOptions::seq_length, true, "the sequence length s"},
    {"micro_batch_size", &ShapeOptions::micro_batch_size, true, "the micro-batch size b"},
    {"vocab_size", &ShapeOptions::vocab_size, true, "the vocabulary size V"},
    {"num_layers", &ShapeOptions::num_layers, true, "the number of transformer layers L",
     ppb::limits::layers.max},
    {"tensor_parallel", &ShapeOptions::tensor_parallel, true, "the tensor-parallel degree t"},
    {"num_kv_heads", &ShapeOptions::num_kv_heads, false, "the number of key/value heads"},
    {"data_parallel", &ShapeOptions::data_parallel, false, "the data-parallel degree d"},
}};

constexpr std::array<BoolOption, 7> bool_options = {{
    {"sequence_parallel", &ShapeOptions::sequence_parallel},
    {"distributed_optimizer", &ShapeOptions::distributed_optimizer},
    {"gated_mlp", &ShapeOptions::gated_mlp},
    {"flash_attention", &ShapeOptions::flash_attention},
    {"untie_embeddings", &ShapeOptions::untie_embeddings},
    {"dropout", &ShapeOptions::dropout},
    {"keep_gathered_inputs", &ShapeOptions::keep_gathered_inputs},
}};

constexpr std::array<NumberOption, 4> number_options = {{
    {"param_bytes", &ShapeOptions::param_bytes, 0.0, true, 64.0},
    {"grad_bytes", &ShapeOptions::grad_bytes, 0.0, false, 64.0},
    {"optimizer_bytes", &ShapeOptions::optimizer_bytes, 0.0, false, 256.0},
    {"constant_mb", &ShapeOptions::constant_mb, 0.0, false, ppb::limits::memory_mb.max},
}};

// A number as people write it: 8192.5, 0.1, 1e+12.
std::string format_number(double x) {
    return ppb::plugin::format_number(x, 15);
}

std::string quoted(std::string_view key) {
    return "analytic option '" + std::string(key) + "'";
}

std::string known_options() {
    std::string out;
    const auto add = [&out](std::string_view key) {
        if (!out.empty())
            out += ", ";
        out += key;
    };
    for (const auto& o : integer_options)
        add(o.key);
    for (const auto& o : bool_options)
        add(o.key);
    for (const auto& o : number_options)
        add(o.key);
    return out;
}

// The known option a misspelt key was probably meant to be (ppb::json's rule).
std::optional<std::string_view> closest_key(std::string_view key) {
    std::vector<std::string_view> known;
    for (const auto& o : integer_options)
        known.push_back(o.key);
    for (const auto& o : bool_options)
        known.push_back(o.key);
    for (const auto& o : number_options)
        known.push_back(o.key);
    return ppb::closest_name(key, known);
}

// Options that are another model's input given to this one by mistake.
void reject_foreign_document(const json::object& root) {
    if (root.contains("layers_description")) {
        throw InvalidInput(
            "analytic options hold 'layers_description': that is a SAPP layer file: use --model "
            "table (the analytic model takes the transformer's shape: hidden_size, "
            "num_attention_heads, ...)");
    }
    const json::value* format = root.if_contains("format");
    const std::string format_name =
        format != nullptr && format->is_string() ? std::string(format->get_string()) : "";
    if (root.contains("observations") || format_name.starts_with("ppb.dryrun")) {
        throw InvalidInput(
            std::string("analytic options hold '") +
            (root.contains("observations") ? "observations" : "format") +
            "': that is a dry-run file (ppb.dryrun/1): fit it with --model dryrun-lsq; the "
            "analytic model takes the transformer's shape (hidden_size, num_attention_heads, ...)");
    }
    if (format_name.starts_with("ppb.fit")) {
        throw InvalidInput("analytic options hold 'format': \"" + format_name +
                           "\": that is a fit result (ppb.fit/1), not the transformer's shape");
    }
    if (format != nullptr) {
        throw InvalidInput(
            "analytic options hold 'format': that is a ppb document, not the transformer's shape "
            "(hidden_size, num_attention_heads, ...)");
    }
    if (root.contains("rank_tolerance")) {
        throw InvalidInput(
            "analytic has no option 'rank_tolerance': that is an option of the dryrun-lsq model");
    }
}

std::uint32_t parse_integer(const json::value& v, std::string_view key, std::int64_t max) {
    const std::string range = " must be an integer from 1 to " + std::to_string(max);
    std::int64_t n = 0;
    if (v.is_int64()) {
        n = v.get_int64();
    } else if (v.is_uint64()) {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    } else if (v.is_double()) {
        const double d = v.get_double();
        if (!std::isfinite(d) || d != std::floor(d) || d < 1.0 || d > static_cast<double>(max)) {
            throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
        }
        n = static_cast<std::int64_t>(d);
    } else {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    }
    if (n < 1 || n > max) {
        throw InvalidInput(quoted(key) + range + ", got " + describe_json(v));
    }
    return static_cast<std::uint32_t>(n);
}

bool parse_bool(const json::value& v, std::string_view key) {
    if (!v.is_bool()) {
        throw InvalidInput(quoted(key) + " must be true or false, got " + describe_json(v));
    }
    return v.get_bool();
}

double parse_number(const json::value& v, const NumberOption& option) {
    const std::string range =
        std::string(" must be a number ") + (option.min_exclusive ? "greater than " : "from ") +
        format_number(option.min) + (option.min_exclusive ? " and at most " : " to ") +
        format_number(option.max);
    if (!v.is_number()) {
        throw InvalidInput(quoted(option.key) + range + ", got " + describe_json(v));
    }
    json::error_code ec;
    const double x = v.to_number<double>(ec);
    const bool below = option.min_exclusive ? x <= option.min : x < option.min;
    if (ec || !std::isfinite(x) || below || x > option.max) {
        throw InvalidInput(quoted(option.key) + range + ", got " + describe_json(v));
    }
    return x;
}

void require_divisible(std::uint64_t n, std::string_view n_key, std::uint64_t d,
                       std::string_view d_key, std::string_view why) {
    if (n % d != 0) {
        throw InvalidInput("analytic options: " + std::string(n_key) + " " + std::to_string(n) +
                           " is not divisible by " + std::string(d_key) + " " + std::to_string(d) +
                           ": " + std::string(why));
    }
}

void check_shape(const ShapeOptions& o) {
    const std::uint32_t kv = o.kv_heads();
    if (kv > o.num_attention_heads) {
        throw InvalidInput("analytic options: num_kv_heads " + std::to_string(kv) +
                           " exceeds num_attention_heads " + std::to_string(o.num_attention_heads) +
                           ": each key/value head serves one or more query heads");
    }
    require_divisible(o.hidden_size, "hidden_size", o.num_attention_heads, "num_attention_heads",
                      "every head has h/a channels");
    require_divisible(o.num_attention_heads, "num_attention_heads", kv, "num_kv_heads",
                      "grouped-query attention gives each key/value head a/num_kv_heads query "
                      "heads");
    require_divisible(o.num_attention_heads, "num_attention_heads", o.tensor_parallel,
                      "tensor_parallel", "tensor parallelism splits the attention heads");
    require_divisible(kv, "num_kv_heads", o.tensor_parallel, "tensor_parallel",
                      "tensor parallelism splits the key/value heads (as Megatron-LM requires)");
    require_divisible(o.ffn_hidden_size, "ffn_hidden_size", o.tensor_parallel, "tensor_parallel",
                      "tensor parallelism splits the MLP's inner dimension");
    require_divisible(o.vocab_size, "vocab_size", o.tensor_parallel, "tensor_parallel",
                      "the embedding and the LM head are split over the vocabulary; give the "
                      "padded vocabulary size your framework allocates (Megatron-LM pads to a "
                      "multiple of 128 * tensor_parallel)");
    if (o.sequence_parallel) {
        require_divisible(o.seq_length, "seq_length", o.tensor_parallel, "tensor_parallel",
                          "sequence parallelism splits the sequence over the tensor-parallel "
                          "ranks");
    }
}

}  // namespace

ShapeOptions parse_options(std::string_view options_json) {
    // ppb::parse_json, like every plugin's options: it also refuses a repeated key, which
    // Boost.JSON alone would silently resolve to the last value.
    json::value root;
    try {
        root = ppb::parse_json(options_json, {});
    } catch (const ppb::InputError& e) {
        throw InvalidInput(std::string("analytic options are not valid JSON: ") + e.what());
    }
    if (!root.is_object()) {
        throw InvalidInput("analytic options must be a JSON object, got " + describe_json(root));
    }
    const json::object& object = root.get_object();
    reject_foreign_document(object);

    ShapeOptions options;
    std::array<bool, integer_options.size()> seen{};
    for (const auto& [key, value] : object) {
        bool known = false;
        for (std::size_t i = 0; i < integer_options.size(); ++i) {
            if (integer_options[i].key == key) {
                options.*(integer_options[i].member) =
                    parse_integer(value, key, integer_options[i].max);
                seen[i] = true;
                known = true;
            }
        }
        for (const auto& o : bool_options) {
            if (o.key == key) {
                options.*(o.member) = parse_bool(value, key);
                known = true;
            }
        }
        for (const auto& o : number_options) {
            if (o.key == key) {
                options.*(o.member) = parse_number(value, o);
                known = true;
            }
        }
        if (!known) {
            std::string message = "analytic has no option '" + std::string(key) + "'";
            if (const auto suggestion = closest_key(key))
                message += " (did you mean '" + std::string(*suggestion) + "'?)";
            throw InvalidInput(message + "; known options: " + known_options());
        }
    }
    for (std::size_t i = 0; i < integer_options.size(); ++i) {
        if (integer_options[i].required && !seen[i]) {
            throw InvalidInput("analytic: missing required option '" +
                               std::string(integer_options[i].key) + "' (" +
                               std::string(integer_options[i].meaning) + ")");
        }
    }
    check_shape(options);
    return options;
}

std::vector<std::string> option_warnings(const ShapeOptions& o) {
    std::vector<std::string> out;
    const bool split_sequence = o.sequence_parallel && o.tensor_parallel > 1;
    if (o.sequence_parallel && o.tensor_parallel == 1) {
        out.emplace_back(
            "sequence_parallel has no effect with tensor_parallel = 1 (Megatron-LM turns it off)");
    }
    if (o.keep_gathered_inputs && !split_sequence) {
        out.emplace_back(
            "keep_gathered_inputs has no effect without sequence parallelism over more than one "
            "rank: there is no all-gather in front of the column-parallel linears");
    }
    if (o.distributed_optimizer && o.data_parallel == 1) {
        out.emplace_back(
            "distributed_optimizer with data_parallel = 1 shards nothing: the optimizer state is "
            "counted in full");
    }
    return out;
}

}  // namespace ppb::analytic
