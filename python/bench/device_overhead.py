#!/usr/bin/env python3
"""Python's overhead over the C API on the GPU: fzg.compress, fzg.decompress and
fzg.decompress(out=) of a cupy array resident on the device against the C call each one makes,
timed the same way: CUDA events on one stream around the call, warm-up, then the median of
--repeat calls. Prints a table (and --json one JSON line); never decides pass or fail.

The C calls are made in this process, through ctypes, on the C API the extension itself
exports (fzg_compress_to_buffer, fzg_decompress_to_buffer, fzg_decompress into the same
`out`), interleaved with the package's calls (and the extension's methods alone) in rotating
order: every side sees the same clocks, memory pool and helper threads. (Separate processes,
as fzg_capi_device_timing gives, drifted by up to 15 % between runs; its medians are printed
too.)

  python3 python/bench/device_overhead.py --fzg build/fzg --capi build/fzg_capi_device_timing \\
          [--dims 500x500x400] [--rel 1e-3] [--repeat 30]
(PYTHONPATH=build/python for a build tree's package.)"""
import argparse
import cProfile
import ctypes
import json
import os
import pstats
import statistics
import subprocess
import tempfile

import cupy
import numpy as np

import fzg
from fzg import _fzg

FZG_F32, FZG_REL, FZG_DEVICE_CUDA, FZG_DEVICE_MEMORY = 1, 2, 2, 1


class FileInfo(ctypes.Structure):  # fzg_file_info
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_size_t * 3),
                ("original_bytes", ctypes.c_size_t), ("mode", ctypes.c_int), ("requested_bound", ctypes.c_double),
                ("absolute_bound", ctypes.c_double), ("format_version", ctypes.c_uint16)]


class CApi:
    """The C API of the extension module (the same fzg the package calls), one context set
    up as the C baseline's: the CUDA device, device memory for field and file, `stream`."""

    def __init__(self, stream, rel):
        lib = self.lib = ctypes.CDLL(_fzg.__file__)
        p, size, pp = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)
        lib.fzg_create.restype = p
        lib.fzg_last_error.restype, lib.fzg_last_error.argtypes = ctypes.c_char_p, [p]
        for name in ("fzg_set_device", "fzg_set_stream", "fzg_set_locations", "fzg_set_bound"):
            getattr(lib, name).restype = ctypes.c_int
        lib.fzg_set_device.argtypes = [p, ctypes.c_int]
        lib.fzg_set_stream.argtypes = [p, p]
        lib.fzg_set_locations.argtypes = [p, ctypes.c_int, ctypes.c_int]
        lib.fzg_set_bound.argtypes = [p, ctypes.c_int, ctypes.c_double]
        lib.fzg_compress_to_buffer.argtypes = [p, p, ctypes.c_int, ctypes.POINTER(size), ctypes.c_int, pp]
        lib.fzg_decompress_to_buffer.argtypes = [p, p, size, pp, ctypes.POINTER(FileInfo)]
        lib.fzg_decompress.argtypes = [p, p, size, p, size]
        lib.fzg_buffer_free.argtypes = [p]
        for name in ("fzg_compress_to_buffer", "fzg_decompress_to_buffer", "fzg_decompress"):
            getattr(lib, name).restype = ctypes.c_int
        self.ctx = lib.fzg_create()
        self.check(lib.fzg_set_device(self.ctx, FZG_DEVICE_CUDA))
        self.check(lib.fzg_set_bound(self.ctx, FZG_REL, rel))
        self.check(lib.fzg_set_locations(self.ctx, FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY))
        self.check(lib.fzg_set_stream(self.ctx, stream.ptr))
        self.buffer, self.info = ctypes.c_void_p(), FileInfo()

    def check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.fzg_last_error(self.ctx).decode())

    # Addresses and sizes are made before the timed calls, as a C caller has them.
    def compress_to_buffer(self, field, dims):
        self.check(self.lib.fzg_compress_to_buffer(self.ctx, field, FZG_F32, dims, 3, ctypes.byref(self.buffer)))
        return self.buffer.value

    def decompress_to_buffer(self, file, size):
        self.check(self.lib.fzg_decompress_to_buffer(self.ctx, file, size, ctypes.byref(self.buffer),
                                                     ctypes.byref(self.info)))
        return self.buffer.value

    def decompress(self, file, size, out, capacity):
        self.check(self.lib.fzg_decompress(self.ctx, file, size, out, capacity))

    def free(self, buffer):
        self.lib.fzg_buffer_free(buffer)


def timed(call, stream, start, stop, release=None):
    """Milliseconds between events around call() on `stream`; what it returns is released
    after the second event (a C buffer freed, a Python array dropped), outside the time."""
    start.record(stream)
    result = call()
    stop.record(stream)
    stop.synchronize()
    if release:
        release(result)
    return cupy.cuda.get_elapsed_time(start, stop)


def interleaved_medians(calls, stream, repeat, warm_up=3):
    """{name: ([median per side], [median per side of its difference from side 0 in the same
    round])}: each round times every side of every call back to back (C API, binding,
    package), in an order rotated from round to round. The paired differences cancel the
    GPU's drift from round to round (tens of us on a 1 ms call), which the sides' own medians
    keep."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = {name: [[] for _ in sides] for name, sides in calls.items()}
    for i in range(warm_up + repeat):
        for name, sides in calls.items():
            for k in range(len(sides)):
                side = (i + k) % len(sides)
                call, release = sides[side]
                ms = timed(call, stream, start, stop, release)
                if i >= warm_up:
                    samples[name][side].append(ms)
    return {name: ([statistics.median(times) for times in sides],
                   [statistics.median(t - c for t, c in zip(times, sides[0])) for times in sides])
            for name, sides in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fzg", required=True, help="the fzg command (makes the field)")
    parser.add_argument("--capi", help="fzg_capi_device_timing (the C baseline in a process of its own)")
    parser.add_argument("--dims", default="500x500x400", help="fastest first (default 100 M values)")
    parser.add_argument("--rel", type=float, default=1e-3)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true", help="also print cProfile's top functions")
    args = parser.parse_args()
    nx, ny, nz = (int(d) for d in args.dims.split("x"))

    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "field.f32")
        subprocess.run([args.fzg, "gen", "--kind", "turbulent", "-t", "f32", "-l", args.dims, "-o", path], check=True,
                       stdout=subprocess.DEVNULL)
        process = {}
        if args.capi:
            process = json.loads(subprocess.run([args.capi, path, str(nx), str(ny), str(nz), str(args.rel),
                                                 str(args.repeat)], check=True, capture_output=True, text=True).stdout)
        field = cupy.asarray(np.fromfile(path, np.float32).reshape(nz, ny, nx))

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        c = CApi(stream, args.rel)
        file = fzg.compress(field, rel=args.rel, stream=stream)
        out = cupy.empty_like(field)
        # The extension's methods alone, settings made once: what the package's Python adds on top.
        binding = _fzg.Context()
        binding.set_default_config()
        binding.set_bound(FZG_REL, args.rel)
        binding.set_device(FZG_DEVICE_CUDA)
        binding.set_stream(stream.ptr)
        binding.set_locations(FZG_DEVICE_MEMORY, FZG_DEVICE_MEMORY)
        dims = list(field.shape[::-1])
        c_dims = (ctypes.c_size_t * 3)(*dims)
        field_ptr, file_ptr, out_ptr = field.data.ptr, file.data.ptr, out.data.ptr
        file_size, out_size = int(file.size), int(out.nbytes)
        drop = lambda result: None  # a Python result goes with its last reference
        medians = interleaved_medians({
            "compress": ((lambda: c.compress_to_buffer(field_ptr, c_dims), c.free),
                         (lambda: binding.compress_to_buffer(field_ptr, FZG_F32, dims), drop),
                         (lambda: fzg.compress(field, rel=args.rel, stream=stream), drop)),
            "decompress": ((lambda: c.decompress_to_buffer(file_ptr, file_size), c.free),
                           (lambda: binding.decompress_to_buffer(file_ptr, file_size, True), drop),
                           (lambda: fzg.decompress(file, stream=stream), drop)),
            "decompress(out=)": ((lambda: c.decompress(file_ptr, file_size, out_ptr, out_size), None),
                                 (lambda: binding.decompress(file_ptr, file_size, out_ptr, out_size), None),
                                 (lambda: fzg.decompress(file, out=out, stream=stream), None)),
        }, stream, args.repeat)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        info_ms = statistics.median(timed(lambda: fzg.info(file), stream, start, stop) for _ in range(args.repeat))
        if args.profile:  # where the host time of the package's calls goes
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.repeat):
                fzg.decompress(fzg.compress(field, rel=args.rel, stream=stream), out=out, stream=stream)
                fzg.decompress(file, stream=stream)
                stream.synchronize()
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(15)
    stream.synchronize()
    c_calls = {"compress": "fzg_compress_to_buffer", "decompress": "fzg_decompress_to_buffer",
               "decompress(out=)": "fzg_decompress"}
    report = {"values": field.size, "file_bytes": int(file.size), "repeat": args.repeat,
              "medians_ms": {name: dict(zip(("c", "binding", "python"), sides)) for name, (sides, _) in medians.items()},
              "overhead": {name: sides[2] / sides[0] - 1 for name, (sides, _) in medians.items()},
              "paired_overhead": {name: paired[2] / sides[0] for name, (sides, paired) in medians.items()},
              "info_ms": info_ms, "capi_process": process}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{field.size / 1e6:.0f} M f32 values, rel {args.rel}, file {file.size / 1e6:.1f} MB, median of "
          f"{args.repeat} (CUDA events; C, binding and package interleaved)")
    print(f"{'call':<18}{'C API call':<26}{'C ms':>8}{'binding ms':>12}{'Python ms':>11}{'overhead':>10}"
          f"{'paired':>9}")
    for name, ((cm, bm, pm), (_, _, paired)) in medians.items():
        print(f"{name:<18}{c_calls[name]:<26}{cm:>8.3f}{bm:>12.3f}{pm:>11.3f}{100 * (pm / cm - 1):>9.1f}%"
              f"{100 * paired / cm:>8.1f}%")
    print("(overhead: the medians' ratio; paired: the median of Python - C within a round, over C's median)")
    print(f"fzg.info of the device file alone: {info_ms:.3f} ms (what reading it before fzg_decompress added)")
    if process:
        print("fzg_capi_device_timing (its own process): " +
              ", ".join(f"{k} {v:.3f} ms" for k, v in process.items() if k.endswith("_ms")))


if __name__ == "__main__":
    main()
