#!/usr/bin/env python3
"""The Python package's blocking `read_at`, one 4 KiB random read after
another on one thread over a cached file: with the page-cache-first try
(`nowait="adaptive"`), without it (`nowait="off"`: every read through the
queue), and a plain `os.pread` loop, alternating, `ROUNDS` rounds.

Usage: py_read_at.py FILE [READS] [ROUNDS]   (the file is read once first)"""
import os
import random
import sys
import time

import nowait


def main():
    path = sys.argv[1]
    reads = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass
    blocks = os.path.getsize(path) // 4096
    rng = random.Random(1)
    offs = [rng.randrange(blocks) * 4096 for _ in range(reads)]
    fd = os.open(path, os.O_RDONLY)
    print(f"load {os.getloadavg()}")
    for r in range(rounds):
        for mode in ("adaptive", "off"):
            with nowait.open(path, direct="off", nowait=mode) as f:
                t = time.perf_counter()
                for o in offs:
                    f.read_at(o, 4096)
                dt = time.perf_counter() - t
            print(f"round {r} read_at nowait={mode}: {reads / dt / 1e3:.0f}k reads/s")
        t = time.perf_counter()
        for o in offs:
            os.pread(fd, 4096, o)
        dt = time.perf_counter() - t
        print(f"round {r} os.pread loop: {reads / dt / 1e3:.0f}k reads/s")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
