"""Ctrl-C during a blocking call: a real SIGINT to a child process in the
middle of a large read_many ends the call with KeyboardInterrupt promptly;
the reads already with the kernel are settled (the file keeps working, its
bytes right) and their memory is given back. The same while a batch is
read from the page cache on the calling thread, before any queue."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import DataDir

CHILD = textwrap.dedent("""
    import gc, os, sys, time
    import nowait
    path = sys.argv[1]
    MiB = 1 << 20

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024

    f = nowait.open(path)
    f.read_at(0, 4096)
    base = rss()
    offsets = [i * 256 * 1024 for i in range(os.path.getsize(path) // (256 * 1024))]
    print("reading", flush=True)
    try:
        got = f.read_many(offsets, 256 * 1024)
        print("finished", len(got), flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("interrupted", repr(time.monotonic()), flush=True)
    # The reads the kernel still had are reaped by the next call; bytes right.
    small = f.read_many([0, 7 * MiB, 7 * MiB + 5], 16)
    assert small == [b"\\x00" * 16, b"marker7" + b"\\x00" * 9, b"r7" + b"\\x00" * 14], small
    f.close()
    gc.collect()
    left = (rss() - base) / MiB
    print("left", left, flush=True)
    assert left < 64, left
""")


CACHED_CHILD = textwrap.dedent("""
    import sys, time
    import nowait
    path = sys.argv[1]
    n = 1_000_000  # 16-byte records of a cached file: a second of preadv2 calls
    f = nowait.open(path, nowait="always")
    buf = bytearray(16 * n)
    offsets = [i % 256 * 16 for i in range(n)]
    assert f.read_into(buf, offsets[:256], 16) == [16] * 256  # cached now
    print("reading", flush=True)
    try:
        f.read_into(buf, offsets, 16)
        print("finished", flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("interrupted", repr(time.monotonic()), flush=True)
    assert f.read_many([5, 4095], 1) == [bytes([5 * 7 % 251]), bytes([4095 * 7 % 251])]
    f.close()
""")


def _interrupt(child: str, path: str) -> float:
    """Run `child` on `path`, send SIGINT 300 ms after it says "reading",
    and return how long after the signal it caught KeyboardInterrupt."""
    p = subprocess.Popen([sys.executable, "-c", child, path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "reading"
    time.sleep(0.3)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, (out, err)
    line = next(x for x in out.splitlines() if x.startswith("interrupted"))
    latency = float(line.split()[1]) - sent
    print(f"KeyboardInterrupt {latency * 1000:.1f} ms after SIGINT; {out.splitlines()[-1]}")
    return latency


def test_ctrl_c_ends_a_batch_read_from_the_page_cache(datadir: DataDir) -> None:
    """A batch whose records are all cached is read on the calling thread
    without a queue; it checks for signals there too."""
    d, _ = datadir
    path = os.path.join(d, "cached-4k.bin")
    with open(path, "wb") as w:
        w.write(bytes(i * 7 % 251 for i in range(4096)))
    try:
        latency = _interrupt(CACHED_CHILD, path)
    finally:
        os.unlink(path)
    assert 0 <= latency < 0.5, latency


def test_ctrl_c_ends_a_large_read_many(datadir: DataDir) -> None:
    d, _ = datadir
    path = os.path.join(d, "sparse-2g.bin")
    with open(path, "wb") as w:  # holes read as zeros at memory speed, no disk
        w.truncate(2 << 30)
        w.seek(7 << 20)
        w.write(b"marker7")
    try:
        latency = _interrupt(CHILD, path)
    finally:
        os.unlink(path)
    # Waits are checked for signals every 20 ms; the bound here is loose
    # for a loaded machine (the figure is in docs/BENCHMARKS.md).
    assert 0 <= latency < 0.5, latency
