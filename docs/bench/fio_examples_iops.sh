#!/bin/bash
# fio's read-only example job files, run unchanged but for where their
# data goes and how much of it (directory, filename, size; a time-based
# job's runtime capped at 3 s; start delays 0), cached (invalidate=0), by
# `nowait bench --compare-fio` in ABBA sets (fio, nowait, nowait, fio):
# per job, the median IOPS of each tool and their ratio.
#
# Usage: docs/bench/fio_examples_iops.sh [EXAMPLES_DIR] [SETS] [NAME:SIZE ...] > out.txt
#   EXAMPLES_DIR: fio's examples/ (default /usr/share/doc/fio/examples)
#   SETS: ABBA sets per file (default 3)
#   NAME:SIZE: the examples to run and their data size (default: all below)
#   NOWAIT: the nowait binary (default target/release/nowait)
#   DIR: where the data goes (default /var/tmp/nowait-fio-examples; on a disk)
set -eu
ex=${1:-/usr/share/doc/fio/examples}
sets=${2:-3}
shift 2 2>/dev/null || shift $#
nowait=$(realpath "${NOWAIT:-target/release/nowait}")
dir=${DIR:-/var/tmp/nowait-fio-examples}
mkdir -p "$dir"
echo "# host: $(uname -r), $(nproc) CPUs; fio $(fio --version); nowait $($nowait --version 2>/dev/null || echo '?')"
# Each example, and the size its data is given (1mbs_clients' jobs are
# rate-limited to 1250 KiB/s each: 2 MiB a job).
[ $# -gt 0 ] || set -- aio-read:256m backwards-read:256m butterfly:256m disk-zone-profile:256m \
  fio-rand-read:256m fio-seq-read:256m null:4g rand-zones:256m zipf:256m 1mbs_clients:2m
for e in "$@"; do
  name=${e%%:*}; size=${e#*:}
  [ -f "$ex/$name.fio" ] || { echo "# $name: not in $ex"; continue; }
  copy="$dir/$name.fio"
  {
    printf '[global]\ndirectory=%s\nsize=%s\ninvalidate=0\nstartdelay=0\n' "$dir" "$size"
    sed -e "s/^size=.*/size=$size/" -e 's/^runtime=.*/runtime=3/' \
        -e 's/^directory=.*//' -e 's/^startdelay=.*/startdelay=0/' \
        -e 's#^filename=/.*#filename=data#' "$ex/$name.fio"
  } > "$copy"
  echo "## $name ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
  # The table at the end: one row per job with nowait's and fio's median IOPS.
  (cd "$dir" && "$nowait" bench --compare-fio --abba="$sets" "$copy" 2>&1) |
    sed -n '/^engine /,$p'
done
rm -rf "$dir"
