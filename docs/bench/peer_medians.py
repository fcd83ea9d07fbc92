#!/usr/bin/env python3
"""Medians per (mode, peer) of docs/bench/page_cache_first.sh (modes adaptive
and off) or engine_ab.sh (modes A and B) outputs, and the
ratios of peers within each run (median and range over the rounds)."""
import re, sys, statistics, collections
for f in sys.argv[1:]:
    rows = collections.defaultdict(list)   # (mode, peer) -> [(iops, cpu, cs)]
    rounds = collections.defaultdict(dict)  # (round, mode, idx) -> peer->iops
    mode = None; key = None; seen = collections.Counter()
    for line in open(f):
        m = re.match(r"== \S+ round (\d+) mode (\S+)", line)
        if m:
            r, mode = m.group(1), m.group(2); seen[(r, mode)] += 1; key = (r, mode, seen[(r, mode)]); continue
        m = re.match(r"^(cached|uncached)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)", line)
        if m and mode:
            peer = m.group(2); v = (int(m.group(3)), float(m.group(4)), float(m.group(5)))
            rows[(mode, peer)].append(v); rounds[key][peer] = v[0]
    print(f"# {f}")
    for (mode, peer), vs in sorted(rows.items()):
        io = [v[0] for v in vs]
        print(f"{mode:9} {peer:12} IOPS med {statistics.median(io)/1e3:7.1f}k range {min(io)/1e3:.1f}-{max(io)/1e3:.1f}k  cpu/100k {statistics.median(v[1] for v in vs):.3f}  cs/read {statistics.median(v[2] for v in vs):.3f}  n={len(vs)}")
    def ratio(a, b, mode):
        rs = [d[a]/d[b] for k, d in rounds.items() if k[1] == mode and a in d and b in d]
        return (statistics.median(rs), min(rs), max(rs), len(rs)) if rs else None
    for mode in sorted({m for m, _ in rows}):
        for a, b in [("nowait-ct","tokio-uring"),("nowait-ct","monoio"),("nowait-ct","queue"),("nowait-mt","nowait-ct"),("nowait-mt","pread-loop"),("queue","pread-loop"),("nowait-mt","tokio-uring"),("nowait-ct","pread-loop")]:
            r = ratio(a, b, mode)
            if r: print(f"  {mode:9} {a}/{b}: median {r[0]:.3f} (range {r[1]:.2f}-{r[2]:.2f}, n={r[3]})")
