#!/usr/bin/env bash
# The async file against its peers (docs/BENCHMARKS.md, "The async file
# against its peers"): palindromic rounds (A B C D D C B A, i.e. ABBA for
# every pair) of each test, SETS times, one JSON line per run in OUT.
#
#   docs/bench/fs_peers.sh DIR SETS OUT
#
# TESTS=seq or TESTS=rand in the environment runs only those.
# Builds first (by hand, outside the workspace):
#   (cd docs/bench/fs-peers && CARGO_TARGET_DIR=../../../target/fs-peers cargo build --release)
#   (cd docs/bench/fs-peers && RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=../../../target/fs-peers-uring \
#        cargo build --release --features tokio-io-uring)
# Uncached runs drop the file's pages first (POSIX_FADV_DONTNEED), which
# other users of the machine may notice.
set -euo pipefail
dir=$1 sets=${2:-3} out=${3:-/dev/stdout}
cd "$(dirname "$0")/../.."
b=target/fs-peers/release/fs-peers
bu=target/fs-peers-uring/release/fs-peers
fio=${FIO:-fio}
seqf=$dir/seq4g randf=$dir/rand1g
$b make "$seqf" $((4 << 30))
$b make "$randf" $((1 << 30))
run_fio() { # cache direct
  local inv=1; [ "$1" = cached ] && inv=0
  $fio --name=seq --filename="$seqf" --rw=read --bs=1m --iodepth=8 --ioengine=io_uring \
    --direct="$2" --invalidate=$inv --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; r=j["read"];
print(json.dumps({"test":"seq","peer":"fio-direct" if sys.argv[2]=="1" else "fio","cache":sys.argv[1],
"mb_s":round(r["bw_bytes"]/1e6,1),"secs":r["runtime"]/1e3,"cpu_s":round((j["usr_cpu"]+j["sys_cpu"])/100*r["runtime"]/1e3,3),
"ctxsw":j["ctx"]}))' "$1" "$2"
}
seq_one() { # peer cache
  case $1 in
    fio) run_fio "$2" 0 ;;
    fio-direct) run_fio "$2" 1 ;;
    tokio-io-uring) [ -x "$bu" ] || { echo "no $bu: tokio-io-uring skipped" >&2; return; }
      $bu seq "$seqf" tokio "$2" | sed 's/"peer":"tokio"/"peer":"tokio-io-uring"/' ;;
    *) $b seq "$seqf" "$1" "$2" ;;
  esac
}
rand_one() { # peer cache
  case $1 in
    tokio-io-uring) [ -x "$bu" ] || { echo "no $bu: tokio-io-uring skipped" >&2; return; }
      $bu rand "$randf" tokio "$2" 3 | sed 's/"peer":"tokio"/"peer":"tokio-io-uring"/' ;;
    *) $b rand "$randf" "$1" "$2" 3 ;;
  esac
}
seq_peers=(nowait tokio tokio-io-uring fio nowait-direct nowait-direct-bufread fio-direct)
rand_peers=(nowait-file nowait-engine tokio tokio-io-uring tokio-uring monoio)
for s in $(seq "$sets"); do
  for cache in uncached cached; do
    order=("${seq_peers[@]}"); rev=(); for ((i=${#order[@]}-1; i>=0; i--)); do rev+=("${order[$i]}"); done
    if [ "${TESTS:-seq rand}" != rand ]; then
      for p in "${order[@]}" "${rev[@]}"; do seq_one "$p" "$cache" >> "$out"; done
    fi
    order=("${rand_peers[@]}"); rev=(); for ((i=${#order[@]}-1; i>=0; i--)); do rev+=("${order[$i]}"); done
    if [ "${TESTS:-seq rand}" != seq ]; then
      for p in "${order[@]}" "${rev[@]}"; do rand_one "$p" "$cache" >> "$out"; done
    fi
  done
done
