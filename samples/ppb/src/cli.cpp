#include "cli.hpp"
#include "commands.hpp"
#include "suggest.hpp"

#include <ppb/abi.h>
#include <ppb/kinds.hpp>
#include <ppb/schedule.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <system_error>

#ifndef PPB_VERSION
#define PPB_VERSION "unknown"
#endif

#ifdef PPB_WITH_MIMALLOC
#include <mimalloc.h>
#endif

namespace ppb::cli {
namespace {

constexpr std::string_view description =
    R"(ppb plans pipeline-parallel training with pluggable memory models: it fits a model to a few
dry-run measurements of peak memory per stage and predicts any other placement.)";

constexpr std::string_view footer =
    R"(Run 'ppb COMMAND --help' for a command's options.

Exit status: 0 success, 2 invalid input or usage, 3 no usable plugin or a plugin failed,
4 no feasible partition, 1 anything else.)";

std::string whole_number_problem(std::string_view text, std::uint32_t min) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        return fmt::format("expected a whole number, got '{}'", text);
    if (value < min)
        return fmt::format("expected at least {}, got {}", min, value);
    return {};
}

// "ppb import megatron" for the App of that subcommand.
std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (const CLI::App* a = app.get_parent(); a != nullptr; a = a->get_parent())
        path = a->get_name() + " " + path;
    return path;
}

// The subcommand the command line selected, the deepest one.
CLI::App* selected(CLI::App& app) {
    CLI::App* at = &app;
    while (!at->get_subcommands().empty())
        at = at->get_subcommands().front();
    return at;
}

// The words before the first option name commands: an unknown one is named as such (CLI11
// would call it an unexpected argument).
void check_command_words(const CLI::App& app, const Commands& commands,
                         const std::vector<std::string>& words) {
    const CLI::App* at = &app;
    std::string noun = "command";
    for (const std::string& word : words) {
        if (word.empty() || word.front() == '-')
            return;
        const auto subcommands = at->get_subcommands([](const CLI::App*) { return true; });
        if (subcommands.empty())
            return;
        const CLI::App* next = nullptr;
        std::vector<std::string> names;
        for (const CLI::App* sub : subcommands) {
            if (sub->check_name(word))
                next = sub;
            if (!sub->get_group().empty())
                names.push_back(sub->get_name());
        }
        if (next == nullptr) {
            const std::vector<std::string> close = closest_names(word, names);
            throw UsageError(
                close.empty() ? fmt::format("unknown {} '{}' (expected {})", noun, word,
                                            fmt::join(names, ", "))
                              : fmt::format("unknown {} '{}'{}", noun, word, did_you_mean(close)),
                command_path(*at));
        }
        at = next;
        for (const Command& c : commands) {
            if (c.app == at)
                noun = c.subcommand_noun;
        }
    }
}

// What CLI11 could not place (`extras`, in command-line order) said plainly: the first word that
// looks like an option is an unknown option of the command `at`, with the closest of its options
// suggested; words that are not options keep CLI11's message.
std::string unexpected_arguments(const CLI::App& at, const std::vector<std::string>& extras) {
    for (const std::string& word : extras) {
        double number = 0.0;
        const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), number);
        const bool is_number = ec == std::errc{} && end == word.data() + word.size();
        if (word.size() < 2 || word.front() != '-' || is_number)
            continue;
        const std::string name = word.substr(0, word.find('='));
        std::vector<std::string> names;
        for (const CLI::Option* option : at.get_options()) {
            for (const std::string& l : option->get_lnames())
                names.push_back("--" + l);
            for (const std::string& s : option->get_snames())
                names.push_back("-" + s);
        }
        return fmt::format("unknown option '{}'{}", name, did_you_mean(closest_names(name, names)));
    }
    return CLI::ExtrasError(extras).what();
}

// An option of one value given more than once (CLI11's "At Most 1 required but received 2"),
// said plainly with the values given: "--stages given twice (4 and 8): give it once". Empty when
// no option of the command line's commands was given too often.
std::string repeated_option(const CLI::App& chosen) {
    for (const CLI::App* at = &chosen; at != nullptr; at = at->get_parent()) {
        for (const CLI::Option* option : at->get_options()) {
            const std::vector<std::string>& given = option->results();
            const auto most =
                static_cast<std::size_t>(std::max(option->get_items_expected_max(), 1));
            if (option->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw ||
                given.size() <= most) {
                continue;
            }
            const std::string times =
                given.size() == 2 ? std::string("twice") : fmt::format("{} times", given.size());
            std::string values;
            if (option->get_type_size_max() > 0) {
                for (std::size_t i = 0; i < given.size(); ++i) {
                    const char* separator = i == 0 ? "" : i + 1 == given.size() ? " and " : ", ";
                    values += fmt::format("{}{}", separator, given[i]);
                }
                values = " (" + values + ")";
            }
            return fmt::format("{} given {}{}: give it once", option->get_name(), times, values);
        }
    }
    return {};
}

}  // namespace

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& details) {
    CLI::App* command = parent.add_subcommand(name, summary);
    command->footer(details);
    return command;
}

CLI::Validator whole_number(std::uint32_t min) {
    return CLI::Validator([min](std::string& text) { return whole_number_problem(text, min); }, "",
                          "whole number");
}

CLI::Validator finite_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            double v = 0.0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc{} || end != text.data() + text.size() ||
                !std::isfinite(v)) {
                return fmt::format("expected a number, got '{}'", text);
            }
            return {};
        },
        "", "number");
}

CLI::Validator count_in(const limits::CountRange& range) {
    return CLI::Validator(
        [range](std::string& text) -> std::string {
            std::uint64_t value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (text.empty() || end != text.data() + text.size() ||
                (ec != std::errc{} && ec != std::errc::result_out_of_range)) {
                return fmt::format("expected a whole number, got '{}'", text);
            }
            if (ec == std::errc::result_out_of_range || !range.contains(value))
                return limits::out_of_range(text, range);
            return {};
        },
        "", "whole number");
}

CLI::Validator number_in(const limits::RealRange& range) {
    return CLI::Validator(
        [range](std::string& text) -> std::string {
            std::string problem = finite_number()(text);
            if (!problem.empty())
                return problem;
            double v = 0.0;
            std::from_chars(text.data(), text.data() + text.size(), v);
            if (!range.contains(v))
                return limits::out_of_range(text, range);
            return {};
        },
        "", "number");
}

CLI::Validator fraction() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::string problem = finite_number()(text);
            if (!problem.empty())
                return problem;
            const double v = std::stod(text);
            if (v < 0.0 || v >= 1.0)
                return fmt::format("expected a fraction in [0, 1), e.g. 0.01 for 1 %, got {}",
                                   text);
            return {};
        },
        "", "fraction");
}

CLI::Validator recompute_kind() {
    return CLI::Validator(
        [](std::string& text) { return kind_from_name(text) ? std::string() : unknown_kind(text); },
        "", "recompute kind");
}

CLI::Validator schedule_choice() {
    return CLI::Validator(
        [](std::string& text) {
            return schedule_from_name(text) ? std::string() : unknown_schedule(text);
        },
        "", "schedule");
}

CLI::Validator kind_count() {
    return CLI::Validator(
        [](std::string& item) -> std::string {
            const std::size_t eq = item.find('=');
            if (eq == std::string::npos)
                return fmt::format("expected KIND=N, got '{}'", item);
            const std::string kind = item.substr(0, eq);
            if (!kind_from_name(kind))
                return unknown_kind(kind);
            std::string count = item.substr(eq + 1);
            const std::string problem = count_in(limits::layers_or_none)(count);
            return problem.empty() ? problem : fmt::format("'{}': {}", item, problem);
        },
        "", "KIND=N");
}

CLI::Option* as_comma_list(CLI::Option* option) {
    return option->delimiter(',')->allow_extra_args(false);
}

ppb_chunk chunk_from_items(const std::vector<std::string>& items, std::string_view option) {
    ppb_chunk chunk{};
    bool seen[PPB_KIND_COUNT] = {};
    for (const std::string& item : items) {
        const std::size_t eq = item.find('=');
        const std::string name = item.substr(0, eq);
        const auto kind = kind_from_name(name);
        if (!kind || eq == std::string::npos)
            throw UsageError(fmt::format("{}: expected KIND=N, got '{}'", option, item));
        if (seen[*kind])
            throw UsageError(fmt::format("{}: kind '{}' is given twice", option, name));
        seen[*kind] = true;
        // Checked here as well as by kind_count(): --chunk's items come unsplit from CLI11.
        const std::string number = item.substr(eq + 1);
        std::uint32_t n = 0;
        const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), n);
        if (number.empty() || error != std::errc() || end != number.data() + number.size() ||
            !limits::layers_or_none.contains(n)) {
            throw UsageError(fmt::format("{}: expected KIND=N with N from {}, got '{}'", option,
                                         limits::describe(limits::layers_or_none), item));
        }
        chunk.layers[*kind] = n;
    }
    return chunk;
}

std::uint32_t kind_mask(const std::vector<std::string>& names) {
    std::uint32_t mask = 0;
    for (const std::string& name : names) {
        const auto kind = kind_from_name(name);
        if (!kind)
            throw UsageError(unknown_kind(name));
        mask |= PPB_KIND_BIT(*kind);
    }
    return mask;
}

// The allocator the command runs with, as --version names it: mimalloc where the build links it
// (samples/ppb/CMakeLists.txt, PPB_MIMALLOC), else the C library's.
std::string allocator_name() {
#ifdef PPB_WITH_MIMALLOC
    const int version = mi_version();  // 209 for 2.0.9
    return fmt::format("mimalloc {}.{}.{}", version / 100, version / 10 % 10, version % 10);
#else
    return "the C library's malloc";
#endif
}

int run(int argc, char** argv) {
    CLI::App app(std::string(description), "ppb");
    app.footer(std::string(footer));
    app.set_version_flag("--version",
                         fmt::format("ppb {} (plugin ABI {}, API {}.{}; allocator {})", PPB_VERSION,
                                     PPB_ABI_MAJOR, PPB_ABI_MAJOR, PPB_API_MINOR, allocator_name()),
                         "show ppb's version and plugin API");
    app.set_help_flag("-h,--help", "show this help");
    auto formatter = std::make_shared<CLI::Formatter>();
    formatter->column_width(34);
    formatter->label("SUBCOMMAND", "COMMAND");
    app.formatter(formatter);
    app.option_defaults()->disable_flag_override();

    Commands commands;
    add_plugins_command(app, commands);
    add_fit_command(app, commands);
    add_predict_command(app, commands);
    add_partition_command(app, commands);
    add_compare_command(app, commands);
    add_import_command(app, commands);
    add_simulate_command(app, commands);
    add_search_command(app, commands);
    add_design_command(app, commands);
    add_devices_command(app, commands);
    add_probe_plugin_command(app, commands);

    const std::vector<std::string> words(argv + 1, argv + argc);
    if (words.empty()) {
        fmt::print(stderr, "{}", app.help());
        return 2;
    }
    if (words.front() == "help") {
        write_stdout(app.help());
        return 0;
    }
    check_command_words(app, commands, words);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        write_stdout(app.help());
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        write_stdout(app.help("", CLI::AppFormatMode::All));
        return 0;
    } catch (const CLI::CallForVersion& e) {
        write_stdout(std::string(e.what()) + "\n");
        return 0;
    } catch (const CLI::RequiredError& e) {
        // An unknown option or argument is the first mistake to name: CLI11 checks for
        // missing options before it looks at what is left over.
        CLI::App* at = selected(app);
        const auto extras = app.remaining(true);
        throw UsageError(extras.empty() ? std::string(e.what()) : unexpected_arguments(*at, extras),
                         command_path(*at));
    } catch (const CLI::ExtrasError&) {
        CLI::App* at = selected(app);
        throw UsageError(unexpected_arguments(*at, app.remaining(true)), command_path(*at));
    } catch (const CLI::ArgumentMismatch& e) {
        CLI::App* at = selected(app);
        const std::string repeated = repeated_option(*at);
        throw UsageError(repeated.empty() ? std::string(e.what()) : repeated, command_path(*at));
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what(), command_path(*selected(app)));
    }
    CLI::App* chosen = selected(app);
    try {
        for (const Command& c : commands) {
            if (c.app != chosen)
                continue;
            if (c.words_after_terminator != nullptr) {
                const auto terminator = std::ranges::find(words, "--");
                if (terminator != words.end())
                    c.words_after_terminator->assign(terminator + 1, words.end());
            }
            return c.run();
        }
        throw UsageError("missing the command: 'ppb COMMAND ...'");
    } catch (const UsageError& e) {
        throw UsageError(e.what(), command_path(*chosen));
    }
}

}  // namespace ppb::cli
