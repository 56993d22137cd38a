"""fzg as a numcodecs codec (Zarr's compressors): registered under the id "fzg" through the
package's `numcodecs.codecs` entry point, so `numcodecs.get_codec({"id": "fzg", ...})` and
Zarr metadata find it once fzg is installed.

    import zarr, fzg.numcodecs
    z = zarr.open("t.zarr", mode="w", shape=(512, 512, 512), chunks=(64, 256, 256), dtype="f4",
                  compressor=fzg.numcodecs.Fzg(rel=1e-3))
"""
import math

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ndarray_copy
from numcodecs.registry import register_codec

import fzg


class Fzg(Codec):
    """Exactly one of abs=, rel=, psnr= or lossless=True, as fzg.compress takes them; config a
    shipped config's name ("ratio", "cusz", ...), JSON text or a path; device "auto", "cpu" or
    "cuda" (where compression runs; chunks come and go as host arrays); fill a fill value or a
    list of them marking missing points (kept exactly, out of the range and the bound)."""

    codec_id = "fzg"

    def __init__(self, abs=None, rel=None, psnr=None, lossless=False, config=None, device="auto", fill=None):
        fzg._mode_and_bound(abs, rel, psnr, lossless)  # refuses a wrong set at once, not at the first chunk
        self.abs, self.rel, self.psnr, self.lossless = abs, rel, psnr, bool(lossless)
        self.config, self.device = config, device
        self.fill = fzg._fill_values(fill) or None  # floats; "nan" and "inf" strings read too

    def get_config(self):
        settings = {"id": self.codec_id}
        for name in ("abs", "rel", "psnr", "config"):
            if getattr(self, name) is not None:
                settings[name] = getattr(self, name)
        if self.lossless:
            settings["lossless"] = True
        if self.device != "auto":
            settings["device"] = self.device
        if self.fill:  # strict JSON has no NaN or Infinity: those as "nan", "inf", "-inf"
            settings["fill"] = [v if math.isfinite(v) else repr(v) for v in self.fill]
        return settings

    # numcodecs codecs keep the bytes in memory order (Zarr's order="F" chunks decode through a
    # flat buffer): an F-ordered chunk is compressed as the C-ordered array it is in memory,
    # its transpose, which also keeps its fastest axis fastest for the predictor.
    def encode(self, buf):
        array = np.asarray(buf)
        if array.flags.f_contiguous and not array.flags.c_contiguous:
            array = array.T
        return fzg.compress(array, abs=self.abs, rel=self.rel, psnr=self.psnr, lossless=self.lossless,
                            config=self.config, device=self.device, fill=self.fill)

    def decode(self, buf, out=None):
        device = "cpu" if self.device == "cpu" else None
        if out is None:
            return fzg.decompress(buf, device=device)
        meta = fzg.info(buf)
        # Zarr hands over the chunk's own array, or a flat buffer of its bytes: decode in place
        # where it is a contiguous array of the file's type and size, else through a copy.
        if isinstance(out, np.ndarray) and (out.flags.c_contiguous or out.flags.f_contiguous) and \
                out.flags.writeable and out.dtype == meta["dtype"] and out.nbytes == meta["original_bytes"]:
            fzg.decompress(buf, out=out.reshape(-1, order="A").reshape(meta["shape"]), device=device)
            return out
        return ndarray_copy(fzg.decompress(buf, device=device), out)

    def __repr__(self):
        settings = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "id")
        return f"Fzg({settings})"


# Importing the module registers the codec too, so a package used from a build tree (with no
# entry points) decodes Zarr metadata naming "fzg".
register_codec(Fzg)
