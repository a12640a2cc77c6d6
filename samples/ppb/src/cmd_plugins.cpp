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

#include <chrono>
#include <cstdio>
#include <memory>

namespace ppb::cli {
namespace {

struct PluginsArgs {
    std::vector<std::string> plugin_paths;
    bool check = false;
    bool json = false;
};

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

int run_plugins(const PluginsArgs& args) {
    SearchPath path;
    auto candidates = discover_from_args(args.plugin_paths, &path);
    const std::vector<Checked> checked =
        args.check ? check_all(candidates) : std::vector<Checked>(candidates.size());

    if (args.json) {
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
            if (args.check) {
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
        write_stdout(to_pretty_json(
            boost::json::object{{"plugins", std::move(plugins)},
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
    write_stdout(out);
    return 0;
}

int run_probe_plugin(const std::string& file) {
    // Runs in the child process of 'ppb plugins --check': whatever the plugin does here can only
    // end this process.
    const PluginCandidate candidate = inspect_plugin_file(file);
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
    write_stdout(to_compact_json(report));
    return 0;
}

}  // namespace

void add_plugins_command(CLI::App& app, Commands& commands) {
    auto args = std::make_shared<PluginsArgs>();
    CLI::App* plugins = add_command(
        app, "plugins", "list the memory-model plugins found and whether they can be used",
        "Lists every plugin file (*.so) found on the search path with its name, version, plugin\n"
        "API, verdict and reason, without running any plugin code. Verdicts: usable,\n"
        "incompatible, not-a-plugin, refused, shadowed, failed. With --check, each usable plugin\n"
        "is also loaded in a child process, so that what only loading reveals (the dynamic\n"
        "loader's error, a factory that throws, a crash) is reported without taking ppb down."
        "\n\n"
        "Search path, in order: each --plugin-path DIR, each entry of PPB_PLUGIN_PATH\n"
        "(colon-separated), then the install location <prefix>/lib/ppb/plugins next to this\n"
        "executable. Set PPB_DEBUG_PLUGINS=1 to trace discovery on stderr.");
    add_plugin_path_option(*plugins, args->plugin_paths);
    plugins->add_flag("--check", args->check,
                      "load each usable plugin in a child process (10 s at most each)");
    plugins->add_flag("--json", args->json,
                      "print {\"plugins\": [...], \"search_path\": [...]} instead of a table");
    commands.push_back({plugins, [args] { return run_plugins(*args); }, {}});
}

void add_probe_plugin_command(CLI::App& app, Commands& commands) {
    auto file = std::make_shared<std::string>();
    CLI::App* probe = add_command(app, "__probe-plugin", "load one plugin file and report it", "");
    probe->group("");  // hidden: the child side of 'ppb plugins --check'
    probe->add_option("FILE", *file, "the plugin file")->required();
    commands.push_back({probe, [file] { return run_probe_plugin(*file); }, {}});
}

}  // namespace ppb::cli
