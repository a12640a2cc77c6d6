// Megatron-LM's arguments read as its argparse parser reads them (see megatron_argparse.hpp).
#include <ppb/importers/layout.hpp>
#include <ppb/importers/megatron_argparse.hpp>
#include <ppb/json_input.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <vector>

namespace ppb::importers::megatron {
namespace {

namespace json = boost::json;

ReleaseIndex last_release() {
    return static_cast<ReleaseIndex>(releases().size() - 1);
}

// What argparse makes of one argument before reading values (_parse_optional).
struct Token {
    std::string_view text;
    const Flag* flag = nullptr;             // a flag of the release
    std::optional<std::string_view> value;  // "FLAG=VALUE": the value
    bool is_flag = false;                   // a flag (known or not) rather than a value
    bool after_terminator = false;          // "--" or after it
};

// ^-\d+$|^-\d*\.\d+$ (argparse's _negative_number_matcher).
bool negative_number(std::string_view s) {
    if (s.size() < 2 || s[0] != '-')
        return false;
    const std::string_view rest = s.substr(1);
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (std::ranges::all_of(rest, digit))
        return true;
    const std::size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot + 1 == rest.size())
        return false;
    return std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(dot), digit) &&
           std::all_of(rest.begin() + static_cast<std::ptrdiff_t>(dot) + 1, rest.end(), digit);
}

// The flags of one release and those the caller declares.
class FlagLookup {
  public:
    FlagLookup(ReleaseIndex release, std::span<const DeclaredFlag> declared) : release_(release) {
        for (const DeclaredFlag& d : declared) {
            std::string dest(d.name.substr(d.name.find_first_not_of('-')));
            std::ranges::replace(dest, '-', '_');
            dests_.push_back(std::move(dest));
            const bool is_switch = d.arity == FlagArity::none;
            declared_.push_back(
                Flag{d.name, dests_.back(), is_switch ? FlagAction::store_true : FlagAction::store,
                     d.arity, d.count, is_switch ? FlagValueType::none : FlagValueType::text, "",
                     is_switch ? "false" : "null", true, release, release});
        }
    }
    [[nodiscard]] const Flag* find(std::string_view name) const {
        if (const Flag* f = find_flag(name, release_))
            return f;
        const auto it =
            std::ranges::find_if(declared_, [&](const Flag& f) { return f.name == name; });
        return it == declared_.end() ? nullptr : &*it;
    }
    [[nodiscard]] const std::deque<Flag>& declared() const { return declared_; }

  private:
    ReleaseIndex release_;
    std::deque<std::string> dests_;
    std::deque<Flag> declared_;
};

std::vector<Token> classify(std::span<const std::string> arguments, const FlagLookup& lookup) {
    std::vector<Token> tokens;
    bool terminated = false;
    for (const std::string& argument : arguments) {
        Token t;
        t.text = argument;
        if (terminated || argument == "--") {
            t.after_terminator = true;
            terminated = true;
        } else if (argument.empty() || argument[0] != '-') {
            // a value
        } else if ((t.flag = lookup.find(argument))) {
            t.is_flag = true;
        } else if (argument.size() == 1) {
            // "-": a value
        } else if (const std::size_t eq = argument.find('=');
                   eq != std::string::npos &&
                   (t.flag = lookup.find(std::string_view(argument).substr(0, eq)))) {
            t.is_flag = true;
            t.text = std::string_view(argument).substr(0, eq);
            t.value = std::string_view(argument).substr(eq + 1);
        } else if (negative_number(argument) || argument.find(' ') != std::string::npos) {
            // a value
        } else {
            t.is_flag = true;  // a flag the release does not know
        }
        tokens.push_back(t);
    }
    return tokens;
}

// Python's str.strip() whitespace (ASCII part).
std::string_view strip(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    while (!s.empty() && space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && space(s.back()))
        s.remove_suffix(1);
    return s;
}

// Removes the '_' separators Python allows between digits; nullopt if one is misplaced.
std::optional<std::string> without_separators(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '_') {
            out.push_back(s[i]);
            continue;
        }
        const bool between_digits = i > 0 && i + 1 < s.size() &&
                                    std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                                    std::isdigit(static_cast<unsigned char>(s[i + 1]));
        if (!between_digits)
            return std::nullopt;
    }
    return out;
}

// int(text): an optional sign, decimal digits (leading zeros allowed), '_' between digits.
std::optional<std::int64_t> python_int(std::string_view text) {
    const auto digits = without_separators(strip(text));
    if (!digits || digits->empty())
        return std::nullopt;
    std::string_view s = *digits;
    bool negative = false;
    if (s.front() == '+' || s.front() == '-') {
        negative = s.front() == '-';
        s.remove_prefix(1);
    }
    if (s.empty() || !std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    std::uint64_t magnitude = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
    if (ec != std::errc{} || end != s.data() + s.size() ||
        magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return std::nullopt;
    const auto value = static_cast<std::int64_t>(magnitude);
    return negative ? -value : value;
}

// float(text): an optional sign, a decimal number with an optional exponent ('_' between
// digits), or inf, infinity, nan in any case.
std::optional<double> python_float(std::string_view text) {
    const auto cleaned = without_separators(strip(text));
    if (!cleaned || cleaned->empty())
        return std::nullopt;
    std::string s = *cleaned;
    bool negative = false;
    if (s.front() == '+' || s.front() == '-') {
        negative = s.front() == '-';
        s.erase(0, 1);
    }
    std::string lower = s;
    std::ranges::transform(lower, lower.begin(),
                           [](char c) { return static_cast<char>(std::tolower(c)); });
    double value = 0.0;
    if (lower == "inf" || lower == "infinity") {
        value = std::numeric_limits<double>::infinity();
    } else if (lower == "nan") {
        value = std::numeric_limits<double>::quiet_NaN();
    } else {
        if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s.front())) || s.front() == '.'))
            return std::nullopt;
        const auto [end, ec] =
            std::from_chars(s.data(), s.data() + s.size(), value, std::chars_format::general);
        if (ec == std::errc::result_out_of_range)
            value = std::numeric_limits<double>::infinity();
        else if (ec != std::errc{} || end != s.data() + s.size())
            return std::nullopt;
    }
    return negative ? -value : value;
}

std::vector<std::string_view> choices_of(const Flag& flag) {
    std::vector<std::string_view> out;
    std::string_view rest = flag.choices;
    while (!rest.empty()) {
        const std::size_t bar = rest.find('|');
        out.push_back(rest.substr(0, bar));
        if (bar == std::string_view::npos)
            break;
        rest.remove_prefix(bar + 1);
    }
    return out;
}

// One value converted with the flag's type (argparse's _get_value); nullopt and `error` when the
// type refuses it.
std::optional<json::value> convert(const Flag& flag, std::string_view text, std::string& error) {
    json::value v;
    switch (flag.type) {
        case FlagValueType::integer: {
            const auto n = python_int(text);
            if (!n) {
                error = fmt::format("{} '{}': not an integer (argparse's invalid int value)",
                                    flag.name, text);
                return std::nullopt;
            }
            v = *n;
            break;
        }
        case FlagValueType::real: {
            const auto x = python_float(text);
            if (!x) {
                error = fmt::format("{} '{}': not a number (argparse's invalid float value)",
                                    flag.name, text);
                return std::nullopt;
            }
            v = *x;
            break;
        }
        case FlagValueType::boolean:
            v = !text.empty();  // Python's bool(str)
            break;
        default:
            v = json::string(text);
    }
    return v;
}

// argparse's _check_value: an empty optional when the value is one of the flag's choices (or it
// has none), else the message.
std::optional<std::string> outside_choices(const Flag& flag, const json::value& v,
                                           std::string_view text) {
    const std::vector<std::string_view> choices = choices_of(flag);
    if (choices.empty())
        return std::nullopt;
    const bool allowed = std::ranges::any_of(choices, [&](std::string_view c) {
        if (v.is_int64())
            return python_int(c) == v.as_int64();
        return v.is_string() && v.as_string() == c;
    });
    if (allowed)
        return std::nullopt;
    std::string listed;
    for (const std::string_view c : choices)
        listed += fmt::format("{}{}", listed.empty() ? "" : ", ", c);
    return fmt::format("{} '{}': not one of its choices ({})", flag.name, text, listed);
}

std::string plural_values(std::size_t n) {
    return n == 1 ? "one value" : fmt::format("{} values", n);
}

using ValueMap = std::map<std::string, json::value, std::less<>>;

// The defaults argparse sets before it reads an argument, per release: parsed from the table once
// per process and shared by every parse (about a thousand flags: parsing their defaults afresh,
// and copying them, was most of a parse's time).
const ValueMap& release_defaults(ReleaseIndex release) {
    static const std::vector<ValueMap> per_release = [] {
        std::vector<ValueMap> all(releases().size());
        for (std::size_t r = 0; r < all.size(); ++r) {
            for (const Flag& f : flags()) {
                if (f.first <= r && r <= f.last && f.sets_default)
                    all[r][std::string(f.dest)] = json::parse(f.default_json);
            }
        }
        return all;
    }();
    return per_release.at(release);
}

}  // namespace

ParsedArguments::ParsedArguments(ReleaseIndex release,
                                 std::map<std::string, json::value, std::less<>> values,
                                 std::vector<GivenFlag> given)
    : release_(release),
      values_(std::move(values)),
      defaults_(&release_defaults(release)),
      given_(std::move(given)) {}

std::optional<json::value> ParsedArguments::value(std::string_view flag) const {
    const Flag* f = find_flag(flag, release_);
    if (!f)
        return std::nullopt;
    if (const auto it = values_.find(f->dest); it != values_.end())
        return it->second;
    const auto it = defaults_->find(f->dest);
    return it == defaults_->end() ? json::value() : it->second;
}

bool ParsedArguments::given(std::string_view flag) const {
    return std::ranges::any_of(given_, [&](const GivenFlag& g) { return g.name == flag; });
}

ParseOutcome parse_megatron_arguments(std::span<const std::string> arguments, ReleaseIndex release,
                                      std::span<const DeclaredFlag> declared) {
    ParseOutcome out;
    const FlagLookup lookup(release, declared);
    ValueMap values;  // beyond the release's defaults
    for (const Flag& f : lookup.declared()) {
        if (!release_defaults(release).contains(f.dest))
            values.try_emplace(std::string(f.dest), json::parse(f.default_json));
    }
    std::vector<GivenFlag> given;
    const std::vector<Token> tokens = classify(arguments, lookup);
    std::vector<std::string_view> stray;  // values no flag takes
    for (std::size_t i = 0; i < tokens.size();) {
        const Token& t = tokens[i];
        if (!t.is_flag || t.after_terminator) {
            stray.push_back(t.text);
            ++i;
            continue;
        }
        if (!t.flag) {
            // argparse lists an unknown flag and the values after it as unrecognized: they are
            // named with the flag.
            out.unknown.emplace_back(t.text);
            ++i;
            while (i < tokens.size() && !tokens[i].is_flag && !tokens[i].after_terminator)
                ++i;
            continue;
        }
        const Flag& flag = *t.flag;
        std::vector<std::string_view> taken;
        std::size_t next = i + 1;
        if (t.value) {
            if (flag.action != FlagAction::store) {
                out.errors.push_back(fmt::format(
                    "{}={}: {} is a switch and takes no value (argparse's ignored explicit "
                    "argument)",
                    flag.name, *t.value, flag.name));
                i = next;
                continue;
            }
            if (flag.arity == FlagArity::exactly && flag.count != 1) {
                out.errors.push_back(fmt::format("{}={}: {} takes exactly {}", flag.name, *t.value,
                                                 flag.name, plural_values(flag.count)));
                i = next;
                continue;
            }
            taken.push_back(*t.value);
        } else {
            std::size_t available = 0;
            while (i + 1 + available < tokens.size() && !tokens[i + 1 + available].is_flag &&
                   !tokens[i + 1 + available].after_terminator)
                ++available;
            std::size_t take = 0;
            bool short_of_values = false;
            switch (flag.arity) {
                case FlagArity::none:
                    take = 0;
                    break;
                case FlagArity::one:
                    take = 1;
                    short_of_values = available < 1;
                    break;
                case FlagArity::optional:
                    take = std::min<std::size_t>(available, 1);
                    break;
                case FlagArity::any:
                    take = available;
                    break;
                case FlagArity::at_least_one:
                    take = available;
                    short_of_values = available < 1;
                    break;
                case FlagArity::exactly:
                    take = flag.count;
                    short_of_values = available < flag.count;
                    break;
            }
            if (short_of_values) {
                const std::string expected =
                    flag.arity == FlagArity::at_least_one
                        ? std::string("at least one value")
                        : plural_values(flag.arity == FlagArity::one ? 1 : flag.count);
                out.errors.push_back(
                    fmt::format("{}: expected {}{}", flag.name, expected,
                                available == 0 && i + 1 < tokens.size()
                                    ? fmt::format(", found the flag {}", tokens[i + 1].text)
                                    : std::string()));
                i = next + available;
                continue;
            }
            for (std::size_t k = 0; k < take; ++k)
                taken.push_back(tokens[i + 1 + k].text);
            next = i + 1 + take;
        }
        // Convert and store (argparse's _get_values and the action).
        json::value stored;
        bool ok = true;
        switch (flag.action) {
            case FlagAction::store_true:
                stored = true;
                break;
            case FlagAction::store_false:
                stored = false;
                break;
            case FlagAction::boolean_optional:
                stored = !flag.name.starts_with("--no-");
                break;
            case FlagAction::store: {
                json::array list;
                for (const std::string_view v : taken) {
                    std::string error;
                    auto converted = convert(flag, v, error);
                    if (!converted) {
                        out.errors.push_back(std::move(error));
                        ok = false;
                        continue;
                    }
                    if (auto outside = outside_choices(flag, *converted, v)) {
                        out.choice_errors.push_back(
                            {std::string(flag.name), std::string(v), std::move(*outside)});
                        ok = false;
                        continue;
                    }
                    list.push_back(std::move(*converted));
                }
                if (flag.arity == FlagArity::one || flag.arity == FlagArity::optional)
                    // '?' without a value stores the flag's const: None for Megatron's
                    stored = list.empty() ? json::value() : list.front();
                else
                    stored = std::move(list);
                break;
            }
        }
        if (ok) {
            values[std::string(flag.dest)] = std::move(stored);
            GivenFlag g{std::string(flag.name), {}};
            for (const std::string_view v : taken)
                g.values.emplace_back(v);
            given.push_back(std::move(g));
        }
        i = next;
    }
    if (!stray.empty()) {
        std::string listed;
        for (const std::string_view s : stray)
            listed += fmt::format("{}'{}'", listed.empty() ? "" : " ", s);
        out.errors.push_back(fmt::format(
            "{} {}: no flag takes {} (argparse's unrecognized arguments)",
            stray.size() == 1 ? "value" : "values", listed, stray.size() == 1 ? "it" : "them"));
    }
    if (out.errors.empty() && out.unknown.empty())
        out.parsed.emplace(release, std::move(values), std::move(given));
    return out;
}

DeclaredFlag declared_flag(std::string_view text, SettingWords words) {
    const auto refuse = [&]() -> DeclaredFlag {
        throw FlagError(fmt::format(
            "{} '{}': expected a flag's name, optionally with how many values it "
            "takes: my-flag (one value), my-flag:0 (a switch), my-flag:3, my-flag:* (any number), "
            "my-flag:+ (at least one)",
            setting_name("megatron_flags", words), text));
    };
    const std::size_t colon = text.find(':');
    std::string_view name = text.substr(0, colon);
    while (name.starts_with('-'))
        name.remove_prefix(1);
    if (name.empty() || !std::ranges::all_of(name, [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
        }))
        return refuse();
    DeclaredFlag d{fmt::format("--{}", name), FlagArity::one, 1};
    if (colon == std::string_view::npos)
        return d;
    const std::string_view n = text.substr(colon + 1);
    if (n == "*") {
        d.arity = FlagArity::any;
        d.count = 0;
    } else if (n == "+") {
        d.arity = FlagArity::at_least_one;
        d.count = 0;
    } else {
        unsigned count = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
        if (n.empty() || ec != std::errc{} || end != n.data() + n.size() || count > 255)
            return refuse();
        d.arity = count == 0 ? FlagArity::none : count == 1 ? FlagArity::one : FlagArity::exactly;
        d.count = static_cast<std::uint8_t>(count);
    }
    return d;
}

NamedRelease release_named(std::string_view text, SettingWords words) {
    const auto known = [] {
        std::string names;
        for (const Release& r : releases())
            names += fmt::format("{}{}", names.empty() ? "" : ", ", r.name);
        return names;
    };
    const auto refuse = [&](std::string_view why) -> NamedRelease {
        throw FlagError(
            fmt::format("{} '{}': {} (ppb knows Megatron-LM {}; a "
                        "core release is given as 0.8, 0.8.0, core_r0.8.0 or "
                        "core_v0.8.0)",
                        setting_name("megatron_version", words), text, why, known()));
    };
    const auto span = releases();
    for (std::size_t i = 0; i < span.size(); ++i) {
        if (text == span[i].name || text == span[i].tag ||
            (span[i].tag.starts_with("v") && text == span[i].tag.substr(1)))
            return {static_cast<ReleaseIndex>(i), false};
    }
    // Megatron Core: [core_r|core_v|v]MAJOR.MINOR[.PATCH[rcN]]
    std::string_view core = text;
    for (const std::string_view prefix : {"core_r", "core_v", "v"}) {
        if (core.starts_with(prefix)) {
            core.remove_prefix(prefix.size());
            break;
        }
    }
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    const char* p = core.data();
    const char* end = core.data() + core.size();
    auto r = std::from_chars(p, end, major);
    if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '.')
        return refuse("not a Megatron-LM release");
    r = std::from_chars(r.ptr + 1, end, minor);
    if (r.ec != std::errc{})
        return refuse("not a Megatron-LM release");
    if (r.ptr != end) {
        // a patch number, optionally a release candidate: 0.13.0, 0.13.0rc2
        std::uint32_t patch = 0;
        if (*r.ptr != '.')
            return refuse("not a Megatron-LM release");
        r = std::from_chars(r.ptr + 1, end, patch);
        if (r.ec != std::errc{})
            return refuse("not a Megatron-LM release");
        std::string_view rest(r.ptr, static_cast<std::size_t>(end - r.ptr));
        if (!rest.empty()) {
            std::uint32_t candidate = 0;
            if (!rest.starts_with("rc") ||
                std::from_chars(rest.data() + 2, rest.data() + rest.size(), candidate).ptr !=
                    rest.data() + rest.size() ||
                rest.size() == 2)
                return refuse("not a Megatron-LM release");
        }
    }
    if (major >= 20)  // a YY.MM tag (NVIDIA's container versions) other than those read
        return refuse("not a release ppb knows");
    if (major == 0) {
        const std::string name = fmt::format("0.{}", minor);
        for (std::size_t i = 0; i < span.size(); ++i) {
            if (span[i].name == name)
                return {static_cast<ReleaseIndex>(i), false};
        }
    }
    // Newer than the newest core release read: main's flags and defaults.
    const Release& newest_core = span[span.size() - 2];
    std::uint32_t newest_minor = 0;
    std::from_chars(newest_core.name.data() + 2, newest_core.name.data() + newest_core.name.size(),
                    newest_minor);
    if (major > 0 || minor > newest_minor)
        return {last_release(), true};
    return refuse("a Megatron Core release before the first ppb knows");
}

std::string describe_release(ReleaseIndex release) {
    const Release& r = releases()[release];
    if (r.tag == "main")
        return fmt::format("main ({}, {})", r.commit.substr(0, 7), r.date);
    if (r.tag == r.name)
        return std::string(r.name);
    return fmt::format("{} ({})", r.name, r.tag);
}

namespace {

// "0.8 to 0.17", "0.8", "2.6 to main".
std::string release_range(ReleaseIndex first, ReleaseIndex last) {
    const auto name = [](ReleaseIndex r) { return std::string(releases()[r].name); };
    return first == last ? name(first) : fmt::format("{} to {}", name(first), name(last));
}

// The releases that know `flag`, as ranges: "0.8 to 0.17".
std::string releases_knowing(std::string_view flag) {
    std::string out;
    std::optional<ReleaseIndex> first;
    ReleaseIndex last = 0;
    for (const Flag& f : flag_records(flag)) {
        if (first && f.first == last + 1) {
            last = f.last;
            continue;
        }
        if (first)
            out += fmt::format("{}{}", out.empty() ? "" : ", ", release_range(*first, last));
        first = f.first;
        last = f.last;
    }
    if (first)
        out += fmt::format("{}{}", out.empty() ? "" : ", ", release_range(*first, last));
    return out;
}

// Every flag name of any release, for "did you mean".
const std::vector<std::string_view>& every_flag_name() {
    static const std::vector<std::string_view> names = [] {
        std::vector<std::string_view> out;
        for (const Flag& f : flags()) {
            if (out.empty() || out.back() != f.name)
                out.push_back(f.name);
        }
        return out;
    }();
    return names;
}

// The flag part of an unknown argument ("--lr=1" -> "--lr").
std::string_view flag_part(std::string_view argument) {
    return argument.substr(0, argument.find('='));
}

// The errors of one release's parser as one message, unknown flags first.
std::string parse_errors(const ParseOutcome& outcome, ReleaseIndex release, SettingWords words) {
    std::vector<std::string> lines;
    for (const std::string& unknown : outcome.unknown) {
        const std::string_view name = flag_part(unknown);
        const std::span<const Flag> records = flag_records(name);
        if (name == "-h" || name == "--help") {
            lines.push_back(fmt::format(
                "{}: Megatron-LM prints its usage and exits: not an argument of a run", unknown));
        } else if (!records.empty()) {
            lines.push_back(
                fmt::format("{} is not a flag of Megatron-LM {} (Megatron-LM has it "
                            "in {})",
                            name, describe_release(release), releases_knowing(name)));
        } else if (const auto guess = closest_name(name, every_flag_name())) {
            lines.push_back(
                fmt::format("{} is not a Megatron-LM flag (did you mean {}?)", name, *guess));
        } else {
            lines.push_back(fmt::format(
                "{} is not a flag of any Megatron-LM release ppb knows ({} to {}); if the run's "
                "Megatron-LM has it (a branch, a fork, a script's own flags), declare it: {}",
                name, releases().front().name, describe_release(last_release()),
                declare_flag_hint(name.find_first_not_of('-') == std::string_view::npos
                                      ? name
                                      : name.substr(name.find_first_not_of('-')),
                                  words)));
        }
    }
    for (const std::string& e : outcome.errors)
        lines.push_back(e);
    std::string text;
    for (const std::string& line : lines)
        text += fmt::format("{}{}", text.empty() ? "" : "\n  ", line);
    if (lines.size() > 1)
        text = fmt::format("{} problems in the Megatron-LM arguments:\n  {}", lines.size(), text);
    return text;
}

// What a release cannot read of the arguments, for notes: "--use-legacy-models", or
// "--transformer-impl inference_optimized".
std::optional<std::string> first_reason(const ParseOutcome& outcome) {
    if (!outcome.unknown.empty())
        return std::string(flag_part(outcome.unknown.front()));
    if (!outcome.errors.empty())
        return outcome.errors.front();
    if (!outcome.choice_errors.empty())
        return fmt::format("{} {}", outcome.choice_errors.front().flag,
                           outcome.choice_errors.front().value);
    return std::nullopt;
}

}  // namespace

MegatronArguments read_megatron_arguments(std::span<const std::string> arguments,
                                          std::optional<std::string_view> version,
                                          std::span<const DeclaredFlag> declared,
                                          SettingWords words) {
    const auto count = static_cast<ReleaseIndex>(releases().size());
    std::vector<ParseOutcome> outcomes;
    outcomes.reserve(count);
    std::vector<ReleaseIndex> accepting;
    for (ReleaseIndex r = 0; r < count; ++r) {
        outcomes.push_back(parse_megatron_arguments(arguments, r, declared));
        if (outcomes.back().parsed)
            accepting.push_back(r);
    }
    if (version) {
        const NamedRelease named = release_named(*version, words);
        ParseOutcome& outcome = outcomes[named.release];
        if (!outcome.parsed) {
            // A flag of another release contradicts the release named: name both.
            for (const std::string& unknown : outcome.unknown) {
                const std::string_view name = flag_part(unknown);
                if (!flag_records(name).empty())
                    throw FlagError(fmt::format(
                        "{} is not a flag of Megatron-LM {}, the release {} {} "
                        "names: Megatron-LM has it in {} (give the run's release, or leave "
                        "{} out to have it recognised)",
                        name, describe_release(named.release),
                        setting_name("megatron_version", words), *version, releases_knowing(name),
                        setting_name("megatron_version", words)));
            }
            throw FlagError(parse_errors(outcome, named.release, words));
        }
        MegatronArguments out{
            std::move(*outcome.parsed), std::move(accepting), {}, std::move(outcome.choice_errors)};
        out.notes.push_back(
            named.newer_than_known
                ? fmt::format("Megatron-LM {} is newer than the releases ppb knows: read with the "
                              "flags and defaults of {}",
                              *version, describe_release(named.release))
                : fmt::format("the flags and defaults of Megatron-LM {} ({})",
                              describe_release(named.release),
                              setting_name("megatron_version", words)));
        return out;
    }
    if (accepting.empty()) {
        // Flags of different releases together: two of them that no release has both of.
        std::vector<std::string_view> names;
        for (const std::string& a : arguments) {
            if (a.starts_with("--") && !flag_records(flag_part(a)).empty())
                names.push_back(flag_part(a));
        }
        const auto knows = [](std::string_view name, ReleaseIndex r) {
            return find_flag(name, r) != nullptr;
        };
        for (std::size_t i = 0; i < names.size(); ++i) {
            for (std::size_t j = i + 1; j < names.size(); ++j) {
                bool together = false;
                for (ReleaseIndex r = 0; r < count && !together; ++r)
                    together = knows(names[i], r) && knows(names[j], r);
                if (!together)
                    throw FlagError(fmt::format(
                        "{} (Megatron-LM {}) and {} (Megatron-LM {}) are not flags of one "
                        "Megatron-LM release: the arguments mix releases",
                        names[i], releases_knowing(names[i]), names[j],
                        releases_knowing(names[j])));
            }
        }
        // Otherwise the newest release's own errors (an unknown flag, a bad value).
        throw FlagError(parse_errors(outcomes.back(), static_cast<ReleaseIndex>(count - 1), words));
    }
    // The newest release where every value is one of its choices, else the newest that reads
    // the flags at all.
    std::vector<ReleaseIndex> clean;
    std::ranges::copy_if(accepting, std::back_inserter(clean),
                         [&](ReleaseIndex r) { return outcomes[r].choice_errors.empty(); });
    if (!clean.empty())
        accepting = clean;
    const ReleaseIndex chosen = accepting.back();
    MegatronArguments out{std::move(*outcomes[chosen].parsed),
                          accepting,
                          {},
                          std::move(outcomes[chosen].choice_errors)};
    const ReleaseIndex oldest = accepting.front();
    if (chosen == count - 1)
        return out;  // main's defaults: the caller says if older releases' differ
    std::vector<std::string> reasons;
    if (oldest > 0) {
        if (const auto why = first_reason(outcomes[oldest - 1]))
            reasons.push_back(fmt::format("{} (from {})", *why, releases()[oldest].name));
    }
    if (const auto why = first_reason(outcomes[chosen + 1]))
        reasons.push_back(fmt::format("{} (up to {})", *why, releases()[chosen].name));
    std::string because;
    for (std::size_t i = 0; i < reasons.size(); ++i)
        because += fmt::format("{}{}", i == 0 ? "" : " and ", reasons[i]);
    out.notes.push_back(fmt::format(
        "Megatron-LM {}{} recognised from {}: the flags and defaults of {} are taken{}",
        oldest == chosen ? "" : "releases ", release_range(oldest, chosen), because,
        describe_release(chosen),
        oldest == chosen
            ? std::string()
            : fmt::format(" ({} gives another)", setting_name("megatron_version", words))));
    return out;
}

}  // namespace ppb::importers::megatron
