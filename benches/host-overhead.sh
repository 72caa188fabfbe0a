#!/usr/bin/env bash
# streamgraph's own host cost per operation, counted in instructions on any machine (no GPU):
# benches/host_overhead.rs against the stand-in driver of benches/stub-driver, under
# `valgrind --tool=callgrind`. Each case runs at two iteration counts; the difference divided by
# the extra rounds is the cost of one round, without the program's setup.
#
#   bash benches/host-overhead.sh              # every case
#   bash benches/host-overhead.sh capture 1000  # one case and size
#
# Needs a C compiler (cc) and valgrind. Prints, per case, instructions per round and per
# operation (N operations a round; a capture of N = 0 is one round's fixed cost).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cc >/dev/null || { echo "host-overhead: needs a C compiler (cc)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "host-overhead: needs valgrind" >&2; exit 1; }
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
cc -O2 -shared -fPIC -o "$stub/libcuda.so.1" benches/stub-driver/cuda.c
cc -O2 -shared -fPIC -o "$stub/libnvrtc.so.13" benches/stub-driver/nvrtc.c
bin=$(cargo bench --bench host_overhead --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="host_overhead":
        print(m["executable"])')
[ -x "$bin" ] || { echo "host-overhead: could not build the host_overhead bench" >&2; exit 1; }

# Instructions of one run of CASE N ITERATIONS (five rounds of ITERATIONS each).
count() {
  LD_LIBRARY_PATH="$stub" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" "$1" "$2" "$3" 2>&1 | awk '/refs:/ { gsub(",", "", $4); print $4 }'
}

if [ $# -ge 2 ]; then
  cases=("$1 $2 ${3:-10}")
else
  cases=("raw 0 200" "counted 0 200" "capture 0 200" "raw 10 100" "capture 10 100" "raw 1000 10" \
    "capture 1000 10" "diamond 51 10" "eager 1000 10" "ediamond 51 10" "set 1000 5" "rawset 1000 5" "update 1000 5" \
    "rawupdate 1000 5" "args 1000 5")
fi
printf '%-8s %6s %14s %12s\n' case N "per round" "per op"
for c in "${cases[@]}"; do
  read -r name n it <<< "$c"
  a=$(count "$name" "$n" "$((2 * it))")
  b=$(count "$name" "$n" "$it")
  per_round=$(( (a - b) / (5 * it) ))
  ops=$n
  case $name in diamond | ediamond) ops=$(( n * 5 + n * 7 - 3 )) ;; esac  # launches + records and waits
  if [ "$ops" -gt 0 ]; then per_op=$(( per_round / ops )); else per_op=-; fi
  printf '%-8s %6s %14s %12s\n' "$name" "$n" "$per_round" "$per_op"
done
