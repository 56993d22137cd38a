#!/usr/bin/env python3
"""GPULZ's ratio against the byte-oriented LZ coders that nvCOMP ships (LZ4 and Snappy) on the
same bytes: the u16 Lorenzo codes fzg makes of a field (#17's measure, "ratio of the code
bytes"). The codes come from fzg itself (a graph that stores them as they are); LZ4 and Snappy
are the reference CPU libraries (PyPI's lz4 and python-snappy) on 64 KiB chunks, nvCOMP's
default chunk, whose formats nvCOMP's GPU coders share (so their ratio is nvCOMP's to within
its chunking); GPULZ's ratio is the code bytes over its stream (lz.out), table included.

  python3 scripts/lz-ratio.py [--fzg build/fzg] [--rel 1e-2,1e-3,1e-4]
                              [--gpulz 2048:64:2,8192:255:1:11] [FIELD.f32:DIMS ...]

With no fields: a 256^3 power-law field (../shared/tools/gen_field.py, slope 11/3, the kind of
#17's measure and of scripts/bench-gpulz.sh's p100), fzg's turbulent 256^3 and the real
fields of ../shared/datasets (with their fill values). --gpulz lists chunk:window:symbol
settings, each a column (the first is configs/gpulz.json's), a fourth field the offset bits (11:
wide matches). Ratios depend on the bytes alone, so any machine measures them: the CPU and GPU
write the same files.

--dump DIR writes each field's codes there too (bench/gpulz_dict_model.cc reads them).
--reach prints, in place of the GPULZ columns, how much of a coder's ratio is its reach: LZ4 on
chunks of 32 KiB, 2 KiB, and 2 KiB each also matching into one static dictionary (the codes'
first 16 KiB, counted once, coded as a chunk of its own)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from shared_datasets import FOLDER, shared_fields  # noqa: E402

try:
    import lz4.block
    import snappy
except ImportError as e:
    sys.exit("lz-ratio.py: needs PyPI's lz4 and python-snappy (pip install lz4 python-snappy): %s" % e)

NVCOMP_CHUNK = 65536


def lz4_block(data, **options):
    return lz4.block.compress(data, store_size=False, **options)


def chunked_ratio(data, code, chunk=NVCOMP_CHUNK):
    coded = sum(len(code(data[i:i + chunk])) for i in range(0, len(data), chunk))
    return len(data) / coded


def with_dictionary(data, chunk, dictionary_bytes):
    """LZ4 on `chunk`-byte chunks of data past its first `dictionary_bytes`, each chunk matching
    into those (LZ4's dict), plus that dictionary coded once."""
    dictionary = data[:dictionary_bytes]
    coded = len(lz4_block(dictionary))
    for i in range(dictionary_bytes, len(data), chunk):
        coded += len(lz4_block(data[i:i + chunk], dict=dictionary))
    return len(data) / coded


def run(*args):
    done = subprocess.run([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        sys.exit("lz-ratio.py: %s failed: %s" % (" ".join(map(str, args[:2])), done.stderr.strip()))


def stream_parts(fzg, path, name):
    """Stream `name`'s record in each chunk, in turn (`fzg info --json`: offset, size_bytes)."""
    info = json.loads(subprocess.run([fzg, "info", "--json", path], check=True, capture_output=True).stdout)
    return [s for c in info["chunks"] for s in c["streams"] if s["name"] == name]


def stream_bytes(fzg, path, name):
    blob = open(path, "rb").read()
    return b"".join(blob[s["offset"]:s["offset"] + s["size_bytes"]] for s in stream_parts(fzg, path, name))


def write_config(path, stages, store):
    json.dump({"name": os.path.basename(path)[:-5], "description": "lz-ratio.py", "stages": stages,
               "store": store}, open(path, "w"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fields", nargs="*", help="FIELD.f32:DIMS (fastest first), optionally :fill=V")
    ap.add_argument("--fzg", default=os.path.join(here, "..", "build", "fzg"))
    ap.add_argument("--rel", default="1e-2,1e-3,1e-4")
    ap.add_argument("--gpulz", default="2048:64:2,8192:255:1,8192:255:1:11",
                    help="chunk:window:symbol[:offset_bits], comma separated")
    ap.add_argument("--reach", action="store_true", help="LZ4 by chunk and with a static dictionary instead of GPULZ")
    ap.add_argument("--dump", metavar="DIR", help="also write each field's codes to DIR/codes_FIELD_REL.bin "
                                                   "(for bench/gpulz_dict_model.cc)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        compare(args, work)


def compare(args, work):
    fields = []
    for spec in args.fields:
        parts = spec.split(":")
        fill = [p[5:] for p in parts[2:] if p.startswith("fill=")]
        fields.append((os.path.basename(parts[0]).split("_")[0].split(".")[0], parts[0], parts[1], fill))
    if not fields:
        gen = os.path.join(FOLDER, "..", "tools", "gen_field.py")
        run(sys.executable, gen, os.path.join(work, "p.f32"), 256, 256, 256, 3.6667, 11, 0, 1)
        run(args.fzg, "gen", "--kind", "turbulent", "-l", "256x256x256", "-o", os.path.join(work, "t.f32"))
        fields = [("p256", os.path.join(work, "p.f32"), "256x256x256", []),
                  ("t256", os.path.join(work, "t.f32"), "256x256x256", [])]
        fields += [(os.path.basename(p).split("_")[0], p, "x".join(map(str, d)), ["%g" % f for f in fill])
                   for p, d, fill in shared_fields()]
    predict = {"id": "predict", "type": "lorenzo", "inputs": {"field": "input"}}
    codes_config = os.path.join(work, "codes.json")
    write_config(codes_config, [predict], ["predict.codes", "predict.outliers"])
    specs = [] if args.reach else args.gpulz.split(",")
    gpulz_configs = []
    for spec in specs:
        chunk, window, symbol, offset_bits = ([int(v) for v in spec.split(":")] + [8])[:4]
        path = os.path.join(work, "gpulz_%d_%d_%d_%d.json" % (chunk, window, symbol, offset_bits))
        write_config(path, [predict, {"id": "lz", "type": "gpulz", "inputs": {"in": "predict.codes"},
                                      "params": {"chunk": chunk, "window": window, "symbol": symbol,
                                                 "offset_bits": offset_bits}}],
                     ["lz.out", "predict.outliers"])
        gpulz_configs.append(path)
    reach = [("LZ4 32K", lambda c: chunked_ratio(c, lz4_block, 32768)),
             ("LZ4 2K", lambda c: chunked_ratio(c, lz4_block, 2048)),
             ("LZ4 2K+16K dict", lambda c: with_dictionary(c, 2048, 16384))] if args.reach else []
    heads = ["GPULZ " + spec for spec in specs] + [h for h, _ in reach] + ["LZ4", "Snappy"]
    print("ratio of the u16 code bytes (GPULZ chunk:window:symbol; LZ4, Snappy on 64 KiB chunks)")
    print("%-14s %-5s %12s" % ("field", "rel", "code bytes") + "".join(" %15s" % h for h in heads))
    out = os.path.join(work, "x.fzg")
    for name, path, dims, fill in fields:
        extra = [a for f in fill for a in ("--fill", f)]
        for rel in args.rel.split(","):
            common = ["-i", path, "-l", dims, "-m", "rel", "-e", rel, "--device", "cpu", "-o", out] + extra
            run(args.fzg, "compress", "-c", codes_config, *common)
            codes = stream_bytes(args.fzg, out, "predict.codes")
            if args.dump:
                os.makedirs(args.dump, exist_ok=True)
                with open(os.path.join(args.dump, "codes_%s_%s.bin" % (name, rel)), "wb") as dumped:
                    dumped.write(codes)
            row = []
            for config in gpulz_configs:
                run(args.fzg, "compress", "-c", config, *common)
                row.append(len(codes) / sum(s["size_bytes"] for s in stream_parts(args.fzg, out, "lz.out")))
            row += [ratio(codes) for _, ratio in reach]
            row.append(chunked_ratio(codes, lz4_block))
            row.append(chunked_ratio(codes, snappy.compress))
            best = max(row[:len(specs)]) if specs else 0
            mark = "" if not specs or best > max(row[-2:]) else "   (GPULZ not above both)"
            print("%-14s %-5s %12d" % (name, rel, len(codes)) + "".join(" %15.3f" % r for r in row) + mark,
                  flush=True)


if __name__ == "__main__":
    main()
