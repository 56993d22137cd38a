"""Arrays as fzg sees them: an address, a dtype, a C-order shape, where the bytes live and the
stream that orders them. numpy (and anything numpy.asarray takes) on the host; cupy, torch
and anything else with __cuda_array_interface__ or a CUDA DLPack device on the GPU, never
copied to the host."""
import math
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

# fzg_dtype codes of capi/fzg.h.
DTYPE_CODES = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.uint8): 3,
               np.dtype(np.uint16): 4, np.dtype(np.uint32): 5, np.dtype(np.int32): 6}
DTYPES = {code: dtype for dtype, code in DTYPE_CODES.items()}
LOSSY_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_DLPACK_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged


class Field(NamedTuple):
    address: int
    dtype: np.dtype
    shape: Tuple[int, ...]  # C order: slowest first
    on_device: bool
    stream: Optional[int]   # the producer's stream (device arrays), None when it gave none
    owner: Any              # keeps the memory alive: the array itself or its contiguous copy

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize  # numpy.prod costs microseconds per call

    @property
    def dims(self) -> list:
        """fzg's dims: fastest first, the C-order shape reversed."""
        return list(self.shape[::-1])


def cupy_or_none():
    try:
        import cupy
    except Exception:  # not installed, or installed without a working CUDA
        return None
    return cupy


def is_device_array(obj) -> bool:
    # The class's attribute first: a cupy array's property is then not evaluated an extra time.
    if hasattr(type(obj), "__cuda_array_interface__") or hasattr(obj, "__cuda_array_interface__"):
        return True
    device = getattr(obj, "__dlpack_device__", None)
    return device is not None and device()[0] in _DLPACK_CUDA_DEVICES


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def check_shape(shape, what="the array"):
    if len(shape) < 1 or len(shape) > 3:
        raise ValueError(f"fzg takes arrays of 1 to 3 dimensions; {what} has {len(shape)} (shape {tuple(shape)})")
    if 0 in shape:
        raise ValueError(f"fzg cannot compress an empty array (shape {tuple(shape)}): a field holds at least one value")


def check_dtype(dtype):
    if dtype in DTYPE_CODES:  # a native dtype fzg takes: one lookup (the call is on every array's path)
        return
    if np.dtype(dtype).newbyteorder("=") not in DTYPE_CODES:
        names = ", ".join(str(d) for d in DTYPE_CODES)
        raise TypeError(f"fzg takes {names} arrays; got {np.dtype(dtype)}")


def host_field(obj) -> Field:
    """A C-contiguous, native-order host array: Fortran-order and strided arrays are copied
    into C order (the values and shape are what the caller sees; only the layout changes)."""
    array = np.asarray(obj)
    check_dtype(array.dtype)
    check_shape(array.shape)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    array = np.ascontiguousarray(array)
    return Field(array.__array_interface__["data"][0], array.dtype, array.shape, False, None, array)


def _from_dlpack_on_device(obj):
    cupy = cupy_or_none()
    if cupy is None:
        raise TypeError("a CUDA DLPack array without __cuda_array_interface__ needs cupy (pip install cupy-cuda12x)")
    return cupy.from_dlpack(obj)


def device_view(obj) -> Tuple[Field, bool]:
    """A device array as it is, and whether it is C-contiguous."""
    # Read once: an array's interface is a property that builds a new dict at every access
    # (cupy's names the current stream too).
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is None:
        obj = _from_dlpack_on_device(obj)
        interface = obj.__cuda_array_interface__
    dtype, shape = np.dtype(interface["typestr"]), tuple(interface["shape"])
    strides = interface.get("strides")
    contiguous = strides is None or tuple(strides) == _c_strides(shape, dtype.itemsize)
    return Field(interface["data"][0], dtype, shape, True, interface.get("stream"), obj), contiguous


def device_field(obj) -> Field:
    """A C-contiguous device array; a strided or Fortran-order one is copied into C order on
    the device (with cupy), never through the host."""
    field, contiguous = device_view(obj)
    check_dtype(field.dtype)
    check_shape(field.shape)
    if not field.dtype.isnative:
        raise TypeError(f"a device array of non-native byte order ({field.dtype}) is not supported")
    if not contiguous:
        cupy = cupy_or_none()
        if cupy is None:
            raise ValueError("a non-contiguous device array needs cupy to be copied into C order; "
                             "pass a C-contiguous array")
        field, _ = device_view(cupy.ascontiguousarray(cupy.asarray(field.owner)))
    return field


def as_field(obj) -> Field:
    return device_field(obj) if is_device_array(obj) else host_field(obj)


def stream_handle(stream, field: Optional[Field] = None) -> int:
    """A cudaStream_t as an integer: the caller's (an int, a cupy Stream's .ptr, a torch
    Stream's .cuda_stream), else the stream the array's producer named in its
    __cuda_array_interface__ (1 and 2 there are cudaStreamLegacy and cudaStreamPerThread,
    the same values as CUDA's handles), else the legacy default stream (0)."""
    if stream is None:
        return int(field.stream) if field is not None and field.stream else 0
    for attribute in ("ptr", "cuda_stream"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    if isinstance(stream, int):
        return stream
    raise TypeError(f"stream must be an int (a cudaStream_t), a cupy or a torch stream; got {type(stream).__name__}")
