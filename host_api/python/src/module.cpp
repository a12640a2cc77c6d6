// ppb._ppb — the Python binding of the host library: discovery, version choice, loading, the
// dry-run reader, the fit document, the partitioner and the SAPP layer-file writer are the same
// code as the ppb command's. The package ppb (host_api/python/ppb/__init__.py) wraps it with the
// Pythonic surface; this file turns Python values into the library's types and back, and the
// library's exceptions into ppb.InvalidInput, ppb.PluginError and ppb.Infeasible.
#include <ppb/discovery.hpp>
#include <ppb/dryrun_format.hpp>
#include <ppb/errors.hpp>
#include <ppb/fit_format.hpp>
#include <ppb/importers/megatron_arguments.hpp>
#include <ppb/importers/megatron_model_config.hpp>
#include <ppb/importers/mindformers_options.hpp>
#include <ppb/importers/torchtitan_options.hpp>
#include <ppb/in_flight_profile.hpp>
#include <ppb/kinds.hpp>
#include <ppb/limits.hpp>
#include <ppb/memory_model.hpp>
#include <ppb/model_session.hpp>
#include <ppb/partition/design.hpp>
#include <ppb/partition/design_document.hpp>
#include <ppb/partition/devices_document.hpp>
#include <ppb/partition/model_comparison.hpp>
#include <ppb/partition/model_plan.hpp>
#include <ppb/partition/plan_document.hpp>
#include <ppb/partition/prediction_request.hpp>
#include <ppb/partition/problem.hpp>
#include <ppb/partition/request.hpp>
#include <ppb/partition/sapp_export.hpp>
#include <ppb/partition/search_document.hpp>
#include <ppb/partition/search_request.hpp>
#include <ppb/partition/simulate_saved_plan.hpp>
#include <ppb/partition/time_model.hpp>
#include <ppb/placement.hpp>
#include <ppb/profile_prediction.hpp>
#include <ppb/reserve_fit.hpp>
#include <ppb/schedule.hpp>
#include <ppb/search_path.hpp>
#include <ppb/simulator.hpp>
#include <ppb/timeline_svg.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace ppb::python {
namespace {

using IntArray = py::array_t<long long, py::array::c_style | py::array::forcecast>;

// ---- Values across the boundary ----

// A JSON document as Python dicts, lists and numbers: through the json module, whose float
// parsing gives back each double exactly as Boost.JSON wrote it.
py::object to_python(const boost::json::value& value) {
    return py::module_::import("json").attr("loads")(boost::json::serialize(value));
}

// A count from Python: a non-negative integer within `range`, or ppb.InvalidInput naming `what`
// (a keyword, or an item of one: "layers.full"), whose field is the keyword.
std::uint32_t count_in(py::handle value, const limits::CountRange& range, std::string_view what) {
    const std::string field(what.substr(0, what.find('.')));
    if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value)) {
        throw partition::RequestError(field,
                                      fmt::format("{}: expected a whole number, got {}", what,
                                                  py::str(py::repr(value)).cast<std::string>()));
    }
    const auto n = value.cast<long long>();
    if (n < static_cast<long long>(range.min) || n > static_cast<long long>(range.max))
        throw partition::RequestError(
            field, fmt::format("{}: {}", what, limits::out_of_range(std::to_string(n), range)));
    return static_cast<std::uint32_t>(n);
}

// comm_time: None (empty), one time for every stage boundary, or a sequence of one per boundary
// (the command's --comm-time).
std::vector<double> comm_times_of(py::handle value) {
    if (value.is_none())
        return {};
    if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value))
        return {value.cast<double>()};
    return value.cast<std::vector<double>>();
}

// {"none": 3, "full": 1}: counts per kind, each kind once.
std::array<std::uint32_t, PPB_KIND_COUNT> kind_counts(const py::dict& layers,
                                                      std::string_view what) {
    std::array<std::uint32_t, PPB_KIND_COUNT> counts{};
    for (const auto& [key, value] : layers) {
        const auto name = py::str(key).cast<std::string>();
        const auto kind = kind_from_name(name);
        if (!kind) {
            throw InputError(fmt::format("{}: {}", what, unknown_kind(name)));
        }
        counts[*kind] = count_in(value, limits::layers_or_none, fmt::format("{}.{}", what, name));
    }
    return counts;
}

bool counts_per_group(const py::dict& layers) {
    for (const auto& item : layers) {
        if (py::isinstance<py::dict>(item.second))
            return true;
    }
    return false;
}

// ---- The dry-run set ----

struct DryRun {
    DryRunSet set;
    std::string source;  // the file name, or "<observations>" for a document given as a dict
};

py::dict chunk_dict(const ppb_chunk& chunk) {
    py::dict layers;
    for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
        if (chunk.layers[k] != 0)
            layers[py::str(std::string(kind_names[k]))] = chunk.layers[k];
    }
    py::dict out;
    out["layers"] = layers;
    out["in_flight"] = chunk.in_flight;
    return out;
}

// One observation as a dict: the placement, as the reader completed it (in-flight counts filled
// in), and its peak.
py::dict observation_dict(const DryRunSet& set, const Observation& o) {
    py::dict out;
    out["config"] = o.config;
    out["num_stages"] = o.placement.num_stages;
    out["stage"] = o.placement.stage;
    out["schedule"] = std::string(schedule_name(o.placement.schedule));
    out["micro_batches"] =
        o.micro_batches == 0 ? py::object(py::none()) : py::object(py::int_(o.micro_batches));
    py::list chunks;
    for (std::size_t c = 0; c < o.placement.chunks.size(); ++c) {
        py::dict chunk = chunk_dict(o.placement.chunks[c]);
        if (o.placement.grouped()) {
            py::dict groups;
            for (std::size_t g = 0; g < set.groups.size(); ++g) {
                py::dict of_group;
                for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                    const auto n = o.placement.group_layer(c, g, k);
                    if (n != 0)
                        of_group[py::str(std::string(kind_names[k]))] = n;
                }
                groups[py::str(set.groups[g])] = of_group;
            }
            chunk["groups"] = groups;
        }
        chunks.append(chunk);
    }
    out["chunks"] = chunks;
    out["peak_memory_mb"] = o.peak_memory_mb;
    if (o.reserved_mb)
        out["reserved_mb"] = *o.reserved_mb;
    return out;
}

// ---- The model ----

class Model {
  public:
    Model(MemoryModel model, std::string spec) : model_(std::move(model)), spec_(std::move(spec)) {}

    MemoryModel& get() {
        if (!model_)
            throw py::value_error("this ppb model is closed");
        return *model_;
    }
    const MemoryModel& get() const { return const_cast<Model*>(this)->get(); }

    void close() noexcept { model_.reset(); }
    [[nodiscard]] bool closed() const noexcept { return !model_.has_value(); }

    void fit(const DryRun& dryrun) {
        // A refit starts on allocated memory, as every fit does (ppb/allocator_reserve.hpp).
        get().set_allocator_reserve(std::nullopt);
        profile_fit_ = fit_model(get(), dryrun.set, dryrun.source);
        fitted_ = dryrun;
        reserve_ = fit_allocator_reserve(get(), dryrun.set, profile_fit_);
    }

    // The allocator's reserve fitted with the model, where observations gave reserved_mb.
    [[nodiscard]] const std::optional<AllocatorReserve>& reserve() const noexcept {
        return reserve_;
    }
    // "allocated" or "reserved": which memory predict(), std_error() and partition() give.
    [[nodiscard]] std::string memory() const {
        return get().basis() == MemoryBasis::reserved ? "reserved" : "allocated";
    }
    void set_memory(const std::string& basis) {
        if (basis == "allocated") {
            get().set_allocator_reserve(std::nullopt);
        } else if (basis == "reserved") {
            if (!reserve_) {
                throw InputError(
                    "memory = 'reserved': the allocator's reserve is fitted to observations that "
                    "give reserved_mb, and this model's fit had none");
            }
            get().set_allocator_reserve(reserve_);
        } else {
            throw InputError(
                fmt::format("memory: expected 'allocated' or 'reserved', got '{}'", basis));
        }
    }
    [[nodiscard]] const std::optional<DryRun>& fitted() const noexcept { return fitted_; }
    [[nodiscard]] const std::string& spec() const noexcept { return spec_; }

    // "fitted to 13 observations of FILE" or "configured by its options", as `ppb` says it.
    [[nodiscard]] std::string source() const {
        if (fitted_) {
            return fmt::format("fitted to {} observations of {}", fitted_->set.observations.size(),
                               fitted_->source);
        }
        return get().needs_fit() ? "not fitted" : "configured by its options";
    }

    // The ppb.fit/1 document (what `ppb fit --json` prints).
    [[nodiscard]] boost::json::object fit_document() const {
        const MemoryModel& m = get();
        auto document = make_fit_document(m.name(), m.version(), m.report());
        if (fitted_)
            add_profile_fit(document, profile_fit_, fitted_->set);
        if (reserve_)
            document["allocator_reserve"] = reserve_document(*reserve_);
        return document;
    }

  private:
    std::optional<MemoryModel> model_;
    std::string spec_;
    std::optional<DryRun> fitted_;
    ProfileFit profile_fit_;
    std::optional<AllocatorReserve> reserve_;
};

// A stage as predict() and std_error() take it: the placement a model is asked about and, for a
// chunked stage, the largest prediction over its profile (ppb::predict_over_profile).
struct StageQuery {
    StagePlacement placement;
    std::optional<double> peak_mb;
};

// A stage placement from predict()'s arguments, as `ppb predict` builds it from its options:
// the pipeline and micro-batches default to the fitted file's; the schedule is the one given,
// else the file's when it has as many chunks, else 1F1B (one chunk) or interleaved (more than
// two); the chunks' in-flight counts are the vector of the schedule's profile where the model's
// prediction is largest (counts of 0 as 1, as a model may be asked), unless `in_flight` is given
// (one chunk); std_error() is the model's there.
struct StageRequest {
    StagePlacement placement;  // the layers; the in-flight counts are the pipeline's
    partition::PredictedPipeline pipeline;
};

StageRequest stage_request(const Model& model, py::handle stage_arg, py::handle layers_arg,
                           py::handle chunks_arg, py::handle num_stages_arg,
                           py::handle micro_batches_arg, py::handle in_flight_arg,
                           py::handle schedule_arg) {
    const MemoryModel& m = model.get();
    const DryRunSet* dryrun = model.fitted() ? &model.fitted()->set : nullptr;
    std::vector<py::dict> chunk_layers;
    if (layers_arg.is_none() == chunks_arg.is_none()) {
        throw InputError(
            "give the stage's layers: layers for one chunk, or chunks (a list of layers, one per "
            "chunk), not both");
    }
    if (!layers_arg.is_none()) {
        chunk_layers.push_back(py::cast<py::dict>(layers_arg));
    } else {
        for (const auto item : py::cast<py::list>(chunks_arg))
            chunk_layers.push_back(py::cast<py::dict>(item));
        if (chunk_layers.empty())
            throw InputError("chunks: give one layers dict per chunk (none given)");
    }
    partition::PredictionRequest request;
    request.stage = count_in(stage_arg, {0, limits::stages.max - 1, ""}, "stage");
    request.chunks = static_cast<std::uint32_t>(chunk_layers.size());
    if (!num_stages_arg.is_none())
        request.num_stages = count_in(num_stages_arg, limits::stages, "num_stages");
    if (!micro_batches_arg.is_none())
        request.micro_batches = count_in(micro_batches_arg, limits::micro_batches, "micro_batches");
    if (!schedule_arg.is_none())
        request.schedule = py::str(schedule_arg).cast<std::string>();
    if (!in_flight_arg.is_none())
        request.in_flight = count_in(in_flight_arg, limits::in_flight, "in_flight");
    const partition::PredictedPipeline pipeline = partition::pipeline_of(
        request, dryrun, dryrun ? model.fitted()->source : std::string(), partition::keyword_name);
    const auto v = request.chunks;

    const std::vector<std::string> groups = m.groups();
    bool grouped = false;
    for (const auto& layers : chunk_layers)
        grouped = grouped || counts_per_group(layers);
    StagePlacement placement{pipeline.num_stages, pipeline.stage, std::vector<ppb_chunk>(v),
                             pipeline.schedule};
    if (grouped || groups.size() > 1) {
        std::vector<std::uint32_t> counts(std::size_t{v} * groups.size() * PPB_KIND_COUNT, 0);
        for (std::uint32_t c = 0; c < v; ++c) {
            const std::string what = v == 1 ? "layers" : fmt::format("chunks[{}]", c);
            for (const auto& [key, value] : chunk_layers[c]) {
                const auto name = py::str(key).cast<std::string>();
                if (!py::isinstance<py::dict>(value)) {
                    throw InputError(fmt::format(
                        "{}: '{}' does not say its group, but the memory model distinguishes {} "
                        "groups of body layers ({}): give {{GROUP: {{KIND: N}}}}, e.g. "
                        "{{\"{}\": {{\"{}\": ...}}}}",
                        what, name, groups.size(), fmt::join(groups, ", "), groups.back(), name));
                }
                const auto it = std::find(groups.begin(), groups.end(), name);
                if (it == groups.end()) {
                    throw InputError(
                        fmt::format("{}: unknown group '{}' (the model's groups are: {})", what,
                                    name, fmt::join(groups, ", ")));
                }
                const auto g = static_cast<std::size_t>(it - groups.begin());
                const auto of_group =
                    kind_counts(py::cast<py::dict>(value), fmt::format("{}.{}", what, name));
                std::copy(of_group.begin(), of_group.end(),
                          counts.begin() + static_cast<std::ptrdiff_t>((c * groups.size() + g) *
                                                                       PPB_KIND_COUNT));
            }
        }
        placement.set_group_layers(std::move(counts));
    } else {
        for (std::uint32_t c = 0; c < v; ++c) {
            const auto counts =
                kind_counts(chunk_layers[c], v == 1 ? "layers" : fmt::format("chunks[{}]", c));
            std::copy(counts.begin(), counts.end(), placement.chunks[c].layers);
        }
    }
    return {std::move(placement), pipeline};
}

StageQuery stage_placement(const Model& model, py::handle stage_arg, py::handle layers_arg,
                           py::handle chunks_arg, py::handle num_stages_arg,
                           py::handle micro_batches_arg, py::handle in_flight_arg,
                           py::handle schedule_arg) {
    const MemoryModel& m = model.get();
    auto [placement, pipeline] =
        stage_request(model, stage_arg, layers_arg, chunks_arg, num_stages_arg, micro_batches_arg,
                      in_flight_arg, schedule_arg);
    // The stage at the vector where the model puts its peak, so that predict() is the largest
    // prediction over the profile and std_error() that prediction's.
    const std::vector<InFlightVector>& profile = pipeline.profile;
    placement = with_in_flight(std::move(placement), asked_in_flight(profile.front()));
    if (profile.size() > 1) {
        const ProfilePeak peak = predict_over_profile(m, placement, profile);
        // A linear model's peak may be at a moment a chunk holds none: the placement is the
        // vector as the model may be asked about it (std_error), the peak beside it.
        const InFlightVector& at = peak.profile[peak.active];
        placement = with_in_flight(std::move(placement), asked_in_flight(at));
        return {std::move(placement), peak.memory_mb};
    }
    return {std::move(placement), std::nullopt};
}

double predict(const Model& model, const StageQuery& query) {
    if (query.peak_mb)
        return *query.peak_mb;
    const MemoryModel& m = model.get();
    const StagePlacement& placement = query.placement;
    return placement.grouped() ? m.predict_grouped(placement.grouped_view())
                               : m.predict(placement.view());
}

std::optional<double> std_error(const Model& model, const StageQuery& query) {
    const MemoryModel& m = model.get();
    const StagePlacement& placement = query.placement;
    return placement.grouped() ? m.predict_grouped_std_error(placement.grouped_view())
                               : m.predict_std_error(placement.view());
}

// predict_batch: n placements of one chunk each under 1F1B, from arrays (see the Python
// docstring for the layout). One call into the plugin for all of them.
py::array_t<double> predict_batch(const Model& model, const IntArray& stage, const IntArray& layers,
                                  const IntArray& num_stages, const IntArray& in_flight,
                                  std::optional<long long> micro_batches) {
    const MemoryModel& m = model.get();
    if (stage.ndim() != 1)
        throw InputError(
            fmt::format("stage: expected a 1-D array, got {} dimensions", stage.ndim()));
    const auto n = static_cast<std::size_t>(stage.shape(0));
    const std::vector<std::string> groups = m.groups();
    const bool grouped = layers.ndim() == 3;
    if (layers.ndim() != 2 && layers.ndim() != 3) {
        throw InputError(fmt::format(
            "layers: expected an array of shape (n, 5) or (n, groups, 5), got {} dimensions",
            layers.ndim()));
    }
    const auto group_count = grouped ? static_cast<std::size_t>(layers.shape(1)) : 1;
    if (static_cast<std::size_t>(layers.shape(0)) != n ||
        static_cast<std::size_t>(layers.shape(layers.ndim() - 1)) != PPB_KIND_COUNT) {
        throw InputError(fmt::format(
            "layers: expected shape ({}, {}5), got ({})", n,
            grouped ? fmt::format("{}, ", group_count) : "",
            fmt::join(std::vector<long long>(layers.shape(), layers.shape() + layers.ndim()),
                      ", ")));
    }
    if (grouped && group_count != groups.size()) {
        throw InputError(
            fmt::format("layers: {} groups per placement, but the memory model has {} ({})",
                        group_count, groups.size(), fmt::join(groups, ", ")));
    }
    if (!grouped && groups.size() > 1) {
        throw InputError(fmt::format(
            "layers: the memory model distinguishes {} groups of body layers ({}): give an array "
            "of shape (n, {}, 5)",
            groups.size(), fmt::join(groups, ", "), groups.size()));
    }
    const auto per_row = [&](const IntArray& a, std::string_view what) {
        if (a.ndim() == 0)
            return false;
        if (a.ndim() != 1 || static_cast<std::size_t>(a.shape(0)) != n)
            throw InputError(
                fmt::format("{}: expected a number or an array of shape ({})", what, n));
        return true;
    };
    const bool stages_per_row = per_row(num_stages, "num_stages");
    const bool in_flight_given = in_flight.size() != 0;
    const bool in_flight_per_row = in_flight_given && per_row(in_flight, "in_flight");
    const std::uint32_t m_count =
        micro_batches ? count_in(py::int_(*micro_batches), limits::micro_batches, "micro_batches")
                      : (model.fitted() ? model.fitted()->set.micro_batches : 0);
    const auto s_view = stage.unchecked<1>();
    const auto* p_data = num_stages.data();
    const auto* f_data = in_flight.data();
    const auto* l_data = layers.data();
    const auto check = [](long long value, const limits::CountRange& range, std::string_view what,
                          std::size_t row) {
        if (value < static_cast<long long>(range.min) ||
            value > static_cast<long long>(range.max)) {
            throw InputError(fmt::format("{}[{}]: {}", what, row,
                                         limits::out_of_range(std::to_string(value), range)));
        }
        return static_cast<std::uint32_t>(value);
    };
    std::vector<StagePlacement> placements(n);
    for (std::size_t i = 0; i < n; ++i) {
        StagePlacement& p = placements[i];
        p.num_stages = check(p_data[stages_per_row ? i : 0], limits::stages, "num_stages", i);
        p.stage =
            check(s_view(static_cast<py::ssize_t>(i)), {0, limits::stages.max - 1, ""}, "stage", i);
        if (p.stage >= p.num_stages) {
            throw InputError(
                fmt::format("placement {}: stage {}", i, not_a_stage(p.stage, p.num_stages)));
        }
        p.chunks.assign(1, ppb_chunk{});
        if (in_flight_given) {
            p.chunks[0].in_flight =
                check(f_data[in_flight_per_row ? i : 0], limits::in_flight, "in_flight", i);
        } else {
            p.chunks[0].in_flight =
                in_flight_counts(Schedule::one_f_one_b, p.num_stages, p.stage, m_count)[0];
        }
        const long long* row = l_data + i * group_count * PPB_KIND_COUNT;
        std::vector<std::uint32_t> counts(group_count * PPB_KIND_COUNT);
        for (std::size_t j = 0; j < counts.size(); ++j)
            counts[j] = check(row[j], limits::layers_or_none, "layers", i);
        if (grouped) {
            p.set_group_layers(std::move(counts));
        } else {
            std::copy(counts.begin(), counts.end(), p.chunks[0].layers);
        }
    }
    std::vector<double> out;
    if (grouped) {
        std::vector<ppb_grouped_placement> views;
        views.reserve(n);
        for (const auto& p : placements)
            views.push_back(p.grouped_view());
        out = m.predict_grouped_batch(views);
    } else {
        std::vector<ppb_placement> views;
        views.reserve(n);
        for (const auto& p : placements)
            views.push_back(p.view());
        out = m.predict_batch(views);
    }
    py::array_t<double> result(static_cast<py::ssize_t>(n));
    std::copy(out.begin(), out.end(), result.mutable_data());
    return result;
}

// The devices: a device of the table by name, or a cluster description (the commands' --device
// and --cluster; device_tflops, --device-tflops, is the rate without either).
std::optional<partition::Cluster> cluster_of(const std::string& device,
                                             const std::string& cluster_json,
                                             const std::string& cluster_source,
                                             py::handle device_tflops_arg) {
    if (!device.empty() && !cluster_json.empty())
        throw partition::RequestError("device", "device and cluster: give one of them");
    if (!device_tflops_arg.is_none() && (!device.empty() || !cluster_json.empty())) {
        throw partition::RequestError(
            "device_tflops",
            "device_tflops: the device's rate comes from device or cluster: give one of them");
    }
    if (!device.empty()) {
        try {
            return partition::cluster_of_device(device);
        } catch (const InputError& e) {
            throw partition::RequestError("device", std::string("device: ") + e.what());
        }
    }
    if (!cluster_json.empty())
        return partition::read_cluster(cluster_json, cluster_source);
    return std::nullopt;
}

// ppb.partition/1 of the optimal plan, as `ppb partition --json` prints it.
py::object plan_partition(const Model& model, const std::string& model_desc, py::handle stages_arg,
                          py::handle memory_limit_arg, py::handle micro_batches_arg,
                          double memory_margin_mb, double memory_margin_sigma,
                          const std::vector<std::string>& kinds, const std::string& recompute_rule,
                          const std::string& schedule, py::handle chunks_arg,
                          const std::string& objective, bool refine, bool fast,
                          const std::string& sapp_time_convention, py::handle comm_time_arg,
                          double weight_grad_share, const std::string& shape_json,
                          const std::string& shape_source, const std::string& device,
                          const std::string& cluster_json, const std::string& cluster_source,
                          py::handle device_tflops_arg, bool tp_comm_overlap,
                          bool overlap_grad_reduce, bool overlap_param_gather) {
    const std::optional<partition::Cluster> cluster =
        cluster_of(device, cluster_json, cluster_source, device_tflops_arg);
    partition::PartitionRequest request;
    request.stages = count_in(stages_arg, limits::stages, "stages");
    request.memory_limit_mb = partition::memory_limit_of(
        memory_limit_arg.is_none() ? std::nullopt
                                   : std::optional<double>(memory_limit_arg.cast<double>()),
        cluster, partition::keyword_name);
    request.memory_margin_mb = memory_margin_mb;
    request.memory_margin_sigma = memory_margin_sigma;
    request.kinds = kinds;
    request.recompute_rule = recompute_rule;
    request.schedule = schedule;
    if (!chunks_arg.is_none())
        request.chunks = count_in(chunks_arg, limits::chunks, "chunks");
    request.objective = objective;
    request.comm_time = comm_times_of(comm_time_arg);
    request.weight_grad_share = weight_grad_share;
    request.refine = refine;
    request.fast = fast;
    partition::Problem problem = partition::problem_of(request, partition::keyword_name);
    const partition::TimesRequest times_request{
        .layer_file = model_desc,
        .time_convention = sapp_time_convention,
        .shape_json = shape_json,
        .shape_source = shape_source,
        .device_tflops = device_tflops_arg.is_none() ? 400.0 : device_tflops_arg.cast<double>(),
        .cluster = cluster,
        .tp_comm_overlap = tp_comm_overlap,
        .overlap_grad_reduce = overlap_grad_reduce,
        .overlap_param_gather = overlap_param_gather,
        .expert_overlap = problem.schedule == Schedule::combined_1f1b};
    const partition::RequestTimes times =
        partition::times_of(times_request, partition::keyword_name);
    partition::set_times(problem, times, cluster ? &*cluster : nullptr, !comm_time_arg.is_none(),
                         partition::keyword_name);
    if (!problem.time.warnings.empty()) {
        const auto warn = py::module_::import("warnings").attr("warn");
        for (const std::string& warning : problem.time.warnings)
            warn(warning, py::module_::import("builtins").attr("UserWarning"), 2);
    }
    const DryRunSet* dryrun = model.fitted() ? &model.fitted()->set : nullptr;
    problem.micro_batches = partition::micro_batches_of(
        micro_batches_arg.is_none()
            ? std::nullopt
            : std::optional<std::uint64_t>(
                  count_in(micro_batches_arg, limits::micro_batches, "micro_batches")),
        dryrun ? std::optional<std::uint32_t>(dryrun->micro_batches) : std::nullopt,
        partition::keyword_name);
    const MemoryModel& m = model.get();
    if (m.needs_fit() && !model.fitted()) {
        throw InputError(fmt::format(
            "memory model '{}' is fitted to dry-run observations: fit it first, or give dryrun",
            m.name()));
    }
    const partition::PlannedPartition planned = partition::plan_with_model(
        problem, m, partition::plan_options_of(request, problem, partition::keyword_name));
    partition::PartitionContext context{m.name(), m.version(),
                                        m.allocator_reserve()
                                            ? fmt::format("{}; reserved memory: {}", model.source(),
                                                          describe_reserve(*m.allocator_reserve()))
                                            : model.source(),
                                        times.unit, m.allocator_reserve()};
    if (const auto sync =
            partition::data_parallel_sync_of(times, times_request, planned.problem, planned.plan)) {
        context.data_parallel =
            partition::PartitionContext::DataParallelSync{times.replicas, *sync};
    }
    return to_python(partition::partition_document(planned.problem, planned.plan, context,
                                                   planned.simulation, planned.breakdown,
                                                   planned.lower_bound));
}

// ppb.search/1 of every configuration planned and ranked, as `ppb search --json` prints it: the
// library's search (ppb/partition/search_request.hpp), its memory models opened from `spec` on
// the plugin path and fitted to `dryrun` where they need a fit.
py::object search_configurations(
    const std::string& model_desc, const std::string& spec, const std::string& options_json,
    const std::string& options_source, py::handle dryrun_arg,
    const std::vector<std::string>& plugin_path, const std::string& install_dir,
    py::handle devices_arg, const std::vector<std::uint32_t>& pipeline_degrees,
    const std::vector<std::uint32_t>& tensor_parallel, py::handle data_parallel_arg,
    std::uint64_t global_batch, const std::vector<std::uint32_t>& micro_batch_size,
    const std::vector<std::uint32_t>& context_parallel,
    const std::vector<std::string>& data_parallel_sharding,
    const std::vector<std::uint32_t>& expert_parallel,
    const std::vector<std::uint32_t>& expert_tensor_parallel,
    const std::vector<std::string>& schedules, const std::vector<std::uint32_t>& chunks,
    const std::vector<std::string>& recompute, const std::string& recompute_rule,
    py::handle memory_limit_arg, double memory_margin_mb, double memory_margin_sigma,
    py::handle comm_time_arg, std::size_t top, bool show_infeasible, unsigned jobs, bool fast,
    const std::string& device, const std::string& cluster_json, const std::string& cluster_source,
    py::handle device_tflops_arg, bool tp_comm_overlap, bool overlap_grad_reduce,
    bool overlap_param_gather, const std::string& sapp_time_convention) {
    const std::optional<partition::Cluster> cluster =
        cluster_of(device, cluster_json, cluster_source, device_tflops_arg);
    const auto optional_count = [](py::handle arg) {
        return arg.is_none() ? std::nullopt
                             : std::optional<std::uint32_t>(arg.cast<std::uint32_t>());
    };
    const auto optional_number = [](py::handle arg) {
        return arg.is_none() ? std::nullopt : std::optional<double>(arg.cast<double>());
    };
    partition::SearchRequest request;
    request.times = {.layer_file = model_desc,
                     .time_convention = sapp_time_convention,
                     .shape_json = options_json,
                     .shape_source = options_source,
                     .device_tflops = optional_number(device_tflops_arg).value_or(400.0),
                     .cluster = cluster,
                     .tp_comm_overlap = tp_comm_overlap,
                     .overlap_grad_reduce = overlap_grad_reduce,
                     .overlap_param_gather = overlap_param_gather};
    request.model_options = options_json;
    request.devices = optional_count(devices_arg);
    request.pipeline_degrees = pipeline_degrees;
    request.tensor_parallel = tensor_parallel;
    request.data_parallel = optional_count(data_parallel_arg);
    request.global_batch = global_batch;
    request.micro_batch_size = micro_batch_size;
    request.context_parallel = context_parallel;
    request.data_parallel_sharding = data_parallel_sharding;
    request.expert_parallel = expert_parallel;
    request.expert_tensor_parallel = expert_tensor_parallel;
    request.schedules = schedules;
    request.chunks = chunks;
    request.recompute = recompute;
    request.recompute_rule = recompute_rule;
    request.memory_limit_mb = optional_number(memory_limit_arg);
    request.memory_margin_mb = memory_margin_mb;
    request.memory_margin_sigma = memory_margin_sigma;
    request.comm_time = optional_number(comm_time_arg);
    request.top = top;
    request.show_infeasible = show_infeasible;
    request.fast = fast;

    const DryRun* dryrun = dryrun_arg.is_none() ? nullptr : &dryrun_arg.cast<const DryRun&>();
    std::optional<std::vector<PluginCandidate>> candidates;
    const partition::ModelMaker make = [&](const std::string& options) {
        if (!candidates) {
            const char* env = std::getenv(std::string(plugin_path_variable).c_str());
            candidates = discover_plugins(
                make_search_path_with_install_dir(plugin_path, env, install_dir, "plugin_path"));
        }
        MemoryModel model = open_model_spec(*candidates, spec, options);
        if (!model.needs_fit())
            return partition::SearchModel{std::move(model), "configured by its options"};
        if (dryrun == nullptr) {
            throw partition::RequestError(
                "dryrun", fmt::format("memory model '{}' is fitted to dry-run observations: give "
                                      "dryrun",
                                      model.name()));
        }
        (void)fit_model(model, dryrun->set, dryrun->source);
        std::string source = fmt::format("fitted to {} observations of {}",
                                         dryrun->set.observations.size(), dryrun->source);
        return partition::SearchModel{std::move(model), std::move(source)};
    };
    const auto warn = py::module_::import("warnings").attr("warn");
    const auto user_warning = py::module_::import("builtins").attr("UserWarning");
    const partition::SearchAnswer answer = partition::search_request(
        request, make, partition::keyword_name, {.jobs = jobs},
        {.warning = [&](const std::string& w) { warn(w, user_warning, 2); }});
    return to_python(partition::search_document(answer.space, answer.base, answer.plan,
                                                answer.result, answer.context));
}

// ppb.compare: the models `specs` ((NAME[@VERSION], options JSON, the options' source) each)
// predicting the observations of `dryrun_arg` (a DryRun or None) and/or the stages of the plan
// `plan_text` (empty: none; `measured_arg`, a DryRun of a run of it, or None), as `ppb compare`
// does; the ppb.compare/1 document and the notes on plan stages the run does not hold.
py::tuple compare_models(
    const std::vector<std::tuple<std::string, std::string, std::string>>& specs,
    py::handle dryrun_arg, const std::string& plan_text, const std::string& plan_source,
    py::handle measured_arg, bool cross_validate, const std::vector<std::string>& plugin_path,
    const std::string& install_dir) {
    if (specs.empty())
        throw partition::RequestError("models", "models: give at least one model to compare");
    const DryRun* dryrun = dryrun_arg.is_none() ? nullptr : &dryrun_arg.cast<const DryRun&>();
    const DryRun* measured = measured_arg.is_none() ? nullptr : &measured_arg.cast<const DryRun&>();
    if (dryrun == nullptr && plan_text.empty()) {
        throw partition::RequestError("dryrun",
                                      "give dryrun and/or partition: the placements to compare");
    }
    if (measured != nullptr && plan_text.empty()) {
        throw partition::RequestError(
            "measured", "measured: a run of a plan, its measurements: give partition");
    }
    std::optional<partition::PlanStages> plan;
    if (!plan_text.empty())
        plan = partition::read_plan_stages(plan_text, plan_source);
    std::vector<std::string> notes;
    partition::Comparison comparison = partition::placements_to_compare(
        dryrun ? &dryrun->set : nullptr, dryrun ? dryrun->source : std::string(),
        plan ? &*plan : nullptr, plan_source, measured ? &measured->set : nullptr,
        measured ? measured->source : std::string(), notes);
    comparison.cross_validated = cross_validate;
    const char* env = std::getenv(std::string(plugin_path_variable).c_str());
    const std::vector<PluginCandidate> candidates = discover_plugins(
        make_search_path_with_install_dir(plugin_path, env, install_dir, "plugin_path"));
    for (const auto& [spec, options, options_source] : specs) {
        partition::compare_model(
            comparison,
            [&, &spec = spec, &options = options, &options_source = options_source] {
                return open_model_spec(candidates, spec, options, options_source);
            },
            dryrun ? &dryrun->set : nullptr, dryrun ? dryrun->source : std::string(), "dryrun",
            partition::keyword_name);
    }
    return py::make_tuple(to_python(partition::comparison_document(comparison)), py::cast(notes));
}

// ppb.design/1 of the dry runs to run, as `ppb design --json` prints it; `prior` (a Model or
// None) predicts each stage for `memory_limit_mb`.
// ppb.simulate: the plan `text` (named `source`) simulated as `ppb simulate` does, and its
// ppb.simulation/1 document; with `timeline` also the iteration's SVG picture (else None).
py::tuple simulate_plan(const std::string& text, const std::string& source, py::handle schedule,
                        py::handle micro_batches, py::handle comm_time, bool timeline) {
    partition::SimulationRequest request;
    if (!schedule.is_none())
        request.schedule = py::str(schedule).cast<std::string>();
    if (!micro_batches.is_none())
        request.micro_batches = count_in(micro_batches, limits::micro_batches, "micro_batches");
    request.comm_time = comm_times_of(comm_time);
    const partition::SavedPlanSimulation simulated =
        partition::simulate_saved_plan(text, source, request, partition::keyword_name);
    return py::make_tuple(to_python(partition::simulation_document(simulated)),
                          timeline ? py::object(py::str(timeline_svg(simulated.simulation)))
                                   : py::object(py::none()));
}

py::object design_runs(const std::vector<std::uint32_t>& stages, std::uint32_t num_layers,
                       const std::vector<std::string>& kinds, const std::string& recompute_rule,
                       py::handle micro_batches_arg, py::handle runs_arg, double noise_mb,
                       py::handle memory_limit_arg, py::handle prior) {
    partition::DesignRequest request;
    request.stages = stages;
    request.num_layers = num_layers;
    std::uint32_t mask = 0;
    for (const auto& name : kinds) {
        const auto kind = kind_from_name(name);
        if (!kind) {
            throw partition::RequestError("kinds", "kinds: " + unknown_kind(name));
        }
        mask |= PPB_KIND_BIT(*kind);
    }
    request.kinds = mask;
    if (const auto rule = partition::design_rule_from_name(recompute_rule))
        request.rule = *rule;
    else
        throw InputError(fmt::format(
            "recompute_rule: expected 'mindformers', 'megatron', 'torchtitan' or 'any', got '{}'",
            recompute_rule));
    if (!micro_batches_arg.is_none())
        request.micro_batches = count_in(micro_batches_arg, limits::micro_batches, "micro_batches");
    if (!runs_arg.is_none())
        request.runs = count_in(runs_arg, {1, 64, "dry runs"}, "runs");
    request.noise_mb = noise_mb;
    std::string prior_name;
    if (!memory_limit_arg.is_none()) {
        request.memory_limit_mb = memory_limit_arg.cast<double>();  // checked by the library
        if (prior.is_none())
            throw InputError(
                "memory_limit_mb needs a prior model to predict each stage: give prior (a "
                "loaded model: analytic with its shape, or a fit)");
    }
    if (!prior.is_none()) {
        const Model& model = prior.cast<const Model&>();
        const MemoryModel& m = model.get();
        if (m.needs_fit() && !model.fitted())
            throw InputError(fmt::format(
                "prior: memory model '{}' is fitted to dry-run observations: fit it first",
                m.name()));
        prior_name = fmt::format("{} {} ({})", m.name(), m.version(), model.source());
        request.prior = [&m](std::span<const ppb_placement> placements) {
            return m.predict_batch(placements);
        };
    }
    const partition::Design design = partition::design_dry_runs(request, partition::keyword_name);
    return to_python(partition::design_document(request, design, prior_name));
}

// ---- The analytic model's options from a framework's run (ppb import *-options) ----

// The options, parsed, and what the importer says of the run: the dict the package hands on.
py::dict imported(const std::string& options_json, std::uint32_t stages,
                  const std::vector<std::string>& warnings) {
    py::dict out;
    out["options"] = to_python(boost::json::parse(options_json));
    out["stages"] = stages;
    out["warnings"] = warnings;
    return out;
}

// A Megatron-LM run's arguments (a run configuration's MODEL_ARGS first, as its launcher puts
// them), read by the importer `ppb import megatron-options` runs.
py::dict megatron_options(const std::vector<std::string>& arguments,
                          const std::string& model_config, py::handle world_size,
                          py::handle tokenizer_size, py::handle compute_capability,
                          py::handle megatron_version, const std::vector<std::string>& flags) {
    if (arguments.empty() && model_config.empty()) {
        throw partition::RequestError(
            "arguments",
            "missing the run's Megatron-LM arguments: give arguments, or model_config (a "
            "run configuration's file)");
    }
    std::vector<std::string> all;
    std::vector<std::string> notes;
    if (!model_config.empty()) {
        importers::MegatronModelConfig config =
            importers::megatron_model_config(model_config, importers::process_environment);
        all = std::move(config.arguments);
        notes = std::move(config.notes);
    }
    all.insert(all.end(), arguments.begin(), arguments.end());
    importers::MegatronRunContext context;
    if (!world_size.is_none())
        context.world_size = count_in(world_size, {1, 4294967295U, "ranks"}, "world_size");
    if (!tokenizer_size.is_none())
        context.tokenizer_size =
            count_in(tokenizer_size, {1, 2147483647U, "tokens"}, "tokenizer_size");
    context.compute_capability =
        count_in(compute_capability, {1, 100, "(major version)"}, "compute_capability");
    if (!megatron_version.is_none())
        context.megatron_version = py::str(megatron_version).cast<std::string>();
    context.declared_flags = flags;
    context.words = importers::SettingWords::keywords;
    importers::MegatronAnalyticOptions result =
        importers::analytic_options_from_megatron(all, context);
    notes.insert(notes.end(), result.notes.begin(), result.notes.end());
    py::dict out = imported(result.options_json, result.pipeline_size, result.warnings);
    out["data_parallel"] = result.data_parallel;
    out["micro_batches"] =
        result.micro_batches ? py::object(py::int_(*result.micro_batches)) : py::object(py::none());
    out["release"] = result.release;
    out["notes"] = notes;
    return out;
}

// A MindFormers training YAML, read as `ppb import mindformers-options` reads it.
py::dict mindformers_options(const std::string& config) {
    const importers::MindFormersAnalyticOptions result =
        importers::analytic_options_from_mindformers(config);
    py::dict out = imported(result.options_json, result.pipeline_size, result.warnings);
    out["data_parallel"] = result.data_parallel;
    out["micro_batches"] = result.micro_batches;
    out["chunks"] = result.chunks;
    out["mtp_layers"] = result.mtp_layers;
    return out;
}

// A torchtitan training TOML, read as `ppb import torchtitan-options` reads it.
py::dict torchtitan_options(const std::string& config, py::handle world_size,
                            py::handle compute_capability) {
    importers::TorchtitanRunContext context;
    context.words = importers::SettingWords::keywords;
    if (!world_size.is_none())
        context.world_size = count_in(world_size, {1, 4294967295U, "ranks"}, "world_size");
    context.compute_capability =
        count_in(compute_capability, {1, 100, "(major version)"}, "compute_capability");
    const importers::TorchtitanAnalyticOptions result =
        importers::analytic_options_from_torchtitan(config, context);
    py::dict out = imported(result.options_json, result.pipeline_size, result.warnings);
    out["chunks"] = result.stages_per_rank;
    out["micro_batches"] = result.micro_batches;
    out["schedule"] =
        result.schedule.empty() ? py::object(py::none()) : py::object(py::str(result.schedule));
    out["schedule_given"] = result.schedule_given;
    out["layer_kind"] = result.layer_kind;
    out["layer_kind_note"] = result.layer_kind_note;
    return out;
}

// Python exceptions of the package (ppb/_errors.py), raised from the library's with their
// messages: the ppb command's words.
py::object error_class(const char* name) {
    return py::module_::import("ppb._errors").attr(name);
}
void raise_instance(const py::object& instance) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
}

void translate(std::exception_ptr error) {
    try {
        std::rethrow_exception(error);
    } catch (const partition::Infeasible& e) {
        // The smallest feasible limit, or None when no limit would do.
        const double limit = e.smallest_feasible_limit_mb();
        raise_instance(error_class("Infeasible")(
            std::string(e.what()),
            std::isfinite(limit) ? py::object(py::float_(limit)) : py::object(py::none())));
    } catch (const ModelError& e) {
        // The model refused the caller's data (invalid, or not determining the answer): the
        // input is at fault. Anything else is the plugin's failure.
        raise_instance(error_class(e.is_input_error() ? "InvalidInput"
                                                      : "PluginError")(std::string(e.what())));
    } catch (const partition::RequestError& e) {
        // A setting of the request: its keyword as InvalidInput.field.
        raise_instance(error_class("InvalidInput")(std::string(e.what()), e.field()));
    } catch (const InputError& e) {
        raise_instance(error_class("InvalidInput")(std::string(e.what())));
    } catch (const PluginError& e) {
        raise_instance(error_class("PluginError")(std::string(e.what())));
    }
}

}  // namespace
}  // namespace ppb::python

PYBIND11_MODULE(_ppb, module) {
    using namespace ppb;
    using namespace ppb::python;
    module.doc() =
        "The ppb host library (discovery, loading, formats, partitioner); use the package ppb.";
    module.attr("abi_major") = PPB_ABI_MAJOR;
    module.attr("api_minor") = PPB_API_MINOR;
    module.attr("kind_names") = std::vector<std::string>(kind_names.begin(), kind_names.end());
    py::register_exception_translator(&translate);

    module.def(
        "discover",
        [](const std::vector<std::string>& plugin_path, const std::string& install_dir) {
            const char* env = std::getenv(std::string(plugin_path_variable).c_str());
            const SearchPath path =
                make_search_path_with_install_dir(plugin_path, env, install_dir, "plugin_path");
            const char* debug = std::getenv("PPB_DEBUG_PLUGINS");
            DiscoveryTrace trace;
            if (debug != nullptr && *debug != '\0' && std::string_view(debug) != "0") {
                trace = [](const std::string& line) {
                    fmt::print(stderr, "ppb: plugins: {}\n", line);
                };
            }
            py::list records;
            for (const PluginCandidate& c : discover_plugins(path, trace)) {
                py::dict r;
                r["name"] = c.name;
                r["version"] = c.version ? py::object(py::str(c.version->to_string()))
                                         : py::object(py::none());
                r["api"] =
                    c.entry_point.empty()
                        ? py::object(py::none())
                        : py::object(py::str(fmt::format("{}.{}", c.abi_major, c.api_minor)));
                r["verdict"] = std::string(verdict_name(c.verdict));
                r["reason"] = c.reason;
                r["path"] = c.path.string();
                records.append(r);
            }
            return py::make_tuple(records, path.warnings);
        },
        py::arg("plugin_path"), py::arg("install_dir"));

    py::class_<DryRun>(module, "DryRun")
        .def_property_readonly("source", [](const DryRun& d) { return d.source; })
        .def_property_readonly("revision", [](const DryRun& d) { return d.set.revision; })
        .def_property_readonly("groups", [](const DryRun& d) { return d.set.groups; })
        .def_property_readonly("num_stages",
                               [](const DryRun& d) -> py::object {
                                   return d.set.num_stages == 0 ? py::object(py::none())
                                                                : py::int_(d.set.num_stages);
                               })
        .def_property_readonly("micro_batches",
                               [](const DryRun& d) -> py::object {
                                   return d.set.micro_batches == 0 ? py::object(py::none())
                                                                   : py::int_(d.set.micro_batches);
                               })
        .def_property_readonly(
            "schedule", [](const DryRun& d) { return std::string(schedule_name(d.set.schedule)); })
        .def_property_readonly("num_chunks", [](const DryRun& d) { return d.set.num_chunks; })
        .def_property_readonly("observations",
                               [](const DryRun& d) {
                                   py::list out;
                                   for (const auto& o : d.set.observations)
                                       out.append(observation_dict(d.set, o));
                                   return out;
                               })
        .def("__len__", [](const DryRun& d) { return d.set.observations.size(); });

    module.def("design", &design_runs, py::arg("stages"), py::arg("num_layers"), py::arg("kinds"),
               py::arg("recompute_rule"), py::arg("micro_batches"), py::arg("runs"),
               py::arg("noise_mb"), py::arg("memory_limit_mb"), py::arg("prior"));

    module.def(
        "read_dryrun",
        [](const std::string& path, double tolerance) {
            return DryRun{read_dryrun_file(path, {tolerance}), path};
        },
        py::arg("path"), py::arg("duplicate_tolerance"));
    module.def(
        "parse_dryrun",
        [](const std::string& text, const std::string& source, double tolerance) {
            return DryRun{parse_dryrun(text, source, {tolerance}), source};
        },
        py::arg("text"), py::arg("source"), py::arg("duplicate_tolerance"));

    module.def("compare", &compare_models, py::arg("specs"), py::arg("dryrun"),
               py::arg("plan_text"), py::arg("plan_source"), py::arg("measured"),
               py::arg("cross_validate"), py::arg("plugin_path"), py::arg("install_dir"));
    module.def("simulate", &simulate_plan, py::arg("text"), py::arg("source"), py::arg("schedule"),
               py::arg("micro_batches"), py::arg("comm_time"), py::arg("timeline"));

    module.def("megatron_options", &megatron_options, py::arg("arguments"), py::arg("model_config"),
               py::arg("world_size"), py::arg("tokenizer_size"), py::arg("compute_capability"),
               py::arg("megatron_version"), py::arg("megatron_flags"));
    module.def("mindformers_options", &mindformers_options, py::arg("config"));
    module.def("devices", []() { return to_python(partition::devices_document()); });
    module.def("torchtitan_options", &torchtitan_options, py::arg("config"), py::arg("world_size"),
               py::arg("compute_capability"));

    module.def("search", &search_configurations, py::arg("model_desc"), py::arg("spec"),
               py::arg("options_json"), py::arg("options_source"), py::arg("dryrun"),
               py::arg("plugin_path"), py::arg("install_dir"), py::arg("devices"),
               py::arg("pipeline_degrees"), py::arg("tensor_parallel"), py::arg("data_parallel"),
               py::arg("global_batch"), py::arg("micro_batch_size"), py::arg("context_parallel"),
               py::arg("data_parallel_sharding"), py::arg("expert_parallel"),
               py::arg("expert_tensor_parallel"), py::arg("schedules"), py::arg("chunks"),
               py::arg("recompute"), py::arg("recompute_rule"), py::arg("memory_limit_mb"),
               py::arg("memory_margin_mb"), py::arg("memory_margin_sigma"), py::arg("comm_time"),
               py::arg("top"), py::arg("show_infeasible"), py::arg("jobs"), py::arg("fast"),
               py::arg("device"), py::arg("cluster_json"), py::arg("cluster_source"),
               py::arg("device_tflops"), py::arg("tp_comm_overlap"), py::arg("overlap_grad_reduce"),
               py::arg("overlap_param_gather"), py::arg("sapp_time_convention"));

    module.def(
        "open_model",
        [](const std::string& spec, const std::string& options_json,
           const std::vector<std::string>& plugin_path, const std::string& install_dir) {
            const char* env = std::getenv(std::string(plugin_path_variable).c_str());
            const SearchPath path =
                make_search_path_with_install_dir(plugin_path, env, install_dir, "plugin_path");
            return Model(open_model_spec(discover_plugins(path), spec, options_json), spec);
        },
        py::arg("spec"), py::arg("options_json"), py::arg("plugin_path"), py::arg("install_dir"));

    py::class_<Model>(module, "Model")
        .def_property_readonly("name", [](const Model& m) { return m.get().name(); })
        .def_property_readonly("version", [](const Model& m) { return m.get().version(); })
        .def_property_readonly("spec", &Model::spec)
        .def_property_readonly("api",
                               [](const Model& m) {
                                   return fmt::format("{}.{}", m.get().api().abi_major,
                                                      m.get().api_minor());
                               })
        .def_property_readonly("needs_fit", [](const Model& m) { return m.get().needs_fit(); })
        .def_property_readonly("fitted", [](const Model& m) { return m.fitted().has_value(); })
        .def_property_readonly("kinds",
                               [](const Model& m) {
                                   std::vector<std::string> out;
                                   for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                                       if ((m.get().kinds() & PPB_KIND_BIT(k)) != 0)
                                           out.emplace_back(kind_names[k]);
                                   }
                                   return out;
                               })
        .def_property_readonly("groups", [](const Model& m) { return m.get().groups(); })
        .def_property_readonly("options_help",
                               [](const Model& m) { return m.get().options_help(); })
        .def_property_readonly("source", &Model::source)
        .def_property_readonly("dryrun",
                               [](const Model& m) -> py::object {
                                   return m.fitted() ? py::cast(*m.fitted()) : py::none();
                               })
        .def_property_readonly("closed", &Model::closed)
        .def_property("memory", &Model::memory, &Model::set_memory)
        .def("close", &Model::close)
        .def("fit", &Model::fit, py::arg("dryrun"))
        .def("fit_document", [](const Model& m) { return to_python(m.fit_document()); })
        .def(
            "predict",
            [](const Model& m, py::handle stage, py::handle layers, py::handle chunks,
               py::handle num_stages, py::handle micro_batches, py::handle in_flight,
               py::handle schedule) {
                return predict(m, stage_placement(m, stage, layers, chunks, num_stages,
                                                  micro_batches, in_flight, schedule));
            },
            py::arg("stage"), py::arg("layers"), py::arg("chunks"), py::arg("num_stages"),
            py::arg("micro_batches"), py::arg("in_flight"), py::arg("schedule"))
        .def(
            "std_error",
            [](const Model& m, py::handle stage, py::handle layers, py::handle chunks,
               py::handle num_stages, py::handle micro_batches, py::handle in_flight,
               py::handle schedule) {
                return std_error(m, stage_placement(m, stage, layers, chunks, num_stages,
                                                    micro_batches, in_flight, schedule));
            },
            py::arg("stage"), py::arg("layers"), py::arg("chunks"), py::arg("num_stages"),
            py::arg("micro_batches"), py::arg("in_flight"), py::arg("schedule"))
        .def(
            "prediction",
            [](Model& m, py::handle stage, py::handle layers, py::handle chunks,
               py::handle num_stages, py::handle micro_batches, py::handle in_flight,
               py::handle schedule) {
                auto [placement, pipeline] = stage_request(m, stage, layers, chunks, num_stages,
                                                           micro_batches, in_flight, schedule);
                return to_python(partition::prediction_document(partition::predict_stage(
                    m.get(), std::move(placement), pipeline, m.reserve())));
            },
            py::arg("stage"), py::arg("layers"), py::arg("chunks"), py::arg("num_stages"),
            py::arg("micro_batches"), py::arg("in_flight"), py::arg("schedule"))
        .def("predict_batch", &predict_batch, py::arg("stage"), py::arg("layers"),
             py::arg("num_stages"), py::arg("in_flight"), py::arg("micro_batches"))
        .def("partition", &plan_partition, py::arg("model_desc"), py::arg("stages"),
             py::arg("memory_limit_mb"), py::arg("micro_batches"), py::arg("memory_margin_mb"),
             py::arg("memory_margin_sigma"), py::arg("kinds"), py::arg("recompute_rule"),
             py::arg("schedule"), py::arg("chunks"), py::arg("objective"), py::arg("refine"),
             py::arg("fast"), py::arg("sapp_time_convention"), py::arg("comm_time"),
             py::arg("weight_grad_share"), py::arg("shape_json") = "",
             py::arg("shape_source") = "model_options", py::arg("device") = "",
             py::arg("cluster_json") = "", py::arg("cluster_source") = "cluster",
             py::arg("device_tflops") = py::none(), py::arg("tp_comm_overlap") = false,
             py::arg("overlap_grad_reduce") = false, py::arg("overlap_param_gather") = false)
        .def(
            "sapp_layer_file",
            [](const Model& m, std::optional<std::string> layer_template, const std::string& name,
               bool fold_negative_constant) {
                if (!m.fitted())
                    throw InputError(
                        "the SAPP layer file is written from a fit: fit the model first");
                partition::SappExportOptions options;
                options.layer_template = std::move(layer_template);
                options.name = name;
                options.fold_negative_constant = fold_negative_constant;
                const auto layers =
                    partition::sapp_layer_file(m.fit_document(), m.fitted()->set, options);
                return py::make_tuple(sapp::write_layer_file(layers), layers.warnings);
            },
            py::arg("layer_template"), py::arg("name"), py::arg("fold_negative_constant"));
}
