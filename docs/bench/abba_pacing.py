#!/usr/bin/env python3
"""ABBA-style device comparison of #12 (docs/BENCHMARKS.md, "When reads reach
the device"): per (workload, QD) the arms run in order A B C D then D C B A,
SETS times; prints every run, then per arm the median, range, ratio to fio's
median and CPU per read (user + system percent over IOPS).

Usage: abba_pacing.py SETS RUNTIME_S QDS WORKLOADS OUT.json
  e.g. abba_pacing.py 3 3 1,8,32,128 uring-direct,uring-buffered,aio-direct out.json
Environment: NOWAIT (the nowait binary, default target/release/nowait),
NOWAIT_FILE (the file read, default /var/tmp/nw/f4g; lay it out with
fio --name=mk --filename=F --size=4g --rw=write --bs=1m --direct=1)."""
import json, re, subprocess, sys, statistics, time, os
NW = os.environ.get("NOWAIT", "target/release/nowait")
F = os.environ.get("NOWAIT_FILE", "/var/tmp/nw/f4g")
sets, rt = int(sys.argv[1]), sys.argv[2]
qds = [int(x) for x in sys.argv[3].split(",")]
wls = sys.argv[4].split(",")
out = sys.argv[5]
common = f"--filename={F} --rw=randread --bs=4k --runtime={rt} --time_based --norandommap --randseed=89"
WL = {  # name: (fio engine, nowait engine, direct)
    "uring-buffered": ("io_uring", "uring", 0),
    "uring-direct": ("io_uring", "uring", 1),
    "aio-direct": ("libaio", "aio", 1),
}
def arms(wl, qd):
    fe, ne, d = WL[wl]
    a = [("fio", f"fio --name=p --ioengine={fe} --direct={d} --iodepth={qd} {common}"),
         ("nw-fio-defaults", f"{NW} bench --ioengine={ne} --direct={d} --iodepth={qd} {common}")]
    if qd > 2:
        a += [("nw-engine-adaptive", f"{NW} bench --ioengine={ne} --direct={d} --iodepth={qd} {common} --iodepth_batch_submit=0"),
              ("nw-engine-batch", f"{NW} bench --ioengine={ne} --direct={d} --iodepth={qd} {common} --iodepth_batch_submit=0 --submit=batch")]
    return a
def run(cmd):
    p = subprocess.run(cmd.split(), capture_output=True, text=True)
    t = p.stdout + p.stderr
    m = re.search(r"IOPS=([0-9.]+)(k?)", t)
    iops = float(m.group(1)) * (1000 if m.group(2) else 1) if m else float("nan")
    c = re.search(r"usr=([0-9.]+)%, sys=([0-9.]+)%", t)
    cpu = float(c.group(1)) + float(c.group(2)) if c else float("nan")
    sub = re.search(r"submission ([a-z]+)(, now (paced|batched))?", t)
    return iops, cpu, (sub.group(3) or sub.group(1)) if sub else ""
res = []
for wl in wls:
    for qd in qds:
        A = arms(wl, qd)
        runs = {n: [] for n, _ in A}
        for s in range(sets):
            order = A + A[::-1]
            for n, cmd in order:
                iops, cpu, sub = run(cmd)
                runs[n].append((iops, cpu, sub))
                print(f"{time.strftime('%H:%M:%S')} {wl} qd{qd} set{s+1} {n:20s} {iops/1000:7.1f}k cpu {cpu:5.1f}% {sub}", flush=True)
        fio_med = statistics.median(r[0] for r in runs["fio"])
        fio_cpu = statistics.median(r[1] / r[0] for r in runs["fio"]) * 1e4
        for n, rr in runs.items():
            med = statistics.median(r[0] for r in rr)
            cpu_us = statistics.median(r[1] / r[0] for r in rr) * 1e4  # % of core / IOPS -> µs per read
            row = dict(workload=wl, qd=qd, arm=n, runs=[r[0] for r in rr], cpu=[r[1] for r in rr],
                       median=med, lo=min(r[0] for r in rr), hi=max(r[0] for r in rr),
                       ratio=med / fio_med, cpu_us=cpu_us, cpu_ratio=cpu_us / fio_cpu, sub=sorted(set(r[2] for r in rr)))
            res.append(row)
            print(f"  => {wl} qd{qd} {n:20s} median {med/1000:6.1f}k ({row['lo']/1000:.1f}-{row['hi']/1000:.1f}) x{row['ratio']:.2f} cpu/read {cpu_us:.2f}us x{row['cpu_ratio']:.2f} {row['sub']}", flush=True)
        json.dump(res, open(out, "w"), indent=1)
