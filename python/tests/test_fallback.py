"""NOWAIT_DISABLE_URING=1: the queue skips io_uring and falls back; every
call (blocking and asyncio) still returns the right bytes."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import DataFile

CHILD = r"""
import asyncio, ctypes, os, random, sys
import nowait
path = sys.argv[1]
blob = open(path, "rb").read()
rng = random.Random(5)
for mode in sys.argv[2].split(","):
    with nowait.open(path, direct=mode) as f:
        assert f.backend != "uring", f.backend
        st = f.stats()
        reason = st["backend_reason"]
        assert "NOWAIT_DISABLE_URING" in reason or "disabled" in reason, st
        offs = [rng.randrange(0, len(blob) + 5000) for _ in range(300)]
        if mode == "on":
            offs = [o // 4096 * 4096 for o in offs]
        got = f.read_many(offs, 4096)
        assert got == [blob[o:o + 4096] for o in offs]
        one = offs[0]
        assert f.read_at(one, 4096) == blob[one:one + 4096]
        raw = bytearray(len(offs) * 4096 + 4096)
        start = (-ctypes.addressof((ctypes.c_char * len(raw)).from_buffer(raw))) % 4096
        buf = memoryview(raw)[start:start + len(offs) * 4096]
        counts = f.read_into(buf, offs, 4096)
        assert counts == [len(blob[o:o + 4096]) for o in offs]

        async def main() -> None:
            res = await asyncio.gather(*(f.aread_at(o, 4096) for o in offs))
            assert res == [blob[o:o + 4096] for o in offs]
            t = asyncio.ensure_future(f.aread_many(offs, 4096))
            await asyncio.sleep(0)
            t.cancel()
            assert await f.aread_at(4096, 4096) == blob[4096:8192]
        asyncio.run(asyncio.wait_for(main(), 60))
    print(mode, f.backend)
"""


def test_fallback_without_io_uring(data: DataFile) -> None:
    path, _, direct_ok = data
    env = dict(os.environ, NOWAIT_DISABLE_URING="1")
    mode_list = "off,auto,on" if direct_ok else "off,auto"
    r = subprocess.run([sys.executable, "-c", CHILD, path, mode_list], env=env,
                       capture_output=True, text=True, timeout=110)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[0] == "off" and lines[1] != "uring"
