#!/usr/bin/env bash
# Configures and builds fzg into build/ (Release; FZG_BUILD_DIR=dir to build elsewhere): every
# target, or only those named (`bash scripts/build.sh fzg` builds the command line tool). The
# CUDA backend is compiled when nvcc is found (sm_90 by default; set CUDA_ARCHS to change it).
# Everything it prints goes to standard error, so a caller's standard output stays its own.
# When there is work to do: a line saying so, ninja's [N/M] progress (on one updating line
# when standard error is a terminal, one line per step when not; warnings and errors always
# in full) and the time it took. An up-to-date build prints nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 1>&2
build="${FZG_BUILD_DIR:-build}"
bash scripts/setup.sh
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
[ -f "$build/CMakeCache.txt" ] || echo "fzg: configuring $build/ …"
python=()  # the Python package's extension and tests: for the interpreter with numpy and pytest
py=$(bash scripts/find-python.sh) && python=(-DPython_EXECUTABLE="$py")
cmake -S . -B "$build" -G Ninja --no-warn-unused-cli -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" "${python[@]}" >/dev/null

live=0
if [ -t 2 ] && [ "${TERM:-dumb}" != dumb ]; then
  live=1
  cols=$(stty size </dev/tty 2>/dev/null | cut -d' ' -f2) || true
  [[ "${cols:-}" =~ ^[0-9]+$ ]] && [ "$cols" -gt 20 ] || cols=80
fi

# Reads ninja's output; exits 0 when a build step ran, 1 when there was nothing to do.
progress() {
  local line total started=0 open=0
  while IFS= read -r line; do
    case "$line" in
      "ninja: no work to do." | *"] Re-checking globbed directories..."*) continue ;;
    esac
    if [[ "$line" =~ ^\[[0-9]+/[0-9]+\]\  ]]; then
      if [ $started -eq 0 ]; then
        started=1
        total="${line#*/}" && total="${total%%]*}"
        if [ "$total" -ge 10 ]; then
          echo "fzg: building $build/ ($total steps; a full build takes a few minutes) …"
        else
          echo "fzg: building $build/ ($total steps) …"
        fi
      fi
      if [ $live -eq 1 ]; then
        printf '\r\033[K%s' "${line:0:cols-1}"
        open=1
        continue
      fi
    elif [ $open -eq 1 ]; then
      printf '\n'
      open=0
    fi
    printf '%s\n' "$line"
  done
  [ $open -eq 0 ] || printf '\n'
  [ $started -eq 1 ]
}

start=$SECONDS
set +e
targets=()
[ $# -eq 0 ] || targets=(--target "$@")
cmake --build "$build" -j "$(nproc)" "${targets[@]}" 2>&1 | progress
codes=("${PIPESTATUS[@]}")
set -e
if [ "${codes[0]}" -ne 0 ]; then
  echo "fzg: the build of $build/ failed (above)"
  exit "${codes[0]}"
fi
if [ "${codes[1]}" -eq 0 ]; then
  elapsed=$((SECONDS - start))
  echo "fzg: built $build/ in $((elapsed / 60))m$(printf %02d $((elapsed % 60)))s"
fi
