#!/usr/bin/env bash
# The Python package as a user installs it: `pip install ./python` into a fresh virtual
# environment (with the system's site packages: Debian's numpy, h5py, numcodecs, zarr,
# pytest), scikit-build-core and pybind11 fetched by pip's build isolation, then every
# Python test against the installed package (the numcodecs entry point included), from a
# folder where the source tree cannot be imported instead.
#   bash tests/python/package_check.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-$(bash scripts/find-python.sh)} ||
  { echo "package_check: no python3 that imports numpy and pytest (run scripts/setup.sh)" >&2; exit 1; }
"$python" -c "import numpy, pytest" 2>/dev/null ||
  { echo "package_check: '$python' is no Python that imports numpy and pytest" >&2; exit 1; }
echo "package_check: $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check ./python
mkdir -p "$work/tests"
cp -r tests/python "$work/tests/python"
cp README.md "$work/README.md"  # test_readme.py reads it two folders up, as in the repository
cd "$work/tests/python"
"$work/venv/bin/python" -c "import fzg, sys; assert fzg.__file__.startswith(sys.prefix), fzg.__file__"
"$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider .
