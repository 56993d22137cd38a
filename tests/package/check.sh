#!/usr/bin/env bash
# Checks the installed package the way an outside project uses it: installs a build of fzg
# into a temporary prefix, then builds and runs tests/package/main.cc twice, once through
# find_package(fzg) + fzg::fzg and once through `pkg-config --cflags --libs fzg`, against the
# installed headers and library only.
#   bash tests/package/check.sh [BUILD_DIR]   (default: build; the library and the fzg binary
#                                               are built there first if they are not yet)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
[ -f "$build/CMakeCache.txt" ] || { echo "package check: $build is not a configured fzg build" >&2; exit 1; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/fzg-package.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

echo "== package: install $build into a temporary prefix =="
cmake --build "$build" --target fzg_core fzg >/dev/null
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
for f in fzgConfig.cmake fzgConfigVersion.cmake fzgTargets.cmake fzg.pc libfzg.a; do
  found="$(find "$prefix" -name "$f" | head -1)"
  [ -n "$found" ] || { echo "package check: $f was not installed" >&2; exit 1; }
  echo "  ${found#"$prefix"/}"
done
# Nothing of the build or source tree may leak into the installed package.
if grep -rIl -e "FZG_SOURCE_DIR" -e "$root" "$prefix"; then
  echo "package check: the files above name the source tree or FZG_SOURCE_DIR" >&2
  exit 1
fi

echo "== package: find_package(fzg) + target_link_libraries(fzg::fzg) =="
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$here" -B "$tmp/cmake-consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" || { cat "$tmp/configure.log" >&2; exit 1; }
grep -- "-- fzg " "$tmp/configure.log" | sed "s|$tmp|TMP|g"
cmake --build "$tmp/cmake-consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; exit 1; }
"$tmp/cmake-consumer/fzg_package_check"

echo "== package: g++ main.cc \$(pkg-config --cflags --libs fzg) =="
pcdir="$(dirname "$(find "$prefix" -name fzg.pc | head -1)")"
flags="$(PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs fzg)"
echo "  pkg-config: ${flags//$tmp/TMP}"
read -r -a flag_words <<<"$flags"
"${CXX:-g++}" -std=c++17 -O2 "$here/main.cc" -o "$tmp/pkg-config-consumer" "${flag_words[@]}"
# The run finds a shared CUDA runtime (when the build links one) where the flags said it is.
libpath="$(printf '%s\n' "${flag_words[@]}" | sed -n 's/^-L//p' | paste -sd: -)"
LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/pkg-config-consumer"

echo "package check passed: find_package(fzg) and pkg-config fzg both build and run"
