#!/usr/bin/env python3
"""Random 4 KiB reads at 32 in flight from Python: nowait against the usual
ways (a plain os.pread loop, a ThreadPoolExecutor(32) of os.pread,
aiofiles, caio), over a cached and an uncached file.

    python3 python/bench.py --file /var/tmp/nowait-bench.bin --size 1g \
        --reads 20000 --rounds 3 [--rust-cli target/release/nowait]

Per method and round: IOPS, CPU time per read (user+sys of the whole
process over the run, io_uring and thread-pool workers included, divided by
the reads) and context switches per read (voluntary + involuntary, all
threads). "uncached" evicts the file from the page cache before every run
(posix_fadvise DONTNEED); "cached" reads it once
first. Methods run in alternating order (A B C … then … C B A) so a change
in the machine's load during a set hits all of them alike; the table shows
the median over rounds and the spread (min–max).

aiofiles and caio are benchmark-only dependencies (pip install aiofiles
caio); a missing one is reported and skipped. --rust-cli runs the Rust
engine's own benchmark (`nowait bench`, same reads, iodepth 32) for the
"within 10% of the engine" comparison.

"nowait asyncio" reads with aread_at's page-cache-first try on (open's
nowait="adaptive", the default); "nowait asyncio ring only" opens with
nowait="off" so every read goes through the loop's ring, as before that
try existed: the two rows are its before/after in one run
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
    # Every aread_at through the loop's ring, as before the page-cache-first
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
    args = ap.parse_args()

    size = parse_size(args.size)
    make_file(args.file, size)
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
