#!/usr/bin/env python3
"""A ppb host in plain Python with ctypes, for hosts that cannot use the ppb module.

Loads a plugin file, finds its entry point, fits it to a ppb.dryrun/1 file (one chunk per stage,
1F1B) and predicts one stage:

    samples/python/ctypes_host.py build/lib/ppb/plugins/ppb-dryrun-lsq-1.0.0.so \\
        samples/data/llama70b-pp8-dryrun.json 3 select=9,full=1

The entry point is a variable (a Boost.DLL alias) named ppb_memory_model_v<ABI>_<API>, the
plugin's own ABI major and API minor (`nm -D --defined-only` lists it), whose value is the address
of its ppb_memory_model_api table (host_api/plugin_api/include/ppb/abi.h). The structures below
mirror abi.h up to API 1.2 (it uses nothing newer); a host reads a field only when the table's api_minor and struct_size
both say it is there. Unlike the ppb module this does none of the host library's checks (file
permissions, the ELF symbol table before loading, the values a plugin returns).
"""

import ctypes
import json
import sys

ABI_MAJOR = 1
API_MINOR = 4  # the newest API minor this host knows
KINDS = ("none", "select", "comm", "both", "full")


class Chunk(ctypes.Structure):
    _fields_ = [("layers", ctypes.c_uint32 * 5), ("in_flight", ctypes.c_uint32)]


class Placement(ctypes.Structure):
    _fields_ = [("num_stages", ctypes.c_uint32), ("stage", ctypes.c_uint32),
                ("num_chunks", ctypes.c_uint32), ("chunks", ctypes.POINTER(Chunk))]


class Observation(ctypes.Structure):
    _fields_ = [("placement", Placement), ("peak_memory_mb", ctypes.c_double)]


Status = ctypes.c_int32
Model = ctypes.c_void_p


class MemoryModelApi(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32), ("abi_major", ctypes.c_uint32),
        ("api_minor", ctypes.c_uint32), ("kinds", ctypes.c_uint32), ("flags", ctypes.c_uint32),
        ("name", ctypes.c_char_p), ("version", ctypes.c_char_p),
        ("description", ctypes.c_char_p), ("build_id", ctypes.c_char_p),
        ("create", ctypes.CFUNCTYPE(Status, ctypes.c_char_p, ctypes.POINTER(Model))),
        ("destroy", ctypes.CFUNCTYPE(None, Model)),
        ("fit", ctypes.CFUNCTYPE(Status, Model, ctypes.POINTER(Observation), ctypes.c_size_t)),
        ("predict", ctypes.CFUNCTYPE(Status, Model, ctypes.POINTER(Placement),
                                     ctypes.POINTER(ctypes.c_double))),
        ("predict_batch", ctypes.c_void_p),
        ("parameters", ctypes.c_void_p),
        ("report", ctypes.CFUNCTYPE(Status, Model, ctypes.POINTER(ctypes.c_char_p))),
        ("last_error", ctypes.CFUNCTYPE(ctypes.c_char_p)),
        ("options_help", ctypes.c_char_p),  # API 1.1
        ("predict_std_error", ctypes.CFUNCTYPE(Status, Model, ctypes.POINTER(Placement),
                                               ctypes.POINTER(ctypes.c_double))),  # API 1.2
    ]


def load_table(path):
    """The plugin's table: the entry point of the highest API minor of ABI 1 it exports."""
    lib = ctypes.CDLL(path)
    for minor in range(API_MINOR, -1, -1):
        try:
            address = ctypes.c_void_p.in_dll(lib, f"ppb_memory_model_v{ABI_MAJOR}_{minor}").value
        except ValueError:
            continue
        table = ctypes.cast(address, ctypes.POINTER(MemoryModelApi)).contents
        if table.abi_major != ABI_MAJOR or table.struct_size < ctypes.sizeof(Chunk):
            raise RuntimeError(f"{path}: table of ABI {table.abi_major}, not {ABI_MAJOR}")
        return lib, table
    raise RuntimeError(f"{path}: no ppb_memory_model_v{ABI_MAJOR}_<minor> entry point")


def check(table, status, call):
    if status != 0:
        raise RuntimeError(f"{call}: status {status}: {table.last_error().decode()}")


def placement(num_stages, stage, layers, in_flight):
    chunk = Chunk((ctypes.c_uint32 * 5)(*(layers.get(k, 0) for k in KINDS)), in_flight)
    chunks = (Chunk * 1)(chunk)
    return Placement(num_stages, stage, 1, chunks), chunks  # keep the chunks alive


def main(plugin, dryrun_file, stage, layer_items):
    _lib, table = load_table(plugin)  # the library stays loaded while _lib lives
    model = Model()
    check(table, table.create(b"{}", ctypes.byref(model)), "create")
    try:
        with open(dryrun_file, encoding="utf-8") as f:
            dryrun = json.load(f)
        keep = []
        observations = (Observation * len(dryrun["observations"]))()
        for i, o in enumerate(dryrun["observations"]):
            p = o.get("num_stages", dryrun.get("num_stages"))
            m = o.get("micro_batches", dryrun.get("micro_batches"))
            # ppb.dryrun/1's default: the 1F1B count min(p - s, m), or p - s without m.
            in_flight = o.get("in_flight", min(p - o["stage"], m) if m else p - o["stage"])
            view, chunks = placement(p, o["stage"], o["layers"], in_flight)
            keep.append(chunks)
            observations[i] = Observation(view, o["peak_memory_mb"])
        check(table, table.fit(model, observations, len(observations)), "fit")
        layers = {k: int(n) for k, n in (item.split("=") for item in layer_items.split(","))}
        p, m = dryrun["num_stages"], dryrun.get("micro_batches")
        view, _chunks = placement(p, stage, layers, min(p - stage, m) if m else p - stage)
        out = ctypes.c_double()
        check(table, table.predict(model, ctypes.byref(view), ctypes.byref(out)), "predict")
        print(f"{table.name.decode()} {table.version.decode()} (plugin API {table.abi_major}."
              f"{table.api_minor}): stage {stage} of {p}: {out.value!r} MB")
    finally:
        table.destroy(model)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(f"usage: {sys.argv[0]} PLUGIN.so DRYRUN.json STAGE KIND=N[,KIND=N...]")
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
