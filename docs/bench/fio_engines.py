#!/usr/bin/env python3
"""fio with ioengine=nowait against fio's own engines: the same job, one
harness, the arms alternated (A B B A per set, SETS sets), medians and
ranges. Prints one markdown table per comparison (docs/BENCHMARKS.md).

    make -C fio-engine
    python3 docs/bench/fio_engines.py [--sets 3] [--runtime 4] [--only cached,disk,seed003,prio]

Data files under /var/tmp/nw-fio (1 GiB and 4 GiB, made by fio once).
"cached" reads the 1 GiB file after `cat` (invalidate=0); "disk" the
4 GiB file with fio's invalidate=1 (its pages dropped at the start).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SO = os.path.join(HERE, "..", "..", "fio-engine", "build", "fio-nowait.so")
DIR = "/var/tmp/nw-fio"
F1G = f"{DIR}/f1g"
F4G = f"{DIR}/f4g"

NOWAIT = ["--ioengine=external:" + os.path.abspath(SO), "--nowait_stats=0"]
URING_BEST = ["--ioengine=io_uring", "--fixedbufs=1", "--registerfiles=1"]


def fio(args):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        r = subprocess.run(["fio", "--output-format=json", "--output=" + out.name] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            sys.exit("fio failed: " + " ".join(args) + "\n" + r.stdout)
        with open(out.name) as f:
            return json.load(f)


def job_metrics(j):
    rd = j["read"]
    ios = rd["total_ios"] or 1
    run_s = j["job_runtime"] / 1000.0
    pct = rd["clat_ns"].get("percentile", {})
    return {
        "iops": rd["iops"],
        "p50_us": pct.get("50.000000", 0) / 1000.0,
        "p99_us": pct.get("99.000000", 0) / 1000.0,
        "cpu_us_per_read": (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * run_s / ios * 1e6,
    }


def warm(path):
    """Reads `path` whole, so its pages are cached for the next run (the
    host's other users may have pushed them out since the last one)."""
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def abba(name, a, b, common, sets, pick=lambda d: job_metrics(d["jobs"][0]), before=None):
    """Runs arm a and b (lists of fio args) A B B A per set; medians.
    `before` runs before every run (warming a cached file)."""
    res = {"A": [], "B": []}
    for _ in range(sets):
        for arm in ("A", "B", "B", "A"):
            args = (a if arm == "A" else b) + common
            if before:
                before()
            res[arm].append(pick(fio(args)))
    return name, res


def med(rows, key):
    v = [r[key] for r in rows]
    return statistics.median(v), min(v), max(v)


def fmt(x, unit=""):
    if unit == "k":
        return f"{x / 1000:.1f}k"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def table(title, label_a, label_b, res, keys):
    print(f"\n### {title}\n")
    head = "| arm | " + " | ".join(k for k, _ in keys) + " |"
    print(head)
    print("| --- |" + " ---: |" * len(keys))
    for arm, label in (("A", label_a), ("B", label_b)):
        cells = []
        for k, unit in keys:
            m, lo, hi = med(res[arm], k)
            cells.append(f"{fmt(m, unit)} ({fmt(lo, unit)}–{fmt(hi, unit)})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    for k, unit in keys:
        ma = med(res["A"], k)[0]
        mb = med(res["B"], k)[0]
        if mb:
            print(f"\n{k}: {label_a} / {label_b} = **{ma / mb:.2f}×**", end="")
    print()


def ensure_files():
    os.makedirs(DIR, exist_ok=True)
    for path, size in ((F1G, "1g"), (F4G, "4g")):
        if not os.path.exists(path):
            fio(["--name=mk", "--filename=" + path, "--size=" + size, "--rw=write",
                 "--bs=1m", "--direct=1", "--ioengine=psync"])


def load():
    return open("/proc/loadavg").read().split()[0:3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=4)
    ap.add_argument("--only", default="cached,disk,seed003,prio")
    o = ap.parse_args()
    only = set(o.only.split(","))
    ensure_files()
    rt = [f"--runtime={o.runtime}", "--time_based"]
    keys = [("iops", "k"), ("cpu_us_per_read", ""), ("p99_us", "")]
    sys.stdout.reconfigure(line_buffering=True)
    print(f"fio {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}, "
          f"{o.sets} ABBA sets, {o.runtime} s runs, load before {' '.join(load())}")

    if "cached" in only:
        common = ["--name=c", "--filename=" + F1G, "--rw=randread", "--bs=4k", "--iodepth=32",
                  "--invalidate=0", "--iodepth_batch_submit=8",
                  "--iodepth_batch_complete_min=8"] + rt
        t = abba("cached", NOWAIT, URING_BEST, common, o.sets, before=lambda: warm(F1G))
        table("Cached 4 KiB random reads, QD 32: nowait vs io_uring (fixedbufs, registerfiles, batch 8)",
              "nowait", "io_uring", t[1], keys)
        common = ["--name=c", "--filename=" + F1G, "--rw=randread", "--bs=4k", "--invalidate=0"] + rt
        t = abba("cached-psync", NOWAIT + ["--iodepth=32"], ["--ioengine=psync"], common, o.sets,
                 before=lambda: warm(F1G))
        table("Cached 4 KiB random reads: nowait QD 32 vs psync", "nowait", "psync", t[1], keys)

    if "disk" in only:
        for direct in (0, 1):
            for peer in (["--ioengine=io_uring"], ["--ioengine=libaio"]):
                common = ["--name=d", "--filename=" + F4G, "--rw=randread", "--bs=4k",
                          "--iodepth=32", f"--direct={direct}", "--invalidate=1"] + rt
                t = abba("disk", NOWAIT, peer, common, o.sets)
                table(f"Disk 4 KiB random reads, QD 32, direct={direct}: nowait vs {peer[0][11:]}",
                      "nowait", peer[0][11:], t[1], keys)

    if "seed003" in only:
        # Two jobs in one process: a hot reader of a cached file beside a
        # cold reader of an uncached one, 16 KiB reads, QD 8 each.
        def two(engine):
            return ["--thread", "--bs=16k", "--iodepth=8", "--rw=randread"] + rt + engine + [
                "--name=hot", "--filename=" + F1G, "--invalidate=0",
                "--name=cold", "--filename=" + F4G, "--invalidate=1"]

        def pick(d):
            hot = job_metrics(d["jobs"][0])
            cold = job_metrics(d["jobs"][1])
            return {"hot_p99_us": hot["p99_us"], "hot_iops": hot["iops"], "cold_iops": cold["iops"]}

        res = {"A": [], "B": []}
        for _ in range(o.sets):
            for arm in ("A", "B", "B", "A"):
                eng = NOWAIT + ["--backend=pool"] if arm == "A" else ["--ioengine=posixaio"]
                warm(F1G)
                res[arm].append(pick(fio(two(eng))))
        table("Seed 003: hot cached reader beside a cold uncached one, one process (thread)",
              "nowait pool", "posixaio", res, [("hot_p99_us", ""), ("hot_iops", "k"), ("cold_iops", "k")])

    if "prio" in only:
        # A random reader beside a 1 MiB sequential scan of the same disk,
        # direct, both through nowait (uring): the reader at real-time
        # class, the scan at idle, against both without priorities.
        def mix(prio):
            reader = ["--name=reader", "--filename=" + F4G, "--rw=randread", "--bs=4k", "--iodepth=4"]
            scan = ["--name=scan", "--filename=" + F4G, "--rw=read", "--bs=1m", "--iodepth=16"]
            if prio:
                reader += ["--cmdprio_percentage=100", "--cmdprio_class=1", "--cmdprio=0"]
                scan += ["--cmdprio_percentage=100", "--cmdprio_class=3", "--cmdprio=0"]
            return ["--thread", "--direct=1"] + rt + NOWAIT + reader + NOWAIT + scan

        def pick(d):
            r = job_metrics(d["jobs"][0])
            s = job_metrics(d["jobs"][1])
            return {"reader_p99_us": r["p99_us"], "reader_iops": r["iops"], "scan_MiBps": s["iops"]}

        res = {"A": [], "B": []}
        for _ in range(o.sets):
            for arm in ("A", "B", "B", "A"):
                res[arm].append(pick(fio(mix(arm == "A"))))
        table("A random reader beside a scan: priorities (reader RT, scan idle) vs none",
              "priorities", "none", res, [("reader_p99_us", ""), ("reader_iops", "k"), ("scan_MiBps", "")])
    print(f"\nload after {' '.join(load())}")


if __name__ == "__main__":
    main()
