#!/usr/bin/env bash
# Installs what building fzg needs from Debian/Ubuntu packages, skipping what is present.
# CUDA is optional: with nvcc on the PATH (or in /usr/local/cuda/bin) the CUDA backend builds too.
# pkg-config is for tests/package/check.sh (the installed fzg.pc).
set -euo pipefail
# libhdf5-dev lets fzg read HDF5 / NetCDF-4 datasets and builds its HDF5 filter (hdf5-tools
# tests it); python3-numpy, -matplotlib and -h5py run the tests of the evaluation workflow and
# of those inputs (tests/evaluation_test.sh, described_inputs_test.sh), netcdf-bin's ncgen
# writes the NetCDF-4 file the latter reads. python3-dev, pybind11-dev, -pytest, -numcodecs,
# -zarr and -venv build and test the Python package (python/, tests/python).
packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libcli11-dev libgtest-dev libhdf5-dev hdf5-tools
          netcdf-bin python3-numpy python3-matplotlib python3-h5py
          python3-dev pybind11-dev python3-pytest python3-numcodecs python3-zarr python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "fzg setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
