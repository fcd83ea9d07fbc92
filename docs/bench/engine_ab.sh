#!/bin/bash
# Two builds of async_peer_bench side by side (A = before a change, B = after),
# alternating A B B A per round: cached 4 KiB random reads at 32 tasks with
# the peers, then 256 tasks, then uncached. Fifth session (one reference
# count per cached hit).
# Build each: cargo build --release -p nowait --features tokio --example async_peer_bench
# Usage: docs/bench/engine_ab.sh BIN_A BIN_B [OUTDIR] [ROUNDS]; then
#        docs/bench/peer_medians.py OUTDIR/*.txt (modes A and B)
set -u
A=$1; B=$2; out=${3:-bench-ab}; rounds=${4:-6}; mkdir -p $out
host() { echo "## $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
export NOWAIT_BENCH_DIR=/var/tmp NOWAIT_BENCH_KEEP=1 NOWAIT_BENCH_SECS=2
run() { # label binary peers...
  local label=$1 bin=$2; shift 2
  host; echo "== $label"
  $bin "$@" 2>&1 | grep -E "^(cached|uncached) "
}
for r in $(seq 1 $rounds); do
  for x in A B B A; do
    bin=$A; [ $x = B ] && bin=$B
    NOWAIT_BENCH_TASKS=32 NOWAIT_BENCH_DEPTH=64 NOWAIT_BENCH_FILES=cached \
      run "cached32 round $r mode $x" $bin nowait-ct nowait-mt tokio-uring monoio queue pread-loop
  done
done > $out/cached32.txt
for r in 1 2 3; do
  for x in A B B A; do
    bin=$A; [ $x = B ] && bin=$B
    NOWAIT_BENCH_TASKS=256 NOWAIT_BENCH_DEPTH=256 NOWAIT_BENCH_FILES=cached \
      run "cached256 round $r mode $x" $bin nowait-ct nowait-mt pread-loop
  done
done > $out/cached256.txt
for r in 1 2 3; do
  for x in A B B A; do
    bin=$A; [ $x = B ] && bin=$B
    NOWAIT_BENCH_TASKS=32 NOWAIT_BENCH_DEPTH=64 NOWAIT_BENCH_FILES=uncached \
      run "uncached32 round $r mode $x" $bin nowait-mt nowait-ct tokio-uring
  done
done > $out/uncached32.txt
