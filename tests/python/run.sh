#!/usr/bin/env bash
# Runs one file of the Python package's tests (pytest) against the package built in a build
# tree, as ctest does:  bash tests/python/run.sh PYTHON BUILD/python test_api.py
# Exits 77 (skipped) where PYTHON lacks numpy or pytest, or when every test of the file
# skipped (no GPU, no cupy, no zarr): the reasons are printed.
set -uo pipefail
python=$1 package=$(cd "$2" && pwd) file=$3
here=$(cd "$(dirname "$0")" && pwd)
"$python" -c "import numpy, pytest" 2>/dev/null || { echo "SKIP: $python has no numpy or pytest (python3-numpy python3-pytest)"; exit 77; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cd "$here"
PYTHONPATH="$package${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest -q -rs -p no:cacheprovider "$here/$file" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(tail -n 1 "$log")
# pytest's 5: nothing collected (a module-level skip).
if [ "$status" -eq 5 ] || { [ "$status" -eq 0 ] && [[ "$summary" =~ skipped ]] && ! [[ "$summary" =~ passed ]]; }; then
  echo "SKIP: every test of $file skipped (reasons above)"
  exit 77
fi
exit "$status"
