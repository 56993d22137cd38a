"""fzg on the GPU from Python: cupy (and torch) arrays compressed and decompressed in device
memory, on the caller's stream, writing the CPU's bytes, with no device-to-host copy of the
field (counted by an LD_PRELOAD library). Skipped without cupy, a GPU, or fzg's CUDA backend."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import fzg

cupy = pytest.importorskip("cupy")
try:
    gpus = cupy.cuda.runtime.getDeviceCount()
except Exception:  # cupy installed, no driver or device
    gpus = 0
if gpus == 0 or not fzg.cuda_available():
    pytest.skip("no CUDA device (or fzg built without CUDA)", allow_module_level=True)


def field(shape, dtype=cupy.float32):
    t = cupy.arange(int(np.prod(shape)), dtype=cupy.float64)
    return (40 * cupy.sin(t * 0.013) + 3 * cupy.cos(t * 0.0021)).reshape(shape).astype(dtype)


def max_error(x, y):
    return float(cupy.abs(x.astype(cupy.float64) - y.astype(cupy.float64)).max())


@pytest.mark.parametrize("dtype", [cupy.float32, cupy.float64])
@pytest.mark.parametrize("shape", [(100000,), (300, 400), (32, 64, 96), (1, 1, 5000)])
def test_cupy_arrays_round_trip_on_the_device_within_the_bound(dtype, shape):
    x = field(shape, dtype)
    file = fzg.compress(x, abs=1e-3)
    assert isinstance(file, cupy.ndarray) and file.dtype == cupy.uint8 and file.size < x.nbytes
    y = fzg.decompress(file)
    assert isinstance(y, cupy.ndarray) and y.dtype == x.dtype and y.shape == x.shape
    assert max_error(x, y) <= 1e-3


def test_the_gpu_writes_the_cpu_s_bytes():
    x = field((32, 64, 96))
    on_gpu = fzg.compress(x, rel=1e-3, config="ratio").get().tobytes()
    assert on_gpu == fzg.compress(x.get(), rel=1e-3, config="ratio", device="cpu")
    assert fzg.compress(x.get(), rel=1e-3, config="ratio", device="cuda") == on_gpu


class Interface:
    """A device array that is not a cupy array: only __cuda_array_interface__ (the package's
    general path, where a cupy array takes the extension's cupy path)."""

    def __init__(self, array):
        self.__cuda_array_interface__ = array.__cuda_array_interface__
        self.owner = array


@pytest.mark.parametrize("dtype, shape, fill", [(cupy.float32, (16, 32, 48), None), (cupy.float64, (300, 41), None),
                                                (cupy.float32, (5000,), 1e20), (cupy.uint16, (64, 70), None)])
def test_the_cupy_path_gives_what_the_general_path_gives(dtype, shape, fill):
    x = field(shape, dtype) if dtype != cupy.uint16 else (cupy.arange(int(np.prod(shape))) % 977).astype(dtype).reshape(shape)
    if fill is not None:
        x[::7] = fill
    kwargs = {"lossless": True} if dtype == cupy.uint16 else {"rel": 1e-3, "fill": fill}
    file = fzg.compress(x, **kwargs)
    assert cupy.array_equal(file, fzg.compress(Interface(x), **kwargs))
    y, y_general = fzg.decompress(file), fzg.decompress(Interface(file))
    assert y.shape == x.shape and y.dtype == x.dtype and cupy.array_equal(y, y_general)
    out, out_general = cupy.empty_like(x), cupy.empty_like(x)
    assert fzg.decompress(file, out=out) is out
    fzg.decompress(Interface(file), out=Interface(out_general))
    assert cupy.array_equal(out, y) and cupy.array_equal(out_general, y)


@pytest.mark.parametrize("dtype", [cupy.uint8, cupy.uint16, cupy.uint32, cupy.int32])
def test_integer_device_arrays_round_trip_exactly(dtype):
    x = (cupy.arange(30000) * 7919 % 251).astype(dtype).reshape(100, 300)
    assert bool((fzg.decompress(fzg.compress(x, lossless=True)) == x).all())


def test_fortran_order_and_strided_device_arrays_are_copied_on_the_device():
    x = field((32, 64, 96))
    for array in (cupy.asfortranarray(x), x[::2, 3:60, ::-1]):
        y = fzg.decompress(fzg.compress(array, abs=1e-3))
        assert y.shape == array.shape and max_error(array, y) <= 1e-3


def test_nan_and_inf_on_the_device():
    x = field((64, 64))
    x[0, 0], x[1, 1], x[2, 2] = cupy.nan, cupy.inf, -cupy.inf
    y = fzg.decompress(fzg.compress(x, abs=1e-2)).get()
    assert np.isnan(y[0, 0]) and y[1, 1] == np.inf and y[2, 2] == -np.inf
    finite = np.isfinite(x.get())
    assert np.abs(y[finite] - x.get()[finite]).max() <= 1e-2


def test_decompress_into_a_device_out_and_wrong_outs():
    x = field((16, 32, 48))
    file = fzg.compress(x, abs=1e-3)
    out = cupy.zeros_like(x)
    assert fzg.decompress(file, out=out) is out and max_error(x, out) <= 1e-3
    with pytest.raises(ValueError, match="out has shape"):
        fzg.decompress(file, out=cupy.zeros((16, 32, 47), cupy.float32))
    with pytest.raises(TypeError, match="out has dtype float64"):
        fzg.decompress(file, out=cupy.zeros((16, 32, 48), cupy.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        fzg.decompress(file, out=cupy.zeros((48, 32, 16), cupy.float32).T)
    # The same bytes as another array: refused before anything is written.
    for other in (cupy.zeros((48, 32, 16), cupy.float32), cupy.zeros((16, 32, 48), cupy.int32)):
        with pytest.raises((ValueError, TypeError), match="out has"):
            fzg.decompress(file, out=other)
        assert not bool(other.any())


def test_host_files_decompress_onto_the_device_and_device_files_report_info():
    x = field((20, 30, 40))
    host_file = fzg.compress(x.get(), abs=1e-3, device="cpu")
    y = fzg.decompress(host_file, device="cuda")
    assert isinstance(y, cupy.ndarray) and max_error(x, y) <= 1e-3
    device_file = cupy.asarray(np.frombuffer(host_file, np.uint8))
    meta = fzg.info(device_file)
    assert meta["shape"] == (20, 30, 40) and meta["compressed_bytes"] == len(host_file)
    assert np.abs(fzg.decompress(host_file) - x.get()).max() <= 1e-3  # a host file: a numpy array
    with pytest.raises(ValueError, match="device='cpu'"):
        fzg.decompress(device_file, device="cpu")
    with pytest.raises(ValueError, match="compresses on the GPU"):
        fzg.compress(x, abs=1e-3, device="cpu")


def test_work_runs_on_the_caller_s_stream():
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = field((64, 128, 128))
        file = fzg.compress(x, abs=1e-3, stream=stream)
        y = fzg.decompress(file, stream=stream)
        error = cupy.abs(y - x).max()
    stream.synchronize()
    assert float(error) <= 1e-3
    with pytest.raises(TypeError, match="stream must be"):
        fzg.compress(x, abs=1e-3, stream="default")


def test_torch_tensors_through_the_cuda_array_interface():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.linspace(-5, 5, 100000, device="cuda").sin().reshape(100, 1000)
    file = fzg.compress(x, abs=1e-3)
    out = torch.empty_like(x)
    fzg.decompress(file, out=out)
    assert float((out - x).abs().max()) <= 1e-3
    y = fzg.decompress(torch.as_tensor(file, device="cuda"))  # a device file given as a torch tensor
    assert float(cupy.abs(y - cupy.asarray(x)).max()) <= 1e-3


def copied_to_host(code):
    """Bytes the Python `code` copies from the device to the host through the CUDA runtime fzg
    links, counted by the LD_PRELOAD library of tests/python/cuda_copy_counter.c."""
    counter = os.environ.get("FZG_COPY_COUNTER")
    if not counter or not os.path.exists(counter):
        pytest.skip("no copy counter library (FZG_COPY_COUNTER; ctest sets it)")
    with tempfile.NamedTemporaryFile("r") as total:
        env = dict(os.environ, LD_PRELOAD=counter, FZG_COPY_COUNT_FILE=total.name)
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        return int(total.read())


SETUP = """
import cupy, fzg
t = cupy.arange(16 * 1024 * 1024, dtype=cupy.float64)
x = (40 * cupy.sin(t * 0.013) + cupy.cos(t * 0.7)).astype(cupy.float32).reshape(64, 512, 512)
cupy.cuda.Device().synchronize()
"""
FIELD_BYTES = 64 * 1024 * 1024


def test_no_device_to_host_copy_of_the_field():
    # The counter sees fzg's copies (cupy's own runtime calls bypass it): decompressing the
    # device file into a host array brings the field's size over.
    to_host = SETUP + "import numpy; fzg.decompress(fzg.compress(x, rel=1e-3), out=numpy.empty(x.shape, numpy.float32))"
    assert copied_to_host(to_host) >= FIELD_BYTES
    # A compress, info and decompress (into fzg's array and into out=) of the same field bring a
    # few KiB of metadata and sizes.
    round_trip = SETUP + ("f = fzg.compress(x, rel=1e-3); fzg.info(f); y = fzg.decompress(f); y.sum(); "
                          "fzg.decompress(f, out=cupy.empty_like(x))")
    assert copied_to_host(round_trip) < FIELD_BYTES // 1000
