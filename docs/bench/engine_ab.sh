#!/bin/bash
# Two builds of async_peer_bench side by side (A and B; the same binary twice
# measures one build), alternating A B B A per round: cached 4 KiB random
# reads at 32 tasks with the peers, then 256 tasks, then uncached.
# Build each: cargo build --release -p nowait --features tokio --example async_peer_bench
# Usage: docs/bench/engine_ab.sh BIN_A BIN_B [OUTDIR] [ROUNDS]; then
#        docs/bench/peer_medians.py OUTDIR/*.txt (modes A and B)
set -u
A=$1; B=$2; out=${3:-bench-ab}; rounds=${4:-6}; mkdir -p $out
export NOWAIT_BENCH_DIR=/var/tmp NOWAIT_BENCH_KEEP=1 NOWAIT_BENCH_SECS=2
# sets LABEL ROUNDS TASKS DEPTH FILES PEER...: ROUNDS rounds of A B B A
sets() {
  local label=$1 n=$2 tasks=$3 depth=$4 files=$5; shift 5
  for r in $(seq 1 $n); do
    for x in A B B A; do
      local bin=$A; [ $x = B ] && bin=$B
      echo "## $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"
      echo "== $label round $r mode $x"
      NOWAIT_BENCH_TASKS=$tasks NOWAIT_BENCH_DEPTH=$depth NOWAIT_BENCH_FILES=$files \
        $bin "$@" 2>&1 | grep -E "^(cached|uncached) "
    done
  done
}
sets cached32 $rounds 32 64 cached nowait-ct nowait-mt tokio-uring monoio queue pread-loop > $out/cached32.txt
sets cached256 3 256 256 cached nowait-ct nowait-mt pread-loop > $out/cached256.txt
sets uncached32 3 32 64 uncached nowait-mt nowait-ct tokio-uring > $out/uncached32.txt
