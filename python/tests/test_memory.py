"""Memory: a read costs one buffer (its result), a read past end of file
costs what it returns, and nothing is kept after the reads are done.

Each case runs in a child process so that its resident set (VmRSS, and the
high-water mark VmHWM, reset through /proc/self/clear_refs) is its own.
Files are sparse (holes read as zeros with no device time) with marker
bytes checked at known offsets."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Generator

import pytest

from conftest import DataDir

MiB = 1 << 20

PRELUDE = textwrap.dedent("""
    import asyncio, gc, os, sys, threading, tracemalloc
    import nowait
    MiB = 1 << 20
    path = sys.argv[1]
    size = os.path.getsize(path)

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def rss():
        return status("VmRSS")

    def reset_peak():
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def peak():
        return status("VmHWM")

    def marker(off):
        return (off // 4096 % 251).to_bytes(1, "little") * 16

    def check(data, off):
        # Markers sit every 16 MiB (see make_sparse); holes read as zeros.
        for m in range(0, size, 16 * MiB):
            if off <= m and m + 16 <= off + len(data):
                assert data[m - off:m - off + 16] == marker(m), m
""")


def make_sparse(path: str, size: int) -> None:
    """A sparse file of `size` bytes with 16 marker bytes every 16 MiB and
    at the end."""
    with open(path, "wb") as f:
        f.truncate(size)
        for m in list(range(0, size, 16 * MiB)) + [size - 16]:
            f.seek(m)
            f.write((m // 4096 % 251).to_bytes(1, "little") * 16)


def run_child(code: str, path: str) -> str:
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code), path],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def sparse(datadir: DataDir) -> Generator[str, None, None]:
    d, _ = datadir
    path = os.path.join(d, "sparse-256m.bin")
    make_sparse(path, 256 * MiB)
    yield path
    os.unlink(path)


def test_large_read_costs_one_buffer(sparse: str) -> None:
    """The kernel reads into the bytes returned: a 256 MiB read_at peaks at
    its own size (at most 1.1x above where it started), as do read_many's
    two 64 MiB records and read()."""
    out = run_child("""
        with nowait.open(path) as f:
            f.read_at(0, 4096)
            for name, call, want in (
                ("read_at", lambda: [f.read_at(0, size)], size),
                ("read_many", lambda: f.read_many([0, 64 * MiB], 64 * MiB), 128 * MiB),
                ("read", lambda: [f.read()], size),
            ):
                gc.collect()
                base = rss()
                reset_peak()
                got = call()
                grew = peak() - base
                assert sum(len(g) for g in got) == want, name
                off = 0
                for g in got:
                    check(g, off)
                    off += len(g)
                del got
                print(name, grew / want)
                assert grew <= 1.1 * want, (name, grew / MiB)
    """, sparse)
    assert "read_at" in out and "read_many" in out


def test_read_past_end_of_file_costs_what_it_returns(sparse: str) -> None:
    """A read of "up to N bytes" at the end of a file allocates what it
    returns, not N: 1 GiB asked for 10 bytes (read_at, read_many, aread_at
    and the page-cache-first try), bytes right."""
    run_child("""
        async def amain(f):
            return await f.aread_at(size - 10, 1 << 30)

        for mode in ("off", "auto"):
            with nowait.open(path, direct=mode) as f:
                f.read_at(0, 4096)
                gc.collect()
                base = rss()
                reset_peak()
                a = f.read_at(size - 10, 1 << 30)
                m = f.read_many([size - 10, size + 5, size - 4096], 512 * MiB)
                c = asyncio.run(amain(f))
                grew = peak() - base
                want = ((size - 16) // 4096 % 251).to_bytes(1, "little") * 10
                assert a == c == m[0] == want, (mode, a, c, m[0])
                assert m[1] == b"" and len(m[2]) == 4096, (mode, len(m[2]))
                assert grew <= 32 * MiB, (mode, grew / MiB)
    """, sparse)


def test_burst_of_large_reads_gives_memory_back(sparse: str) -> None:
    """Four threads each reading 2 x 64 MiB with read_many, twice: once the
    results are dropped and the file closed, the resident set is back
    within 32 MiB of where it started (nothing is cached per reader)."""
    run_child("""
        f = nowait.open(path)
        f.read_at(0, 4096)
        gc.collect()
        base = rss()

        def work():
            for _ in range(2):
                got = f.read_many([0, 64 * MiB], 64 * MiB)
                assert [len(g) for g in got] == [64 * MiB, 64 * MiB]
                check(got[1], 64 * MiB)

        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        f.close()
        gc.collect()
        left = rss() - base
        print(left / MiB)
        assert left <= 32 * MiB, left / MiB
    """, sparse)


def test_asyncio_burst_gives_memory_back(sparse: str) -> None:
    """300 x 1 MiB aread_at at once (page-cache hits, and through the ring):
    once the results are dropped no memory is held for them (Python's own
    accounting, tracemalloc, back within 1 MiB: the ring keeps no buffers),
    and after asyncio.run returns the resident set is back within 32 MiB of
    where it started (the loop's ring is gone and the allocator's free
    memory handed back)."""
    burst = """
        async def burst(f):
            got = await asyncio.gather(*(f.aread_at(i % 256 * MiB, MiB) for i in range(300)))
            assert all(len(g) == MiB for g in got)
            check(got[16], 16 * MiB)
            return len(got)
    """
    run_child(burst + """
        async def main():
            for nw in ("adaptive", "off"):
                f = nowait.open(path, nowait=nw)
                tracemalloc.start()
                before = tracemalloc.get_traced_memory()[0]
                await burst(f)
                # One loop iteration: the gather's wake-up handle (which
                # holds its result until the waiting task's step ends) goes.
                await asyncio.sleep(0)
                gc.collect()
                kept = tracemalloc.get_traced_memory()[0] - before
                tracemalloc.stop()
                f.close()
                assert kept <= MiB, (nw, kept)

        asyncio.run(main())
    """, sparse)
    run_child(burst + """
        with nowait.open(path) as f:
            f.read_at(0, 4096)
        gc.collect()
        base = rss()

        async def main():
            for nw in ("adaptive", "off"):
                with nowait.open(path, nowait=nw) as f:
                    await burst(f)

        asyncio.run(main())
        left = rss() - base
        print(left / MiB)
        assert left <= 32 * MiB, left / MiB
    """, sparse)
