#!/usr/bin/env bash
# Installs what building fzg needs from Debian/Ubuntu packages, skipping what is present.
# CUDA is optional: with nvcc on the PATH (or in /usr/local/cuda/bin) the CUDA backend builds too.
# pkg-config is for tests/package/check.sh (the installed fzg.pc).
set -euo pipefail
# python3-numpy and python3-matplotlib run the evaluation workflow's test (tests/evaluation_test.sh).
packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libcli11-dev libgtest-dev python3-numpy python3-matplotlib)
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
