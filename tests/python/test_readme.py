"""The README's Python and "HDF5 from Python" snippets, run as written, in order, in one
namespace (a later snippet uses the `field` of the first), in a temporary folder. A snippet
that needs cupy and a GPU, zarr 2 or the HDF5 filter is skipped where that is missing."""
import os
import re

import pytest

import fzg

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def snippets():
    with open(README) as f:
        text = f.read()
    section = text[text.index("\n## Python\n"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def missing(snippet):
    """Why the snippet cannot run here, or None."""
    if "import cupy" in snippet:
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() == 0 or not fzg.cuda_available():
                return "no CUDA device"
        except Exception:
            return "no cupy or CUDA device"
    if "import zarr" in snippet:
        try:
            import zarr
            if int(zarr.__version__.split(".")[0]) >= 3:
                return "zarr 3 (the snippet uses zarr 2's API)"
        except ImportError:
            return "no zarr"
    if "fzg.hdf5" in snippet:
        try:
            import fzg.hdf5
            fzg.hdf5.register()
        except (ImportError, fzg.FzgError) as why:
            return f"the HDF5 filter cannot load here: {why}"
    return None


def test_the_readme_has_the_snippets():
    found = snippets()
    assert len(found) == 4 and "fzg.compress" in found[0] and "fzg.hdf5.Fzg" in found[-1]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """One namespace and folder for the snippets, in README order."""
    return {}, tmp_path_factory.mktemp("readme")


@pytest.mark.parametrize("index", range(len(snippets())))
def test_readme_snippet_runs_as_written(index, workspace, monkeypatch):
    namespace, folder = workspace
    snippet = snippets()[index]
    why = missing(snippet)
    if why:
        pytest.skip(why)
    monkeypatch.chdir(folder)
    exec(compile(snippet, f"README.md python snippet {index + 1}", "exec"), namespace)
