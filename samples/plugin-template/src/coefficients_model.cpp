// The `coefficients` memory model: predicts with coefficients the user already has, e.g. a
// fit saved with `ppb fit --json`, so that planning does not refit every time.
//
// Options: a ppb.fit/1 document, or just its "parameters" object:
//   {"const_mb": C, "head_mb": H, "tail_mb": T, "param_per_layer_mb": P,
//    "activation_mb": {"none": A, "select": ..., "comm": ..., "both": ..., "full": ...}}
// A null activation means the kind is not predicted; null const/head/tail/per-layer are errors.
#include <ppb/json_output.hpp>
#include <ppb/plugin.hpp>

#include <boost/json.hpp>

#include <cmath>
#include <string>

namespace {

using ppb::plugin::InvalidInput;
using ppb::plugin::NotEstimable;

constexpr const char* kinds[PPB_KIND_COUNT] = {"none", "select", "comm", "both", "full"};

double number(const boost::json::object& o, const char* key, const std::string& where) {
    const auto* v = o.if_contains(key);
    if (v == nullptr)
        throw InvalidInput(where + key + ": missing");
    if (!v->is_number())
        throw InvalidInput(where + key + ": expected a number");
    const double x = v->to_number<double>();
    if (!std::isfinite(x))
        throw InvalidInput(where + key + ": not a finite number");
    return x;
}

class CoefficientsModel : public ppb::plugin::MemoryModelBase {
  public:
    explicit CoefficientsModel(std::string_view options) {
        boost::system::error_code ec;
        const auto doc = boost::json::parse(options, ec);
        if (ec || !doc.is_object())
            throw InvalidInput("options must be a JSON object");
        const auto* params = &doc.get_object();
        if (const auto* p = params->if_contains("parameters"); p != nullptr && p->is_object()) {
            params = &p->get_object();
        }
        c_.struct_size = sizeof c_;
        c_.const_mb = number(*params, "const_mb", "parameters.");
        c_.head_mb = number(*params, "head_mb", "parameters.");
        c_.tail_mb = number(*params, "tail_mb", "parameters.");
        c_.per_layer_mb = number(*params, "param_per_layer_mb", "parameters.");
        c_.identified = PPB_PARAM_CONST | PPB_PARAM_HEAD | PPB_PARAM_TAIL | PPB_PARAM_PER_LAYER;
        const auto* act = params->if_contains("activation_mb");
        if (act == nullptr || !act->is_object()) {
            throw InvalidInput("parameters.activation_mb: expected an object of the five kinds");
        }
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            const auto* v = act->get_object().if_contains(kinds[k]);
            if (v == nullptr || v->is_null())
                continue;  // kind not predicted
            c_.activation_mb[k] = number(act->get_object(), kinds[k], "parameters.activation_mb.");
            c_.identified |= PPB_PARAM_ACTIVATION(k);
        }
    }

    [[nodiscard]] double predict(const ppb_placement& p) const override {
        if (p.num_stages == 0 || p.stage >= p.num_stages || p.num_chunks == 0 ||
            p.chunks == nullptr) {
            throw InvalidInput("invalid placement");
        }
        double m = c_.const_mb + (p.stage == 0 ? c_.head_mb : 0.0) +
                   (p.stage + 1 == p.num_stages ? c_.tail_mb : 0.0);
        for (std::uint32_t c = 0; c < p.num_chunks; ++c) {
            for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
                const double n = p.chunks[c].layers[k];
                if (n == 0)
                    continue;
                if ((c_.identified & PPB_PARAM_ACTIVATION(k)) == 0) {
                    throw NotEstimable(std::string("no coefficient for '") + kinds[k] + "' layers");
                }
                m += n * c_.per_layer_mb + n * c_.activation_mb[k] * p.chunks[c].in_flight;
            }
        }
        return m;
    }

    [[nodiscard]] std::optional<ppb_linear_parameters> parameters() const override { return c_; }

    [[nodiscard]] std::string report() const override {
        boost::json::object activation;
        for (std::size_t k = 0; k < PPB_KIND_COUNT; ++k) {
            activation[kinds[k]] = (c_.identified & PPB_PARAM_ACTIVATION(k)) != 0
                                       ? boost::json::value(c_.activation_mb[k])
                                       : boost::json::value(nullptr);
        }
        const boost::json::object params{{"const_mb", c_.const_mb},
                                         {"head_mb", c_.head_mb},
                                         {"tail_mb", c_.tail_mb},
                                         {"param_per_layer_mb", c_.per_layer_mb},
                                         {"activation_mb", activation}};
        return ppb::to_compact_json(boost::json::object{
            {"parameters", params}, {"diagnostics", boost::json::object{{"source", "options"}}}});
    }

  private:
    ppb_linear_parameters c_{};
};

}  // namespace

PPB_EXPORT_MEMORY_MODEL_WITH_OPTIONS(
    CoefficientsModel, "linear memory model with given coefficients (e.g. a saved ppb fit)",
    PPB_ALL_KINDS, 0,
    "a ppb.fit/1 document (ppb fit --json) or its \"parameters\" object: const_mb, head_mb, "
    "tail_mb, param_per_layer_mb, activation_mb.{none,select,comm,both,full} in MB")
