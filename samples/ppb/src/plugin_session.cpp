#include "plugin_session.hpp"

#include <ppb/fit_format.hpp>
#include <ppb/loader.hpp>
#include <ppb/model_session.hpp>
#include <ppb/search_path.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <ppb/json_input.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <system_error>

#include <sys/stat.h>

namespace ppb::cli {

void add_plugin_path_option(CLI::App& app, std::vector<std::string>& paths) {
    app.add_option("--plugin-path", paths, "search DIR for plugins first (repeatable)")
        ->type_name("DIR")
        ->allow_extra_args(false);
}

void add_model_options(CLI::App& app, ModelChoice& choice) {
    app.add_option("--model", choice.model, "memory model plugin; @1, @1.4, @1.4.2 pin its version")
        ->type_name("NAME[@VERSION]")
        ->capture_default_str()
        ->check(model_spec());
    app.add_option("--model-options", choice.options,
                   "options for the model, a JSON object or a file holding one")
        ->type_name("JSON|FILE");
    add_plugin_path_option(app, choice.plugin_paths);
}

CLI::Option* add_dryrun_file_argument(CLI::App& app, std::string& file) {
    return app.add_option("FILE", file, "the dry-run file (ppb.dryrun/1); '-' reads stdin");
}

void add_duplicate_tolerance_option(CLI::App& app, DryRunReadOptions& options) {
    app.add_option("--duplicate-tolerance", options.duplicate_tolerance,
                   "largest relative difference between two observations of the same\n"
                   "placement (0.01 = 1 %)")
        ->type_name("X")
        ->capture_default_str()
        ->check(fraction());
}

CLI::Validator model_spec() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            try {
                (void)ModelSpec::parse(text.substr(0, text.find('=')));
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        },
        "", "model");
}

std::vector<PluginCandidate> discover_from_args(const std::vector<std::string>& plugin_paths,
                                                SearchPath* search_path_out) {
    const SearchPath path = make_search_path(
        plugin_paths, std::getenv(std::string(plugin_path_variable).c_str()), current_executable());
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

ModelOptions options_text(const std::string& text, std::string_view what) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{')
        return ModelOptions{text, ""};
    struct stat info {};
    if (::stat(text.c_str(), &info) != 0) {
        const int error = errno;
        throw UsageError(fmt::format("{}: '{}' is neither a JSON object nor a readable file ({})",
                                     what, text, std::generic_category().message(error)));
    }
    if (S_ISDIR(info.st_mode)) {
        throw UsageError(fmt::format(
            "{}: '{}' is a directory, not a JSON object or a file holding one", what, text));
    }
    ModelOptions options{read_text_file(text), text};
    if (options.json.find_first_not_of(" \t\r\n") == std::string::npos)
        throw InputError(
            fmt::format("{}: {}: the file is empty (expected a JSON object)", what, text));
    return options;
}

MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates, std::string_view spec,
                            const ModelOptions& options) {
    return ppb::open_model_spec(candidates, spec, options.json, options.file);
}

MemoryModel open_selected_model(const ModelChoice& choice) {
    const ModelOptions text =
        choice.options.empty() ? ModelOptions{} : options_text(choice.options, "--model-options");
    return open_model_spec(discover_from_args(choice.plugin_paths), choice.model, text);
}

std::optional<DryRunSet> read_optional_dryrun(const std::string& path,
                                              const DryRunReadOptions& options) {
    if (path.empty())
        return std::nullopt;
    return read_dryrun_file(path, options);
}

void add_memory_basis_option(CLI::App& app, BasisChoice& choice, std::string_view what) {
    static const std::map<std::string, BasisChoice> names{{"allocated", BasisChoice::allocated},
                                                          {"reserved", BasisChoice::reserved}};
    app.add_option("--memory", choice,
                   fmt::format("plan against reserved memory (the default when observations "
                               "give\nreserved_mb: allocated plus the allocator's fitted reserve) "
                               "or\nallocated memory{}",
                               what))
        ->transform(
            CLI::CheckedTransformer(names, CLI::ignore_case).description("{allocated,reserved}"))
        ->type_name("BASIS");
}

namespace {

// The allocator reserve of `dryrun` under `model` (fitted already, or configured): the in-flight
// vectors of the fit, or for a configured model each observation's heaviest.
std::optional<AllocatorReserve> reserve_of(const MemoryModel& model, const DryRunSet& dryrun,
                                           const ProfileFit* fit) {
    const bool any = std::any_of(dryrun.observations.begin(), dryrun.observations.end(),
                                 [](const Observation& o) { return o.reserved_mb.has_value(); });
    if (!any)
        return std::nullopt;
    if (fit != nullptr)
        return fit_allocator_reserve(model, dryrun, *fit);
    ProfileFit heaviest;
    heaviest.active = heaviest_vectors(predict_profiles(model, dryrun),
                                       std::vector<std::size_t>(dryrun.observations.size(), 0));
    return fit_allocator_reserve(model, dryrun, heaviest);
}

}  // namespace

PreparedModel prepare_model(MemoryModel model, const DryRunSet* dryrun,
                            const std::string& dryrun_path, std::string_view how,
                            BasisChoice basis) {
    std::string source = "configured by its options";
    std::optional<AllocatorReserve> reserve;
    if (model.needs_fit()) {
        if (dryrun == nullptr) {
            throw UsageError(fmt::format(
                "memory model '{}' is fitted to dry-run observations: give {}", model.name(), how));
        }
        const ProfileFit fit = fit_model(model, *dryrun, dryrun_path);
        source = fmt::format("fitted to {} observations of {}", dryrun->observations.size(),
                             dryrun_path);
        reserve = reserve_of(model, *dryrun, &fit);
    } else if (dryrun != nullptr) {
        reserve = reserve_of(model, *dryrun, nullptr);
    }
    if (basis == BasisChoice::reserved && !reserve) {
        throw UsageError(
            dryrun == nullptr
                ? fmt::format("--memory reserved: the allocator's reserve is fitted to dry runs "
                              "that measured reserved memory: give {}",
                              how)
                : fmt::format("--memory reserved: no observation of {} gives reserved_mb (ppb "
                              "import fills it from Megatron-LM's max reserved, MindSpore's peak "
                              "with fragments, torchtitan's memory lines and memory snapshots)",
                              dryrun_path));
    }
    if (reserve && basis != BasisChoice::allocated) {
        model.set_allocator_reserve(reserve);
        source += fmt::format("; reserved memory: {}", describe_reserve(*reserve));
        if (basis == BasisChoice::automatic) {
            fmt::print(stderr,
                       "ppb: note: {} observation{} of {} give{} reserved_mb: planning against "
                       "reserved memory, {} (--memory allocated plans against allocated memory)\n",
                       reserve->observations, reserve->observations == 1 ? "" : "s", dryrun_path,
                       reserve->observations == 1 ? "s" : "", describe_reserve(*reserve));
        }
        for (const std::string& caveat : reserve_caveats(*reserve))
            fmt::print(stderr, "ppb: note: {}\n", caveat);
    }
    return PreparedModel{std::move(model), std::move(source), reserve};
}

PreparedModel prepare_selected_model(const ModelChoice& choice,
                                     const std::optional<DryRunSet>& dryrun,
                                     const std::string& dryrun_path, std::string_view how,
                                     BasisChoice basis) {
    return prepare_model(open_selected_model(choice), dryrun ? &*dryrun : nullptr, dryrun_path, how,
                         basis);
}

FittedModel fit_selected_model(const ModelChoice& choice, const DryRunSet& dryrun,
                               std::string_view source) {
    MemoryModel model = open_selected_model(choice);
    if (!model.needs_fit()) {
        throw UsageError(fmt::format(
            "memory model '{}' is configured by its options, not fitted to observations: use "
            "'ppb predict', 'ppb partition' or 'ppb compare' with it",
            model.name()));
    }
    const ProfileFit profile_fit = fit_model(model, dryrun, source);
    auto document = make_fit_document(model.name(), model.version(), model.report());
    add_profile_fit(document, profile_fit, dryrun);
    if (const auto reserve = fit_allocator_reserve(model, dryrun, profile_fit))
        document["allocator_reserve"] = reserve_document(*reserve);
    return FittedModel{std::move(model), std::move(document)};
}

}  // namespace ppb::cli
