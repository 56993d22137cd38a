"""fzg: error-bounded lossy compression of scientific float fields on the CPU or an NVIDIA GPU.

    import numpy as np, fzg
    file = fzg.compress(field, rel=1e-3)   # bytes: |x - x'| <= 1e-3 x the field's value range
    back = fzg.decompress(file)            # a numpy array of the field's dtype and shape
    fzg.info(file)                         # dtype, shape, mode, bounds: from the file alone

cupy (and torch, or any __cuda_array_interface__ / DLPack) arrays stay on the GPU: their
file is a cupy uint8 array, and decompress of a device file (or with device="cuda") gives a
cupy array. fzg.numcodecs.Fzg is a numcodecs codec (Zarr); fzg.hdf5.Fzg the h5py filter
settings, in the hdf5plugin style.
"""
import json
import os
import threading

import numpy as np

from . import _arrays, _fzg

__all__ = ["compress", "decompress", "info", "FzgError", "cuda_available", "shipped_configs"]
__version__ = "0.1.0"


class FzgError(RuntimeError):
    """A call fzg refused: the message is fzg's one line, `status` its kind ("invalid
    argument", "invalid config", "corrupt data", "unsupported", "CUDA error", ...)."""

    def __init__(self, message, status="error"):
        super().__init__(message)
        self.status = status


_fzg.set_error_class(FzgError)

_MODES = {"abs": 1, "rel": 2, "psnr": 3, "lossless": 4}  # fzg_mode
_MODE_NAMES = {code: name for name, code in _MODES.items()}
_DEVICES = {"auto": 0, "cpu": 1, "cuda": 2}  # fzg_device
_HOST, _DEVICE = 0, 1  # fzg_memory

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def cuda_available() -> bool:
    """Whether this build of fzg has its CUDA backend and a GPU is present."""
    return _fzg.cuda_available()


def shipped_configs():
    """The names of the configs shipped with fzg ("fz", "ratio", "cusz", ...)."""
    return sorted(name[:-5] for name in os.listdir(CONFIG_DIR) if name.endswith(".json"))


_contexts = threading.local()


def _context(config):
    """This thread's C context for `config` (one per config: loading a graph is not free).
    config: None (the built-in fz graph), a shipped config's name, a path to a JSON file,
    JSON text, or a dict."""
    if isinstance(config, dict):
        config = json.dumps(config)
    cache = getattr(_contexts, "by_config", None)
    if cache is None:
        cache = _contexts.by_config = {}
    ctx = cache.get(config)
    if ctx is None:
        ctx = _fzg.Context()
        if config is None:
            ctx.set_default_config()
        elif not isinstance(config, (str, os.PathLike)):
            raise TypeError(f"config must be a shipped config's name, a path, JSON text or a dict; "
                            f"got {type(config).__name__}")
        elif str(config).lstrip().startswith("{"):
            ctx.set_config_json(str(config))
        elif os.path.exists(config) or os.sep in str(config) or str(config).endswith(".json"):
            ctx.set_config_file(os.fspath(config))
        elif str(config) in shipped_configs():
            ctx.set_config_file(os.path.join(CONFIG_DIR, f"{config}.json"))
        else:
            raise ValueError(f"no config named {config!r}: give a path, JSON text, or one of "
                             f"{', '.join(shipped_configs())}")
        if len(cache) >= 16:
            cache.clear()
        cache[config] = ctx
    return ctx


def _mode_and_bound(abs, rel, psnr, lossless):
    given = [(name, value) for name, value in (("abs", abs), ("rel", rel), ("psnr", psnr)) if value is not None]
    if lossless:
        given.append(("lossless", 0.0))
    if len(given) != 1:
        named = ", ".join(name for name, _ in given) or "none"
        raise ValueError(f"give exactly one of abs=, rel=, psnr= or lossless=True (got {named})")
    name, value = given[0]
    return _MODES[name], float(value)


def _device_code(device):
    if device not in _DEVICES:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda'; got {device!r}")
    return _DEVICES[device]


def _fill_values(fill):
    """A fill value or an iterable of them as a list of floats (empty for None)."""
    if fill is None:
        return []
    values = [fill] if np.ndim(fill) == 0 else list(np.asarray(fill).reshape(-1))
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"fill must be a number or a list of numbers; got {fill!r}") from None


def compress(array, *, abs=None, rel=None, psnr=None, lossless=False, config=None, device="auto", stream=None,
             fill=None):
    """Compresses a 1-3D array into one .fzg file.

    Exactly one of abs= (|x - x'| <= abs), rel= (a fraction of the finite value range),
    psnr= (a target in dB) or lossless=True (the only mode for integer arrays: uint8,
    uint16, uint32, int32). Lossy modes take float32 and float64.
    config: a shipped config's name ("fz", the default; "ratio", "cusz", ...), a path, JSON
    text or a dict. device: "auto" (the GPU when present), "cpu" or "cuda".
    fill: a fill value or a list of them (1e20, float("nan"), ...) marking missing points:
    in lossy modes they stay out of the value range and the bound and come back exactly.

    A host array gives bytes. Fortran-order and strided arrays are copied into C order first
    (the file holds the values in the array's logical, C-order shape). A device array
    (cupy, torch, __cuda_array_interface__, DLPack) is compressed on the GPU without a host
    copy, on `stream` (an int, a cupy or torch stream; default: the stream its producer
    names, else the default stream), and gives a cupy uint8 array holding the file (bytes
    when cupy is not installed).
    """
    mode, bound = _mode_and_bound(abs, rel, psnr, lossless)
    device_code = _device_code(device)
    fills = _fill_values(fill)
    ctx = _context(config)
    if device_code != _DEVICES["cpu"]:  # a plain cupy array: in and out in one call (None otherwise)
        file = ctx.compress_cupy(array, mode, bound, fills, stream)
        if file is not None:
            return file
    field = _arrays.as_field(array)
    if field.on_device and device == "cpu":
        raise ValueError("a device array compresses on the GPU (device='auto' or 'cuda'); copy it to the host for the CPU")
    if mode != _MODES["lossless"] and field.dtype not in _arrays.LOSSY_DTYPES:
        raise TypeError(f"{field.dtype} arrays compress with lossless=True only (lossy modes take float32 and float64)")
    ctx.set_target(mode, bound, fills)
    dtype_code = _arrays.DTYPE_CODES[field.dtype]
    if not field.on_device:
        ctx.set_placement(device_code, _arrays.stream_handle(stream), _HOST, _HOST)
        return ctx.compress_to_bytes(field.address, dtype_code, field.dims)
    stream_ptr = _arrays.stream_handle(stream, field)
    if _arrays.cupy_or_none() is None:  # no device array type to hold the file: it comes to the host (its size)
        ctx.set_placement(_DEVICES["cuda"], stream_ptr, _DEVICE, _HOST)
        return ctx.compress_to_bytes(field.address, dtype_code, field.dims)
    ctx.set_placement(_DEVICES["cuda"], stream_ptr, _DEVICE, _DEVICE)
    # The file as fzg allocated it, exactly its size: no worst-case buffer, no copy.
    owned = ctx.compress_to_buffer(field.address, dtype_code, field.dims)
    return _array_of(owned, np.dtype(np.uint8), (owned.size,), True, stream)


def _array_of(owned, dtype, shape, on_device, stream):
    """Memory fzg allocated (an OwnedFile) as a numpy or cupy array that keeps it alive. Device
    memory is freed in the order of the stream it was made on: the array keeps a stream object
    alive with it."""
    if not on_device:
        return np.frombuffer(owned, dtype=dtype).reshape(shape)
    import cupy
    if stream is not None:  # the caller's stream object lives as long as the array
        owned.stream = stream
    # fzg allocated it on this thread's current device: naming the device spares cupy a
    # context check and a cudaPointerGetAttributes per array (the largest part of this
    # function's time in device_overhead.py --profile on an H100).
    memory = cupy.cuda.UnownedMemory(owned.address, owned.size, owned, cupy.cuda.runtime.getDevice())
    return cupy.ndarray(shape, dtype=dtype, memptr=cupy.cuda.MemoryPointer(memory, 0))


def _file_buffer(buf):
    """(address, size, on_device, owner, stream) of a file: bytes-like or a numpy uint8 array on
    the host, a cupy / __cuda_array_interface__ / DLPack uint8 array on the GPU."""
    if _arrays.is_device_array(buf):
        field = _arrays.device_field(buf)
        if field.dtype.itemsize != 1:
            raise TypeError(f"a file on the device is a uint8 array; got {field.dtype}")
        return field.address, field.nbytes, True, field.owner, field.stream
    if isinstance(buf, np.ndarray):
        view = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    else:
        view = np.frombuffer(buf, dtype=np.uint8)
    return view.__array_interface__["data"][0], view.nbytes, False, view, None


def _read_info(ctx, address, size):
    return _described(ctx.info(address, size), size)


def _described(raw, size):
    dtype = _arrays.DTYPES[raw["dtype_code"]]
    mode = _MODE_NAMES[raw["mode_code"]]
    out = {"dtype": dtype, "shape": tuple(raw["dims"][::-1]), "dims": tuple(raw["dims"]), "mode": mode,
           "original_bytes": raw["original_bytes"], "compressed_bytes": size,
           "ratio": raw["original_bytes"] / size if size else 0.0, "format_version": raw["format_version"]}
    if mode != "lossless":
        out["requested_bound"] = raw["requested_bound"]
        out["absolute_bound"] = raw["absolute_bound"]
    return out


def info(buf) -> dict:
    """What a file holds, from its metadata alone: dtype (numpy), shape (C order), dims (fzg's,
    fastest first), mode ("abs", "rel", "psnr", "lossless"), requested_bound and
    absolute_bound (lossy files: the bound as given and the |x - x'| every value honours),
    original_bytes, compressed_bytes, ratio and format_version. A device file's metadata is
    read from the GPU (a few KiB, never the whole file)."""
    address, size, on_device, _owner, stream = _file_buffer(buf)
    ctx = _context(None)
    ctx.set_placement(_DEVICES["auto"], _arrays.stream_handle(None, None) if stream is None else int(stream), _HOST,
                      _DEVICE if on_device else _HOST)
    return _read_info(ctx, address, size)


def _out_target(out, on_device):
    """(address, dtype, C-order shape) of an `out` fzg may write: C-contiguous and writeable."""
    if on_device:
        view, contiguous = _arrays.device_view(out)
        if not contiguous:
            raise ValueError("out must be C-contiguous")
        return view.address, view.dtype, view.shape
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array (or a device array); got {type(out).__name__}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    return out.__array_interface__["data"][0], out.dtype, out.shape


def _refuse_out(dtype, shape, meta):
    """The error for an `out` that is not exactly the file's array (dtype, C-order shape)."""
    if dtype != meta["dtype"]:
        raise TypeError(f"out has dtype {dtype}; the file holds {meta['dtype']}")
    if tuple(shape) != meta["shape"]:
        raise ValueError(f"out has shape {tuple(shape)}; the file holds {meta['shape']}")


def decompress(buf, out=None, device=None, stream=None):
    """The array a file holds, with its dtype and shape.

    buf: bytes-like or a numpy uint8 array (a file on the host), or a cupy / device uint8
    array (a file on the GPU). out: an array to decompress into (numpy on the host, cupy or
    any C-contiguous __cuda_array_interface__ array on the GPU) of exactly the file's dtype
    and shape. device: None (the output goes where the file is, or where `out` is; a host
    file decodes on the GPU when present), "cpu", or "cuda" (decode on the GPU; without
    `out`, a cupy array). stream as for compress.
    """
    if device not in (None, "auto", "cpu", "cuda"):
        raise ValueError(f"device must be None, 'auto', 'cpu' or 'cuda'; got {device!r}")
    ctx = _context(None)
    if device != "cpu":  # a plain cupy file (and out): in and out in one call (None otherwise)
        array = ctx.decompress_cupy(buf, stream) if out is None else ctx.decompress_cupy_into(buf, out, stream)
        if array is not None:
            return array
    address, size, file_on_device, _owner, file_stream = _file_buffer(buf)
    out_on_device = _arrays.is_device_array(out) if out is not None else (file_on_device or device == "cuda")
    if device == "cpu" and (file_on_device or out_on_device):
        raise ValueError("device='cpu' decodes a host file into host memory; this file or out is on the GPU")
    stream_ptr = _arrays.stream_handle(stream) if stream is not None else int(file_stream or 0)
    ctx.set_placement(_DEVICES["cuda"] if (file_on_device or out_on_device) else _DEVICES[device or "auto"], stream_ptr,
                      _DEVICE if out_on_device else _HOST, _DEVICE if file_on_device else _HOST)
    if out is not None:
        target, dtype, shape = _out_target(out, out_on_device)
        code = _arrays.DTYPE_CODES.get(dtype)
        if code is not None and 1 <= len(shape) <= 3:
            # One call, the file's metadata read once (from a device file, each read is a copy
            # and a synchronization): fzg writes out only if the file holds exactly its field.
            raw = ctx.decompress_as(address, size, code, list(shape[::-1]), target)
            if raw is None:
                return out
        else:  # an out no file can fill: the file's info names what it needs
            raw = ctx.info(address, size)
        _refuse_out(dtype, shape, _described(raw, size))
        raise FzgError(f"out ({dtype}, shape {tuple(shape)}) was refused for a file of that array", "invalid argument")
    if out_on_device and _arrays.cupy_or_none() is None:
        raise TypeError("decompressing into GPU memory without out= needs cupy (pip install cupy-cuda12x)")
    # One call: fzg reads the metadata once and allocates the field, exactly its size.
    owned, dtype_code, shape = ctx.decompress_to_buffer(address, size, out_on_device)
    return _array_of(owned, _arrays.DTYPES[dtype_code], shape, out_on_device, stream)
