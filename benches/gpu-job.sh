#!/usr/bin/env bash
# One call on a GPU machine without a Rust toolchain: every test binary of a `gpu-bundle`
# (`--include-ignored`, one binary at a time: several at once on one GPU fail on memory and
# timing), the examples, W8's loop-order probe and W11, within a time budget.
#
# Here:   ../shared/tools/gpu-bundle
#         for c in benches/driver-repro/*.c; do cc -O2 -o .gpu/bin/repro-$(basename $c .c) $c -ldl -lpthread; done
#         tar cJf .gpu/bin.tar.xz -C .gpu bin && rm -rf .gpu/bin
# There:  OUT=DIR BUDGET=540 bash benches/gpu-job.sh     # logs and a summary under DIR/logs
#         SKIP_TESTS=1, W11_REPS=N change what runs.
set -u
cd "$(dirname "$0")/.." || exit 1
L=${OUT:?OUT must name a folder for the logs}/logs
mkdir -p "$L"
if [ -f .gpu/bin.tar.xz ]; then tar xJf .gpu/bin.tar.xz -C .gpu || exit 1; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$L/gpu.txt"
start=$(date +%s)
left() { echo $(( ${BUDGET:-520} - ($(date +%s) - start) )); }
if [ "${SKIP_TESTS:-0}" = 0 ]; then
  ok=0 bad=""
  for t in .gpu/bin/test-*; do
    n=$(basename "$t")
    [ "$(left)" -gt 150 ] || { echo "no time left for $n" | tee -a "$L/summary.txt"; break; }
    timeout 90 "$t" --include-ignored --test-threads=4 > "$L/$n.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then ok=$((ok + 1)); else bad="$bad $n($rc)"; fi
  done
  echo "binaries ok=$ok failed=$bad" | tee -a "$L/summary.txt"
  cat "$L"/test-*.log | grep "^test result" \
    | awk '{p+=$4; f+=$6} END {print "tests passed=" p " failed=" f}' | tee -a "$L/summary.txt"
  for b in $bad; do grep -E "^test .* FAILED|panicked|^failures:" "$L/${b%%(*}.log" | head -8; done
  if [ "$(left)" -gt 120 ]; then
    timeout 100 bash .gpu/run-examples.sh > "$L/examples.log" 2>&1
    tail -1 "$L/examples.log" | tee -a "$L/summary.txt"
  fi
fi
if [ -x .gpu/bin/repro-beside_capture ]; then
  timeout 30 .gpu/bin/repro-beside_capture 2>&1 | tee "$L/beside_capture.log"
fi
if [ "$(left)" -gt 60 ]; then
  timeout 60 .gpu/bin/bench-harness --probe-loop > "$L/probe-loop.log" 2>&1
  tail -5 "$L/probe-loop.log"
fi
for i in 1 2; do
  [ "$(left)" -gt 50 ] || break
  timeout $(( $(left) - 10 )) .gpu/bin/bench-harness --only W11 --reps "${W11_REPS:-10}" \
    --json "$L/w11-$i.json" > "$L/w11-$i.log" 2>&1
  grep -E "capture\+instantiate|replay +device" "$L/w11-$i.log" | cut -c1-180
done
echo "elapsed $(( $(date +%s) - start )) s"
