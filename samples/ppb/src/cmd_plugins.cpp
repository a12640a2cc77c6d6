// ppb plugins: every plugin file on the search path and what ppb thinks of it, without loading.
#include "commands.hpp"
#include "plugin_session.hpp"
#include "text_table.hpp"

#include <ppb/json_output.hpp>

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdio>

namespace ppb::cli {
namespace {

constexpr std::string_view usage = R"(Usage: ppb plugins [--json] [--plugin-path DIR]...

Lists every plugin file (*.so) found on the search path with its name, version, plugin API,
verdict and reason, without running any plugin code. Verdicts: usable, incompatible,
not-a-plugin, refused, shadowed, failed.

Search path, in order: each --plugin-path DIR, each entry of PPB_PLUGIN_PATH (colon-separated),
then the install location <prefix>/lib/ppb/plugins next to this executable.
Set PPB_DEBUG_PLUGINS=1 to trace discovery on stderr.

Options:
  --plugin-path DIR   search DIR first (repeatable)
  --json              print {"plugins": [...], "search_path": [...]} instead of a table
  -h, --help          show this help
)";

constexpr OptionSpec specs[] = {{"plugin-path", true, true}, {"json"}, {"help"}};

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
    const auto candidates = discover_from_args(args, &path);

    if (args.flag("json")) {
        boost::json::array plugins;
        for (const auto& c : candidates) {
            boost::json::object o;
            o["name"] = c.name.empty() ? boost::json::value(nullptr) : boost::json::value(c.name);
            o["version"] = c.version ? boost::json::value(c.version->to_string())
                                     : boost::json::value(nullptr);
            o["api"] = c.entry_point.empty() ? boost::json::value(nullptr)
                                             : boost::json::value(api_text(c));
            o["path"] = c.path.string();
            o["verdict"] = verdict_name(c.verdict);
            o["reason"] = c.reason;
            plugins.push_back(std::move(o));
        }
        boost::json::array dirs;
        for (const auto& d : path.dirs) {
            dirs.push_back(boost::json::object{{"path", d.path.string()}, {"origin", d.origin}});
        }
        fmt::print("{}", to_pretty_json(boost::json::object{{"plugins", std::move(plugins)},
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
    }
    out += "\nSearch path:\n";
    if (path.dirs.empty())
        out += "  (empty)\n";
    for (const auto& d : path.dirs)
        out += fmt::format("  {}  ({})\n", d.path.string(), d.origin);
    fmt::print("{}", out);
    return 0;
}

}  // namespace ppb::cli
