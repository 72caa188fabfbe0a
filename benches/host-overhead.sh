#!/usr/bin/env bash
# streamgraph's own host cost per operation, counted in instructions on any machine (no GPU):
# benches/host_overhead.rs against the stand-in driver of benches/stub-driver, under
# `valgrind --tool=callgrind`. Each case runs at two iteration counts; the difference divided by
# the extra rounds is the cost of one round, without the program's setup.
#
#   bash benches/host-overhead.sh              # every case
#   bash benches/host-overhead.sh capture 1000  # one case and size
#   bash benches/host-overhead.sh --guard      # what streamgraph adds over hand-written driver
#                                              # code, against benches/host-overhead.baseline:
#                                              # fails when a count grows by more than 10 %
#   bash benches/host-overhead.sh --baseline   # writes the baseline anew
#   bash benches/host-overhead.sh --lines      # lines of code and data a captured GEMM call
#                                              # touches between GEMMs that run 64 KiB of
#                                              # code and write 64 KiB of data, against the
#                                              # same call by hand (first-level misses)
#   bash benches/host-overhead.sh --by-line launch_captured update 1000
#                                              # one function's instructions per operation of
#                                              # a case, by source line (inlined code at its
#                                              # own line): where a count goes
#
# Needs a C compiler (cc) and valgrind (`--by-line`: python3 and addr2line too). Prints, per
# case, instructions per round and per operation (N operations a round; a capture of N = 0 is
# one round's fixed cost).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cc >/dev/null || { echo "host-overhead: needs a C compiler (cc)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "host-overhead: needs valgrind" >&2; exit 1; }
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
cc -O2 -shared -fPIC -o "$stub/libcuda.so.1" benches/stub-driver/cuda.c
cc -O2 -shared -fPIC -o "$stub/libnvrtc.so.13" benches/stub-driver/nvrtc.c
cc -O2 -shared -fPIC -o "$stub/libcublas.so.13" benches/stub-driver/cublas.c -ldl
if [ "${1:-}" = --by-line ]; then
  # A build with line tables, apart from the others (target/by-line), so that each
  # instruction maps to its source line.
  export CARGO_TARGET_DIR=target/by-line CARGO_PROFILE_BENCH_DEBUG=line-tables-only \
    CARGO_PROFILE_BENCH_STRIP=none
fi
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

if [ "${1:-}" = --by-line ]; then
  usage="usage: host-overhead.sh --by-line FUNCTION CASE N [ITERATIONS]"
  [ $# -ge 4 ] || { echo "$usage" >&2; exit 2; }
  fn=$2 case=$3 n=$4 it=${5:-10}
  [ "$n" -gt 0 ] || { echo "host-overhead: --by-line needs N > 0 operations a round" >&2; exit 2; }
  small=$stub/small.cg large=$stub/large.cg
  for run in "$small $it" "$large $(( 2 * it ))"; do
    read -r out iterations <<< "$run"
    LD_LIBRARY_PATH="$stub" valgrind --tool=callgrind --dump-instr=yes \
      --callgrind-out-file="$out" "$bin" "$case" "$n" "$iterations" > /dev/null 2>&1
  done
  # Five rounds of ITERATIONS each: the larger run has 5 * it more rounds of N operations.
  python3 benches/by-line.py "$bin" "$fn" $(( 5 * it * n )) "$small" "$large"
  exit $?
fi

if [ "${1:-}" = --lines ]; then
  # First-level instruction and data misses of everything but the stand-in GEMM's own work,
  # per GEMM: the distinct lines of code and data a call's path touches with cold caches.
  n=64 it=20
  printf '%-10s %12s %12s\n' case code data
  for c in rawgemms gemms; do
    out=$(mktemp)
    STUB_CUBLAS_CODE=1 STUB_CUBLAS_THRASH_KIB=64 LD_LIBRARY_PATH="$stub" valgrind --tool=callgrind \
      --cache-sim=yes --callgrind-out-file="$out" "$bin" "$c" "$n" "$it" > /dev/null 2>&1
    callgrind_annotate --show=I1mr,D1mr --threshold=100 "$out" 2>/dev/null | awk -v c="$c" \
      -v calls=$(( 5 * it * n )) '
      function num(x) { gsub(",", "", x); return x + 0 }
      { gsub(/\([^)]*\)/, "") }
      /PROGRAM TOTALS/ { code = num($1); data = num($2) }
      / \?\?\?:code_walk / { code -= num($1) }
      / \?\?\?:gemm / { data -= num($2) }
      END { printf "%-10s %12.1f %12.1f\n", c, code / calls, data / calls }'
    rm -f "$out"
  done
  exit 0
fi

if [ "${1:-}" = --guard ] || [ "${1:-}" = --baseline ]; then
  # What streamgraph adds, per operation, over the same work written against the driver by
  # hand: small sizes, so that the guard runs in seconds.
  baseline=benches/host-overhead.baseline
  n=100
  per() { echo $(( ($(count "$1" "$2" 20) - $(count "$1" "$2" 10)) / 50 )); }
  raw0=$(per raw 0); cap0=$(per capture 0)
  raw=$(per raw $n); cap=$(per capture $n)
  rawset=$(per rawset $n); set=$(per set $n)
  rawupd=$(per rawupdate $n); upd=$(per update $n)
  args=$(per args $n); same=$(per same $n); tail=$(per tail $n); cells=$(per cells $n)
  calls=$(per calls $n); calls2=$(per calls2 $n); cap2=$(per capture $(( 2 * n )))
  distinct=$(per distinct $n); rawstamp=$(per rawstamp $n)
  gemms=$(per gemms $n); rawgemms=$(per rawgemms $n)
  measured=$(cat <<TXT
capture $(( cap0 - raw0 ))
launch $(( (cap - raw - cap0 + raw0) / n ))
call $(( (calls - cap) / n ))
call_two $(( (calls2 - cap2) / n ))
launch_distinct $(( (distinct - rawstamp - cap0 + raw0) / n ))
call_gemm $(( (gemms - rawgemms - cap0 + raw0) / n ))
set_kernel_args $(( (set - rawset) / n ))
update $(( (upd - rawupd) / n ))
update_args $(( args / n ))
update_args_same $(( same / n ))
update_args_one $(( (tail - rawset / n) / n ))
update_args_walk $(( (cells - rawset / n) / n ))
TXT
)
  if [ "$1" = --baseline ]; then
    { echo "# What streamgraph adds, in instructions (bash benches/host-overhead.sh --guard):"
      echo "# capture: per capture; launch: per captured launch; call: per captured \`call\` beyond"
      echo "# its op's launch; call_two: the same for an op of two launches; launch_distinct: per captured launch of two arguments, one a buffer"
      echo "# of its own, over the same launch by hand; call_gemm: per captured call of ops::Gemm over"
      echo "# cublasGemmEx by hand (stand-in cuBLAS); set_kernel_args: per call; update: per updated launch (re-capture"
      echo "# + exec update); update_args: per launch, every one changed; update_args_same: per launch,"
      echo "# none changed (their parameters' keys compared, the launches skipped); update_args_one:"
      echo "# per launch, over setting one node by hand, when one launch of N + 1 reads the one"
      echo "# parameter that changed; update_args_walk: the same when the launches read cells (no"
      echo "# parameter keys), so that every launch is walked and compared."
      echo "$measured"; } > "$baseline"
    cat "$baseline"
    exit 0
  fi
  status=0
  printf '%-16s %10s %10s\n' path baseline now
  while read -r path now; do
    was=$(awk -v p="$path" '$1 == p { print $2 }' "$baseline")
    [ -n "$was" ] || { echo "host-overhead: $path is not in $baseline" >&2; status=1; continue; }
    printf '%-16s %10s %10s\n' "$path" "$was" "$now"
    if [ $(( now * 10 )) -gt $(( was * 11 )) ] && [ $(( now - was )) -gt 2 ]; then
      echo "host-overhead: $path grew from $was to $now instructions (more than 10 %)" >&2
      status=1
    fi
  done <<< "$measured"
  exit $status
elif [ $# -ge 2 ]; then
  cases=("$1 $2 ${3:-10}")
else
  cases=("raw 0 200" "counted 0 200" "capture 0 200" "raw 10 100" "capture 10 100" "raw 1000 10" \
    "capture 1000 10" "calls 1000 10" "rawstamp 1000 10" "distinct 1000 10" "rawgemms 1000 10" "gemms 1000 10" "diamond 51 10" "eager 1000 10" "ediamond 51 10" "set 1000 5" "rawset 1000 5" "update 1000 5" \
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
