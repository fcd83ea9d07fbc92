#!/usr/bin/env python3
"""Python reads, nowait against the usual ways. Scenarios (--scenario):

random (default): random 4 KiB reads at 32 in flight: nowait (read_at,
read_many, read_into, asyncio) against a plain os.pread loop, a
ThreadPoolExecutor(32) of os.pread, aiofiles and caio, over a cached and
an uncached file.

    python3 python/bench.py --file /var/tmp/nowait-bench.bin --size 1g \
        --reads 20000 --rounds 3 [--rust-cli target/release/nowait]

mixed: seed 003 in asyncio: one asyncio service in which --hot-tasks (4)
read 4 KiB at random of a cached hot file (--hot-file, 64 MiB) while
--cold-tasks (32) read 16 KiB at random of the uncached --file, for
--seconds per run: nowait (aread_at) against aiofiles and a
ThreadPoolExecutor(32) with loop.run_in_executor(os.pread), the pattern the
seed replaces. Reports hot-read p50/p99 (each hot read timed alone), hot
and cold reads per second, total MB/s, the process's CPU (cores) and the
loop's lag (how late a 1 ms timer fires); --hot-rate paces the hot reads.

fsspec: --ranges (1000) random 64 KiB ranges of the uncached --file in one
cat_ranges call: nowait's NowaitFileSystem against fsspec's
LocalFileSystem (the bytes are compared).

rss: the peak resident set above where it started of one 1 GiB read_at,
cached and uncached, against os.pread (a child process each).

Per method and round of "random": IOPS, CPU time per read (user+sys of the
whole process over the run, io_uring and thread-pool workers included,
divided by the reads) and context switches per read (voluntary +
involuntary, all threads). "uncached" evicts the file from the page cache
before every run (posix_fadvise DONTNEED); "cached" reads it once first.
Methods run in alternating order (A B C … then … C B A) in every scenario,
so a change in the machine's load during a set hits all of them alike; the
tables show the median over rounds and the spread (min–max).

aiofiles, caio and fsspec are benchmark-only dependencies (pip install
aiofiles caio fsspec); a missing one is reported and skipped. --rust-cli
runs the Rust engine's own benchmark (`nowait bench`, same reads, iodepth
32) for the "within 10% of the engine" comparison.

"nowait asyncio" reads with aread_at's page-cache-first try on (open's
nowait="adaptive", the default); "nowait asyncio ring only" opens with
nowait="off" so every read goes through the loop's ring, without that
try: the two rows are the try on and off in one run
(--only "nowait asyncio,nowait asyncio ring only").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Run as `python3 python/bench.py`, this directory is first on sys.path and
# its nowait/ (the package's sources, without the compiled module) would
# shadow the installed package.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import nowait  # noqa: E402

BS = 4096
QD = 32


def parse_size(s: str) -> int:
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower()
    if s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def make_file(path: str, size: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    rng = np.random.default_rng(1)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 64 << 20)
            f.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
            left -= n
        f.flush()
        os.fsync(f.fileno())


def evict(path: str) -> None:
    """Drop this file's pages from the page cache (clean pages: DONTNEED
    evicts them). Not drop_caches: that would evict the interpreter, the
    other benchmarks' code and the other users of a shared machine too."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


# --- methods: each takes (path, offsets) and reads every offset -----------

def m_pread_loop(path, offs):
    fd = os.open(path, os.O_RDONLY)
    try:
        for o in offs:
            os.pread(fd, BS, o)
    finally:
        os.close(fd)


def m_threadpool(path, offs):
    fd = os.open(path, os.O_RDONLY)
    try:
        with ThreadPoolExecutor(QD) as ex:
            for _ in ex.map(lambda o: os.pread(fd, BS, o), offs, chunksize=1):
                pass
    finally:
        os.close(fd)


def m_nowait_read_at(path, offs):
    with nowait.open(path) as f:
        for o in offs:
            f.read_at(o, BS)


def m_nowait_many(path, offs, direct="off"):
    with nowait.open(path, direct=direct) as f:
        for i in range(0, len(offs), QD):
            f.read_many(offs[i:i + QD], BS)


def m_nowait_into(path, offs, direct="off"):
    out = np.empty((QD, BS), dtype=np.uint8)
    with nowait.open(path, direct=direct) as f:
        for i in range(0, len(offs), QD):
            chunk = offs[i:i + QD]
            f.read_into(out[:len(chunk)], chunk, BS)


def m_nowait_into_direct(path, offs):
    m_nowait_into(path, offs, direct="auto")


def _split(offs):
    return [offs[k::QD] for k in range(QD)]


def m_nowait_asyncio(path, offs, direct="off", mode="adaptive"):
    async def main():
        with nowait.open(path, direct=direct, nowait=mode) as f:
            async def worker(part):
                for o in part:
                    await f.aread_at(o, BS)
            await asyncio.gather(*(worker(p) for p in _split(offs)))
    asyncio.run(main())


def m_nowait_asyncio_ring(path, offs):
    # Every aread_at through the loop's ring, without the page-cache-first
    # try (issue #14): nowait="off" costs one extra call that returns None.
    m_nowait_asyncio(path, offs, mode="off")


def m_nowait_asyncio_direct(path, offs):
    m_nowait_asyncio(path, offs, direct="auto")


def m_aiofiles(path, offs):
    import aiofiles

    async def main():
        async def worker(part):
            async with aiofiles.open(path, "rb", buffering=0) as f:
                for o in part:
                    await f.seek(o)
                    await f.read(BS)
        await asyncio.gather(*(worker(p) for p in _split(offs)))
    asyncio.run(main())


def m_caio(path, offs):
    from caio import AsyncioContext

    async def main():
        ctx = AsyncioContext(max_requests=QD)
        fd = os.open(path, os.O_RDONLY)
        try:
            async def worker(part):
                for o in part:
                    await ctx.read(BS, fd, o)
            await asyncio.gather(*(worker(p) for p in _split(offs)))
        finally:
            os.close(fd)
            ctx.close()
    asyncio.run(main())


METHODS = {
    "nowait read_at": m_nowait_read_at,
    "nowait read_many": m_nowait_many,
    "nowait read_into": m_nowait_into,
    "nowait asyncio": m_nowait_asyncio,
    "nowait asyncio ring only": m_nowait_asyncio_ring,
    "os.pread loop": m_pread_loop,
    "ThreadPool(32) pread": m_threadpool,
    "aiofiles": m_aiofiles,
    "caio": m_caio,
}
# direct="auto": O_DIRECT on this filesystem.
UNCACHED_ONLY = {"nowait read_into O_DIRECT": m_nowait_into_direct,
                 "nowait asyncio O_DIRECT": m_nowait_asyncio_direct}


def available(name):
    try:
        if name == "aiofiles":
            import aiofiles  # noqa: F401
        if name == "caio":
            import caio  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


def measure(fn, path, offs):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    fn(path, offs)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    n = len(offs)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    cs = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw)
    return {"iops": n / (t1 - t0), "cpu_us": cpu / n * 1e6, "cs": cs / n}


def rust_cli(cli, path, reads, cached):
    args = [cli, "bench", f"--filename={path}", "--rw=randread", f"--bs={BS}",
            f"--iodepth={QD}", "--direct=0", f"--number_ios={reads}",
            f"--invalidate={0 if cached else 1}", "--output-format=json"]
    if not cached:
        evict(path)
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")

    def find(o):
        if isinstance(o, dict):
            if "iops" in o and isinstance(o["iops"], (int, float)):
                return o["iops"]
            for v in o.values():
                x = find(v)
                if x is not None:
                    return x
        if isinstance(o, list):
            for v in o:
                x = find(v)
                if x is not None:
                    return x
        return None
    return {"iops": find(json.loads(r.stdout)), "cpu_us": float("nan"), "cs": float("nan")}


# --- seed 003 in asyncio: a hot cached file beside a cold one -------------

HOT_BS = 4096
COLD_BS = 16384


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def mixed_run(method, hot_path, cold_path, seconds, hot_tasks, cold_tasks, seed, hot_rate=0.0):
    """One asyncio service for `seconds`: `hot_tasks` tasks read HOT_BS at
    random offsets of the cached hot file (as fast as they can, or
    `hot_rate` reads/s between them), `cold_tasks` tasks read COLD_BS of the
    uncached cold file. Returns hot latency percentiles (µs), rates, the
    process's CPU time per second (all threads, in cores) and the loop's lag
    (how late a 1 ms timer fires: how long a task that is ready waits for
    its turn), p50 and p99 in ms."""
    hot_size = os.path.getsize(hot_path) // HOT_BS
    cold_size = os.path.getsize(cold_path) // COLD_BS
    lat = []
    lag = []
    counts = {"hot": 0, "cold": 0}

    async def main():
        loop = asyncio.get_running_loop()
        rng = random.Random(seed)
        deadline = time.perf_counter() + seconds
        closers = []
        if method == "nowait":
            hf, cf = nowait.open(hot_path), nowait.open(cold_path)
            closers += [hf.close, cf.close]

            def hot_reader():
                return lambda o: hf.aread_at(o, HOT_BS)

            def cold_reader():
                return lambda o: cf.aread_at(o, COLD_BS)
        elif method == "ThreadPoolExecutor":
            pool = ThreadPoolExecutor(QD)
            hfd, cfd = os.open(hot_path, os.O_RDONLY), os.open(cold_path, os.O_RDONLY)
            closers += [lambda: pool.shutdown(wait=True), lambda: os.close(hfd),
                        lambda: os.close(cfd)]

            def hot_reader():
                return lambda o: loop.run_in_executor(pool, os.pread, hfd, HOT_BS, o)

            def cold_reader():
                return lambda o: loop.run_in_executor(pool, os.pread, cfd, COLD_BS, o)
        else:
            import aiofiles

            async def opened(path, bs):
                f = await aiofiles.open(path, "rb", buffering=0)
                closers.append(lambda: None)

                async def read(o):
                    await f.seek(o)
                    return await f.read(bs)
                return read, f

            files = []

            def hot_reader():
                return ("hot", HOT_BS)

            def cold_reader():
                return ("cold", COLD_BS)

        async def reader(kind, read):
            if isinstance(read, tuple):  # aiofiles: a file object per task
                path = hot_path if kind == "hot" else cold_path
                read, f = await opened(path, read[1])
                files.append(f)
            blocks = hot_size if kind == "hot" else cold_size
            bs = HOT_BS if kind == "hot" else COLD_BS
            r = random.Random(rng.random())
            interval = hot_tasks / hot_rate if kind == "hot" and hot_rate > 0 else 0.0
            due = time.perf_counter()
            while time.perf_counter() < deadline:
                o = r.randrange(blocks) * bs
                if interval:
                    due += interval
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                if kind == "hot":
                    t0 = time.perf_counter_ns()
                    await read(o)
                    lat.append((time.perf_counter_ns() - t0) / 1000)
                else:
                    await read(o)
                counts[kind] += 1

        async def lag_probe():
            while time.perf_counter() < deadline:
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                lag.append((time.perf_counter() - t - 0.001) * 1000)

        await asyncio.gather(*[reader("hot", hot_reader()) for _ in range(hot_tasks)],
                             *[reader("cold", cold_reader()) for _ in range(cold_tasks)],
                             lag_probe())
        if method == "aiofiles":
            for f in files:
                await f.close()
        for c in closers:
            c()

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    asyncio.run(main())
    took = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"hot_p50": _pct(lat, 0.5), "hot_p99": _pct(lat, 0.99),
            "cpu": cpu / took, "lag_p50": _pct(lag, 0.5), "lag_p99": _pct(lag, 0.99),
            "hot_rps": counts["hot"] / took, "cold_rps": counts["cold"] / took,
            "cold_mbs": counts["cold"] * COLD_BS / took / 1e6,
            "total_mbs": (counts["cold"] * COLD_BS + counts["hot"] * HOT_BS) / took / 1e6}


def scenario_mixed(args, size):
    hot = args.hot_file
    make_file(hot, parse_size(args.hot_size))
    names = [n for n in ("nowait", "aiofiles", "ThreadPoolExecutor")
             if not args.only or n in args.only.split(",")]
    if "aiofiles" in names and available("aiofiles"):
        print(f"SKIP aiofiles: {available('aiofiles')} (pip install aiofiles)")
        names.remove("aiofiles")
    pace = f" ({args.hot_rate:.0f} reads/s between them)" if args.hot_rate else ""
    print(f"mixed: {args.hot_tasks} tasks reading {HOT_BS} B of the cached {hot}{pace}, "
          f"{args.cold_tasks} tasks reading {COLD_BS} B of the uncached {args.file}; "
          f"{args.seconds} s per run, {args.rounds} rounds (order alternates)")
    runs = {n: [] for n in names}
    for r in range(args.rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            warm(hot)
            evict(args.file)
            m = mixed_run(n, hot, args.file, args.seconds, args.hot_tasks, args.cold_tasks,
                          args.seed + r, args.hot_rate)
            runs[n].append(m)
            print(f"  round {r + 1} {n:20} hot p50 {m['hot_p50']:8.1f} us p99 "
                  f"{m['hot_p99']:8.1f} us  hot {m['hot_rps']:9.0f}/s  cold "
                  f"{m['cold_rps']:7.0f}/s ({m['cold_mbs']:6.1f} MB/s)  total "
                  f"{m['total_mbs']:7.1f} MB/s  CPU {m['cpu']:.2f}  lag {m['lag_p50']:.2f}/"
                  f"{m['lag_p99']:.2f} ms", flush=True)
    med = {n: {k: statistics.median(m[k] for m in ms) for k in ms[0]} for n, ms in runs.items()}
    print("\n| method | hot p50 µs | hot p99 µs | hot reads/s | cold reads/s | cold MB/s "
          "| total MB/s | CPU (cores) | loop lag p50 / p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, m in med.items():
        print(f"| {n} | {m['hot_p50']:.1f} | {m['hot_p99']:.1f} | {m['hot_rps']:,.0f} | "
              f"{m['cold_rps']:,.0f} | {m['cold_mbs']:.1f} | {m['total_mbs']:.1f} | "
              f"{m['cpu']:.2f} | {m['lag_p50']:.2f} / {m['lag_p99']:.2f} |")
    if "nowait" in med:
        for peer in med:
            if peer != "nowait":
                print(f"nowait/{peer}: hot p99 {med['nowait']['hot_p99'] / med[peer]['hot_p99']:.4f}"
                      f" (1/{med[peer]['hot_p99'] / med['nowait']['hot_p99']:.0f}), cold reads "
                      f"{med['nowait']['cold_rps'] / med[peer]['cold_rps']:.2f}x")


# --- fsspec cat_ranges, uncached ------------------------------------------

def scenario_fsspec(args, size):
    from fsspec.implementations.local import LocalFileSystem

    from nowait.fsspec import NowaitFileSystem
    n, rbs = args.ranges, 64 << 10
    fss = {"nowait cat_ranges": NowaitFileSystem(), "LocalFileSystem cat_ranges":
           LocalFileSystem()}
    print(f"fsspec: {n} random {rbs // 1024} KiB ranges of {args.file}, uncached "
          f"(evicted before each run), {args.rounds} rounds (order alternates)")
    runs = {k: [] for k in fss}
    for r in range(args.rounds):
        rng = random.Random(args.seed + r)
        starts = [rng.randrange(0, (size - rbs) // 4096) * 4096 for _ in range(n)]
        ends = [s + rbs for s in starts]
        want = None
        for k in (list(fss) if r % 2 == 0 else list(fss)[::-1]):
            evict(args.file)
            t0 = time.perf_counter()
            got = fss[k].cat_ranges([args.file] * n, starts, ends)
            took = time.perf_counter() - t0
            if want is None:
                want = got
            assert got == want, "the filesystems disagree"
            runs[k].append(took)
            print(f"  round {r + 1} {k:28} {took * 1000:8.1f} ms  {n * rbs / took / 1e6:7.1f} MB/s",
                  flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    for k, v in med.items():
        print(f"| {k} | {v * 1000:.1f} ms | {min(runs[k]) * 1000:.1f}–{max(runs[k]) * 1000:.1f} |")
    print(f"nowait / LocalFileSystem: {med['LocalFileSystem cat_ranges'] / med['nowait cat_ranges']:.2f}x")


# --- peak memory of one 1 GiB read_at --------------------------------------

RSS_CHILD = """
import os, sys
import nowait
path, how = sys.argv[1], sys.argv[2]
def st(k):
    for line in open("/proc/self/status"):
        if line.startswith(k + ":"):
            return int(line.split()[1]) * 1024
size = 1 << 30
if how == "nowait":
    f = nowait.open(path)
    f.read_at(0, 4096)
else:
    fd = os.open(path, os.O_RDONLY)
base = st("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
data = f.read_at(0, size) if how == "nowait" else os.pread(fd, size, 0)
assert len(data) == size
print((st("VmHWM") - base) / size)
"""


def scenario_rss(args, size):
    if size < 1 << 30:
        raise SystemExit("--scenario rss needs a file of at least 1 GiB (--size 1g)")
    for case in ("cached", "uncached"):
        for how in ("nowait", "os.pread"):
            if case == "cached":
                warm(args.file)
            else:
                evict(args.file)
            r = subprocess.run([sys.executable, "-c", RSS_CHILD, args.file, how],
                               capture_output=True, text=True, check=True)
            print(f"| {case} | {how} read of 1 GiB | peak RSS above baseline "
                  f"{float(r.stdout):.3f} GiB |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="/var/tmp/nowait-bench.bin")
    ap.add_argument("--size", default="1g")
    ap.add_argument("--reads", type=int, default=20000, help="reads per run (uncached)")
    ap.add_argument("--cached-reads", type=int, default=100000, help="reads per run (cached)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of methods to run")
    ap.add_argument("--cases", default="cached,uncached")
    ap.add_argument("--rust-cli", default=None, help="path of the nowait CLI binary")
    ap.add_argument("--seed", type=int, default=42,
                    help="seed of the random offsets (the same seed reads the same offsets)")
    ap.add_argument("--scenario", default="random", choices=["random", "mixed", "fsspec", "rss"],
                    help="random: the methods above; mixed: seed 003's hot cached file beside a "
                         "cold one in one asyncio service; fsspec: cat_ranges uncached; rss: "
                         "peak memory of a 1 GiB read_at")
    ap.add_argument("--hot-file", default="/var/tmp/nowait-bench-hot.bin")
    ap.add_argument("--hot-size", default="64m")
    ap.add_argument("--hot-tasks", type=int, default=4)
    ap.add_argument("--cold-tasks", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of a mixed run")
    ap.add_argument("--hot-rate", type=float, default=0.0,
                    help="mixed: hot reads per second between the hot tasks (0: unpaced)")
    ap.add_argument("--ranges", type=int, default=1000, help="ranges per fsspec run")
    args = ap.parse_args()

    size = parse_size(args.size)
    make_file(args.file, size)
    if args.scenario != "random":
        {"mixed": scenario_mixed, "fsspec": scenario_fsspec, "rss": scenario_rss}[
            args.scenario](args, size)
        return 0
    print(f"file {args.file}: {size} bytes; backend {nowait.open(args.file).backend}; "
          f"{BS} B random reads, {QD} in flight; {args.rounds} rounds")
    results = {}
    for case in args.cases.split(","):
        cached = case == "cached"
        n = args.cached_reads if cached else args.reads
        rng = random.Random(args.seed)
        methods = dict(METHODS)
        if not cached:
            methods.update(UNCACHED_ONLY)
        if args.only:
            keep = set(args.only.split(","))
            methods = {k: v for k, v in methods.items() if k in keep}
        for name in list(methods):
            why = available(name)
            if why:
                print(f"SKIP {name}: {why} (pip install aiofiles caio)")
                del methods[name]
        runs = {name: [] for name in methods}
        if args.rust_cli:
            runs["Rust engine (nowait bench)"] = []
        if cached:
            warm(args.file)
        names = list(runs)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                offs = [rng.randrange(0, size // BS) * BS for _ in range(n)]
                if not cached:
                    evict(args.file)
                if name.startswith("Rust engine"):
                    m = rust_cli(args.rust_cli, args.file, n, cached)
                else:
                    m = measure(methods[name], args.file, offs)
                runs[name].append(m)
                print(f"  {case:8} round {r + 1} {name:28} {m['iops']:>10.0f} IOPS "
                      f"{m['cpu_us']:7.1f} us CPU/read {m['cs']:6.2f} cs/read", flush=True)
        results[case] = runs

    print()
    for case, runs in results.items():
        print(f"### {case}\n")
        print("| method | IOPS (median) | spread | CPU µs/read | ctx switches/read |")
        print("|---|---:|---:|---:|---:|")
        for name, ms in runs.items():
            iops = [m["iops"] for m in ms]
            cpu = statistics.median(m["cpu_us"] for m in ms)
            cs = statistics.median(m["cs"] for m in ms)
            print(f"| {name} | {statistics.median(iops):,.0f} | "
                  f"{min(iops):,.0f}–{max(iops):,.0f} | {cpu:.1f} | {cs:.2f} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
