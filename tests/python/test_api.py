"""fzg.compress / decompress / info on host (numpy) arrays, on the CPU: every dtype the C API
takes, 1-3D shapes, layouts, special values, out=, configs and errors. The bound is checked
here, point by point, never taken from fzg."""
import json
import os
import threading

import numpy as np
import pytest

import fzg

SHAPES = [(1000,), (37, 53), (12, 20, 30), (1, 500), (1, 1, 300), (7, 1, 40)]


def smooth(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    t = np.arange(n, dtype=np.float64)
    values = 40 * np.sin(t * 0.013) + 3 * np.cos(t * 0.0021) + rng.normal(0, 0.05, n)
    return values.reshape(shape).astype(dtype)


def max_error(x, y):
    finite = np.isfinite(x)
    return float(np.max(np.abs(x[finite].astype(np.float64) - y[finite].astype(np.float64)), initial=0.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_abs_bound_holds_and_dtype_and_shape_round_trip(dtype, shape):
    x = smooth(shape, dtype)
    file = fzg.compress(x, abs=1e-3, device="cpu")
    assert isinstance(file, bytes) and len(file) < x.nbytes
    y = fzg.decompress(file, device="cpu")
    assert y.dtype == x.dtype and y.shape == x.shape
    assert max_error(x, y) <= 1e-3


@pytest.mark.parametrize("mode", ["rel", "psnr"])
def test_rel_and_psnr_bounds_hold_at_the_absolute_bound_the_file_records(mode):
    x = smooth((20, 30, 40), np.float64)
    file = fzg.compress(x, **{mode: 1e-4 if mode == "rel" else 80.0}, device="cpu")
    meta = fzg.info(file)
    value_range = float(x.max() - x.min())
    if mode == "rel":
        assert meta["absolute_bound"] == pytest.approx(1e-4 * value_range, rel=1e-6)
    y = fzg.decompress(file)
    assert max_error(x, y) <= meta["absolute_bound"]
    if mode == "psnr":
        mse = np.mean((x - y) ** 2)
        assert 10 * np.log10(value_range ** 2 / mse) >= 80.0


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int32])
@pytest.mark.parametrize("shape", [(999,), (31, 17), (5, 6, 7)])
def test_integer_arrays_round_trip_exactly_lossless(dtype, shape):
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    y = fzg.decompress(fzg.compress(x, lossless=True, device="cpu"))
    assert y.dtype == x.dtype and y.shape == x.shape and np.array_equal(x, y)


def test_float_lossless_round_trips_bit_for_bit():
    x = smooth((64, 64), np.float64)
    x[3, 4] = np.nan
    y = fzg.decompress(fzg.compress(x, lossless=True, device="cpu"))
    assert x.tobytes() == y.tobytes()


def test_integer_arrays_refuse_lossy_modes():
    with pytest.raises(TypeError, match="lossless=True only"):
        fzg.compress(np.arange(10, dtype=np.int32), abs=1)


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float16, np.complex64, np.bool_])
def test_other_dtypes_are_refused_by_name(dtype):
    with pytest.raises(TypeError, match=str(np.dtype(dtype))):
        fzg.compress(np.zeros(10, dtype=dtype), lossless=True)


def test_fortran_order_arrays_are_copied_into_c_order():
    x = smooth((20, 30, 40))
    fortran = np.asfortranarray(x)
    assert not fortran.flags.c_contiguous
    file = fzg.compress(fortran, abs=1e-3, device="cpu")
    assert file == fzg.compress(x, abs=1e-3, device="cpu")  # the same logical array, the same bytes
    y = fzg.decompress(file)
    assert y.shape == x.shape and max_error(x, y) <= 1e-3


def test_strided_views_are_copied():
    x = smooth((40, 60, 30))
    view = x[::2, 5:50:3, ::-1]
    y = fzg.decompress(fzg.compress(view, abs=1e-3, device="cpu"))
    assert y.shape == view.shape and max_error(view, y) <= 1e-3


def test_big_endian_arrays_come_back_native():
    x = smooth((100, 10)).astype(">f4")
    y = fzg.decompress(fzg.compress(x, abs=1e-3, device="cpu"))
    assert y.dtype == np.float32 and max_error(x.astype(np.float32), y) <= 1e-3


def test_nan_and_inf_come_back_exactly_and_finite_values_within_the_bound():
    x = smooth((30, 40), np.float32)
    x[0, 0], x[5, 7], x[10, 3], x[29, 39] = np.nan, np.inf, -np.inf, np.float32(3e38)
    y = fzg.decompress(fzg.compress(x, abs=1e-2, device="cpu"))
    assert np.array_equal(np.isnan(x), np.isnan(y))
    assert y[5, 7] == np.inf and y[10, 3] == -np.inf
    assert max_error(x, y) <= 1e-2


@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0, 2)])
def test_empty_arrays_are_refused_clearly(shape):
    with pytest.raises(ValueError, match="empty array"):
        fzg.compress(np.zeros(shape, np.float32), abs=1e-3)


@pytest.mark.parametrize("shape", [(), (2, 3, 4, 5)])
def test_ranks_other_than_1_to_3_are_refused(shape):
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        fzg.compress(np.zeros(shape, np.float32), abs=1e-3)


@pytest.mark.parametrize("settings", [{}, {"abs": 1e-3, "rel": 1e-3}, {"psnr": 60, "lossless": True}])
def test_exactly_one_bound_is_required(settings):
    with pytest.raises(ValueError, match="exactly one"):
        fzg.compress(smooth((100,)), **settings)


def test_fzg_refusals_are_fzg_errors_with_its_message():
    with pytest.raises(fzg.FzgError, match="positive finite") as refused:
        fzg.compress(smooth((100,)), abs=-1.0)
    assert refused.value.status == "invalid argument"
    with pytest.raises(fzg.FzgError, match="below 1"):
        fzg.compress(smooth((100,)), rel=2.0)


def test_decompressed_arrays_are_writeable_and_own_their_memory():
    x = smooth((10, 20))
    y = fzg.decompress(fzg.compress(x, abs=1e-3))
    y[0, 0] = 123.0
    del x
    assert y[0, 0] == 123.0 and y.flags.writeable


def test_decompress_into_out():
    x = smooth((16, 24, 32))
    file = fzg.compress(x, abs=1e-3)
    out = np.full(x.shape, -1.0, np.float32)
    assert fzg.decompress(file, out=out) is out
    assert max_error(x, out) <= 1e-3


@pytest.mark.parametrize("out, error, message", [
    (np.empty((16, 24, 31), np.float32), ValueError, r"out has shape \(16, 24, 31\); the file holds \(16, 24, 32\)"),
    (np.empty((16 * 24 * 32,), np.float32), ValueError, "out has shape"),
    (np.empty((16, 24, 32), np.float64), TypeError, "out has dtype float64; the file holds float32"),
    (np.empty((32, 24, 16), np.float32), ValueError, r"out has shape \(32, 24, 16\)"),  # the same bytes
    (np.empty((16, 24, 32), np.int32), TypeError, "out has dtype int32"),  # the same bytes
    (np.empty((16, 24, 32), np.float16), TypeError, "out has dtype float16"),  # no fzg dtype
    (np.empty((2, 8, 24, 32), np.float32), ValueError, "out has shape"),  # no fzg rank
    (np.empty((16, 24, 32), ">f4"), TypeError, "out has dtype >f4"),
    (np.empty((32, 24, 16), np.float32).T, ValueError, "C-contiguous"),
    ([0.0] * 10, TypeError, "numpy array"),
])
def test_decompress_into_a_wrong_out_is_refused(out, error, message):
    file = fzg.compress(smooth((16, 24, 32)), abs=1e-3)
    before = np.array(out, copy=True)
    with pytest.raises(error, match=message):
        fzg.decompress(file, out=out)
    assert np.array_equal(np.asarray(out), before, equal_nan=True), "a refused out is left as it was"


def test_decompress_into_read_only_out_is_refused():
    file = fzg.compress(smooth((100,)), abs=1e-3)
    out = np.empty(100, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        fzg.decompress(file, out=out)


def test_info_describes_the_file():
    x = smooth((12, 20, 30), np.float64)
    file = fzg.compress(x, rel=1e-3, device="cpu")
    meta = fzg.info(file)
    assert meta["dtype"] == np.float64 and meta["shape"] == (12, 20, 30) and meta["dims"] == (30, 20, 12)
    assert meta["mode"] == "rel" and meta["requested_bound"] == 1e-3
    assert meta["absolute_bound"] == pytest.approx(1e-3 * float(x.max() - x.min()), rel=1e-6)
    assert meta["original_bytes"] == x.nbytes and meta["compressed_bytes"] == len(file)
    assert meta["ratio"] == pytest.approx(x.nbytes / len(file)) and meta["format_version"] == 4


def test_info_of_a_lossless_file_has_no_bound():
    meta = fzg.info(fzg.compress(np.arange(100, dtype=np.uint16), lossless=True))
    assert meta["mode"] == "lossless" and "absolute_bound" not in meta and "requested_bound" not in meta


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)])
def test_decompress_takes_any_bytes_like_file(wrap):
    x = smooth((50, 20))
    y = fzg.decompress(wrap(fzg.compress(x, abs=1e-3)))
    assert max_error(x, y) <= 1e-3


def test_corrupt_and_truncated_files_are_fzg_errors():
    file = bytearray(fzg.compress(smooth((64, 64)), abs=1e-3))
    with pytest.raises(fzg.FzgError) as truncated:
        fzg.decompress(bytes(file[: len(file) // 2]))
    assert truncated.value.status == "corrupt data" and str(truncated.value)
    file[-5] ^= 0x10
    with pytest.raises(fzg.FzgError, match="checksum"):
        fzg.decompress(bytes(file))
    with pytest.raises(fzg.FzgError):
        fzg.info(b"not an fzg file at all")


@pytest.mark.parametrize("config", ["fz", "ratio", "cusz", "gpulz", "fz-gpulz"])
def test_shipped_configs_by_name_hold_the_bound(config):
    x = smooth((20, 30, 40))
    y = fzg.decompress(fzg.compress(x, abs=1e-3, config=config, device="cpu"))
    assert max_error(x, y) <= 1e-3


def test_config_as_a_path_json_text_and_dict_write_the_same_file():
    x = smooth((20, 30, 40))
    path = os.path.join(fzg.CONFIG_DIR, "ratio.json")
    with open(path) as f:
        text = f.read()
    by_name = fzg.compress(x, abs=1e-3, config="ratio", device="cpu")
    assert fzg.compress(x, abs=1e-3, config=path, device="cpu") == by_name
    assert fzg.compress(x, abs=1e-3, config=text, device="cpu") == by_name
    assert fzg.compress(x, abs=1e-3, config=json.loads(text), device="cpu") == by_name
    assert by_name != fzg.compress(x, abs=1e-3, device="cpu")


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="no config named 'nonesuch'.*ratio"):
        fzg.compress(smooth((100,)), abs=1e-3, config="nonesuch")
    with pytest.raises(fzg.FzgError) as invalid:
        fzg.compress(smooth((100,)), abs=1e-3, config='{"stages": 3}')
    assert invalid.value.status == "invalid config"
    with pytest.raises(fzg.FzgError, match="cannot open"):
        fzg.compress(smooth((100,)), abs=1e-3, config="/nonexistent/config.json")


def test_devices_are_checked():
    with pytest.raises(ValueError, match="device must be"):
        fzg.compress(smooth((100,)), abs=1e-3, device="gpu")
    if not fzg.cuda_available():
        with pytest.raises(fzg.FzgError, match="no CUDA device") as refused:
            fzg.compress(smooth((100,)), abs=1e-3, device="cuda")
        assert refused.value.status == "unsupported"


def test_threads_compress_at_once_with_the_bytes_of_one():
    x = smooth((40, 50, 60))
    expected = fzg.compress(x, abs=1e-3, device="cpu")
    results = [None] * 4

    def work(i):
        results[i] = fzg.compress(x, abs=1e-3, device="cpu")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_fill_values_come_back_exactly_and_stay_out_of_the_range():
    a = smooth((40, 60))
    a[:, 45:] = np.float32(1e20)  # land
    a[3, 7] = np.float32("nan")   # a second fill value
    file = fzg.compress(a, rel=1e-3, fill=[1e20, float("nan")])
    info = fzg.info(file)
    back = fzg.decompress(file)
    missing = (a == np.float32(1e20)) | np.isnan(a)
    assert np.array_equal(back[missing].view(np.uint32), a[missing].view(np.uint32))
    sea = a[~missing].astype(np.float64)
    assert info["absolute_bound"] <= 1e-3 * (sea.max() - sea.min()) * (1 + 1e-12)
    assert np.abs(back[~missing] - sea).max() <= info["absolute_bound"]
    # Without them the land is data: the bound is a fraction of 1e20.
    assert fzg.info(fzg.compress(a, rel=1e-3))["absolute_bound"] > 1e16
    with pytest.raises(fzg.FzgError, match="the same"):
        fzg.compress(a, rel=1e-3, fill=[5, 5])
    with pytest.raises(TypeError, match="fill must be"):
        fzg.compress(a, rel=1e-3, fill="land")
