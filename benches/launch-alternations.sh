#!/usr/bin/env bash
# Replay launch host time (W2, W4) in several alternations of one process per system (the
# harness with raw driver code and streamgraph, the PyTorch peer, the cuda.core peer), ROUNDS
# times, each round merged on its own; then every system's p50 pooled over the rounds (the
# median of its per-process p50s) and compared with the best peer's. A graph launch's host
# time moves with the process (see docs/BENCHMARKS.md, "What one graph launch's host time
# depends on") and the first processes on a freshly started machine launch slowest, so the
# rounds start with a warm-up pass of every system (not counted) and each round starts with
# the next system in turn (round 1 the harness, round 2 PyTorch, round 3 cuda.core, …).
#
#   bash benches/launch-alternations.sh [ROUNDS] [REPS]      # default 3 rounds, 10 samples
#   WARMUP=0 bash benches/launch-alternations.sh             # no warm-up pass
#   PIN=3 bash benches/launch-alternations.sh                # every process on CPU 3 (taskset)
#   OUT=/some/dir bash benches/launch-alternations.sh        # default benches/out/launch
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
rounds=${1:-3}
reps=${2:-10}
OUT=${OUT:-benches/out/launch}
bin=${HARNESS:-.gpu/bin/bench-harness}
mkdir -p "$OUT" || exit 1
pin=()
[ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
status=0
# One process of system $2 (harness, torch or cuda_core) for round directory $1, $3 samples.
one() {
  local d=$1 sys=$2 reps=$3
  if [ "$sys" = harness ]; then
    timeout 120 "${pin[@]}" "$bin" --only W2,W4 --reps "$reps" --json "$d/harness.json" \
      > "$d/harness.txt" 2> "$d/harness.log"
  else
    timeout 120 "${pin[@]}" python3 "benches/peers/${sys}_peer.py" --only W2,W4 --reps "$reps" \
      --json "$d/$sys.json" > /dev/null 2> "$d/$sys.log"
  fi
}
order=(harness torch cuda_core)
if [ "${WARMUP:-1}" != 0 ]; then
  mkdir -p "$OUT/warmup"
  for sys in "${order[@]}"; do one "$OUT/warmup" "$sys" 3; done
  echo "launch-alternations: warm-up done" >&2
fi
for r in $(seq 1 "$rounds"); do
  d="$OUT/round$r"
  mkdir -p "$d"
  for k in 0 1 2; do
    sys=${order[$(( (r - 1 + k) % 3 ))]}
    one "$d" "$sys" "$reps" || status=1
  done
  inputs=()
  for f in harness torch cuda_core; do [ -s "$d/$f.json" ] && inputs+=("$d/$f.json"); done
  [ ${#inputs[@]} -gt 0 ] && python3 benches/merge.py "$d" "${inputs[@]}" > "$d/merge.log" 2>&1
  echo "launch-alternations: round $r done" >&2
done
python3 - "$OUT" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
pooled = {}
for r in range(1, rounds + 1):
    try:
        rows = json.load(open(f"{out}/round{r}/merged.json"))["rows"]
    except (OSError, ValueError, KeyError):
        continue
    for x in rows:
        if (x["variant"], x["metric"]) != ("replay", "host_launch") or x["workload"] not in ("W2", "W4") \
                or x["p50"] is None:
            continue
        key = (x["workload"], x["params"].get("width", 1))
        pooled.setdefault(key, {}).setdefault(x["system"], []).append(x["p50"])
systems = ["raw", "streamgraph", "torch", "cuda.core"]
print("per round (p50 host µs; rounds start with the harness, PyTorch, cuda.core in turn):")
for (w, width), by in sorted(pooled.items()):
    name = w + (' w' + str(width) if w == 'W4' else '')
    print(f"  {name:<12}" + "  ".join(f"{s} " + "/".join(f"{v:.2f}" for v in by[s]) for s in systems if s in by))
print("host µs of one replay's launch, median of the per-process p50s (processes)")
print(f"{'case':<14}" + "".join(f"{s:>16}" for s in systems) + f"{'sg/best peer':>14}")
for (w, width), by in sorted(pooled.items()):
    med = {s: statistics.median(v) for s, v in by.items()}
    peers = [med[p] for p in ("torch", "cuda.core") if p in med]
    ratio = med["streamgraph"] / min(peers) if "streamgraph" in med and peers else None
    cells = "".join(f"{med[s]:>11.2f} ({len(by[s])})" if s in med else f"{'-':>16}" for s in systems)
    print(f"{w + (' w' + str(width) if w == 'W4' else ''):<14}{cells}"
          + (f"{ratio:>14.3f}" if ratio is not None else f"{'-':>14}"))
PY
exit $status
