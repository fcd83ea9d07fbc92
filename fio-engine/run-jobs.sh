#!/usr/bin/env bash
# Runs fio with ioengine=nowait over small files whose data fio itself
# wrote with verify headers (crc32c per 4 KiB), every read verified:
#   * every backend, buffered and direct, through `ioengine=external:<so>`;
#   * the seeds' job files (jobs/*.fio) and fio's read-only example job
#     files (/usr/share/doc/fio/examples), preloaded, with the examples'
#     ioengine= lines turned into ioengine=nowait;
#   * and that the checks can fail: a flipped byte is caught, a job that
#     writes is refused.
#
#   fio-engine/run-jobs.sh fio-engine/build/fio-nowait.so
#
# Short runtimes and files of a few MiB: about half a minute in all.
set -euo pipefail
so=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
fio=${FIO:-fio}
examples=${FIO_EXAMPLES:-/usr/share/doc/fio/examples}
# On the tree's filesystem: O_DIRECT and RWF_NOWAIT work there (not on tmpfs).
work=$(mktemp -d "$here/build/run.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
fails=0

# fio forks a process per job: run it in its own process group, killed
# whole if it outlives its limit.
run() {
  local limit=$1; shift
  setsid "$@" >"$work/out" 2>&1 &
  local pid=$!
  (
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "$limit" &
    s=$!
    wait "$s"
    echo "killed after $limit s: $*" >>"$work/out"
    kill -9 -- -"$pid" 2>/dev/null
  ) &
  local watch=$!
  local rc=0
  wait "$pid" || rc=$?
  kill "$watch" 2>/dev/null || true
  wait "$watch" 2>/dev/null || true
  return $rc
}
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; sed 's/^/     /' "$work/out" | tail -25; fails=$((fails + 1)); }

# Files written by fio's psync engine with a crc32c header per 4 KiB block
# (the header names the block's offset, so a read of the wrong place fails).
layout() {
  run 120 "$fio" --name=layout --ioengine=psync --rw=write --bs=4k --verify=crc32c \
    --do_verify=0 --filename="$1" --size="$2" || { bad "layout $1"; exit 1; }
}
layout "$work/data" 16m
layout "$work/hot" 8m
layout "$work/cold" 32m
VERIFY=(--verify=crc32c --verify_interval=4k --verify_fatal=1)

echo "== every backend, buffered and direct (ioengine=external:$so)"
for b in uring aio aio+pool pool sync; do
  for d in 0 1; do
    name="backend=$b direct=$d"
    if run 60 "$fio" --name=m --ioengine="external:$so" --backend="$b" --direct="$d" \
        --filename="$work/data" --size=16m --rw=randread --bs=4k --iodepth=16 \
        --iodepth_batch_submit=4 --number_ios=2000 "${VERIFY[@]}" \
      && grep -q "backend: $b;" "$work/out"; then ok "$name"; else bad "$name"; fi
  done
done

echo "== the seeds' job files (LD_PRELOAD, ioengine=nowait)"
export FILE="$work/data" SIZE=16m QD=8 RUNTIME=1s RAMP=0 HOT_FILE="$work/hot" HOT_SIZE=8m \
  COLD_FILE="$work/cold" COLD_SIZE=32m
for job in "$here"/jobs/*.fio; do
  if run 60 env LD_PRELOAD="$so" "$fio" "${VERIFY[@]}" "$job" && grep -q "nowait counters" "$work/out"; then ok "$(basename "$job")"
  else bad "$(basename "$job")"; fi
done

echo "== fio's read-only example job files (LD_PRELOAD, ioengine=nowait)"
# Each example's files become the laid-out data file, sizes 16m, runtimes
# 1 s, ramps and start delays 0 (an example naming no engine gets
# --ioengine=nowait; xnvme-compare's ${FIO_*} come from the environment). Left out, with the reason:
skip_reason() {
  case $1 in
    fixed-rate-submission.fio|poisson-rate-submission.fio)
      echo "io_submit_mode=offload: fio 3.33 hangs in workqueue_init here with its own engines too (psync, libaio)";;
    zbd-seq-read.fio) echo "needs a zoned block device";;
    *) return 1;;
  esac
}
ran=0
for ex in "$examples"/*.fio; do
  name=$(basename "$ex")
  # Only jobs that read files: no write/trim mode, and an engine that reads
  # files (or none named: fio's default, psync).
  grep -Eq '^[[:space:]]*(rw|readwrite)[[:space:]]*=' "$ex" || continue
  grep -Eq '^[[:space:]]*(rw|readwrite)[[:space:]]*=.*(write|trim|rw|randrw)' "$ex" && continue
  grep -Eq '^[[:space:]]*ioengine[[:space:]]*=' "$ex" &&
    ! grep -Eq '^[[:space:]]*ioengine[[:space:]]*=[[:space:]]*(libaio|psync|sync|pvsync|pvsync2|io_uring|posixaio|null)[[:space:]]*$' "$ex" && continue
  if reason=$(skip_reason "$name"); then echo "skip $name: $reason"; continue; fi
  sed -E -e 's/^[[:space:]]*ioengine[[:space:]]*=.*/ioengine=nowait/' \
    -e '/^[[:space:]]*(filename|directory)[[:space:]]*=/d' \
    -e 's/^[[:space:]]*size[[:space:]]*=.*/size=16m/' \
    -e 's/^[[:space:]]*runtime[[:space:]]*=.*/runtime=1/' \
    -e 's/^[[:space:]]*ramp_time[[:space:]]*=.*/ramp_time=0/' \
    -e 's/^[[:space:]]*startdelay[[:space:]]*=.*/startdelay=0/' \
    -e 's/^[[:space:]]*(numa_cpu_nodes|numa_mem_policy)[[:space:]]*=.*//' \
    "$ex" >"$work/$name"
  if run 60 env LD_PRELOAD="$so" FIO_RW=randread FIO_IODEPTH=4 FIO_BS=4k "$fio" \
      --ioengine=nowait --filename="$work/data" --runtime=1 "${VERIFY[@]}" "$work/$name" \
    && grep -q "nowait counters" "$work/out"; then ok "$name"; else bad "$name"; fi
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "FAIL no example job files under $examples (install fio-examples)"; fails=$((fails + 1)); }

echo "== the checks can fail"
cp "$work/data" "$work/bad"
printf 'nowait!!' | dd of="$work/bad" bs=1 seek=$((4096 * 7 + 100)) conv=notrunc 2>/dev/null
if run 60 "$fio" --name=flip --ioengine="external:$so" --filename="$work/bad" --size=16m \
    --rw=read --bs=4k "${VERIFY[@]}"; then bad "a flipped byte was not caught"
elif grep -q "verify failed at file .* offset 28672" "$work/out"; then ok "a flipped byte is caught"
else bad "a flipped byte: fio failed, but not with the verify failure"; fi
if run 60 "$fio" --name=w --ioengine="external:$so" --filename="$work/bad" --size=1m --rw=randwrite; then
  bad "a job that writes ran"
elif grep -q "ioengine=nowait reads only" "$work/out"; then ok "a job that writes is refused"
else bad "a job that writes: fio failed, but not with the engine's message"; fi

if [ "$fails" -ne 0 ]; then echo "$fails failed"; exit 1; fi
echo "all passed"
