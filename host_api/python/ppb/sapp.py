"""ppb.sapp — SAPP's ``ComputeMemory``, answered by a ppb memory model.

SAPP, the public pipeline balancer, estimates per-layer memory from dry-run stages with its
``ComputeMemory`` class. Its home today is mindspore-ai/hyper-parallel
(``hyper_parallel/auto_parallel/sapp_ppb``); an older copy lives in MindFormers'
``toolkit/pipeline_balance``. This module is a drop-in for either: swap the import

    # from hyper_parallel.auto_parallel.sapp_ppb.utils.compute_memory import ComputeMemory
    # from toolkit.pipeline_balance.utils.compute_memory import ComputeMemory   (the older copy)
    from ppb.sapp import ComputeMemory

The values SAPP's own tests assert (hyper-parallel's
tests/ut/auto_parallel/sapp_ppb/test_compute_memory.py: six hand-made stages, mem.yaml,
mem_pp4.yaml, mem_lstsq.yaml) are reproduced by tests/python/test_sapp_compute_memory.py.

and the same constructor (``number_of_stage``, ``stages_a``, ``stages_b``; also the older
``stages_A``/``stages_B``) and getters (``get_memory_parameter()``, ``get_memory_activation(rec)``,
``get_memory_const()``, ``get_memory_head()``, ``get_memory_tail()``, ``recompute_considered_``)
are answered by the ``dryrun-lsq`` plugin (or the model named): one least-squares fit of every
stage of both configurations at once, with what the data cannot determine and the standard
errors (``report``, ``not_identifiable``, ``std_errors``).

Conventions, SAPP's:

- Stages are SAPP ``Stage`` objects, or anything with ``id_``, ``nb_stage_``, ``nb_layer_``,
  ``nb_layer_rec_`` (recompute type -> layers; a missing NONE is ``nb_layer_`` minus the others, as
  SAPP completes it) and ``memory_usage_`` (MB). Recompute types are SAPP's IntEnum members
  (NONE=0, SLCT=1, COMM=2, BOTH=3, FULL=4), plain ints or their names.
- A stage ``id_`` of an ``nb_stage_``-stage pipeline holds ``nb_stage_ - id_`` micro-batches in
  flight: SAPP's count (``Stage.get_index_memory_var``, and ``number_of_stage`` for the head),
  which is ppb's 1F1B count min(P - s, M) when the dry runs had at least P micro-batches.
- ``get_memory_head()`` and ``get_memory_tail()`` include the constant memory of every stage, as
  SAPP's do (its head is the first stage's memory less its layers'); ppb's ``head_mb`` and
  ``tail_mb`` exclude it. ``get_memory_const()`` is the constant itself, or None when the fit
  could not separate it (SAPP's None without its constant component); the head and tail then
  hold it.
- A value the observations do not determine is None, never 0.

Differences from SAPP: all stages of ``stages_a`` and ``stages_b`` are fitted together (SAPP
solves each configuration on its own and averages), any number of stages is used, the first and
last stages included, and ``recompute_considered_`` counts a type used in either configuration
(SAPP looks at ``stages_a`` only).
"""

import enum as _enum
import json as _json
import os as _os
import warnings as _warnings

import ppb as _ppb

__all__ = ["RecomputeType", "TYPE", "Stage", "ComputeMemory", "recompute_type"]


class RecomputeType(_enum.IntEnum):
    """SAPP's recompute types (its ``Recompute.TYPE``), equal and hashing equal to SAPP's own
    members, so that either indexes ``recompute_considered_``."""

    NONE = 0
    SLCT = 1
    COMM = 2
    BOTH = 3
    FULL = 4


TYPE = RecomputeType

# SAPP's recompute type -> ppb's kind name (ppb.KINDS is in the same order).
_KIND_NAMES = dict(zip(RecomputeType, _ppb.KINDS))


def recompute_type(value):
    """A recompute type from SAPP's IntEnum member, an int 0..4, SAPP's name ("SLCT") or ppb's
    ("select")."""
    if isinstance(value, str):
        if value.upper() in RecomputeType.__members__:
            return RecomputeType[value.upper()]
        if value.lower() in _ppb.KINDS:
            return RecomputeType(_ppb.KINDS.index(value.lower()))
    elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(RecomputeType):
        return RecomputeType(int(value))
    raise _ppb.InvalidInput(
        f"unknown recompute type {value!r} (expected NONE=0, SLCT=1, COMM=2, BOTH=3 or FULL=4, "
        "or ppb's none, select, comm, both, full)")


class Stage:
    """A dry-run stage in SAPP's shape, for callers without SAPP's own ``Stage``."""

    def __init__(self, sid, nb_stage, nb_layer, nb_layer_rec, memory_usage):
        self.id_ = sid
        self.nb_stage_ = nb_stage
        self.nb_layer_ = nb_layer
        self.nb_layer_rec_ = dict(nb_layer_rec)
        self.memory_usage_ = memory_usage

    def __repr__(self):
        return (f"Stage(id_={self.id_}, nb_stage_={self.nb_stage_}, nb_layer_={self.nb_layer_}, "
                f"memory_usage_={self.memory_usage_})")


def _observation(stage, config, index):
    """One SAPP stage as a ppb.dryrun/1 observation with SAPP's in-flight count."""
    where = f"stages_{config.lower()}[{index}]"
    try:
        sid, nb_stage = stage.id_, stage.nb_stage_
        nb_layer, given, memory = stage.nb_layer_, stage.nb_layer_rec_, stage.memory_usage_
    except AttributeError as e:
        raise _ppb.InvalidInput(f"{where}: not a SAPP stage ({e})") from None
    counts = [None] * len(RecomputeType)
    for key, n in dict(given).items():
        r = recompute_type(key)
        if counts[r] is not None:
            raise _ppb.InvalidInput(f"{where}: nb_layer_rec_ gives {r.name} twice")
        counts[r] = int(n)
    if counts[RecomputeType.NONE] is None:
        # SAPP's Stage completes NONE as the layers no other type holds.
        counts[RecomputeType.NONE] = int(nb_layer) - sum(n or 0 for n in counts)
    counts = [n or 0 for n in counts]
    if sum(counts) != nb_layer or min(counts) < 0:
        raise _ppb.InvalidInput(
            f"{where}: nb_layer_ is {nb_layer} but nb_layer_rec_ holds {counts} "
            "(NONE, SLCT, COMM, BOTH, FULL)")
    observation = {
        "config": config,
        "num_stages": nb_stage,
        "stage": sid,
        "layers": {_KIND_NAMES[r]: n for r, n in zip(RecomputeType, counts) if n},
        "peak_memory_mb": memory,
    }
    if isinstance(sid, int) and isinstance(nb_stage, int) and 0 <= sid < nb_stage:
        # SAPP's count; a stage outside its pipeline is left to the reader's message.
        observation["in_flight"] = nb_stage - sid
    return observation


class ComputeMemory:
    """SAPP's ``ComputeMemory``, fitted by a ppb memory model (see the module docstring).

    ``model``, ``model_options`` and ``plugin_path`` choose the model as :func:`ppb.load_model`
    does. The fit runs on the first getter (as SAPP computes lazily); ``force_recompute=True``
    refits from the stages as they are then.
    """

    def __init__(self, number_of_stage, stages_a=None, stages_b=None, *, stages_A=None,
                 stages_B=None, model="dryrun-lsq", model_options=None, plugin_path=None):
        if stages_A is not None:
            if stages_a is not None:
                raise TypeError("give stages_a or stages_A, not both")
            stages_a = stages_A
        if stages_B is not None:
            if stages_b is not None:
                raise TypeError("give stages_b or stages_B, not both")
            stages_b = stages_B
        self.number_of_stage_ = number_of_stage
        self.stages_a = list(stages_a or [])
        self.stages_b = list(stages_b or [])
        self._spec = model
        self._options = model_options
        self._plugin_path = plugin_path
        self._model = None
        self._report = None

    # ---- SAPP's older names ----
    @property
    def stages_A(self):
        return self.stages_a

    @property
    def stages_B(self):
        return self.stages_b

    def set_stages_a(self, stages):
        self.stages_a = list(stages or [])
        self._model = None

    def set_stages_b(self, stages):
        self.stages_b = list(stages or [])
        self._model = None

    # ---- the fit ----
    @property
    def observations(self):
        """The stages as the ppb.dryrun/1 document the model is fitted to."""
        observations = [_observation(s, "A", i) for i, s in enumerate(self.stages_a)]
        observations += [_observation(s, "B", i) for i, s in enumerate(self.stages_b)]
        return {"format": "ppb.dryrun/1", "num_stages": self.number_of_stage_,
                "observations": observations}

    def _fit(self, force_recompute=False):
        if self._model is None or force_recompute:
            model = _ppb.load_model(self._spec, self._options, self._plugin_path)
            if len(model.groups) > 1:
                raise _ppb.InvalidInput(
                    f"memory model '{model.name}' has {len(model.groups)} groups of body layers "
                    f"({', '.join(model.groups)}); SAPP's ComputeMemory knows one")
            if model.needs_fit:
                model.fit(self.observations)
            self._model = model
            self._report = model.report
        return self._report

    @property
    def model(self):
        """The fitted :class:`ppb.Model`."""
        self._fit()
        return self._model

    @property
    def report(self):
        """The ppb.fit/1 document of the fit (``ppb fit --json``)."""
        return self._fit()

    @property
    def not_identifiable(self):
        """What the stages cannot determine, why, and which dry run would: a list of dicts
        ``{"parameter", "reason", "suggestion"}``."""
        return self._fit()["diagnostics"]["not_identifiable"]

    @property
    def std_errors(self):
        """Standard error in MB of each fitted parameter (ppb's names; empty when the fit is
        exactly determined)."""
        return self._fit()["diagnostics"]["std_errors_mb"]

    def _parameters(self, force_recompute=False):
        return self._fit(force_recompute)["parameters"]

    def _constant_in_ends(self, parameters):
        """The constant as SAPP's head and tail hold it: the fitted one, 0 when the fit folded it
        into the other parameters, None when undetermined."""
        if parameters["const_mb"] is not None:
            return parameters["const_mb"]
        return 0.0 if self._report["diagnostics"].get("const_folded") else None

    # ---- SAPP's getters ----
    def get_memory_parameter(self, force_recompute=False):
        """Parameter memory of one body layer (MB), or None."""
        return self._parameters(force_recompute)["param_per_layer_mb"]

    def get_memory_activation(self, rec, force_recompute=False):
        """Activation memory of one body layer of recompute type ``rec`` per micro-batch in
        flight (MB), or None when that type was not used or is not determined."""
        kind = _KIND_NAMES[recompute_type(rec)]
        return self._parameters(force_recompute)["activation_mb"][kind]

    def get_memory_const(self, force_recompute=False):
        """Memory of every stage that does not depend on its layers (MB), or None when the fit
        could not separate it from the head, tail and layers."""
        return self._parameters(force_recompute)["const_mb"]

    def get_memory_head(self, force_recompute=False):
        """Memory of the first stage beyond its layers, the constant included (MB), or None."""
        parameters = self._parameters(force_recompute)
        constant = self._constant_in_ends(parameters)
        if parameters["head_mb"] is None or constant is None:
            return None
        return parameters["head_mb"] + constant

    def get_memory_tail(self, force_recompute=False):
        """Memory of the last stage beyond its layers, the constant included (MB), or None."""
        parameters = self._parameters(force_recompute)
        constant = self._constant_in_ends(parameters)
        if parameters["tail_mb"] is None or constant is None:
            return None
        return parameters["tail_mb"] + constant

    @property
    def recompute_considered_(self):
        """Recompute type -> whether any stage uses it (NONE always, as SAPP)."""
        considered = {r: r == RecomputeType.NONE for r in RecomputeType}
        for observation in self.observations["observations"]:
            for kind in observation["layers"]:
                considered[RecomputeType(_ppb.KINDS.index(kind))] = True
        return considered

    # SAPP's attributes, read through the fit.
    @property
    def memory_parameter_(self):
        return self.get_memory_parameter()

    @property
    def memory_activation_rec_(self):
        return {r: self.get_memory_activation(r) for r in RecomputeType}

    @property
    def memory_const_(self):
        return self.get_memory_const()

    @property
    def memory_head_(self):
        return self.get_memory_head()

    @property
    def memory_tail_(self):
        return self.get_memory_tail()

    # ---- SAPP's layer file ----
    def write_layer_file(self, path, model_desc=None, name="model", fold_negative_constant=False):
        """Writes the fit as a SAPP layer file (``ppb fit --export-sapp``): BODY memory_parameter
        and the activation per recompute type, HEAD and TAIL memory_parameter without the
        constant, and stage_const_mem, the constant SAPP adds to every stage. ``model_desc``: a
        SAPP layer file whose entries, names and times are kept. Returns the JSON text."""
        self._fit()
        text, warnings = self._model._native.sapp_layer_file(
            None if model_desc is None else _os.fsdecode(model_desc), name,
            bool(fold_negative_constant))
        for warning in warnings:
            _warnings.warn(warning, stacklevel=2)
        if path is not None:
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
        return text

    def layer_file(self, model_desc=None, name="model", fold_negative_constant=False):
        """The SAPP layer file of the fit as a dict (see :meth:`write_layer_file`)."""
        return _json.loads(self.write_layer_file(None, model_desc, name, fold_negative_constant))
