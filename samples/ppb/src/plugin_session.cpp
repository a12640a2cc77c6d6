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

std::string options_text(const std::string& text, std::string_view what) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{')
        return text;
    std::ifstream in(text, std::ios::binary);
    if (!in) {
        throw UsageError(
            fmt::format("{}: '{}' is neither a JSON object nor a readable file", what, text));
    }
    std::ostringstream contents;
    contents << in.rdbuf();
    return contents.str();
}

MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates, std::string_view spec,
                            const std::string& options) {
    return open_model(select_plugin(candidates, ModelSpec::parse(spec)), options);
}

MemoryModel open_selected_model(const Args& args) {
    const std::string spec = args.value("model").value_or(std::string(default_model));
    (void)ModelSpec::parse(spec);  // a malformed name is a usage error before any discovery
    const auto options = args.value("model-options");
    const std::string text = options ? options_text(*options, "--model-options") : "{}";
    return open_model_spec(discover_from_args(args), spec, text);
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

PreparedModel prepare_model(MemoryModel model, const DryRunSet* dryrun,
                            const std::string& dryrun_path, std::string_view how) {
    if (!model.needs_fit())
        return PreparedModel{std::move(model), "configured by its options"};
    if (dryrun == nullptr) {
        throw UsageError(fmt::format("memory model '{}' is fitted to dry-run observations: give {}",
                                     model.name(), how));
    }
    fit_model(model, *dryrun, dryrun_path);
    std::string source =
        fmt::format("fitted to {} observations of {}", dryrun->observations.size(), dryrun_path);
    return PreparedModel{std::move(model), std::move(source)};
}

FittedModel fit_selected_model(const Args& args, const DryRunSet& dryrun, std::string_view source) {
    MemoryModel model = open_selected_model(args);
    if (!model.needs_fit()) {
        throw UsageError(fmt::format(
            "memory model '{}' is configured by its options, not fitted to observations: use "
            "'ppb predict', 'ppb partition' or 'ppb compare' with it",
            model.name()));
    }
    fit_model(model, dryrun, source);
    auto document = make_fit_document(model.name(), model.version(), model.report());
    return FittedModel{std::move(model), std::move(document)};
}

}  // namespace ppb::cli
