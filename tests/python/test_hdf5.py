"""fzg.hdf5.Fzg with h5py: the cd_values hdf5/h5z_fzg.cc reads, and datasets written through
the shipped filter plugin and read back, by this process and by HDF5's own tools."""
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
import fzg  # noqa: E402

try:
    import fzg.hdf5 as fzg_hdf5
    fzg_hdf5.register()
    usable, why = True, ""
except fzg.FzgError as refused:  # no plugin in this build, or an h5py with an HDF5 of its own
    usable, why = False, str(refused)
needs_plugin = pytest.mark.skipif(not usable, reason=f"the fzg filter cannot load here: {why}")


def field(shape=(24, 64, 80)):
    t = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (50 * np.sin(t * 0.004) + 2 * np.cos(t * 0.05)).reshape(shape).astype(np.float32)


@needs_plugin
def test_cd_values_are_mode_then_the_double_s_halves_then_the_config_name():
    # The README's h5repack example: abs 0.01 is UD=305,0,3,1,1202590843,1065646817.
    assert fzg_hdf5.Fzg(abs=0.01).filter_options == (1, 1202590843, 1065646817)
    rel = fzg_hdf5.Fzg(rel=1e-3, config="ratio").filter_options
    assert rel[0] == 2 and struct.unpack("<d", struct.pack("<II", rel[1], rel[2]))[0] == 1e-3
    assert struct.pack("<2I", *rel[3:]) == b"ratio\0\0\0"
    assert fzg_hdf5.Fzg(psnr=60).filter_options[0] == 3 and fzg_hdf5.Fzg(lossless=True).filter_options[0] == 4
    assert dict(fzg_hdf5.Fzg(abs=0.01)) == {"compression": 305, "compression_opts": (1, 1202590843, 1065646817)}


@needs_plugin
def test_settings_are_checked_before_hdf5_sees_them():
    with pytest.raises(ValueError, match="exactly one"):
        fzg_hdf5.Fzg(abs=0.1, rel=0.1)
    with pytest.raises(ValueError, match="shipped config"):
        fzg_hdf5.Fzg(rel=1e-3, config="/tmp/my.json")


@needs_plugin
@pytest.mark.parametrize("settings, bound_of", [
    ({"abs": 1e-2}, lambda chunk: 1e-2),
    ({"rel": 1e-3}, lambda chunk: 1e-3 * float(chunk.max() - chunk.min())),  # each chunk's own range
    ({"abs": 1e-3, "config": "ratio"}, lambda chunk: 1e-3),
])
def test_h5py_writes_and_reads_within_the_bound(tmp_path, settings, bound_of):
    x = field()
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("t", data=x, chunks=(8, 64, 80), **fzg_hdf5.Fzg(**settings))
    with h5py.File(path, "r") as f:
        dataset = f["t"]
        assert "305" in dataset._filters and dataset.id.get_storage_size() < x.nbytes
        y = dataset[...]
    assert y.dtype == x.dtype and y.shape == x.shape
    for z in range(0, x.shape[0], 8):
        chunk = x[z:z + 8]
        assert float(np.abs(y[z:z + 8] - chunk).max()) <= bound_of(chunk)


@needs_plugin
def test_compression_takes_the_settings_object_as_hdf5plugin_s_do(tmp_path):
    x = field((10, 30, 40))
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_dataset("t", data=x, chunks=(5, 30, 40), compression=fzg_hdf5.Fzg(abs=0.05))
        assert float(np.abs(f["t"][...] - x).max()) <= 0.05


@needs_plugin
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int32, np.float64])
def test_lossless_datasets_round_trip_exactly(tmp_path, dtype):
    x = (np.arange(4000) * 7919 % 1000).astype(dtype).reshape(40, 100)
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_dataset("t", data=x, chunks=(10, 100), **fzg_hdf5.Fzg(lossless=True))
        assert np.array_equal(f["t"][...], x)


@needs_plugin
def test_a_lossy_bound_on_integers_fails_the_dataset_creation(tmp_path):
    with h5py.File(tmp_path / "t.h5", "w") as f:
        with pytest.raises((ValueError, RuntimeError, OSError)):
            f.create_dataset("t", shape=(10, 10), dtype="i4", chunks=(5, 10), **fzg_hdf5.Fzg(abs=0.1))


@needs_plugin
@pytest.mark.skipif(shutil.which("h5dump") is None, reason="h5dump is not installed (hdf5-tools)")
def test_hdf5_tools_read_the_file_through_plugin_dir(tmp_path):
    x = field((8, 16, 20))
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("t", data=x, chunks=(4, 16, 20), **fzg_hdf5.Fzg(abs=0.01))
    env = dict(os.environ, HDF5_PLUGIN_PATH=fzg_hdf5.PLUGIN_DIR)
    header = subprocess.run(["h5dump", "-p", "-H", "-d", "/t", str(path)], env=env, capture_output=True, text=True)
    assert header.returncode == 0 and "FILTER_ID 305" in header.stdout
    values = subprocess.run(["h5dump", "-d", "/t", "-s", "0,0,0", "-c", "1,1,3", str(path)], env=env,
                            capture_output=True, text=True)
    assert values.returncode == 0, values.stderr
    dumped = [float(v) for v in values.stdout.split("DATA {")[1].split("}")[0].split(":")[1].split(",")]
    assert np.abs(np.array(dumped) - x[0, 0, :3]).max() <= 0.01 + 1e-6  # h5dump prints 6 digits


@needs_plugin
def test_the_datasets_fill_value_is_a_missing_value(tmp_path):
    x = field()
    x[:, :, 60:] = np.float32(1e20)  # land, the dataset's fill value
    path = tmp_path / "land.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("t", data=x, chunks=(8, 64, 80), fillvalue=np.float32(1e20), **fzg_hdf5.Fzg(rel=1e-3))
    with h5py.File(path, "r") as f:
        y = f["t"][...]
    land = x == np.float32(1e20)
    assert np.array_equal(y[land], x[land])
    for k in range(0, x.shape[0], 8):  # rel is of each chunk's range of sea points
        sea = ~land[k:k + 8]
        chunk = x[k:k + 8][sea].astype(np.float64)
        assert np.abs(y[k:k + 8][sea] - chunk).max() <= 1e-3 * (chunk.max() - chunk.min())
