"""fzg.numcodecs.Fzg: the numcodecs Codec protocol, the entry point that registers it, and
Zarr arrays stored with it (zarr v2's API, as Debian's python3-zarr 2.13 gives it)."""
import importlib.metadata

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")
import fzg  # noqa: E402
from fzg.numcodecs import Fzg  # noqa: E402


def field(shape=(32, 48, 40)):
    t = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (30 * np.sin(t * 0.01) + np.cos(t * 0.37)).reshape(shape).astype(np.float32)


def test_encode_decode_holds_the_bound():
    x = field()
    codec = Fzg(abs=1e-3)
    encoded = codec.encode(x)
    assert isinstance(encoded, bytes) and len(encoded) < x.nbytes
    y = codec.decode(encoded)
    assert y.shape == x.shape and y.dtype == x.dtype
    assert float(np.abs(y - x).max()) <= 1e-3


SHAPE = (32, 48, 40)


@pytest.mark.parametrize("out, read", [
    (np.empty(SHAPE, np.float32), lambda out: out),                                   # the chunk itself
    (np.empty(np.prod(SHAPE), np.float32), lambda out: out.reshape(SHAPE)),           # its flat buffer
    (bytearray(4 * int(np.prod(SHAPE))), lambda out: np.frombuffer(out, np.float32).reshape(SHAPE)),
])
def test_decode_into_out_as_zarr_gives_it(out, read):
    x = field(SHAPE)
    codec = Fzg(abs=1e-3)
    codec.decode(codec.encode(x), out=out)
    assert float(np.abs(read(out) - x).max()) <= 1e-3


def test_fortran_ordered_chunks_keep_their_memory_order():
    x = np.asfortranarray(field(SHAPE))
    codec = Fzg(abs=1e-3)
    encoded = codec.encode(x)
    assert fzg.info(encoded)["shape"] == SHAPE[::-1]  # the chunk as it lies in memory
    out = np.empty(SHAPE, np.float32, order="F")
    codec.decode(encoded, out=out)
    assert float(np.abs(out - x).max()) <= 1e-3
    flat = np.frombuffer(codec.decode(encoded), np.float32)  # Zarr reshapes this with order="F"
    assert float(np.abs(flat.reshape(SHAPE, order="F") - x).max()) <= 1e-3


def test_decode_into_an_out_of_the_wrong_size_is_refused():
    codec = Fzg(abs=1e-3)
    with pytest.raises(ValueError):
        codec.decode(codec.encode(field()), out=np.empty(10, np.float32))


def test_config_round_trips_through_get_codec():
    codec = Fzg(rel=1e-4, config="ratio")
    config = codec.get_config()
    assert config == {"id": "fzg", "rel": 1e-4, "config": "ratio"}
    again = numcodecs.get_codec(dict(config))
    assert isinstance(again, Fzg) and again.get_config() == config and again == codec
    assert Fzg.from_config({"lossless": True}).get_config() == {"id": "fzg", "lossless": True}


def test_fill_values_are_kept_exactly_and_round_trip_through_the_config():
    x = field()
    x[:, :, 30:] = np.float32(1e20)
    x[0, 0, 0] = np.float32("nan")
    codec = Fzg(rel=1e-3, fill=[1e20, float("nan")])
    config = codec.get_config()
    assert config["fill"] == [1e20, "nan"]  # strict JSON
    again = numcodecs.get_codec(config)
    back = again.decode(again.encode(x))
    missing = (x == np.float32(1e20)) | np.isnan(x)
    assert np.array_equal(back[missing].view(np.uint32), x[missing].view(np.uint32))
    sea = x[~missing].astype(np.float64)
    assert np.abs(back[~missing] - sea).max() <= 1e-3 * (sea.max() - sea.min())


def test_a_codec_with_no_or_two_bounds_is_refused_at_once():
    with pytest.raises(ValueError, match="exactly one"):
        Fzg()
    with pytest.raises(ValueError, match="exactly one"):
        Fzg(abs=1e-3, psnr=60)


def test_integer_chunks_round_trip_lossless():
    x = np.arange(3000, dtype=np.uint16).reshape(30, 100)
    codec = Fzg(lossless=True)
    assert np.array_equal(codec.decode(codec.encode(x)), x)


def installed():
    try:
        return importlib.metadata.distribution("fzg") is not None
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.skipif(not installed(), reason="fzg is not installed (entry points come from an installed package)")
def test_the_entry_point_registers_the_codec():
    from numcodecs import registry
    entries = [e for e in importlib.metadata.entry_points().get("numcodecs.codecs", [])] \
        if not hasattr(importlib.metadata.entry_points(), "select") \
        else list(importlib.metadata.entry_points().select(group="numcodecs.codecs"))
    assert any(e.name == "fzg" and e.value == "fzg.numcodecs:Fzg" for e in entries)
    registry.codec_registry.pop("fzg", None)  # found through the entry point, not an import
    if hasattr(registry, "run_entrypoints"):
        registry.run_entrypoints()
    assert isinstance(numcodecs.get_codec({"id": "fzg", "abs": 0.01}), Fzg)


def zarr_v2():
    zarr = pytest.importorskip("zarr")
    if int(zarr.__version__.split(".")[0]) >= 3:
        pytest.skip("zarr v3 takes numcodecs codecs through numcodecs.zarr3; these use zarr v2's API")
    return zarr


def test_zarr_array_round_trip():
    zarr = zarr_v2()
    x = field((40, 64, 50))
    for order in "CF":
        z = zarr.zeros(x.shape, chunks=(16, 32, 50), dtype="f4", order=order, compressor=Fzg(abs=1e-3))
        z[...] = x
        assert z.nbytes_stored < x.nbytes
        assert float(np.abs(z[...] - x).max()) <= 1e-3
        assert float(np.abs(z[3:29, 5:40, 7] - x[3:29, 5:40, 7]).max()) <= 1e-3


def test_zarr_store_reopens_from_its_metadata(tmp_path):
    zarr = zarr_v2()
    x = field((20, 30, 40))
    z = zarr.open(str(tmp_path / "t.zarr"), mode="w", shape=x.shape, chunks=(10, 30, 40), dtype="f4",
                  compressor=Fzg(rel=1e-3))
    z[...] = x
    again = zarr.open(str(tmp_path / "t.zarr"), mode="r")
    assert again.compressor.get_config() == {"id": "fzg", "rel": 1e-3}
    bound = 1e-3 * float(x[:10].max() - x[:10].min())  # rel applies per chunk: the first chunk's range
    assert float(np.abs(again[:10] - x[:10]).max()) <= bound
