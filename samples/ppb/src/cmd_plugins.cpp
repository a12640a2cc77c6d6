// ppb plugins: every plugin file on the search path and what ppb thinks of it, without loading.
#include "commands.hpp"
#include "plugin_session.hpp"
#include "text_table.hpp"

#include <ppb/json_output.hpp>
#include <ppb/loader.hpp>
#include <ppb/plugin_check.hpp>
#include <ppb/search_path.hpp>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <cstdio>

namespace ppb::cli {
namespace {

constexpr std::string_view usage = R"(Usage: ppb plugins [--check] [--json] [--plugin-path DIR]...

Lists every plugin file (*.so) found on the search path with its name, version, plugin API,
verdict and reason, without running any plugin code. Verdicts: usable, incompatible,
not-a-plugin, refused, shadowed, failed. With --check, each usable plugin is also loaded in a
child process, so that what only loading reveals (the dynamic loader's error, a factory that
throws, a crash) is reported without taking ppb down.

Search path, in order: each --plugin-path DIR, each entry of PPB_PLUGIN_PATH (colon-separated),
then the install location <prefix>/lib/ppb/plugins next to this executable.
Set PPB_DEBUG_PLUGINS=1 to trace discovery on stderr.

Options:
  --plugin-path DIR   search DIR first (repeatable)
  --check             load each usable plugin in a child process (10 s at most each)
  --json              print {"plugins": [...], "search_path": [...]} instead of a table
  -h, --help          show this help
)";

constexpr OptionSpec specs[] = {{"plugin-path", true, true}, {"json"}, {"help"}, {"check"}};

// What a child process reported after loading a plugin (see run_probe_plugin).
struct Checked {
    bool done = false;
    boost::json::object details;  // description, build_id, options_help
};

// Loads each usable candidate in a child process; failures change its verdict to failed.
std::vector<Checked> check_all(std::vector<PluginCandidate>& candidates) {
    std::vector<Checked> out(candidates.size());
    const auto exe = current_executable();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        auto& c = candidates[i];
        if (c.verdict != Verdict::usable)
            continue;
        const PluginCheck check =
            check_in_child(c, exe, {"__probe-plugin"}, std::chrono::milliseconds(10000));
        out[i].done = true;
        if (!check.loaded) {
            c.verdict = Verdict::failed;
            c.reason = check.reason;
            continue;
        }
        boost::system::error_code ec;
        auto report = boost::json::parse(check.report, ec);
        if (ec || !report.is_object()) {
            c.verdict = Verdict::failed;
            c.reason = "the loading process reported nothing readable";
            continue;
        }
        out[i].details = std::move(report.get_object());
        c.reason += "; loaded in a child process: ok";
        if (const auto* note = out[i].details.if_contains("note"); note && note->is_string()) {
            c.reason += fmt::format(" ({})", std::string_view(note->get_string()));
        }
    }
    return out;
}

std::string api_text(const PluginCandidate& c) {
    return c.entry_point.empty() ? "" : fmt::format("{}.{}", c.abi_major, c.api_minor);
}

}  // namespace

int run_plugins(std::span<const std::string> words) {
    const Args args(words, specs);
    if (args.flag("help")) {
        fmt::print("{}", usage);
        return 0;
    }
    if (!args.positional().empty()) {
        throw UsageError(fmt::format("unexpected argument '{}'", args.positional().front()));
    }
    SearchPath path;
    auto candidates = discover_from_args(args, &path);
    const std::vector<Checked> checked =
        args.flag("check") ? check_all(candidates) : std::vector<Checked>(candidates.size());

    if (args.flag("json")) {
        boost::json::array plugins;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            const auto& c = candidates[i];
            boost::json::object o;
            o["name"] = c.name.empty() ? boost::json::value(nullptr) : boost::json::value(c.name);
            o["version"] = c.version ? boost::json::value(c.version->to_string())
                                     : boost::json::value(nullptr);
            o["api"] = c.entry_point.empty() ? boost::json::value(nullptr)
                                             : boost::json::value(api_text(c));
            o["path"] = c.path.string();
            o["verdict"] = verdict_name(c.verdict);
            o["reason"] = c.reason;
            // A newer API minor of this ppb's ABI loads; the fields it appends are not used.
            o["newer_than_host"] = !c.entry_point.empty() && c.abi_major == PPB_ABI_MAJOR &&
                                   c.api_minor > PPB_API_MINOR;
            if (args.flag("check")) {
                o["checked"] = checked[i].done;
                for (const auto& [key, value] : checked[i].details) {
                    if (key == "description" || key == "build_id" || key == "options_help") {
                        o[key] = value;
                    }
                }
            }
            plugins.push_back(std::move(o));
        }
        boost::json::array dirs;
        for (const auto& d : path.dirs) {
            dirs.push_back(boost::json::object{{"path", d.path.string()}, {"origin", d.origin}});
        }
        fmt::print("{}", to_pretty_json(boost::json::object{
                             {"plugins", std::move(plugins)},
                             {"host_api", fmt::format("{}.{}", PPB_ABI_MAJOR, PPB_API_MINOR)},
                             {"search_path", std::move(dirs)}}));
        return 0;
    }

    std::string out;
    if (candidates.empty()) {
        out += "No plugin files found.\n";
    } else {
        TextTable table({"NAME", "VERSION", "API", "VERDICT", "PATH"});
        for (const auto& c : candidates) {
            table.add_row({c.name.empty() ? "-" : c.name, c.version ? c.version->to_string() : "-",
                           c.entry_point.empty() ? "-" : api_text(c),
                           std::string(verdict_name(c.verdict)), c.path.string()});
        }
        out += table.render();
        bool header = false;
        for (const auto& c : candidates) {
            if (c.verdict == Verdict::usable)
                continue;
            if (!header)
                out += "\nNot usable:\n";
            header = true;
            out += fmt::format("  {}: {}\n", c.path.filename().string(), c.reason);
        }
        header = false;
        for (const auto& c : candidates) {
            if (c.verdict != Verdict::usable || c.api_minor <= PPB_API_MINOR)
                continue;
            if (!header)
                out += fmt::format("\nNewer plugin API than this ppb's {}.{}:\n", PPB_ABI_MAJOR,
                                   PPB_API_MINOR);
            header = true;
            out += fmt::format("  {}: {}\n", c.path.filename().string(), c.reason);
        }
    }
    out += "\nSearch path:\n";
    if (path.dirs.empty())
        out += "  (empty)\n";
    for (const auto& d : path.dirs)
        out += fmt::format("  {}  ({})\n", d.path.string(), d.origin);
    fmt::print("{}", out);
    return 0;
}

int run_probe_plugin(std::span<const std::string> words) {
    // Runs in the child process of 'ppb plugins --check': whatever the plugin does here can only
    // end this process.
    if (words.size() != 1)
        throw UsageError("__probe-plugin takes one plugin file");
    const PluginCandidate candidate = inspect_plugin_file(words.front());
    const auto api = load_plugin(candidate);
    boost::json::object report{{"name", api->name},
                               {"version", api->version},
                               {"description", api->description != nullptr ? api->description : ""},
                               {"build_id", api->build_id != nullptr ? api->build_id : ""}};
    const auto help = options_help(*api);
    report["options_help"] = help ? boost::json::value(*help) : boost::json::value(nullptr);
    if (!help && api->api_minor < 1) {
        report["note"] =
            fmt::format("built for API {}.{}: no options help", api->abi_major, api->api_minor);
    }
    // The factory runs too: with no options, a model that needs some says so (invalid input);
    // anything else is the plugin's failure.
    try {
        MemoryModel model(api, "{}");
    } catch (const ModelError& e) {
        if (e.status() != PPB_ERR_INVALID_INPUT)
            throw;
        report["note"] = "needs options to be created";
    }
    fmt::print("{}", boost::json::serialize(report));
    return 0;
}

}  // namespace ppb::cli
