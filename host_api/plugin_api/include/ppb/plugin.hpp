// ppb/plugin.hpp — what a memory-model plugin author writes against.
//
// Derive from ppb::plugin::MemoryModelBase, give the class a constructor taking the options JSON
// text, and write PPB_EXPORT_MEMORY_MODEL(Class, "description", kinds, flags) once in one source
// file. The macro generates the C table of ppb/abi.h: every exception thrown by the class is
// caught at the boundary and becomes a status code plus a message for last_error().
//
// The generated table checks what it is given before the class sees it (ppb/plugin/
// placement_checks.hpp): predict, predict_batch, predict_std_error, the grouped calls and
// predict_parts get well-formed placements and fit well-formed observations, so a model checks
// only what is its own to refuse.
//
// The plugin's name and version come from the compile definitions PPB_PLUGIN_NAME and
// PPB_PLUGIN_VERSION, which the CMake function ppb_add_plugin() sets from the same values it
// uses to name the file, so the file name and the manifest cannot disagree.
#ifndef PPB_PLUGIN_HPP
#define PPB_PLUGIN_HPP

#include <ppb/abi.h>
#include <ppb/limits.hpp>
#include <ppb/plugin/placement_checks.hpp>

#include <boost/config.hpp>
#include <boost/dll/alias.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::plugin {

// Exceptions a model throws to report a specific status; anything else is PPB_ERR_INTERNAL.
struct InvalidInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct NotFitted : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct NotEstimable : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct Unsupported : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class MemoryModelBase {
  public:
    MemoryModelBase() = default;
    MemoryModelBase(const MemoryModelBase&) = delete;
    MemoryModelBase& operator=(const MemoryModelBase&) = delete;
    virtual ~MemoryModelBase() = default;

    // Models configured from options rather than from measurements keep this default.
    virtual void fit(std::span<const ppb_observation> /*observations*/) {
        throw Unsupported("this memory model is configured from its options, not fitted");
    }
    [[nodiscard]] virtual double predict(const ppb_placement& placement) const = 0;
    virtual void predict_batch(std::span<const ppb_placement> placements,
                               std::span<double> out_mb) const {
        predict_each(placements, out_mb, [this](const ppb_placement& p) { return predict(p); });
    }
    // Standard error in MB of predict()'s value, or nullopt when the model has no estimate of
    // its uncertainty (API 1.2).
    [[nodiscard]] virtual std::optional<double> predict_std_error(
        const ppb_placement& /*placement*/) const {
        return std::nullopt;
    }
    // Linear coefficients, or nullopt for a model that is not linear.
    [[nodiscard]] virtual std::optional<ppb_linear_parameters> parameters() const {
        return std::nullopt;
    }
    // JSON object text {"parameters": {...}, "diagnostics": {...}}.
    [[nodiscard]] virtual std::string report() const = 0;

  protected:
    // out_mb[i] = predict_one(placements[i]), a failure naming the placement it is about.
    template <class Placement, class PredictOne>
    static void predict_each(std::span<const Placement> placements, std::span<double> out_mb,
                             const PredictOne& predict_one) {
        for (std::size_t i = 0; i < placements.size(); ++i) {
            try {
                out_mb[i] = predict_one(placements[i]);
            } catch (const NotEstimable& e) {
                throw NotEstimable("placement " + std::to_string(i) + ": " + e.what());
            } catch (const InvalidInput& e) {
                throw InvalidInput("placement " + std::to_string(i) + ": " + e.what());
            }
        }
    }

  public:
    // ---- Groups of body layers (API 1.3) ----
    // A model of one kind of body layer keeps these defaults: one group, "body", and a grouped
    // placement or observation of one group means the plain one inside it. A model of several
    // groups overrides them all; the generated table then refuses plain placements and
    // parameters() for it, and checks that every grouped placement has groups().size() groups.

    // The groups, in model order; never empty, names distinct and not empty.
    [[nodiscard]] virtual std::vector<std::string> groups() const { return {"body"}; }
    // Observations whose group_layers have names.size() groups, named so.
    virtual void fit_grouped(std::span<const std::string> names,
                             std::span<const ppb_grouped_observation> observations) {
        if (names.size() != 1) {
            throw InvalidInput(
                "this memory model has one group of body layers; it cannot be fitted "
                "to layers counted in " +
                std::to_string(names.size()) + " groups");
        }
        std::vector<ppb_observation> plain;
        plain.reserve(observations.size());
        for (const auto& o : observations)
            plain.push_back(ppb_observation{o.placement.placement, o.peak_memory_mb});
        fit(plain);
    }
    [[nodiscard]] virtual double predict_grouped(const ppb_grouped_placement& placement) const {
        return predict(placement.placement);
    }
    virtual void predict_grouped_batch(std::span<const ppb_grouped_placement> placements,
                                       std::span<double> out_mb) const {
        predict_each(placements, out_mb,
                     [this](const ppb_grouped_placement& p) { return predict_grouped(p); });
    }
    [[nodiscard]] virtual std::optional<double> predict_grouped_std_error(
        const ppb_grouped_placement& placement) const {
        return predict_std_error(placement.placement);
    }
    // Coefficients of group `group` (< groups().size()) as ppb/abi.h's group_parameters describes
    // them, or nullopt for a model that is not linear.
    [[nodiscard]] virtual std::optional<ppb_linear_parameters> group_parameters(
        std::uint32_t /*group*/) const {
        return parameters();
    }

    // ---- The model's own terms (API 1.4) ----
    // predict_grouped()'s value for `placement` as the model's terms (ppb/abi.h, ppb_memory_part),
    // in the order a stacked bar shows them bottom up, adding up to the prediction; nullopt when
    // the model has none to give (a linear model: its coefficients itemise its predictions).
    // Names and labels must outlive the model: string literals, or text the model owns.
    [[nodiscard]] virtual std::optional<std::vector<ppb_memory_part>> predict_parts(
        const ppb_grouped_placement& /*placement*/) const {
        return std::nullopt;
    }
};

namespace detail {

// The last error message of this thread. A plain array, not a std::string: a thread_local with a
// destructor would register it with the C runtime and keep the library from ever unloading.
inline constexpr std::size_t last_error_capacity = 8192;
inline char* last_error_buffer() noexcept {
    thread_local char buffer[last_error_capacity] = {};
    return buffer;
}

// Stores `prefix` + `message`, cut at the buffer's size. Never allocates, never throws.
inline void set_last_error(std::string_view prefix, std::string_view message = {}) noexcept {
    char* buffer = last_error_buffer();
    std::size_t n = 0;
    for (const std::string_view part : {prefix, message}) {
        for (const char c : part) {
            if (n + 1 >= last_error_capacity)
                break;
            buffer[n++] = c;
        }
    }
    buffer[n] = '\0';
}

// Runs `body`, translating exceptions into status codes at the C boundary.
template <class Body>
ppb_status guarded(Body&& body) noexcept {
    try {
        body();
        return PPB_OK;
    } catch (const InvalidInput& e) {
        set_last_error(e.what());
        return PPB_ERR_INVALID_INPUT;
    } catch (const NotFitted& e) {
        set_last_error(e.what());
        return PPB_ERR_NOT_FITTED;
    } catch (const NotEstimable& e) {
        set_last_error(e.what());
        return PPB_ERR_NOT_ESTIMABLE;
    } catch (const Unsupported& e) {
        set_last_error(e.what());
        return PPB_ERR_UNSUPPORTED;
    } catch (const std::bad_alloc&) {
        set_last_error("out of memory");
        return PPB_ERR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        // Not one of the statuses above: a defect, reported as PPB_ERR_INTERNAL.
        set_last_error(e.what());
        return PPB_ERR_INTERNAL;
    } catch (...) {
        set_last_error("an exception that is not a std::exception");
        return PPB_ERR_INTERNAL;
    }
}

inline ppb_status null_argument(std::string_view message) noexcept {
    set_last_error(message);
    return PPB_ERR_INVALID_INPUT;
}

// What a ppb_model* points to: the author's model and what the C boundary keeps for it.
struct Instance {
    explicit Instance(std::unique_ptr<MemoryModelBase> m) noexcept : model(std::move(m)) {}
    std::unique_ptr<MemoryModelBase> model;
    // The text returned by the C report() call, valid until the next call on the model.
    mutable std::string report_text;
    // The model's groups as groups() hands them out: read again after create and every fit (the
    // only calls that may change them), so that the const calls only read.
    std::vector<std::string> group_names;
    std::vector<const char*> group_pointers;

    void refresh_groups() {
        std::vector<std::string> names = model->groups();
        if (names.empty())
            throw std::logic_error("the model's groups() returned no group");
        group_names = std::move(names);
        group_pointers.clear();
        for (const auto& n : group_names)
            group_pointers.push_back(n.c_str());
    }
    [[nodiscard]] std::uint32_t group_count() const noexcept {
        return static_cast<std::uint32_t>(group_names.size());
    }
    // "2 groups (dense, moe)"
    [[nodiscard]] std::string describe_groups() const {
        std::string text = std::to_string(group_names.size()) + " groups (";
        for (std::size_t g = 0; g < group_names.size(); ++g)
            text += (g == 0 ? "" : ", ") + group_names[g];
        return text + ")";
    }
    // A plain placement means nothing to a model of several groups.
    void require_one_group(const char* what) const {
        if (group_count() > 1) {
            throw InvalidInput(std::string("this memory model distinguishes ") + describe_groups() +
                               " of body layers: " + what +
                               " must count its layers per group (the grouped calls of plugin "
                               "API 1.3)");
        }
    }
    void require_group_count(const ppb_grouped_placement& p, std::string_view context) const {
        if (p.num_groups != group_count()) {
            throw InvalidInput(std::string(context) + ": num_groups is " +
                               std::to_string(p.num_groups) + " but this memory model has " +
                               (group_count() == 1
                                    ? std::string("one group (") + group_names.front() + ")"
                                    : describe_groups()));
        }
    }
};

inline Instance* instance(ppb_model* m) noexcept {
    return reinterpret_cast<Instance*>(m);
}
inline const Instance* instance(const ppb_model* m) noexcept {
    return reinterpret_cast<const Instance*>(m);
}
inline MemoryModelBase* self(ppb_model* m) noexcept {
    return instance(m)->model.get();
}
inline const MemoryModelBase* self(const ppb_model* m) noexcept {
    return instance(m)->model.get();
}

// The C functions of the table, shared by every model; only create() depends on the class.
inline void destroy(ppb_model* model) noexcept {
    delete instance(model);
}

inline ppb_status fit(ppb_model* model, const ppb_observation* obs, size_t count) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (obs == nullptr && count != 0)
        return null_argument("null argument: observations");
    return guarded([&] {
        const std::span<const ppb_observation> observations(obs, count);
        check_observations(observations);
        Instance* i = instance(model);
        try {
            i->model->fit(observations);
        } catch (...) {
            i->refresh_groups();
            throw;
        }
        i->refresh_groups();
    });
}

// The arguments every one-placement call takes: PPB_OK, or the status of the first null one.
inline ppb_status check_one_placement_arguments(const ppb_model* model,
                                                const ppb_placement* placement,
                                                const double* out_mb) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (placement == nullptr)
        return null_argument("null argument: placement");
    if (out_mb == nullptr)
        return null_argument("null argument: out_mb");
    return PPB_OK;
}

inline ppb_status predict(const ppb_model* model, const ppb_placement* placement,
                          double* out_mb) noexcept {
    if (const ppb_status s = check_one_placement_arguments(model, placement, out_mb); s != PPB_OK)
        return s;
    return guarded([&] {
        check_placement(*placement);
        instance(model)->require_one_group("a placement");
        *out_mb = self(model)->predict(*placement);
    });
}

inline ppb_status predict_batch(const ppb_model* model, const ppb_placement* placements,
                                size_t count, double* out_mb) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (count != 0 && (placements == nullptr || out_mb == nullptr)) {
        return null_argument("null argument: placements or out_mb");
    }
    return guarded([&] {
        const std::span<const ppb_placement> all(placements, count);
        check_placements(all);
        instance(model)->require_one_group("every placement");
        self(model)->predict_batch(all, std::span<double>(out_mb, count));
    });
}

inline ppb_status predict_std_error(const ppb_model* model, const ppb_placement* placement,
                                    double* out_mb) noexcept {
    if (const ppb_status s = check_one_placement_arguments(model, placement, out_mb); s != PPB_OK)
        return s;
    return guarded([&] {
        check_placement(*placement);
        instance(model)->require_one_group("a placement");
        const auto error = self(model)->predict_std_error(*placement);
        if (!error)
            throw Unsupported("this memory model has no estimate of its uncertainty");
        *out_mb = *error;
    });
}

// The calls that hand out linear coefficients: the arguments checked, then `coefficients(instance)`
// (nullopt for a model that is not linear), copied out with this plugin's struct_size.
template <class Coefficients>
ppb_status hand_out_parameters(const ppb_model* model, ppb_linear_parameters* out,
                               const Coefficients& coefficients) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (out == nullptr)
        return null_argument("null argument: out");
    if (out->struct_size < sizeof(ppb_linear_parameters)) {
        set_last_error("ppb_linear_parameters.struct_size is smaller than this plugin's");
        return PPB_ERR_INVALID_INPUT;
    }
    return guarded([&] {
        auto p = coefficients(*instance(model));
        if (!p)
            throw Unsupported("this memory model is not linear: it has no coefficients");
        *out = *p;
        out->struct_size = sizeof(ppb_linear_parameters);
    });
}

inline ppb_status parameters(const ppb_model* model, ppb_linear_parameters* out) noexcept {
    return hand_out_parameters(model, out, [](const Instance& i) {
        if (i.group_count() > 1) {
            throw Unsupported("this memory model distinguishes " + i.describe_groups() +
                              " of body layers: each has its coefficients (group_parameters)");
        }
        return i.model->parameters();
    });
}

inline ppb_status report(const ppb_model* model, const char** out_json) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (out_json == nullptr)
        return null_argument("null argument: out_json");
    return guarded([&] {
        // The text is owned by the instance so that it outlives this call (see abi.h).
        const Instance* i = instance(model);
        i->report_text = i->model->report();
        *out_json = i->report_text.c_str();
    });
}

inline const char* last_error() noexcept {
    return last_error_buffer();
}

// ---- API 1.3: groups of body layers ----

inline ppb_status groups(const ppb_model* model, const char* const** out_names,
                         uint32_t* out_count) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (out_names == nullptr || out_count == nullptr)
        return null_argument("null argument: out_names or out_count");
    const Instance* i = instance(model);
    *out_names = i->group_pointers.data();
    *out_count = i->group_count();
    return PPB_OK;
}

inline ppb_status fit_grouped(ppb_model* model, const char* const* group_names, uint32_t num_groups,
                              const ppb_grouped_observation* obs, size_t count) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (group_names == nullptr)
        return null_argument("null argument: group_names");
    if (obs == nullptr && count != 0)
        return null_argument("null argument: observations");
    return guarded([&] {
        if (num_groups == 0 || num_groups > limits::groups.max) {
            throw InvalidInput("num_groups: " +
                               limits::out_of_range(std::to_string(num_groups), limits::groups));
        }
        std::vector<std::string> names;
        for (std::uint32_t g = 0; g < num_groups; ++g) {
            if (group_names[g] == nullptr)
                throw InvalidInput("group_names[" + std::to_string(g) + "] is null");
            std::string name(group_names[g]);
            if (name.empty())
                throw InvalidInput("group_names[" + std::to_string(g) + "] is empty");
            for (std::uint32_t h = 0; h < g; ++h) {
                if (names[h] == name) {
                    throw InvalidInput("group_names[" + std::to_string(h) + "] and [" +
                                       std::to_string(g) + "] are both '" + name + "'");
                }
            }
            names.push_back(std::move(name));
        }
        const std::span<const ppb_grouped_observation> observations(obs, count);
        check_grouped_observations(observations);
        for (std::size_t o = 0; o < observations.size(); ++o) {
            if (observations[o].placement.num_groups != num_groups) {
                throw InvalidInput("observation " + std::to_string(o) + ": num_groups is " +
                                   std::to_string(observations[o].placement.num_groups) +
                                   " but the fit names " + std::to_string(num_groups) + " groups");
            }
        }
        Instance* i = instance(model);
        try {
            i->model->fit_grouped(names, observations);
        } catch (...) {
            i->refresh_groups();
            throw;
        }
        i->refresh_groups();
    });
}

inline ppb_status predict_grouped(const ppb_model* model, const ppb_grouped_placement* placement,
                                  double* out_mb) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (placement == nullptr || out_mb == nullptr)
        return null_argument("null argument: placement or out_mb");
    return guarded([&] {
        check_grouped_placement(*placement);
        instance(model)->require_group_count(*placement, "placement");
        *out_mb = self(model)->predict_grouped(*placement);
    });
}

inline ppb_status predict_grouped_batch(const ppb_model* model,
                                        const ppb_grouped_placement* placements, size_t count,
                                        double* out_mb) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (count != 0 && (placements == nullptr || out_mb == nullptr))
        return null_argument("null argument: placements or out_mb");
    return guarded([&] {
        const std::span<const ppb_grouped_placement> all(placements, count);
        check_grouped_placements(all);
        for (std::size_t p = 0; p < all.size(); ++p) {
            if (all[p].num_groups != instance(model)->group_count())
                instance(model)->require_group_count(all[p], "placement " + std::to_string(p));
        }
        self(model)->predict_grouped_batch(all, std::span<double>(out_mb, count));
    });
}

inline ppb_status predict_grouped_std_error(const ppb_model* model,
                                            const ppb_grouped_placement* placement,
                                            double* out_mb) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (placement == nullptr || out_mb == nullptr)
        return null_argument("null argument: placement or out_mb");
    return guarded([&] {
        check_grouped_placement(*placement);
        instance(model)->require_group_count(*placement, "placement");
        const auto error = self(model)->predict_grouped_std_error(*placement);
        if (!error)
            throw Unsupported("this memory model has no estimate of its uncertainty");
        *out_mb = *error;
    });
}

inline ppb_status group_parameters(const ppb_model* model, uint32_t group,
                                   ppb_linear_parameters* out) noexcept {
    return hand_out_parameters(model, out, [group](const Instance& i) {
        if (group >= i.group_count()) {
            throw InvalidInput("group " + std::to_string(group) +
                               " is out of range: the model has " + i.describe_groups());
        }
        return i.model->group_parameters(group);
    });
}

// ---- API 1.4: the terms of a prediction ----

inline ppb_status predict_parts(const ppb_model* model, const ppb_grouped_placement* placement,
                                ppb_memory_part* out, uint32_t capacity,
                                uint32_t* out_count) noexcept {
    if (model == nullptr)
        return null_argument("null argument: model");
    if (placement == nullptr || out_count == nullptr)
        return null_argument("null argument: placement or out_count");
    if (out == nullptr && capacity != 0)
        return null_argument("null argument: out, with a capacity above 0");
    return guarded([&] {
        check_grouped_placement(*placement);
        instance(model)->require_group_count(*placement, "placement");
        const auto parts = self(model)->predict_parts(*placement);
        if (!parts)
            throw Unsupported("this memory model gives no terms of its predictions");
        const std::size_t written = std::min<std::size_t>(parts->size(), capacity);
        for (std::size_t i = 0; i < written; ++i)
            out[i] = (*parts)[i];
        *out_count = static_cast<uint32_t>(parts->size());
    });
}

template <class Model>
ppb_status create(const char* options_json, ppb_model** out) noexcept {
    if (out == nullptr)
        return null_argument("null argument: out");
    *out = nullptr;
    return guarded([&] {
        std::string_view options = options_json != nullptr ? options_json : "{}";
        auto created = std::make_unique<Instance>(std::make_unique<Model>(options));
        created->refresh_groups();
        *out = reinterpret_cast<ppb_model*>(created.release());
    });
}

}  // namespace detail
}  // namespace ppb::plugin

// PPB_DETAIL_STR, PPB_DETAIL_ENTRY and PPB_DETAIL_SECTION: ppb/abi.h.

#if defined(__clang__)
#define PPB_DETAIL_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define PPB_DETAIL_COMPILER "GCC " __VERSION__
#else
#define PPB_DETAIL_COMPILER "unknown compiler"
#endif
#if defined(__GLIBCXX__)
#define PPB_DETAIL_STDLIB \
    "; libstdc++ " PPB_DETAIL_STR(__GLIBCXX__) "; cxx11-abi=" PPB_DETAIL_STR(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define PPB_DETAIL_STDLIB "; libc++ " PPB_DETAIL_STR(_LIBCPP_VERSION)
#else
#define PPB_DETAIL_STDLIB ""
#endif
#define PPB_BUILD_ID PPB_DETAIL_COMPILER PPB_DETAIL_STDLIB "; C++ " PPB_DETAIL_STR(__cplusplus)

// Generates the plugin's C table and its exported entry point. Use once per plugin.
//   Class:       a ppb::plugin::MemoryModelBase subclass constructible from std::string_view
//   Description: a string literal, one line
//   Kinds:       PPB_KIND_BIT(...) mask of recompute kinds the model predicts
//   Flags:       PPB_MODEL_* (PPB_MODEL_NEEDS_FIT for models fitted from observations)
//   OptionsHelp: (the _WITH_OPTIONS form) a string literal describing the options, one per line
#define PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(Class, Description, Kinds, Flags, OptionsHelp) \
    namespace ppb_plugin_generated {                                                        \
    extern const ppb_memory_model_api table;                                                \
    const ppb_memory_model_api table = {                                                    \
        sizeof(ppb_memory_model_api),                                                       \
        PPB_ABI_MAJOR,                                                                      \
        PPB_API_MINOR,                                                                      \
        (Kinds),                                                                            \
        (Flags),                                                                            \
        PPB_PLUGIN_NAME,                                                                    \
        PPB_PLUGIN_VERSION,                                                                 \
        Description,                                                                        \
        PPB_BUILD_ID,                                                                       \
        &::ppb::plugin::detail::create<Class>,                                              \
        &::ppb::plugin::detail::destroy,                                                    \
        &::ppb::plugin::detail::fit,                                                        \
        &::ppb::plugin::detail::predict,                                                    \
        &::ppb::plugin::detail::predict_batch,                                              \
        &::ppb::plugin::detail::parameters,                                                 \
        &::ppb::plugin::detail::report,                                                     \
        &::ppb::plugin::detail::last_error,                                                 \
        OptionsHelp,                                                                        \
        &::ppb::plugin::detail::predict_std_error,                                          \
        &::ppb::plugin::detail::groups,                                                     \
        &::ppb::plugin::detail::fit_grouped,                                                \
        &::ppb::plugin::detail::predict_grouped,                                            \
        &::ppb::plugin::detail::predict_grouped_batch,                                      \
        &::ppb::plugin::detail::predict_grouped_std_error,                                  \
        &::ppb::plugin::detail::group_parameters,                                           \
        &::ppb::plugin::detail::predict_parts,                                              \
    };                                                                                      \
    }                                                                                       \
    BOOST_DLL_ALIAS_SECTIONED(ppb_plugin_generated::table,                                  \
                              PPB_DETAIL_ENTRY(PPB_ABI_MAJOR, PPB_API_MINOR),               \
                              PPB_DETAIL_SECTION(PPB_ABI_MAJOR))

#define PPB_EXPORT_MEMORY_MODEL(Class, Description, Kinds, Flags) \
    PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(Class, Description, Kinds, Flags, nullptr)

#endif  // PPB_PLUGIN_HPP
