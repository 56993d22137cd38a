#!/usr/bin/env bash
# Builds and runs the whole test suite (GPU tests skip cleanly where no device exists), then
# closes with the real counts, skips included:
#   254 skipped: no CUDA device (GPU tests run on the device machine: scripts/device-check.sh)
#   371 passed, 0 failed, 254 skipped
# The counts and reasons come from ctest's JUnit report of this run. Exits non-zero when a
# test failed (ctest's own verdict: a test that could not start counts as failed).
# FZG_BUILD_DIR=dir tests another build folder (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FZG_BUILD_DIR:-build}"
bash scripts/build.sh >&2
junit="$(pwd)/$build/ctest-junit.xml"
case "$build" in /*) junit="$build/ctest-junit.xml" ;; esac
rm -f "$junit"
status=0
ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --timeout 900 --output-junit "$junit" || status=$?
if [ ! -s "$junit" ]; then
  echo "ctest wrote no report ($junit); exit status $status" >&2
  exit $(( status ? status : 1 ))
fi

# One pass over the report: per test its status; for a skipped test the reason gtest gave (the
# line after "file:line: Skipped" in its output). "notrun" is a skip only when ctest says so
# (SKIP_REGULAR_EXPRESSION or SKIP_RETURN_CODE); otherwise the test could not run: a failure.
summary="$(awk '
  function unxml(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
    gsub(/&amp;/, "\\&", s); return s
  }
  /<testcase / {
    match($0, /status="[a-z]*"/); status = substr($0, RSTART + 8, RLENGTH - 9)
    kind = status == "run" ? "passed" : status == "fail" ? "failed" : status == "disabled" ? "skipped" : "notrun"
    reason = status == "disabled" ? "disabled" : ""; next_is_reason = 0; next
  }
  /<skipped message="SKIP_/ { if (kind == "notrun") kind = "skipped"; next }
  /<\/testcase>/ {
    if (kind == "notrun") kind = "failed"
    count[kind]++
    if (kind == "skipped") { if (reason == "") reason = "no reason given"; why[reason]++ }
    kind = ""; next
  }
  kind != "" {
    line = $0; sub(/^[ \t]*<system-out>/, "", line); sub(/<\/system-out>.*$/, "", line)
    if (next_is_reason && reason == "") { reason = unxml(line); next_is_reason = 0 }
    if (line ~ /: Skipped$/) next_is_reason = 1
  }
  END {
    for (r in why) printf "R\t%d\t%s\n", why[r], r
    printf "C\t%d\t%d\t%d\n", count["passed"], count["failed"], count["skipped"]
  }' "$junit")"

read -r passed failed skipped < <(awk -F'\t' '$1 == "C" { print $2, $3, $4 }' <<<"$summary")
echo
# Why tests were skipped, most common reason first.
while IFS=$'\t' read -r n reason; do
  hint=""
  case "$reason" in
    *"CUDA device"*) hint=" (GPU tests run on the device machine: scripts/device-check.sh)" ;;
  esac
  echo "$n skipped: $reason$hint"
done < <(awk -F'\t' '$1 == "R" { print $2 "\t" $3 }' <<<"$summary" | sort -t$'\t' -k1,1nr -k2)
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ] || [ "$status" -ne 0 ]; then exit $(( status ? status : 1 )); fi
if [ $((passed + failed + skipped)) -eq 0 ]; then echo "no tests ran" >&2; exit 1; fi
