#!/usr/bin/env python3
"""Python's overhead over the C API on the GPU: fzg.compress and fzg.decompress of a cupy
array resident on the device, timed with CUDA events on one stream (warm-up, then the median
of --repeat calls), against fzg_capi_device_timing's median for the same calls in C on the
same field. Prints a table (and --json one JSON line); never decides pass or fail.

  python3 python/bench/device_overhead.py --fzg build/fzg --capi build/fzg_capi_device_timing \\
          [--dims 500x500x400] [--rel 1e-3] [--repeat 20]
(PYTHONPATH=build/python for a build tree's package.)"""
import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import tempfile

import cupy
import numpy as np

import fzg


def event_median(call, stream, repeat, warm_up=3):
    """Milliseconds between events around call() on `stream`; its result is dropped after the
    second event, as the C side frees its buffer after its own."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for i in range(warm_up + repeat):
        start.record(stream)
        result = call()
        stop.record(stream)
        stop.synchronize()
        del result
        if i >= warm_up:
            times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fzg", required=True, help="the fzg command (makes the field)")
    parser.add_argument("--capi", required=True, help="fzg_capi_device_timing (the C baseline)")
    parser.add_argument("--dims", default="500x500x400", help="fastest first (default 100 M values)")
    parser.add_argument("--rel", type=float, default=1e-3)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", action="store_true", help="also print cProfile's top functions")
    args = parser.parse_args()
    nx, ny, nz = (int(d) for d in args.dims.split("x"))

    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "field.f32")
        subprocess.run([args.fzg, "gen", "--kind", "turbulent", "-t", "f32", "-l", args.dims, "-o", path], check=True,
                       stdout=subprocess.DEVNULL)
        capi = json.loads(subprocess.run([args.capi, path, str(nx), str(ny), str(nz), str(args.rel),
                                          str(args.repeat)], check=True, capture_output=True, text=True).stdout)
        field = cupy.asarray(np.fromfile(path, np.float32).reshape(nz, ny, nx))

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        file = fzg.compress(field, rel=args.rel, stream=stream)
        out = cupy.empty_like(field)
        python = {
            "compress_ms": event_median(lambda: fzg.compress(field, rel=args.rel, stream=stream), stream, args.repeat),
            "decompress_ms": event_median(lambda: fzg.decompress(file, stream=stream), stream, args.repeat),
            "decompress_out_ms": event_median(lambda: fzg.decompress(file, out=out, stream=stream), stream,
                                              args.repeat),
            "info_ms": event_median(lambda: fzg.info(file), stream, args.repeat),
        }
        # The binding alone (the extension's call of fzg_compress_to_buffer, settings made once):
        # what is left of the overhead without the package's Python code.
        ctx = fzg._context(None)
        ctx.set_bound(2, args.rel)
        ctx.set_device(2)
        ctx.set_stream(stream.ptr)
        ctx.set_locations(1, 1)
        pointer, dims = field.data.ptr, list(field.shape[::-1])
        python["binding_compress_ms"] = event_median(lambda: ctx.compress_to_buffer(pointer, 1, dims), stream,
                                                     args.repeat)
        if args.profile:  # where the host time of the package's calls goes
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.repeat):
                fzg.decompress(fzg.compress(field, rel=args.rel, stream=stream), stream=stream)
                stream.synchronize()
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(18)
    stream.synchronize()
    report = {"values": field.size, "file_bytes": int(file.size), "repeat": args.repeat, "capi": capi,
              "python": python,
              "overhead_compress": python["compress_ms"] / capi["compress_ms"] - 1,
              "overhead_compress_vs_to_buffer": python["compress_ms"] / capi["compress_to_buffer_ms"] - 1,
              "overhead_decompress": python["decompress_ms"] / capi["decompress_ms"] - 1,
              "overhead_decompress_out": python["decompress_out_ms"] / capi["decompress_ms"] - 1}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{field.size / 1e6:.0f} M f32 values, rel {args.rel}, file {file.size / 1e6:.1f} MB, median of "
          f"{args.repeat} (CUDA events)")
    print(f"{'call':<24}{'C API ms':>10}{'Python ms':>11}{'overhead':>10}")
    for name, python_key, capi_key in (("compress", "compress_ms", "compress_ms"),
                                       ("compress (C: to_buffer)", "compress_ms", "compress_to_buffer_ms"),
                                       ("decompress", "decompress_ms", "decompress_ms"),
                                       ("decompress(out=)", "decompress_out_ms", "decompress_ms")):
        print(f"{name:<24}{capi[capi_key]:>10.3f}{python[python_key]:>11.3f}"
              f"{100 * (python[python_key] / capi[capi_key] - 1):>9.1f}%")
    print(f"fzg.info of the device file alone: {python['info_ms']:.3f} ms; the binding's compress_to_buffer "
          f"alone: {python['binding_compress_ms']:.3f} ms")


if __name__ == "__main__":
    main()
