#include <ppb/model_session.hpp>

#include <ppb/errors.hpp>
#include <ppb/loader.hpp>
#include <ppb/placement.hpp>
#include <ppb/semver.hpp>

#include <fmt/format.h>

#include <string>

namespace ppb {

MemoryModel open_model_spec(const std::vector<PluginCandidate>& candidates, std::string_view spec,
                            std::string_view options_json, std::string_view options_source) {
    const PluginCandidate& candidate = select_plugin(candidates, ModelSpec::parse(spec));
    try {
        return open_model(candidate, options_json);
    } catch (const ModelError& e) {
        if (options_source.empty() || !e.is_input_error())
            throw;
        throw ModelError(e.status(), fmt::format("{}: {}", options_source, e.what()));
    }
}

ProfileFit fit_model(MemoryModel& model, const DryRunSet& dryrun, std::string_view source) {
    // One fit of observations whose in-flight counts are single rows.
    const auto fit_once = [&](const DryRunSet& rows) {
        if (rows.groups.empty()) {
            const auto observations = views(rows.observations);
            model.fit(observations);
        } else {
            // ppb.dryrun/3: layers counted per group, fitted per group (plugin API 1.3).
            std::vector<ppb_grouped_observation> observations;
            observations.reserve(rows.observations.size());
            for (const Observation& o : rows.observations)
                observations.push_back(o.grouped_view());
            model.fit_grouped(rows.groups, observations);
        }
    };
    try {
        return fit_over_profiles(model, dryrun, fit_once);
    } catch (const ModelError& e) {
        if (!e.is_input_error())
            throw;
        throw ModelError(e.status(), fmt::format("{}: {}", source, e.what()));
    } catch (const InputError& e) {
        // The host's own refusal: a plugin older than API 1.3 and layers in several groups.
        throw InputError(fmt::format("{}: {}", source, e.what()));
    }
}

}  // namespace ppb
