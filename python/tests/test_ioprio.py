"""Per-read I/O priority (``ioprio=``): a read that reaches the kernel with a
class it does not know raises OSError(EINVAL), from every read method,
blocking and asynchronous; a valid priority reads the file's bytes."""

from __future__ import annotations

import errno
from typing import Any, Callable, Coroutine, List, Tuple

import pytest

import nowait
from conftest import DataFile, run

#: A priority class the kernel does not know (classes are 0 to 3).
BAD = 7 << 13


def _opened(data: DataFile) -> Tuple[nowait.File, bytes]:
    """The data file, opened so that every read goes to the kernel: O_DIRECT
    where the filesystem takes it, else buffered without the page-cache try
    on the calling thread (nowait="off")."""
    path, blob, direct_ok = data
    if direct_ok:
        return nowait.open(path, direct="auto"), blob
    f = nowait.open(path, nowait="off")
    if f.backend in ("pool", "aio+pool"):
        # Its workers try the page cache before the priority applies.
        f.close()
        pytest.skip("no O_DIRECT filesystem and a pool backend: no read reaches the kernel")
    return f, blob


def test_ioprio_value() -> None:
    assert nowait.ioprio(nowait.IOPRIO_CLASS_BE, 4) == (2 << 13) | 4
    assert nowait.ioprio(nowait.IOPRIO_CLASS_IDLE, 0) == 3 << 13
    assert nowait.IOPRIO_CLASS_RT == 1
    with pytest.raises(ValueError, match="class"):
        nowait.ioprio(8, 0)


def test_unknown_class_raises_einval(data: DataFile) -> None:
    f, _ = _opened(data)
    with f:
        buf = bytearray(4096)
        calls: List[Callable[[], Any]] = [
            lambda: f.read_at(8192, 4096, ioprio=BAD),
            lambda: f.read_many([0, 65536], 4096, ioprio=BAD),
            lambda: f.read_into(buf, [4096], 4096, ioprio=BAD),
            lambda: f.readinto(buf, 4096, ioprio=BAD),
            lambda: f.read(ioprio=BAD),
        ]
        for call in calls:
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno == errno.EINVAL, e.value
        acalls: List[Callable[[], Coroutine[Any, Any, Any]]] = [
            lambda: f.aread_at(8192, 4096, ioprio=BAD),
            lambda: f.aread_many([0, 65536], 4096, ioprio=BAD),
            lambda: f.aread_into(buf, [4096], 4096, ioprio=BAD),
            lambda: f.areadinto(buf, 4096, ioprio=BAD),
            lambda: f.aread(ioprio=BAD),
        ]
        for acall in acalls:
            with pytest.raises(OSError) as e:
                run(acall())
            assert e.value.errno == errno.EINVAL, e.value


def test_valid_priority_reads_the_bytes(data: DataFile) -> None:
    f, blob = _opened(data)
    idle = nowait.ioprio(nowait.IOPRIO_CLASS_IDLE, 0)
    low = nowait.ioprio(nowait.IOPRIO_CLASS_BE, 7)
    with f:
        assert f.read_at(40960, 4096, ioprio=idle) == blob[40960:45056]
        got = f.read_many([0, 1 << 20], 8192, ioprio=low)
        assert got == [blob[:8192], blob[1 << 20:(1 << 20) + 8192]]
        buf = bytearray(4096)
        assert f.readinto(buf, 8192, ioprio=idle) == 4096
        assert bytes(buf) == blob[8192:12288]
        assert f.read(ioprio=low) == blob
        assert run(f.aread_at(12288, 4096, ioprio=idle)) == blob[12288:16384]
        assert run(f.aread_many([4096], 4096, ioprio=low)) == [blob[4096:8192]]
        assert run(f.aread(ioprio=idle)) == blob


def test_trio_reads_carry_the_priority(data: DataFile) -> None:
    trio = pytest.importorskip("trio")
    f, blob = _opened(data)
    idle = nowait.ioprio(nowait.IOPRIO_CLASS_IDLE, 0)

    async def main() -> None:
        with pytest.raises(OSError) as e:
            await f.aread_at(8192, 4096, ioprio=BAD)
        assert e.value.errno == errno.EINVAL, e.value
        with pytest.raises(OSError) as e:
            await f.aread_many([0], 4096, ioprio=BAD)
        assert e.value.errno == errno.EINVAL, e.value
        assert await f.aread_at(16384, 4096, ioprio=idle) == blob[16384:20480]

    with f:
        trio.run(main)
