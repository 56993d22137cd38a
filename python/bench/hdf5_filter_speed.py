#!/usr/bin/env python3
"""The HDF5 filter's write speed against `fzg compress` on the same bytes, on the CPU: a raw
f32 field written by h5py as a chunked dataset through fzg.hdf5.Fzg, and by the fzg command,
with the same absolute bound (rel x the field's range: the filter's rel would apply per
chunk). Wall time, median of --repeat; the field is read into memory before h5py's timing
(the command reads it from the page cache). Prints a table; never decides pass or fail.

  PYTHONPATH=build/python python3 python/bench/hdf5_filter_speed.py --fzg build/fzg \\
      --field /tmp/field.f32 --dims 256x256x4096 --chunks 64,256,256 [--rel 1e-3] [--repeat 3]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import h5py
import numpy as np

import fzg.hdf5


def median_seconds(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fzg", required=True)
    parser.add_argument("--field", required=True, help="raw f32, x fastest")
    parser.add_argument("--dims", required=True, help="fastest first, as fzg's -l")
    parser.add_argument("--chunks", default="64,256,256", help="HDF5 chunk shape, slowest first")
    parser.add_argument("--rel", type=float, default=1e-3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    args = parser.parse_args()
    shape = tuple(int(d) for d in reversed(args.dims.split("x")))
    chunks = tuple(int(c) for c in args.chunks.split(","))
    field = np.fromfile(args.field, np.float32).reshape(shape)
    bound = args.rel * float(field.max() - field.min())
    gb = field.nbytes / 1e9

    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        fzg_file, h5_file, plain_file = (os.path.join(work, name) for name in ("f.fzg", "f.h5", "plain.h5"))
        command = [args.fzg, "compress", "-i", args.field, "-t", "f32", "-l", args.dims, "-m", "abs", "-e",
                   repr(bound), "--device", "cpu", "-o", fzg_file]
        cli = median_seconds(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                                                         stderr=subprocess.DEVNULL), args.repeat)

        def write(path, **settings):
            with h5py.File(path, "w") as f:
                f.create_dataset("field", data=field, chunks=chunks, **settings)

        filtered = median_seconds(lambda: write(h5_file, **fzg.hdf5.Fzg(abs=bound)), args.repeat)
        plain = median_seconds(lambda: write(plain_file), args.repeat)
        with h5py.File(h5_file) as f:
            stored = f["field"].id.get_storage_size()
            worst = max(float(np.abs(f["field"][z:z + chunks[0]] - field[z:z + chunks[0]]).max())
                        for z in range(0, shape[0], chunks[0]))
        cli_bytes = os.path.getsize(fzg_file)

    print(f"{gb:.2f} GB f32 field {shape}, chunks {chunks}, abs {bound:.4g}, median of {args.repeat}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'writer':<34}{'seconds':>9}{'GB/s':>8}{'ratio':>8}")
    print(f"{'fzg compress (CLI, one file)':<34}{cli:>9.3f}{gb / cli:>8.2f}{field.nbytes / cli_bytes:>8.2f}")
    print(f"{'h5py + fzg filter':<34}{filtered:>9.3f}{gb / filtered:>8.2f}{field.nbytes / stored:>8.2f}")
    print(f"{'h5py, no filter':<34}{plain:>9.3f}{gb / plain:>8.2f}{1:>8.2f}")
    print(f"filter / CLI speed: {cli / filtered:.2f}x; max error read back {worst:.4g} (bound {bound:.4g})")


if __name__ == "__main__":
    main()
