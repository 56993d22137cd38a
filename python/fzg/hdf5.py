"""fzg's HDF5 filter (id 305, libh5z_fzg.so, shipped in this package) from h5py, in the
hdf5plugin style: the settings are a Mapping giving create_dataset its compression and
compression_opts.

    import h5py, fzg.hdf5
    with h5py.File("out.h5", "w") as f:
        f.create_dataset("t", data=field, chunks=(64, 256, 256), **fzg.hdf5.Fzg(rel=1e-3))

Making a Fzg points this process's HDF5 at the plugin (H5PLprepend); tools in other
processes (h5dump, h5repack) need HDF5_PLUGIN_PATH=fzg.hdf5.PLUGIN_DIR. The plugin links the
system's HDF5, so h5py must be built against that same library (Debian's python3-h5py, or
`pip install --no-binary h5py h5py`): a PyPI h5py wheel carries an HDF5 of its own, and the
two cannot share a process; Fzg() says so rather than crash.
"""
import os
import struct

import h5py

import fzg
from fzg import _fzg

FILTER_ID = 305  # in HDF5's range for unregistered filters (256-511) until one is assigned
PLUGIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
PLUGIN = os.path.join(PLUGIN_DIR, "libh5z_fzg.so")


def cd_values(mode: int, bound: float, config=None):
    """hdf5/h5z_fzg.cc's user values: mode (1 abs, 2 rel, 3 psnr, 4 lossless), the bound as an
    IEEE double's low and high 32-bit halves, then a shipped config's name packed four bytes a
    value, little-endian, zero-padded."""
    low, high = struct.unpack("<II", struct.pack("<d", bound))
    values = [mode, low, high]
    if config is not None:
        name = config.encode("ascii")
        name += b"\0" * (-len(name) % 4)
        values += list(struct.unpack(f"<{len(name) // 4}I", name))
    return tuple(values)


def _check_same_hdf5(h5py):
    """The plugin and h5py must share one HDF5 library (see the module's note)."""
    wheel_libs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(h5py.__file__))), "h5py.libs")
    theirs, ours = h5py.version.hdf5_version, _fzg.hdf5_version
    if os.path.isdir(wheel_libs) or (ours and theirs != ours):
        raise fzg.FzgError(f"h5py uses its own HDF5 {theirs} (a PyPI wheel?) and fzg's filter the system's HDF5 "
                           f"{ours}: one process cannot hold both. Use an h5py built against the system HDF5 "
                           "(Debian's python3-h5py, or pip install --no-binary h5py h5py)", "unsupported")


def register():
    """Makes this process's HDF5 (through h5py) find the fzg filter; idempotent."""
    if not os.path.exists(PLUGIN):
        raise fzg.FzgError("this fzg was built without its HDF5 filter (no libhdf5-dev at build time)", "unsupported")
    # The plugin finds shipped configs by name here (its built-in path is the build's prefix).
    os.environ.setdefault("FZG_CONFIG_DIR", fzg.CONFIG_DIR)
    _check_same_hdf5(h5py)
    if not h5py.h5z.filter_avail(FILTER_ID):
        # First in the search path: HDF5 1.10 ends a search at a listed folder that does not
        # exist, as Debian's default plugin folder may not.
        h5py.h5pl.prepend(PLUGIN_DIR.encode())
        if not h5py.h5z.filter_avail(FILTER_ID):  # HDF5 loads the plugin to answer this
            raise fzg.FzgError(f"HDF5 could not load the fzg filter from {PLUGIN}", "unsupported")


class Fzg(h5py.filters.FilterRefBase):
    """h5py dataset settings for the fzg filter: exactly one of abs=, rel=, psnr= or
    lossless=True (a rel or psnr bound applies to each chunk's own value range), and config a
    shipped config's name ("ratio", "cusz", ...; default "fz"). Use as
    create_dataset(..., chunks=..., **Fzg(rel=1e-3)) or compression=Fzg(...); a Mapping of
    compression (the filter id) and compression_opts (the cd_values), like hdf5plugin's."""

    filter_id = FILTER_ID
    filter_name = "fzg"

    def __init__(self, *, abs=None, rel=None, psnr=None, lossless=False, config=None):
        mode, bound = fzg._mode_and_bound(abs, rel, psnr, lossless)
        if config is not None and config not in fzg.shipped_configs():
            raise ValueError(f"the HDF5 filter takes a shipped config's name ({', '.join(fzg.shipped_configs())}); "
                             f"got {config!r}")
        self.filter_options = cd_values(mode, bound, None if config in (None, "fz") else config)
        register()

    def __repr__(self):
        return f"fzg.hdf5.Fzg(compression={self.filter_id}, compression_opts={self.filter_options})"
