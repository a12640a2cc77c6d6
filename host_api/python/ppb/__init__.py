"""ppb — memory models for pipeline-parallel training, as plugins, from Python.

The same host library as the ``ppb`` command: plugin discovery (``--plugin-path`` is
``plugin_path``, then ``PPB_PLUGIN_PATH``, then the install location next to this package), version
choice (``"dryrun-lsq@1"``), the refusal of plugin files writable by others, the dry-run reader and
its checks, the fit document and the partitioner. Numbers and messages are the command's.

    import ppb
    with ppb.load_model("dryrun-lsq") as model:
        model.fit("samples/data/llama70b-pp8-dryrun.json")
        model.predict(3, {"select": 9, "full": 1})       # MB
        plan = ppb.partition("samples/data/llama70b-layers.json", model=model,
                             stages=8, memory_limit_mb=30000)

Errors are :class:`InvalidInput`, :class:`PluginError` and :class:`Infeasible`. NumPy is needed
only by :meth:`Model.predict_batch`.
"""

import json as _json
import os as _os
import warnings as _warnings

try:
    from . import _ppb
except ImportError as _error:
    # The package's Python files are in place (CMake copies them when it configures) but not the
    # extension built from the host library: say which, and how to get it, instead of Python's
    # "partially initialized module" message.
    import glob as _glob
    import sys as _sys

    _here = _os.path.dirname(__file__)
    _built = sorted(_os.path.basename(p) for p in _glob.glob(_os.path.join(_here, "_ppb*.so")))
    _python = f"Python {_sys.version_info.major}.{_sys.version_info.minor} ({_sys.executable})"
    if _built:
        _why = (f"{', '.join(_built)} in {_here} was built for another Python than this {_python}"
                f": use that interpreter, or configure the build with -DPython_EXECUTABLE=")
    else:
        _why = (f"the extension module _ppb is not built in {_here}: build it with the set-up "
                f"command (samples/scripts/run-sample.sh) or `cmake --build BUILD --target "
                f"ppb_python`")
    raise ImportError(f"ppb: {_why} ({_error})") from None
from ._errors import Error, Infeasible, InvalidInput, PluginError
from ._location import PLUGIN_DIR as _PLUGIN_DIR

__all__ = [
    "Error",
    "Infeasible",
    "InvalidInput",
    "PluginError",
    "DryRun",
    "Model",
    "KINDS",
    "plugins",
    "load_model",
    "read_dryrun",
    "partition",
    "simulate",
    "compare",
    "design",
    "search",
    "devices",
    "import_megatron_options",
    "import_mindformers_options",
    "import_torchtitan_options",
]

#: The recompute kinds, in the order of every per-kind array: none, select, comm, both, full.
KINDS = tuple(_ppb.kind_names)
#: The plugin API this module hosts: (ABI major, API minor).
PLUGIN_API = (_ppb.abi_major, _ppb.api_minor)

DryRun = _ppb.DryRun
DryRun.__doc__ = """Observations read from a dry-run file (ppb.dryrun/1, /2 or /3), checked.

``observations`` is a list of dicts: config, num_stages, stage, schedule, micro_batches (or None),
chunks (each ``{"layers": {kind: n}, "in_flight": f}``, plus ``"groups"`` for /3 files) and
peak_memory_mb (and reserved_mb when the file gives it), with every in-flight count filled in
as the fit sees it. Also ``source``,
``revision``, ``groups``, ``num_stages``, ``micro_batches``, ``schedule``, ``num_chunks``, ``len()``.
"""

_INSTALL_DIR = _os.path.normpath(_os.path.join(_os.path.dirname(__file__), _PLUGIN_DIR))


def _paths(plugin_path):
    """plugin_path as a list of directory names: None, one path, or several."""
    if plugin_path is None:
        return []
    if isinstance(plugin_path, (str, bytes, _os.PathLike)):
        return [_os.fsdecode(plugin_path)]
    return [_os.fsdecode(p) for p in plugin_path]


def _options(options, what):
    """(JSON text, source) of a model's options as ``--model-options`` takes them: a dict (or
    list), JSON text (a str whose first character is ``{``), or a file holding it (a path)."""
    if options is None:
        return "{}", what
    if isinstance(options, (dict, list)):
        return _json.dumps(options), what
    if isinstance(options, str) and options.lstrip().startswith("{"):
        return options, what
    if not isinstance(options, (str, bytes, _os.PathLike)):
        raise TypeError(f"{what}: expected a dict, JSON text or a file's path, got "
                        f"{type(options).__name__}")
    path = _os.fsdecode(options)
    if _os.path.isdir(path):
        raise InvalidInput(f"{what}: '{path}' is a directory, not a JSON object or a file "
                           f"holding one", what)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InvalidInput(f"{what}: '{path}' is neither a JSON object nor a readable file "
                           f"({e.strerror})", what) from None
    if not text.strip():
        raise InvalidInput(f"{what}: {path}: the file is empty (expected a JSON object)", what)
    return text, path


def _warn(messages):
    for message in messages:
        _warnings.warn(f"{message} (skipped)", stacklevel=3)


def plugins(plugin_path=None):
    """Every ``*.so`` file on the search path, judged without running its code (``ppb plugins``).

    Returns a list of dicts with ``name``, ``version`` (or None), ``api`` ("1.4", or None without
    an entry point), ``verdict`` (usable, incompatible, not-a-plugin, refused, shadowed, failed),
    ``reason`` and ``path``. ``plugin_path``: a directory or a list of them, searched first.
    """
    records, skipped = _ppb.discover(_paths(plugin_path), _INSTALL_DIR)
    _warn(skipped)
    return records


def read_dryrun(path, duplicate_tolerance=0.01):
    """Reads and checks a dry-run file (``"-"`` is standard input): a :class:`DryRun`.

    Two observations of the same placement must agree within ``duplicate_tolerance`` (a fraction
    of the larger memory). Raises :class:`InvalidInput` naming the file and the JSON path.
    """
    return _ppb.read_dryrun(_os.fsdecode(path), float(duplicate_tolerance))


def _dryrun(observations, duplicate_tolerance=0.01):
    """A DryRun from a DryRun, a file name, or a ppb.dryrun document given as a dict."""
    if isinstance(observations, DryRun):
        return observations
    if isinstance(observations, dict):
        return _ppb.parse_dryrun(_json.dumps(observations), "<observations>",
                                 float(duplicate_tolerance))
    if isinstance(observations, (str, bytes, _os.PathLike)):
        return read_dryrun(observations, duplicate_tolerance)
    raise TypeError("observations: expected a ppb.DryRun, a dry-run file name or a "
                    f"ppb.dryrun document (dict), got {type(observations).__name__}")


class Model:
    """A loaded memory model (``ppb.load_model``). The plugin's library stays loaded while the model
    lives; ``close()`` (or leaving a ``with`` block) destroys the model at once.

    Placements are described as ``ppb predict`` takes them: ``stage``; ``layers`` per recompute
    kind ``{"none": 3, "full": 1}``, or per group ``{"dense": {"none": 1}, "moe": {"full": 2}}``
    for a model of several groups of body layers; or ``chunks``, one such dict per chunk. The
    pipeline degree ``num_stages`` and ``micro_batches`` default to the fitted file's; the in-flight
    count is the schedule's (1F1B: min(P - s, M), or P - s without a micro-batch count) unless
    ``in_flight`` is given (one chunk); with chunks the prediction is the largest over the
    schedule's in-flight profile (the vectors of per-chunk counts that occur in its order);
    ``schedule`` defaults to the file's when it has as many chunks.
    """

    def __init__(self, native):
        self._native = native

    # ---- identity ----
    @property
    def name(self):
        """The plugin's name, e.g. ``"dryrun-lsq"``."""
        return self._native.name

    @property
    def version(self):
        """The plugin's version, ``"MAJOR.MINOR.PATCH"``."""
        return self._native.version

    @property
    def api(self):
        """The plugin API it was built for, ``"1.4"``."""
        return self._native.api

    @property
    def needs_fit(self):
        """Whether the model is fitted to observations (dryrun-lsq) rather than configured by its
        options (table, analytic)."""
        return self._native.needs_fit

    @property
    def fitted(self):
        """Whether :meth:`fit` has succeeded."""
        return self._native.fitted

    @property
    def kinds(self):
        """The recompute kinds the model predicts."""
        return self._native.kinds

    @property
    def groups(self):
        """The model's groups of body layers in model order (``["body"]`` for one group)."""
        return self._native.groups

    @property
    def options_help(self):
        """The plugin's description of its options, or None."""
        return self._native.options_help

    # ---- fitting ----
    def fit(self, observations, duplicate_tolerance=0.01):
        """Fits the model to dry-run observations: a :class:`DryRun`, a file name, or a
        ppb.dryrun document as a dict. Returns the model. Raises :class:`InvalidInput` when the
        data are invalid or the plugin refuses them (the message names the file)."""
        self._native.fit(_dryrun(observations, duplicate_tolerance))
        return self

    @property
    def dryrun(self):
        """The :class:`DryRun` the model was fitted to, or None."""
        return self._native.dryrun

    @property
    def report(self):
        """The ppb.fit/1 document as a dict, exactly what ``ppb fit --json`` prints: ``format``,
        ``model``, ``parameters`` and ``diagnostics`` (identifiability, residuals, standard
        errors)."""
        return self._native.fit_document()

    @property
    def allocator_reserve(self):
        """The caching allocator's reserve beyond allocated memory, fitted where the observations
        give ``reserved_mb`` (``report["allocator_reserve"]``: ``constant_mb``,
        ``activation_ratio``, their standard errors, notes), or None."""
        return self.report.get("allocator_reserve")

    @property
    def memory(self):
        """Which memory :meth:`predict`, :meth:`std_error` and :meth:`partition` give:
        ``"allocated"`` (the default, the model's own) or ``"reserved"`` (allocated plus the
        fitted allocator's reserve; setting it needs :attr:`allocator_reserve`)."""
        return self._native.memory

    @memory.setter
    def memory(self, basis):
        self._native.memory = basis

    @property
    def parameters(self):
        """The fitted coefficients in MB (``report["parameters"]``): const_mb, head_mb, tail_mb,
        param_per_layer_mb, activation_mb per kind (None where not determined); per group under
        ``groups`` for a model of several groups."""
        return self.report["parameters"]

    # ---- predicting ----
    def predict(self, stage, layers=None, *, num_stages=None, micro_batches=None, in_flight=None,
                schedule=None, chunks=None):
        """Peak memory in MB of ``stage`` holding ``layers`` (see the class docstring), as
        ``ppb predict`` computes it. Raises :class:`InvalidInput` when the fitted observations do
        not determine this prediction, saying which parameter and why."""
        return self._native.predict(stage, layers, chunks, num_stages, micro_batches, in_flight,
                                    schedule)

    def prediction(self, stage, layers=None, *, num_stages=None, micro_batches=None,
                   in_flight=None, schedule=None, chunks=None):
        """The ppb.prediction/1 dict ``ppb predict --json`` prints for the same placement and fit:
        the placement (with chunks, every vector of the schedule's in-flight profile and the
        prediction at each), ``peak_memory_mb`` and ``std_error_mb`` on allocated memory, and where
        the fit has an allocator reserve, ``reserved_memory_mb``, ``reserved_std_error_mb`` and
        ``allocator_reserve`` (whichever memory :attr:`memory` selects)."""
        return self._native.prediction(stage, layers, chunks, num_stages, micro_batches,
                                       in_flight, schedule)

    def std_error(self, stage, layers=None, *, num_stages=None, micro_batches=None,
                  in_flight=None, schedule=None, chunks=None):
        """One standard error in MB of :meth:`predict`'s value for the same placement, from the
        fit's residuals, or None when the model has no uncertainty estimate (no degrees of
        freedom, a table or analytic model, a plugin older than API 1.2)."""
        return self._native.std_error(stage, layers, chunks, num_stages, micro_batches, in_flight,
                                      schedule)

    def predict_batch(self, stage, layers, *, num_stages=None, in_flight=None,
                      micro_batches=None):
        """Peak memory of n placements of one chunk each under 1F1B, in one call into the plugin
        (no Python loop). Needs NumPy; lists are converted.

        - ``stage``: integers, shape (n,);
        - ``layers``: integers, shape (n, 5), columns in the order of :data:`KINDS` (none, select,
          comm, both, full); for a model of several groups shape (n, G, 5), groups in the order
          of :attr:`groups`;
        - ``num_stages``: an integer or shape (n,); default the fitted file's;
        - ``in_flight``: an integer or shape (n,); default the 1F1B count min(P - s, M) with
          ``micro_batches`` (default the fitted file's; none known: P - s).

        Returns a float64 array of shape (n,), equal to :meth:`predict` row by row.
        """
        import numpy as np

        stage = np.asarray(stage)
        if num_stages is None:
            fitted = self.dryrun
            num_stages = fitted.num_stages if fitted is not None else None
            if num_stages is None:
                raise InvalidInput("missing num_stages (the fitted observations do not give "
                                   "num_stages)")
        return self._native.predict_batch(
            stage, np.asarray(layers), np.asarray(num_stages),
            np.zeros(0, dtype=np.int64) if in_flight is None else np.asarray(in_flight),
            micro_batches)

    # ---- lifetime ----
    def close(self):
        """Destroys the model now; later calls raise ValueError."""
        self._native.close()

    @property
    def closed(self):
        return self._native.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self.closed:
            return f"<ppb.Model {self._native.spec!r} (closed)>"
        return f"<ppb.Model {self.name} {self.version} ({self._native.source})>"


def load_model(model="dryrun-lsq", options=None, plugin_path=None):
    """Loads the memory model ``model`` (``NAME[@VERSION]``: ``"dryrun-lsq"``, ``"dryrun-lsq@1"``,
    ``"table@1.0"``; the highest usable version matching the pin) and creates it with ``options``
    (a dict, JSON text or a file holding it, as ``--model-options`` takes them:
    ``{"rank_tolerance": 1e-10}`` for dryrun-lsq, a SAPP layer file's contents for table, the
    model's shape for analytic).

    Raises :class:`PluginError` when no usable plugin matches (the message lists what is
    installed) or it fails to load, :class:`InvalidInput` for a malformed name or options the
    model refuses.
    """
    options_json, _ = _options(options, "options")
    return Model(_ppb.open_model(model, options_json, _paths(plugin_path), _INSTALL_DIR))


def design(*, stages, num_layers, kinds=("none",), recompute_rule="mindformers",
           micro_batches=None, runs=None, noise_mb=1.0, memory_limit_mb=None, prior=None):
    """The dry runs to run, as the ppb.design/1 dict ``ppb design --json`` prints: the fewest that
    identify every coefficient of the dryrun-lsq model for ``kinds``, each expressible under
    ``recompute_rule`` ("mindformers", "megatron" or "any"), the most precise of them.

    ``stages``: a pipeline degree or a list of them. ``prior``: a loaded :class:`Model` (fitted,
    or configured by its options) whose predictions keep every stage under ``memory_limit_mb``.

    Raises :class:`Infeasible` when no design identifies every coefficient (within the limit:
    ``smallest_feasible_limit_mb`` is a limit that would do, or None), :class:`InvalidInput`
    for a request that cannot be asked.
    """
    if isinstance(stages, int):
        stages = [stages]
    if isinstance(kinds, str):
        kinds = [kinds]
    native_prior = None
    if prior is not None:
        if not isinstance(prior, Model):
            raise TypeError("prior: expected a ppb.Model (ppb.load_model(...)) or None")
        native_prior = prior._native
    return _ppb.design(list(stages), int(num_layers), list(kinds), recompute_rule,
                       micro_batches, runs, float(noise_mb),
                       None if memory_limit_mb is None else float(memory_limit_mb), native_prior)


def search(model_desc=None, *, global_batch, memory_limit_mb=None, devices=None,
           pipeline_degrees=None, tensor_parallel=None, data_parallel=None,
           micro_batch_size=None, context_parallel=None, expert_parallel=None,
           expert_tensor_parallel=None, data_parallel_sharding=None, schedules=None, chunks=None, recompute=None,
           recompute_rule="mindformers", memory_margin_mb=0.0, memory_margin_sigma=0.0,
           model="dryrun-lsq", model_options=None, dryrun=None, top=10, show_infeasible=False,
           jobs=None, device_tflops=None, device=None, cluster=None, tp_comm_overlap=False,
           overlap_grad_reduce=False, overlap_param_gather=False, comm_time=None, fast=False,
           plugin_path=None, sapp_time_convention="hyper-parallel"):
    """Every pipeline configuration planned and ranked, as the ppb.search/1 dict
    ``ppb search --json`` prints, by the search the command runs (the library's, in this process):
    ``ppb search``'s options, with underscores: ``pipeline_degrees=[2, 4]``,
    ``tensor_parallel=[1, 2, 4, 8]``, ``schedules=["1f1b"]`` (``None``: the command's default,
    with ``"combined-1f1b"`` for an MoE shape on a cluster), ``recompute=["any", "full"]``,
    ``expert_parallel=[8, 16]``, ``expert_tensor_parallel=[1, 2]``,
    ``data_parallel_sharding=["optim", "optim_grads_params"]``;
    ``model_options`` a dict, JSON text or a file; ``dryrun`` a file, a dict or a
    :class:`DryRun`. On a cluster: ``device="H100"`` or ``cluster=`` a ``ppb.cluster/1`` dict or
    file (what its allocator can reserve is the limit unless ``memory_limit_mb`` is given), with
    Megatron-LM's overlaps as ``tp_comm_overlap=True``, ``overlap_grad_reduce=True`` and
    ``overlap_param_gather=True``; ``fast=True`` keeps each configuration's exact optimum.

    Raises :class:`InvalidInput` for what cannot be searched (``field`` names the keyword),
    :class:`PluginError` for a plugin problem, :class:`Infeasible` when no configuration fits
    (``smallest_feasible_limit_mb``: the smallest limit that fits one).
    """
    def listed(values):
        if values is None:
            return []
        if isinstance(values, (str, int)):
            return [values]
        return list(values)

    options_json, options_source = ("", "model_options") if model_options is None else \
        _options(model_options, "model_options")
    cluster_json, cluster_source = ("", "cluster") if cluster is None else \
        _options(cluster, "cluster")
    return _ppb.search(
        "" if model_desc is None else _os.fsdecode(model_desc), model,
        options_json or "{}", options_source,
        None if dryrun is None else _dryrun(dryrun), _paths(plugin_path), _INSTALL_DIR,
        devices, listed(pipeline_degrees), listed(tensor_parallel), data_parallel,
        int(global_batch), listed(micro_batch_size), listed(context_parallel),
        [str(v) for v in listed(data_parallel_sharding)], listed(expert_parallel),
        listed(expert_tensor_parallel), [str(v) for v in listed(schedules)],
        listed(chunks or [2]), [str(v) for v in listed(recompute or ["any"])], recompute_rule,
        None if memory_limit_mb is None else float(memory_limit_mb), float(memory_margin_mb),
        float(memory_margin_sigma), None if comm_time is None else float(comm_time), int(top),
        bool(show_infeasible), int(jobs or 0), bool(fast), device or "", cluster_json,
        cluster_source, None if device_tflops is None else float(device_tflops),
        bool(tp_comm_overlap), bool(overlap_grad_reduce), bool(overlap_param_gather),
        sapp_time_convention)


def devices():
    """The accelerators ppb knows, as ``ppb devices --json`` lists them: the ``ppb.devices/1``
    dict, each device's figures (``memory_gib`` the vendor's, ``runtime_memory_gib`` what the
    runtime reports, rates in TFLOP/s, links in GB/s per direction) and their ``source``; a name
    is what ``device=`` takes."""
    return _ppb.devices()


def _imported(result):
    """The importer's dict, its warnings said as the command's are (Python warnings)."""
    for message in result["warnings"]:
        _warnings.warn(message, stacklevel=3)
    return result


def import_megatron_options(arguments=(), *, model_config=None, world_size=None,
                            tokenizer_size=None, compute_capability=9, megatron_version=None,
                            megatron_flags=None):
    """The analytic model's options from a Megatron-LM run's arguments, as
    ``ppb import megatron-options`` reads them (the same importer, in this process).

    ``arguments`` is the run's argument list (``["--num-layers", "32", "--bf16", ...]``);
    ``model_config`` a run configuration's file (Megatron-LM's functional tests'
    ``model_config.yaml``, Megatron-MoE-ModelZoo's configurations), its ``MODEL_ARGS`` taken before
    ``arguments``; ``world_size``, ``tokenizer_size``, ``compute_capability``,
    ``megatron_version`` and ``megatron_flags`` (a list) as the command's ``--world-size``,
    ``--tokenizer-size``, ``--compute-capability``, ``--megatron-version`` and
    ``--megatron-flag``. Returns a dict: ``options`` (the analytic model's options, for
    ``model_options=``), ``stages``, ``data_parallel``, ``micro_batches`` (None without a global
    batch), ``release`` (the Megatron-LM release whose flags were read), ``notes`` and
    ``warnings`` (each warning also a Python warning). Raises :class:`InvalidInput` for what the
    command refuses, with its message.
    """
    if isinstance(arguments, str):
        raise InvalidInput("arguments: expected a list of the run's arguments, not one string "
                           "(split it as the shell would: shlex.split)", "arguments")
    return _imported(_ppb.megatron_options(
        [str(a) for a in arguments],
        "" if model_config is None else _os.fsdecode(model_config), world_size, tokenizer_size,
        compute_capability, megatron_version, [str(f) for f in (megatron_flags or [])]))


def import_mindformers_options(config):
    """The analytic model's options from a MindFormers training YAML, as
    ``ppb import mindformers-options`` reads it. Returns a dict: ``options``, ``stages``,
    ``data_parallel``, ``micro_batches``, ``chunks`` (``pp_interleave_num``), ``mtp_layers`` and
    ``warnings`` (each also a Python warning). Raises :class:`InvalidInput` as the command does.
    """
    return _imported(_ppb.mindformers_options(_os.fsdecode(config)))


def import_torchtitan_options(config, *, world_size=None, compute_capability=9):
    """The analytic model's options from a torchtitan training TOML, as
    ``ppb import torchtitan-options`` reads it (``world_size`` resolves a degree of -1). Returns a
    dict: ``options``, ``stages``, ``chunks``, ``micro_batches``, ``schedule`` (ppb's name, None
    where ppb has none), ``schedule_given``, ``layer_kind`` (every layer's recompute kind) with
    ``layer_kind_note``, and ``warnings`` (each also a Python warning).
    """
    return _imported(_ppb.torchtitan_options(_os.fsdecode(config), world_size,
                                             compute_capability))


def partition(model_desc=None, *, stages, memory_limit_mb=None, model="dryrun-lsq", dryrun=None,
              micro_batches=None, memory_margin_mb=0.0, memory_margin_sigma=0.0, kinds=None,
              recompute_rule="mindformers", schedule="1f1b", chunks=None, objective="auto",
              refine=False, fast=False, model_options=None, plugin_path=None,
              duplicate_tolerance=0.01, sapp_time_convention="hyper-parallel", comm_time=None,
              weight_grad_share=0.5, memory=None, device=None, cluster=None, device_tflops=None,
              tp_comm_overlap=False, overlap_grad_reduce=False, overlap_param_gather=False):
    """The optimal plan, as the ppb.partition/1 dict ``ppb partition --json`` prints.

    ``model_desc``: the SAPP layer file (times; groups of body layers). ``model``: a loaded
    :class:`Model` (fitted, or configured by its options), or a ``NAME[@VERSION]`` to load with
    ``model_options`` and fit to ``dryrun`` (a file, a dict or a :class:`DryRun`). The other
    arguments are ``ppb partition``'s options (``--memory-margin-mb`` is ``memory_margin_mb``,
    ...); ``micro_batches`` defaults to the dry-run file's. ``sapp_time_convention``: what the
    layer file's ``time`` means, ``"hyper-parallel"`` (today's SAPP: a layer's forward time) or
    ``"toolkit"`` (the older MindFormers toolkit: forward + backward). With chunks the plan is the
    local search's on the simulated iteration (``refine`` is accepted: it is the default;
    ``fast=True`` keeps the exact optimum of the estimate alone), and ``result["simulated"]``
    holds ``lower_bound`` (no plan within the memory limit simulates faster) and ``gap``
    (``(makespan - lower_bound) / makespan``); both are ``None`` under 1F1B. ``comm_time``
    (``--comm-time``): one point-to-point time for every stage boundary, or a list of one per
    boundary, in the layer file's unit; the plan then has ``iteration_breakdown``.
    ``weight_grad_share`` (``--weight-grad-share``): the zero-bubble schedules' W as a share of a
    layer's backward without recomputation, where the layer file gives no ``weight_grad_time``.

    Without ``model_desc`` the layers are timed from the FLOPs of the model shape
    ``model_options`` (the analytic model's options: a dict, JSON text or a file), in ms, at
    ``device_tflops`` (400 by default) or on ``device="H100"`` (a device of ``ppb devices``) or
    ``cluster`` (a ``ppb.cluster/1`` dict or file): its rate, its links for each layer's
    collectives and the transfers between stages (unless ``comm_time`` gives them), what its
    allocator can reserve as the limit unless ``memory_limit_mb`` is given; ``tp_comm_overlap``, ``overlap_grad_reduce``
    and ``overlap_param_gather`` are Megatron-LM's overlaps, and the plan then has
    ``data_parallel_replicas`` and ``data_parallel_sync_time`` (``ppb partition``'s
    ``--device``, ``--cluster``, ``--device-tflops`` and overlap flags). ``schedule=
    "combined-1f1b"`` is Megatron-LM's ``--overlap-moe-expert-parallel-comm``: the interleaved
    order, each MoE layer's expert all-to-all under another micro-batch's compute.

    ``memory`` (``--memory``): ``"reserved"`` plans against allocated memory plus the allocator's
    reserve fitted where the observations give ``reserved_mb``, ``"allocated"`` against the
    model's own; None (the default) is ``"reserved"`` when the fit has a reserve, as
    ``ppb partition`` does, and the plan's ``memory`` says which.

    Raises :class:`Infeasible` (with ``smallest_feasible_limit_mb``) when nothing fits.
    """
    if memory not in (None, "allocated", "reserved"):
        raise InvalidInput(f"memory: expected 'allocated' or 'reserved', got {memory!r}", "memory")
    # The shape that times the layers without a layer file, and the cluster they run on.
    shape_json, shape_source = ("", "model_options") if model_options is None or \
        model_desc is not None else _options(model_options, "model_options")
    cluster_json, cluster_source = ("", "cluster") if cluster is None else \
        _options(cluster, "cluster")
    owned = None
    if isinstance(model, Model):
        loaded = model
        if dryrun is not None:
            loaded.fit(dryrun, duplicate_tolerance)
    else:
        owned = loaded = load_model(model, model_options, plugin_path)
        if dryrun is not None:
            loaded.fit(dryrun, duplicate_tolerance)
    before = loaded.memory
    try:
        if memory is not None:
            loaded.memory = memory
        elif loaded.allocator_reserve is not None:
            loaded.memory = "reserved"
        return loaded._native.partition(
            "" if model_desc is None else _os.fsdecode(model_desc), stages,
            None if memory_limit_mb is None else float(memory_limit_mb), micro_batches,
            float(memory_margin_mb), float(memory_margin_sigma), list(kinds or []),
            recompute_rule, schedule, chunks, objective, bool(refine), bool(fast),
            sapp_time_convention, comm_time, float(weight_grad_share), shape_json, shape_source,
            device or "", cluster_json, cluster_source,
            None if device_tflops is None else float(device_tflops), bool(tp_comm_overlap),
            bool(overlap_grad_reduce), bool(overlap_param_gather))
    finally:
        if owned is not None:
            owned.close()
        else:
            loaded.memory = before


def simulate(plan, *, schedule=None, micro_batches=None, comm_time=None, timeline=None):
    """One iteration of a plan's pipeline schedule, timed: the ppb.simulation/1 dict
    ``ppb simulate PLAN --json`` prints, from the same library code.

    ``plan``: a ppb.partition/1 plan, as :func:`partition` returns it (a dict), as JSON text, or a
    file holding it (``ppb partition --json``'s output). ``schedule``, ``micro_batches`` and
    ``comm_time`` (one transfer time for every stage boundary, or a list of one per boundary, in
    the plan's time unit) replace the plan's own, as ``--schedule``, ``--micro-batches`` and
    ``--comm-time`` do. ``timeline``: a path to write the iteration's SVG picture to, as
    ``--timeline`` does.

    Raises :class:`InvalidInput` naming the JSON path of what is wrong in the plan, or the keyword
    (``InvalidInput.field``) whose value the plan's schedule cannot run.
    """
    text, source = _options(plan, "plan")
    document, svg = _ppb.simulate(text, source, schedule, micro_batches, comm_time,
                                  timeline is not None)
    if timeline is not None:
        with open(_os.fsdecode(timeline), "w", encoding="utf-8") as f:
            f.write(svg)
    return document


def _model_spec(model):
    """(NAME[@VERSION], options JSON, the options' source) of one model to compare: a name, a
    ``NAME=OPTIONS`` text as ``ppb compare --model`` takes it, or a (name, options) pair."""
    if isinstance(model, (tuple, list)) and len(model) == 2:
        spec, options = model
        text, source = _options(options, f"options of {spec}")
        return str(spec), text, source
    if isinstance(model, str):
        spec, eq, options = model.partition("=")
        if not eq:
            return spec, "{}", ""
        text, source = _options(options, f"options of {spec}")
        return spec, text, source
    raise TypeError("models: expected names ('table', 'dryrun-lsq@1', 'table=FILE') or (name, "
                    f"options) pairs, got {type(model).__name__}")


def compare(models, dryrun=None, *, partition=None, measured=None, cross_validate=False,
            plugin_path=None, duplicate_tolerance=0.01):
    """Several memory models' predictions of the same placements beside their measured memory: the
    ppb.compare/1 dict ``ppb compare --json`` prints, from the same library code.

    ``models``: the models to compare, each a ``NAME[@VERSION]``, a ``NAME=OPTIONS`` text as
    ``--model`` takes it (``"table=samples/data/llama70b-layers.json"``) or a ``(name, options)``
    pair (options a dict, JSON text or a file). The placements are the observations of ``dryrun``
    (a file, a dict or a :class:`DryRun`; the models that need a fit are fitted to it) and/or the
    stages of the plan ``partition`` (a ppb.partition/1 dict, JSON text or file), measured by
    ``measured``, a dry run of the plan (a file, a dict or a :class:`DryRun`: ``ppb import``'s
    output of its logs or snapshots). ``cross_validate``: fitted models predict each config of
    ``dryrun`` from a fit to the other configs only. Each prediction has the error against the
    measurement in MB and %, and ``summary`` each model's mean, RMS and largest error.

    A plan stage the measured run does not hold is said with a warning. Raises
    :class:`InvalidInput` (``field`` the keyword at fault) or :class:`PluginError`; a placement
    one model cannot predict keeps the reason in its cell.
    """
    if isinstance(models, str):
        models = [models]
    specs = [_model_spec(m) for m in models]
    run = None if dryrun is None else _dryrun(dryrun, duplicate_tolerance)
    of_plan = None if measured is None else _dryrun(measured, duplicate_tolerance)
    plan_text, plan_source = ("", "") if partition is None else _options(partition, "partition")
    document, notes = _ppb.compare(specs, run, plan_text, plan_source, of_plan,
                                   bool(cross_validate), _paths(plugin_path), _INSTALL_DIR)
    _warn_notes(notes)
    return document


def _warn_notes(notes):
    for note in notes:
        _warnings.warn(note, stacklevel=3)
