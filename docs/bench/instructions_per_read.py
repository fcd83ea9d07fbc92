#!/usr/bin/env python3
"""User-space instructions per cached read, counted by cachegrind: a figure
that does not move with the load of a shared machine, unlike IOPS.

Runs `async_peer_bench` (cached file only) under
`valgrind --tool=cachegrind --cache-sim=no` once per peer and prints, per
peer, the instructions executed per read outside the benchmark's own data
check (`nowait::pattern::fill`, `memcmp`, `memset`), and the functions that
cost the most per read. Reads are counted by the calls of the benchmark's
`check` (32 instructions per call in this build: the script says if that
no longer holds).

With NOWAIT_BENCH_SECS_SHORT set, each peer runs twice (that many seconds,
then NOWAIT_BENCH_SECS) and the figure is the difference of the two counts
over the difference of their reads: the process's start-up and the
layout of the file drop out, which a whole-run average keeps in
proportion to how few reads a loaded machine lets a run make.

Usage: instructions_per_read.py BENCH_BINARY [PEER ...]
  e.g. instructions_per_read.py target/release/examples/async_peer_bench nowait-ct tokio-uring
Environment: NOWAIT_BENCH_DIR (default /var/tmp), NOWAIT_BENCH_SECS (default 3),
NOWAIT_BENCH_SECS_SHORT (unset: one run per peer), TOP (functions listed
per peer, default 12)."""
import collections
import os
import re
import subprocess
import sys
import tempfile

CHECK = re.compile(r"pattern::fill|memcmp|memset")


def count(bench, peer, secs=None):
    env = dict(os.environ)
    env.setdefault("NOWAIT_BENCH_DIR", "/var/tmp")
    env.setdefault("NOWAIT_BENCH_SECS", "3")
    if secs is not None:
        env["NOWAIT_BENCH_SECS"] = secs
    env["NOWAIT_BENCH_KEEP"] = "1"
    env["NOWAIT_BENCH_FILES"] = "cached"
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             f"--cachegrind-out-file={out.name}", bench, peer],
            env=env, check=True, capture_output=True)
        per_fn = collections.Counter()
        fn = None
        for line in open(out.name):
            if line.startswith("fn="):
                fn = line[3:].strip()
            elif fn and line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    per_fn[fn] += int(parts[1])
    check = [v for k, v in per_fn.items() if k.endswith("async_peer_bench::check")]
    if not check:
        sys.exit(f"{peer}: no calls of async_peer_bench::check found")
    # `check` is a fixed 32 instructions a call in this build (it only
    # forwards to the pattern's fill and compare).
    reads = check[0] / 32.0
    if reads != int(reads):
        print(f"warning: {peer}: check's count is not a multiple of 32; reads approximate")
    total = sum(v for k, v in per_fn.items() if not CHECK.search(k))
    return reads, total, per_fn


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    bench = sys.argv[1]
    peers = sys.argv[2:] or ["nowait-ct", "tokio-uring"]
    top = int(os.environ.get("TOP", "12"))
    short = os.environ.get("NOWAIT_BENCH_SECS_SHORT")
    for peer in peers:
        reads, total, per_fn = count(bench, peer)
        if short:
            r0, t0, f0 = count(bench, peer, short)
            reads, total = reads - r0, total - t0
            per_fn = collections.Counter({k: v - f0.get(k, 0) for k, v in per_fn.items()})
            print(f"{peer}: {reads:.0f} more reads than the {short} s run, {total / reads:.0f} "
                  f"user instructions per read outside the data check")
        else:
            print(f"{peer}: {reads:.0f} reads, {total / reads:.0f} user instructions per read "
                  f"outside the data check")
        shown = 0
        for name, v in per_fn.most_common():
            if CHECK.search(name):
                continue
            print(f"  {v / reads:8.1f}  {name[:110]}")
            shown += 1
            if shown >= top:
                break


if __name__ == "__main__":
    main()
