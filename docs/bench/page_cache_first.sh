#!/bin/bash
# The page cache first: the async engine with its first-poll
# RWF_NOWAIT read (adaptive) and without it (off), alternating, against
# tokio-uring, monoio, the queue and a pread loop; then 256 tasks; then uncached.
# Build: cargo build --release -p nowait --features tokio --example async_peer_bench
# Usage: docs/bench/page_cache_first.sh [OUTDIR]; then docs/bench/peer_medians.py OUTDIR/*.txt
set -u
out=${1:-bench-out}; mkdir -p $out
B=${BENCH:-target/release/examples/async_peer_bench}
host() { echo "## $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
export NOWAIT_BENCH_DIR=/var/tmp NOWAIT_BENCH_KEEP=1 NOWAIT_BENCH_SECS=2
# 1. cached, 32 tasks: page cache first (adaptive) vs ring only (off), alternating, 4 rounds
for r in 1 2 3 4; do
  for m in adaptive off off adaptive; do
    host; echo "== cached32 round $r mode $m"
    NOWAIT_BENCH_NOWAIT=$m NOWAIT_BENCH_TASKS=32 NOWAIT_BENCH_DEPTH=64 NOWAIT_BENCH_FILES=cached $B nowait-ct nowait-mt tokio-uring monoio queue pread-loop 2>&1 | grep -E "^cached"
  done
done > $out/cached32.txt
# 2. cached, 256 tasks (depth 256), 3 rounds
for r in 1 2 3; do
  for m in adaptive off; do
    host; echo "== cached256 round $r mode $m"
    NOWAIT_BENCH_NOWAIT=$m NOWAIT_BENCH_TASKS=256 NOWAIT_BENCH_DEPTH=256 NOWAIT_BENCH_FILES=cached $B nowait-ct nowait-mt pread-loop 2>&1 | grep -E "^cached"
  done
done > $out/cached256.txt
# 3. uncached, 32 tasks, 3 rounds alternating
for r in 1 2 3; do
  for m in adaptive off off adaptive; do
    host; echo "== uncached32 round $r mode $m"
    NOWAIT_BENCH_NOWAIT=$m NOWAIT_BENCH_TASKS=32 NOWAIT_BENCH_DEPTH=64 NOWAIT_BENCH_FILES=uncached $B nowait-mt nowait-ct tokio-uring 2>&1 | grep -E "^uncached|page cache"
  done
done > $out/uncached32.txt
