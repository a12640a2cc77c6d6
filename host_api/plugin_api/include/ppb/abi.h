/*
 * ppb/abi.h — the memory-model plugin boundary.
 *
 * Everything that crosses between a host (a pipeline partitioner) and a memory-model plugin is
 * declared here, in C, as plain data and functions that never throw. C rather than C++ so that
 * plugins built by other teams, with other compilers or standard libraries, keep working, and
 * so that a host written in another language (Python with ctypes) can load the same file.
 *
 * Versioning (OpenCV's rule)
 *   PPB_ABI_MAJOR changes when an existing field or function changes meaning or layout. A host
 *   refuses a plugin of another major. PPB_API_MINOR grows when fields are appended to the end
 *   of the table; nothing is ever removed or moved, and `struct_size` says how much of the
 *   table exists. So a host loads a plugin of any API minor of its own major:
 *     - an older minor: the host reads a field only when the plugin's api_minor and struct_size
 *       both say it is there, and treats a missing one as "not offered";
 *     - a newer minor: the host reads the fields it knows (the first sizeof(its table) bytes)
 *       and ignores those appended after them.
 *   A table must be at least as large as the API minor it claims needs (PPB_API_1_<m>_TABLE_SIZE;
 *   a newer minor's table covers all of this header's), and never smaller than API 1.0's.
 *
 * Entry point
 *   A plugin exports exactly one symbol, a `const void*` variable whose value is the address of
 *   a `ppb_memory_model_api` table, named
 *       ppb_memory_model_v<ABI_MAJOR>_<API_MINOR>      e.g. ppb_memory_model_v1_4
 *   and placed in the ELF section "ppbabi<ABI_MAJOR>". Both versions are in the symbol's name so
 *   that a host can tell compatibility from the file alone, without running plugin code.
 *   Its minor is the plugin's own (nm -D --defined-only lists it); a ctypes host tries those it
 *   knows, newest first: ctypes.c_void_p.in_dll(lib, "ppb_memory_model_v1_4") (ctypes_host.py)
 *   From C (or C++ without ppb/plugin.hpp's wrappers), after the table:
 *       static const ppb_memory_model_api table = {sizeof(ppb_memory_model_api), PPB_ABI_MAJOR,
 *                                                  PPB_API_MINOR, ...};
 *       PPB_EXPORT_MEMORY_MODEL_TABLE(table);
 *   (GCC or Clang, ELF; build the plugin with -fvisibility=hidden so that nothing else is
 *   exported: ppb_add_plugin in ppb's CMake package does). C++ plugins use
 *   PPB_EXPORT_MEMORY_MODEL (ppb/plugin.hpp), which writes the table from a class.
 *
 * Hosts
 *   A plugin built against this header (ABI 1, API 1.4) loads in every host of ABI 1: ppb 0.1.0,
 *   the first release, and later. A host of an older API minor uses what it knows of the table
 *   (see Versioning); what API 1.m added is used by hosts of API 1.m or later, and ppb 0.1.0 is
 *   API 1.4.
 *
 * Errors
 *   Every function returning ppb_status reports failure with a code and leaves a message for
 *   `last_error()`, which is per thread and valid until the next failing call on that thread.
 *
 * Threads
 *   Different models may be used from different threads at once. One model may serve predict,
 *   predict_batch, predict_std_error and parameters (API 1.3: groups, group_parameters and the
 *   grouped predictions too; API 1.4: predict_parts) from several threads at once; fit,
 *   fit_grouped, report and destroy need it to themselves.
 */
#ifndef PPB_ABI_H
#define PPB_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PPB_ABI_MAJOR 1
#define PPB_API_MINOR 4

/* Name prefixes of the entry point and of the ELF section holding it (section names are at
 * most 8 bytes on some platforms: "ppbabi" + a one-digit major fits). */
#define PPB_ENTRY_PREFIX "ppb_memory_model_v"
#define PPB_SECTION_PREFIX "ppbabi"

/* Recompute kinds of a body layer, from most activation memory kept to least. */
typedef enum ppb_kind {
    PPB_KIND_NONE = 0,   /* keep all activations */
    PPB_KIND_SELECT = 1, /* selective recompute */
    PPB_KIND_COMM = 2,   /* recompute communication ops */
    PPB_KIND_BOTH = 3,   /* select + comm */
    PPB_KIND_FULL = 4    /* recompute the whole layer */
} ppb_kind;
#define PPB_KIND_COUNT 5
#define PPB_KIND_BIT(kind) (1u << (unsigned)(kind))
#define PPB_ALL_KINDS 0x1fu

/* Status of a call. Every status but PPB_OK leaves a message for last_error().
 *   PPB_OK                 the call did what it says; its outputs are written.
 *   PPB_ERR_INVALID_INPUT  the caller's data are wrong (observations, placement, options); the
 *                          message names what and where. The model is unchanged.
 *   PPB_ERR_NOT_FITTED     predict, parameters or report before a successful fit of a model
 *                          that needs one (PPB_MODEL_NEEDS_FIT).
 *   PPB_ERR_NOT_ESTIMABLE  the fitted data do not determine this prediction (or coefficient).
 *   PPB_ERR_UNSUPPORTED    the model does not offer this operation (a host falls back or says
 *                          so; never an error of the caller's data).
 *   PPB_ERR_OUT_OF_MEMORY  the plugin could not allocate what the call needs (host memory;
 *                          ppb/plugin.hpp's wrappers turn std::bad_alloc into it): a host may
 *                          try again with less, e.g. fewer placements in one batch.
 *   PPB_ERR_INTERNAL       a defect or unexpected failure inside the plugin.
 * When a call fails its outputs are unspecified: a host reads none of them. A host treats any
 * other value as a defect of the plugin. */
typedef int32_t ppb_status;
#define PPB_OK 0
#define PPB_ERR_INVALID_INPUT 1
#define PPB_ERR_NOT_FITTED 2
#define PPB_ERR_NOT_ESTIMABLE 3
#define PPB_ERR_UNSUPPORTED 4
#define PPB_ERR_OUT_OF_MEMORY 5
#define PPB_ERR_INTERNAL 6

/* One virtual pipeline chunk of a stage (one chunk per stage unless interleaved). */
typedef struct ppb_chunk {
    uint32_t layers[PPB_KIND_COUNT]; /* body layers of each recompute kind */
    uint32_t in_flight;              /* micro-batches whose activations the chunk holds at peak */
} ppb_chunk;

/* What a host asks a model about: one stage of a pipeline and what it holds. */
typedef struct ppb_placement {
    uint32_t num_stages; /* pipeline degree p >= 1 */
    uint32_t stage;      /* 0 .. p-1; stage 0 holds the head, stage p-1 the tail */
    uint32_t num_chunks; /* >= 1 */
    const ppb_chunk* chunks;
} ppb_placement;

/* One stage of one dry run: a placement and the peak memory measured for it. */
typedef struct ppb_observation {
    ppb_placement placement;
    double peak_memory_mb; /* MB = 2^20 bytes */
} ppb_observation;

/* Groups of body layers (API 1.3). A model whose body layers are not all alike (dense and MoE
 * layers, an encoder and a decoder stack) names its groups, in model order (groups() below); a
 * grouped placement says how many layers of each group and recompute kind every chunk holds.
 *   group_layers: num_chunks x num_groups x PPB_KIND_COUNT counts, chunk by chunk, group by group:
 *                 group_layers[(c * num_groups + g) * PPB_KIND_COUNT + k]
 *   placement.chunks[c].layers[k] must be the sum over the groups, so that the plain placement
 *   inside stays a true description of the stage.
 * For predict_grouped*, num_groups is the model's number of groups, in the order groups() gives
 * them; a model of one group takes num_groups = 1 and then means exactly what predict() does. */
typedef struct ppb_grouped_placement {
    ppb_placement placement;
    uint32_t num_groups;
    const uint32_t* group_layers;
} ppb_grouped_placement;

/* One stage of one dry run, its layers counted per group. */
typedef struct ppb_grouped_observation {
    ppb_grouped_placement placement;
    double peak_memory_mb; /* MB = 2^20 bytes */
} ppb_grouped_observation;

/* Coefficients of a linear memory model, in MB:
 *   M = const + head*[s == 0] + tail*[s == p-1] + per_layer * n + sum_k activation[k] * n_k * f
 * A bit set in `identified` means predict() uses that coefficient with exactly this value, so a
 * host evaluating the formula inline gets predict()'s answer (a model that assumes a term is 0,
 * like dryrun-lsq with a folded constant, sets the bit with the value 0). An unset bit means
 * the data did not determine the coefficient: placements that need it cannot be predicted. */
#define PPB_PARAM_CONST 0x01u
#define PPB_PARAM_HEAD 0x02u
#define PPB_PARAM_TAIL 0x04u
#define PPB_PARAM_PER_LAYER 0x08u
#define PPB_PARAM_ACTIVATION(kind) (0x10u << (unsigned)(kind))

typedef struct ppb_linear_parameters {
    uint32_t struct_size; /* set by the caller to sizeof(ppb_linear_parameters) */
    uint32_t identified;  /* PPB_PARAM_* bits */
    double const_mb;
    double head_mb;
    double tail_mb;
    double per_layer_mb;
    double activation_mb[PPB_KIND_COUNT];
} ppb_linear_parameters;

/* One term of a prediction (API 1.4, predict_parts): what a part of a stage's memory is, for the
 * people who read a plan. The model's own words, not the host's: a host shows the label and keeps
 * the parts in the order given (bottom up in a stacked bar).
 *   name:  what the term is, stable across calls and versions of the model, for programs: 1 to 32
 *          characters of a-z, 0-9 and '_', distinct within one prediction. The activations of
 *          the body layers of one recompute kind are named after the kind ("none", "select",
 *          "comm", "both", "full": ppb/kinds.hpp), so that hosts can show them as the kind.
 *   label: a few words for people, e.g. "optimizer state (body layers)": 1 to 120 bytes of
 *          UTF-8 text without control characters.
 *   mb:    the term's memory in MB, finite and not negative.
 * Both strings stay valid while the model lives. */
typedef struct ppb_memory_part {
    const char* name;
    const char* label;
    double mb;
} ppb_memory_part;

/* Model flags. */
#define PPB_MODEL_NEEDS_FIT 0x1u /* predict only after fit() with observations */

typedef struct ppb_model ppb_model; /* opaque instance owned by the plugin */

typedef struct ppb_memory_model_api {
    uint32_t struct_size; /* sizeof the table as the plugin was built */
    uint32_t abi_major;
    uint32_t api_minor;
    uint32_t kinds; /* PPB_KIND_BIT mask of recompute kinds the model can predict */
    uint32_t flags; /* PPB_MODEL_* */
    const char* name;
    const char* version; /* semantic version "MAJOR.MINOR.PATCH" */
    const char* description;
    const char* build_id; /* compiler and standard-library ABI the plugin was built with */

    /* options_json: the user's options for this model as a JSON object ("{}" for none). */
    ppb_status (*create)(const char* options_json, ppb_model** out);
    void (*destroy)(ppb_model* model);
    ppb_status (*fit)(ppb_model* model, const ppb_observation* observations, size_t count);
    ppb_status (*predict)(const ppb_model* model, const ppb_placement* placement, double* out_mb);
    ppb_status (*predict_batch)(const ppb_model* model, const ppb_placement* placements,
                                size_t count, double* out_mb);
    /* PPB_ERR_UNSUPPORTED when the model is not linear. */
    ppb_status (*parameters)(const ppb_model* model, ppb_linear_parameters* out);
    /* A JSON object {"parameters": {...}, "diagnostics": {...}} describing the fitted or
     * configured model; the text stays valid until the next call on `model` or destroy. */
    ppb_status (*report)(const ppb_model* model, const char** out_json);
    const char* (*last_error)(void);

    /* ---- API 1.1 ---- read only when api_minor >= 1 and struct_size covers it */

    /* What the model's options are, for people: plain text, one option per line, or NULL when
     * the model takes none. */
    const char* options_help;

    /* ---- API 1.2 ---- read only when api_minor >= 2 and struct_size covers it */

    /* The standard error (MB) of predict()'s value for `placement`, from the uncertainty of the
     * model's fit. PPB_ERR_UNSUPPORTED when the model has no such estimate (a configured model,
     * or a fit with no degrees of freedom). */
    ppb_status (*predict_std_error)(const ppb_model* model, const ppb_placement* placement,
                                    double* out_mb);

    /* ---- API 1.3 ---- read only when api_minor >= 3 and struct_size covers it */

    /* The model's groups of body layers, in model order: *out_count names, valid until the next
     * fit, fit_grouped or destroy of `model`. A configured model knows them from its options, a
     * fitted one from its last fit (a model of one kind of layer has one group, "body"). */
    ppb_status (*groups)(const ppb_model* model, const char* const** out_names,
                         uint32_t* out_count);
    /* fit() with layers counted per group: group_names[g] (distinct, not empty) names the g-th
     * group of every observation's group_layers, each observation having num_groups groups. A
     * model of one group accepts num_groups = 1 whatever the name. */
    ppb_status (*fit_grouped)(ppb_model* model, const char* const* group_names, uint32_t num_groups,
                              const ppb_grouped_observation* observations, size_t count);
    /* predict, predict_batch and predict_std_error of grouped placements. */
    ppb_status (*predict_grouped)(const ppb_model* model, const ppb_grouped_placement* placement,
                                  double* out_mb);
    ppb_status (*predict_grouped_batch)(const ppb_model* model,
                                        const ppb_grouped_placement* placements, size_t count,
                                        double* out_mb);
    ppb_status (*predict_grouped_std_error)(const ppb_model* model,
                                            const ppb_grouped_placement* placement, double* out_mb);
    /* The linear coefficients of group `group` (0 .. groups - 1): const, head and tail are the
     * model's, shared by every group; per_layer and activation are those of the group's layers:
     *   M = const + head*[s == 0] + tail*[s == p-1]
     *       + sum_g (per_layer_g * n_g + sum_k activation_g[k] * n_gk * f)
     * PPB_ERR_UNSUPPORTED when the model is not linear. A model of several groups answers
     * parameters() with PPB_ERR_UNSUPPORTED: one set of coefficients cannot describe it. */
    ppb_status (*group_parameters)(const ppb_model* model, uint32_t group,
                                   ppb_linear_parameters* out);

    /* ---- API 1.4 ---- read only when api_minor >= 4 and struct_size covers it */

    /* predict_grouped()'s value for `placement` as the model's own terms (ppb_memory_part): the
     * model has *out_count parts and writes the first min(*out_count, capacity) of them to `out`
     * (`out` may be NULL when capacity is 0); a host whose buffer was too small calls again with
     * capacity >= *out_count. The parts, added in their order, give predict_grouped()'s value up
     * to rounding (a relative 1e-9). A model of one group takes num_groups = 1, as for
     * predict_grouped. PPB_ERR_UNSUPPORTED when the model has no terms to give: a linear model's
     * coefficients (parameters, group_parameters) already itemise its predictions. */
    ppb_status (*predict_parts)(const ppb_model* model, const ppb_grouped_placement* placement,
                                ppb_memory_part* out, uint32_t capacity, uint32_t* out_count);
} ppb_memory_model_api;

/* Size of the table of API 1.0, the smallest a host of ABI 1 accepts, and of the later minors:
 * a table claiming API 1.m is at least PPB_API_1_m_TABLE_SIZE bytes. */
#define PPB_API_1_0_TABLE_SIZE (offsetof(ppb_memory_model_api, last_error) + sizeof(void*))
#define PPB_API_1_1_TABLE_SIZE (offsetof(ppb_memory_model_api, options_help) + sizeof(void*))
#define PPB_API_1_2_TABLE_SIZE (offsetof(ppb_memory_model_api, predict_std_error) + sizeof(void*))
#define PPB_API_1_3_TABLE_SIZE (offsetof(ppb_memory_model_api, group_parameters) + sizeof(void*))
#define PPB_API_1_4_TABLE_SIZE (offsetof(ppb_memory_model_api, predict_parts) + sizeof(void*))

#ifdef __cplusplus
}
#endif

/* The entry point's name and section for a major and minor (string-pasted, so that they follow
 * PPB_ABI_MAJOR and PPB_API_MINOR). */
#define PPB_DETAIL_STR2(x) #x
#define PPB_DETAIL_STR(x) PPB_DETAIL_STR2(x)
#define PPB_DETAIL_CAT4(a, b, c, d) a##b##c##d
#define PPB_DETAIL_ENTRY(major, minor) PPB_DETAIL_CAT4(ppb_memory_model_v, major, _, minor)
#define PPB_DETAIL_SECTION2(major) ppbabi##major
#define PPB_DETAIL_SECTION(major) PPB_DETAIL_SECTION2(major)

/* PPB_EXPORT_MEMORY_MODEL_TABLE(table): the entry point of a plugin whose table is the variable
 * `table` (see "Entry point" above), with C linkage, default visibility, in its section. Once
 * per plugin. */
#if defined(__GNUC__) && defined(__ELF__)
#ifdef __cplusplus
#define PPB_DETAIL_EXTERN_C extern "C"
#else
#define PPB_DETAIL_EXTERN_C extern
#endif
#define PPB_EXPORT_MEMORY_MODEL_TABLE(table)                                                \
    PPB_DETAIL_EXTERN_C __attribute__((                                                     \
        visibility("default"), section(PPB_DETAIL_STR(PPB_DETAIL_SECTION(PPB_ABI_MAJOR))))) \
    const void* PPB_DETAIL_ENTRY(PPB_ABI_MAJOR, PPB_API_MINOR);                             \
    const void* PPB_DETAIL_ENTRY(PPB_ABI_MAJOR, PPB_API_MINOR) = &(table)
#endif

#endif /* PPB_ABI_H */
