"""The synthetic land of the fill-value benchmarks (bench-fill.sh, fill-composition.sh).

A coastline at `coast` of the x extent that wanders with y, plus a round island, constant along
z (like an ocean model's surface over time). As a command it writes a cubic f32 field (z, y, x)
with its land set to the fill value 1e20, and prints the land's fraction as a percentage:
    python3 scripts/land_mask.py SEA.f32 OUT.f32 COAST
"""
import sys

import numpy as np

FILL = np.float32(1e20)


def land(n, coast):
    """The n x n (y, x) mask of the land whose coastline lies at `coast` of x."""
    y, x = np.mgrid[0:n, 0:n]
    line = coast * n + 0.08 * n * np.sin(y / 23.0) + 0.05 * n * np.cos(y / 7.0)
    island = (x - 0.3 * n) ** 2 + (y - 0.5 * n) ** 2 < (0.2 * n) ** 2
    return (x > line) | island


def cube(path):
    """A cubic f32 field as (z, y, x), its edge from its size."""
    v = np.fromfile(path, dtype=np.float32)
    n = round(len(v) ** (1 / 3))
    if n ** 3 != len(v):
        sys.exit(f"land_mask.py: {path} holds {len(v)} values, not a cube")
    return v.reshape(n, n, n)


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    v = cube(argv[1])
    mask = land(v.shape[1], float(argv[3]))
    v[:, mask] = FILL
    v.tofile(argv[2])
    print("%.0f%%" % (100 * mask.mean()))


if __name__ == "__main__":
    main(sys.argv)
