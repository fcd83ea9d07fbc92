"""What Python code does with files out of habit: async with, read() of a
whole file, readinto(buffer, offset), fileno(), opening a descriptor, any
iterable or an integer NumPy array as offsets, and variable-length records
packed into one buffer. Bytes checked against the data written."""

from __future__ import annotations

import asyncio
import mmap
import os

from typing import List, Tuple

import numpy as np
import pytest

import nowait
from conftest import DataDir, DataFile, DirectMode, drop_cache, modes


def test_async_with_and_aread(data: DataFile) -> None:
    path, blob, _ = data

    async def main() -> Tuple[bytes, bytes, int, bytes, int, bytes, List[int]]:
        async with nowait.open(path) as f:
            whole = await f.aread()
            buf = bytearray(5000)
            n = await f.areadinto(buf, 100)
            tail = bytearray(5000)
            m = await f.areadinto(tail, len(blob) - 10)
            recs = bytearray(30)
            counts = await f.aread_into(recs, [0, 7, len(blob) - 5], [10, 5, 15])
        assert f.closed
        return whole, bytes(buf), n, bytes(tail[:m]), m, bytes(recs), counts

    whole, buf, n, tail, m, recs, counts = asyncio.run(main())
    assert whole == blob
    assert n == 5000 and buf == blob[100:5100]
    assert m == 10 and tail == blob[-10:]
    assert counts == [10, 5, 5]
    assert recs[:15] == blob[0:10] + blob[7:12] and recs[15:20] == blob[-5:]


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_read_whole_file(data: DataFile, datadir: DataDir, mode: str) -> None:
    """read() returns the file as it is, also when it is larger than one
    part (2 MiB), empty, or cold."""
    path, blob, _ = data
    drop_cache(path)
    with nowait.open(path, direct=mode) as f:  # type: ignore[arg-type]
        assert f.read() == blob
    d, _ = datadir
    empty = os.path.join(d, "empty.bin")
    with open(empty, "wb"):
        pass
    with nowait.open(empty, direct=mode) as f:  # type: ignore[arg-type]
        assert f.read() == b""


@pytest.mark.parametrize("mode", ["off", "auto", "on"])
def test_readinto_one_buffer(data: DataFile, mode: DirectMode) -> None:
    path, blob, direct_ok = data
    if mode not in modes(direct_ok):
        pytest.skip(f"SKIP test_readinto_one_buffer[{mode}]: no filesystem here takes O_DIRECT")
    with nowait.open(path, direct=mode) as f:
        arr = mmap.mmap(-1, 8192)  # page-aligned, as direct="on" needs
        assert f.readinto(arr, 4096) == 8192
        assert arr[:] == blob[4096:12288]
        view = memoryview(mmap.mmap(-1, 4096))
        assert f.readinto(view, len(blob) // 4096 * 4096) == len(blob) % 4096
        assert f.readinto(bytearray(0), 0) == 0
        with pytest.raises(TypeError, match="readinto needs a writable"):
            f.readinto(b"read-only", 0)  # the checkers accept bytes as a Buffer


def test_fileno_and_open_descriptor(data: DataFile) -> None:
    path, blob, _ = data
    fd = os.open(path, os.O_RDONLY)
    os.lseek(fd, 123, os.SEEK_SET)
    with nowait.open(fd, closefd=False) as f:
        assert f.name == fd
        own = f.fileno()
        assert own != fd and os.path.samestat(os.fstat(own), os.fstat(fd))
        assert f.read_at(10, 100) == blob[10:110]
        assert f.read() == blob
    # The caller's descriptor: open, offset untouched.
    assert os.lseek(fd, 0, os.SEEK_CUR) == 123
    with pytest.raises(ValueError, match="closed"):
        f.fileno()
    g = nowait.open(fd)  # closefd: close() closes it
    assert g.read_at(0, 4) == blob[:4]
    g.close()
    with pytest.raises(OSError) as e:
        os.fstat(fd)
    assert e.value.errno == 9
    with pytest.raises(OSError) as e:
        nowait.open(fd)
    assert e.value.errno == 9  # EBADF, as os.fstat says it


def test_any_iterable_or_numpy_array_as_offsets(data: DataFile) -> None:
    path, blob, _ = data
    offs = [0, 4096, 100000, len(blob) - 100]
    want = [blob[o:o + 512] for o in offs]
    with nowait.open(path) as f:
        assert f.read_many(offs, 512) == want
        assert f.read_many(tuple(offs), 512) == want
        assert f.read_many((o for o in offs), 512) == want
        assert f.read_many(iter(offs), np.int64(512)) == want
        for dt in (np.int64, np.uint64, np.int32, np.uint32):
            assert f.read_many(np.array(offs, dtype=dt), 512) == want, dt
        assert f.read_many(np.array(offs), np.array([512] * 4)) == want
        assert f.read_many(range(0, 4096 * 4, 4096), 16) == [
            blob[o:o + 16] for o in range(0, 4096 * 4, 4096)]
        out = np.empty((4, 512), np.uint8)
        assert f.read_into(out, np.array(offs), 512) == [512, 512, 512, 100]
        assert out[1].tobytes() == want[1]
        with pytest.raises(TypeError, match="integers; this array's dtype is float64"):
            f.read_many(np.array([0.0, 1.0]), 4)
        with pytest.raises(TypeError, match="1-D"):
            f.read_many(np.zeros((2, 2), np.int64), 4)
        with pytest.raises(TypeError, match="iterable of ints"):
            f.read_many(3.5, 4)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="offsets must be ints"):
            f.read_many(["0"], 4)  # type: ignore[list-item]
        with pytest.raises(ValueError, match="negative"):
            f.read_many(np.array([-1]), 4)


def test_read_into_variable_length_records_packed(data: DataFile) -> None:
    """Records of different sizes land back to back in one buffer; the
    byte counts say how much of each slot was read."""
    path, blob, _ = data
    offs = [5, 70000, len(blob) - 3, 12]
    sizes = [10, 1, 8, 4096]
    with nowait.open(path) as f:
        buf = bytearray(sum(sizes))
        counts = f.read_into(buf, offs, sizes)
        assert counts == [10, 1, 3, 4096]
        at = 0
        for o, s, c in zip(offs, sizes, counts):
            assert buf[at:at + c] == blob[o:o + c]
            at += s
        with pytest.raises(ValueError, match="need 4115"):
            f.read_into(bytearray(100), offs, sizes)
        with pytest.raises(ValueError, match="3 sizes for 4 offsets"):
            f.read_into(buf, offs, sizes[:3])
