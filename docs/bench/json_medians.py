#!/usr/bin/env python3
"""Medians and spread of JSON-lines benchmark runs (fs_peers.sh, parquet_scan).

    python3 docs/bench/json_medians.py RUNS.jsonl KEY[,KEY...] METRIC[,METRIC...]

Groups the runs by the KEY fields and prints, per group and metric, the
median, the smallest and the largest value and the number of runs.
"""
import json
import statistics
import sys
from collections import defaultdict

path, keys, metrics = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
groups = defaultdict(list)
for line in open(path):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    groups[tuple(str(r.get(k)) for k in keys)].append(r)
for g, runs in sorted(groups.items()):
    cells = []
    for m in metrics:
        v = [r[m] for r in runs if m in r]
        if v:
            cells.append(f"{m} {statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]")
    print(" ".join(g), f"(n={len(runs)}):", "; ".join(cells))
