#!/usr/bin/env bash
# Runs the whole comparison on a GPU machine: bench-harness (raw driver and streamgraph), the
# PyTorch, cuda.core and torch.distributed (W10) peers, then one merged table with ratios, the
# goal checks and the plots.
#
#   bash benches/run-all.sh [PATH/TO/bench-harness]      # default: .gpu/bin/bench-harness
#   OUT=/some/dir bash benches/run-all.sh                 # results folder (default benches/out)
#   QUICK=1 bash benches/run-all.sh                       # smoke run: 5 repetitions
#   WARMUP=0 bash benches/run-all.sh                      # no warm-up processes first
#
# Everything lands in $OUT: harness.json, torch.json, cuda_core.json, torch_dist.json, merged.json, goals.json,
# table.txt, *.log, *.png. Each step has a time limit (HARNESS_LIMIT, STEP_LIMIT) so a hang cannot
# eat the device lease; the full run takes about two to three minutes on an H200.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-benches/out}
mkdir -p "$OUT" || exit 1
STEP_LIMIT=${STEP_LIMIT:-200}
# The harness measures two systems (raw and streamgraph) and writes its JSON only at the end.
HARNESS_LIMIT=${HARNESS_LIMIT:-360}
extra=()
[ -n "${QUICK:-}" ] && extra=(--quick)

bin=${1:-}
if [ -z "$bin" ]; then
  if [ -x .gpu/bin/bench-harness ]; then
    bin=.gpu/bin/bench-harness
  elif [ -x .gpu/bin/test-harness ]; then
    # A `harness = false` bench built with `--benches` may be bundled under test-.
    bin=.gpu/bin/test-harness
  else
    bin=$(ls .gpu/bin/bench-* 2>/dev/null | head -n 1)
  fi
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "run-all: no bench-harness binary: pass its path (cargo bench --bench harness --no-run prints it)" >&2
  exit 1
fi

status=0
inputs=()

# The first processes on a freshly started machine launch graphs slowest (docs/BENCHMARKS.md,
# "Replay launch host time in alternations"): one short process of the harness and of the
# PyTorch peer first, their results not kept, so that the measured harness does not run first.
if [ "${WARMUP:-1}" != 0 ]; then
  echo "== warm-up" >&2
  timeout 60 "$bin" --only W2,W4 --reps 3 --json "$OUT/warmup-harness.json" > /dev/null 2>&1
  timeout 60 python3 benches/peers/torch_peer.py --only W2,W4 --reps 3 \
    --json "$OUT/warmup-torch.json" > /dev/null 2>&1
fi

echo "== bench-harness ($bin)" >&2
rm -f "$OUT/harness.json"
timeout "$HARNESS_LIMIT" "$bin" --json "$OUT/harness.json" "${extra[@]}" \
  > "$OUT/harness.txt" 2> >(tee "$OUT/harness.log" >&2)
rc=$?
if grep -q "no CUDA driver found" "$OUT/harness.txt"; then
  echo "run-all: no CUDA driver on this machine; nothing to measure" >&2
  exit 1
fi
[ $rc -ne 0 ] && { echo "run-all: bench-harness exited with $rc (see $OUT/harness.log)" >&2; status=1; }
[ -s "$OUT/harness.json" ] && inputs+=("$OUT/harness.json")

for peer in torch cuda_core torch_dist; do
  echo "== $peer peer" >&2
  rm -f "$OUT/$peer.json"
  timeout "$STEP_LIMIT" python3 "benches/peers/${peer}_peer.py" --json "$OUT/$peer.json" "${extra[@]}" \
    > /dev/null 2> >(tee "$OUT/$peer.log" >&2)
  rc=$?
  [ $rc -ne 0 ] && { echo "run-all: $peer peer exited with $rc (see $OUT/$peer.log)" >&2; status=1; }
  [ -s "$OUT/$peer.json" ] && inputs+=("$OUT/$peer.json")
done

if [ ${#inputs[@]} -eq 0 ]; then
  echo "run-all: no results at all" >&2
  exit 1
fi
echo "== merged table" >&2
python3 benches/merge.py "$OUT" "${inputs[@]}" || status=1
python3 benches/plot.py "$OUT/merged.json" "$OUT" || { echo "run-all: plots failed" >&2; status=1; }
echo "run-all: results in $OUT (status $status)" >&2
exit $status
