#!/usr/bin/env bash
# Parquet scans through LocalFileSystem and through nowait (docs/BENCHMARKS.md,
# "The async file and range reads against their peers (#26)", Parquet scans).
#
#   docs/bench/parquet_scan.sh FILE SETS OUT [RTS]
#
# FILE is written first if missing (`parquet_scan --generate 2.2`: 272 row
# groups, 2.02 GiB).
# Then a check pass: every scan through every via once, cached, with
# `--check` (a digest of every value decoded), into OUT.check; the rows and
# digests must agree across vias (the script stops if not). Then SETS sets:
# for each scan (proj, full), cache (uncached, cached) and runtime in RTS
# (default "ct mt"), the vias in palindromic order (local store reader
# prefetch [memory] memory prefetch reader store local; `memory`, decode
# alone, only cached), one JSON line per run in OUT with the 1-minute load
# average at its start (`load1`), the set and the UTC time. With NICE=N in
# the environment every run is started with `nice -n N` (a negative N puts
# the scans ahead of the host's other work; `nice` is recorded).
#
# Build first:
#   cargo build --release -p nowait-object-store --features parquet --example parquet_scan
# Medians:
#   python3 docs/bench/json_medians.py OUT scan,cache,rt,via wall_s,user_s,sys_s,ctxsw
# Uncached runs drop the file's pages (POSIX_FADV_DONTNEED) and cached runs
# read the whole file first; others on the machine may notice either.
set -euo pipefail
file=$1 sets=${2:-3} out=${3:-/dev/stdout} rts=${4:-ct mt}
cd "$(dirname "$0")/../.."
b=target/release/examples/parquet_scan
[ -x "$b" ] || { echo "no $b: build it first (see the top of $0)" >&2; exit 1; }
[ -e "$file" ] || $b "$file" --generate 2.2 --scan proj --via reader --cache cached > /dev/null

nice=${NICE:-0}
run() { # scan via cache rt [extra]
  local load t
  load=$(cut -d' ' -f1 /proc/loadavg) t=$(date -u +%H:%M:%S)
  nice -n "$nice" $b "$file" --scan "$1" --via "$2" --cache "$3" --rt "$4" ${5:-} |
    sed "s/^{/{\"set\":\"$round\",\"t\":\"$t\",\"load1\":$load,\"nice\":$nice,/"
}

round=check
: > "$out.check"
for scan in proj full; do
  for via in local store reader prefetch memory; do
    run "$scan" "$via" cached ct --check >> "$out.check"
  done
done
python3 - "$out.check" <<'EOF'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for scan in ("proj", "full"):
    # Batches may differ: arrow-rs's synchronous reader (`memory`) fills
    # batches across row groups, the async stream ends one per row group.
    got = {(r["rows"], r["digest"]) for r in runs if r["scan"] == scan}
    print(scan, "rows, digest:", got, file=sys.stderr)
    if len(got) != 1:
        sys.exit(f"{scan}: the vias disagree: {got}")
EOF

for round in $(seq "$sets"); do
  for scan in proj full; do
    for cache in uncached cached; do
      for rt in $rts; do
        vias=(local store reader prefetch)
        [ "$cache" = cached ] && vias+=(memory)
        rev=(); for ((i=${#vias[@]}-1; i>=0; i--)); do rev+=("${vias[$i]}"); done
        for via in "${vias[@]}" "${rev[@]}"; do run "$scan" "$via" "$cache" "$rt" >> "$out"; done
      done
    done
  done
done
