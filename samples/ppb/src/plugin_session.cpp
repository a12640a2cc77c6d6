#include "plugin_session.hpp"

#include <ppb/fit_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/search_path.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ppb::cli {

std::vector<PluginCandidate> discover_from_args(const Args& args, SearchPath* search_path_out) {
    const SearchPath path = make_search_path(args.values("plugin-path"),
                                             std::getenv(std::string(plugin_path_variable).c_str()),
                                             current_executable());
    for (const auto& warning : path.warnings)
        fmt::print(stderr, "ppb: warning: {} (skipped)\n", warning);
    const char* debug = std::getenv("PPB_DEBUG_PLUGINS");
    DiscoveryTrace trace;
    if (debug != nullptr && *debug != '\0' && std::string_view(debug) != "0") {
        trace = [](const std::string& line) { fmt::print(stderr, "ppb: plugins: {}\n", line); };
    }
    auto candidates = discover_plugins(path, trace);
    if (search_path_out != nullptr)
        *search_path_out = path;
    return candidates;
}

namespace {

std::string model_options_text(const Args& args) {
    const auto options = args.value("model-options");
    if (!options)
        return "{}";
    const auto first = options->find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (*options)[first] == '{')
        return *options;
    std::ifstream in(*options, std::ios::binary);
    if (!in) {
        throw UsageError(fmt::format(
            "--model-options: '{}' is neither a JSON object nor a readable file", *options));
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

MemoryModel open_selected_model(const Args& args) {
    const ModelSpec spec =
        ModelSpec::parse(args.value("model").value_or(std::string(default_model)));
    const std::string options = model_options_text(args);
    const auto candidates = discover_from_args(args);
    return open_model(select_plugin(candidates, spec), options);
}

DryRunSet read_dryrun_argument(const Args& args, std::string& path_out) {
    const auto& positional = args.positional();
    if (positional.empty())
        throw UsageError("missing the dry-run FILE argument");
    if (positional.size() > 1) {
        throw UsageError(
            fmt::format("unexpected argument '{}' (one dry-run FILE only)", positional[1]));
    }
    path_out = positional.front();
    return read_dryrun(args, path_out);
}

DryRunSet read_dryrun(const Args& args, const std::string& path) {
    DryRunReadOptions options;
    if (const auto tolerance = args.double_value("duplicate-tolerance")) {
        if (*tolerance < 0.0 || *tolerance >= 1.0) {
            throw UsageError(
                "--duplicate-tolerance: expected a fraction in [0, 1), e.g. 0.01 for 1 %");
        }
        options.duplicate_tolerance = *tolerance;
    }
    return read_dryrun_file(path, options);
}

void fit_model(MemoryModel& model, const DryRunSet& dryrun, std::string_view source) {
    const auto observations = views(dryrun.observations);
    try {
        model.fit(observations);
    } catch (const ModelError& e) {
        if (!e.is_input_error())
            throw;
        throw ModelError(e.status(), fmt::format("{}: {}", source, e.what()));
    }
}

FittedModel fit_selected_model(const Args& args, const DryRunSet& dryrun, std::string_view source) {
    MemoryModel model = open_selected_model(args);
    fit_model(model, dryrun, source);
    auto document = make_fit_document(model.name(), model.version(), model.report());
    return FittedModel{std::move(model), std::move(document)};
}

}  // namespace ppb::cli
