"""The asynchronous methods under trio: one ring per trio run, its eventfd
watched with trio.lowlevel.wait_readable. Same bytes as os.pread; every
read in flight completes (under trio.fail_after); a cancelled read's
memory is held until the kernel is done with it; a run that ends with
reads in flight lets them finish before its ring goes."""

from __future__ import annotations

import gc
import random
from typing import Any, List, Optional

import pytest

import nowait
from conftest import DataFile, DirectMode, drop_cache, modes

try:
    import trio
    import trio.testing
except ImportError:
    pytest.skip("SKIP test_trio: trio is not installed", allow_module_level=True)

#: Every test's reads must finish well within this (the conftest watchdog
#: is the last resort; this fails the test with a trio.TooSlowError).
DEADLINE_S = 60


def _ring() -> Any:
    from nowait import _trio
    ring = _trio.current_ring()
    assert ring is not None
    return ring


async def _settled(ring: Any) -> None:
    """Wait until the ring has no read in flight."""
    with trio.fail_after(DEADLINE_S):
        while ring._ring.outstanding():
            await trio.sleep(0.002)


@pytest.mark.parametrize("cached", [True, False])
def test_trio_reads_match_pread(data: DataFile, cached: bool) -> None:
    path, blob, direct_ok = data
    rng = random.Random(24)
    n = len(blob)
    offs = [rng.randrange(0, n) for _ in range(40)] + [n - 10, n + 5, 0]

    async def main(direct: DirectMode) -> None:
        with trio.fail_after(DEADLINE_S):
            async with nowait.open(path, direct=direct) as f:
                if cached:
                    assert await f.aread() == blob
                else:
                    drop_cache(path)
                got: List[Optional[bytes]] = [None] * len(offs)

                async def one(i: int) -> None:
                    got[i] = await f.aread_at(offs[i], 4096)

                async with trio.open_nursery() as nursery:
                    for i in range(len(offs)):
                        nursery.start_soon(one, i)
                assert got == [blob[o:o + 4096] for o in offs]
                assert await f.aread_many(offs, 100) == [blob[o:o + 100] for o in offs]
                buf = bytearray(len(offs) * 512)
                counts = await f.aread_into(buf, offs, 512)
                for i, (o, c) in enumerate(zip(offs, counts)):
                    assert c == len(blob[o:o + 512])
                    assert buf[i * 512:i * 512 + c] == blob[o:o + c]
                one_buf = bytearray(1000)
                assert await f.areadinto(one_buf, 4096) == 1000
                assert bytes(one_buf) == blob[4096:5096]
                assert await f.aread() == blob
                s = f.stats()
                assert s["errors"] == 0 and s["async_calls"] == len(offs) + 4 + cached, s
                await _settled(_ring())

    for direct in modes(direct_ok)[:2]:
        trio.run(main, direct)


def test_trio_reads_in_flight_under_a_watchdog(data: DataFile) -> None:
    """Many tasks with uncached reads in flight at once: every completion
    reaches its task (a lost wake-up would hang here until fail_after)."""
    path, blob, _ = data
    rng = random.Random(7)
    n = len(blob)
    done = [0]

    async def reader(f: nowait.File, seed: float) -> None:
        r = random.Random(seed)
        for _ in range(25):
            o = r.randrange(0, n)
            assert await f.aread_at(o, 4096) == blob[o:o + 4096]
            done[0] += 1

    async def main() -> None:
        with trio.fail_after(DEADLINE_S):
            with nowait.open(path, nowait="off") as f:
                for _ in range(3):
                    drop_cache(path)
                    async with trio.open_nursery() as nursery:
                        for _ in range(64):
                            nursery.start_soon(reader, f, rng.random())
                await _settled(_ring())

    trio.run(main)
    assert done[0] == 3 * 64 * 25


def test_trio_cancel_with_reads_in_flight(data: DataFile) -> None:
    """Cancelled reads: their buffers stay exported (a bytearray cannot be
    resized) until the kernel is done, the others' results are right, and
    the ring keeps working."""
    path, blob, _ = data
    rng = random.Random(11)

    async def main() -> None:
        with trio.fail_after(DEADLINE_S):
            with nowait.open(path, nowait="off") as f:
                ring = _ring()
                in_flight = 0
                for _ in range(5):
                    drop_cache(path)
                    offs = [rng.randrange(0, len(blob)) for _ in range(16)]
                    bufs = [bytearray(16 * 4096) for _ in range(8)]
                    scopes = [trio.CancelScope() for _ in bufs]
                    results: List[Optional[List[int]]] = [None] * len(bufs)

                    async def one(i: int) -> None:
                        with scopes[i]:
                            results[i] = await f.aread_into(bufs[i], offs, 4096)

                    async with trio.open_nursery() as nursery:
                        for i in range(len(bufs)):
                            nursery.start_soon(one, i)
                        # Every task has started its reads and waits.
                        await trio.testing.wait_all_tasks_blocked()
                        if ring._ring.outstanding():
                            in_flight += 1
                            # The ones not reaped yet hold their buffers.
                            exported = 0
                            for b in bufs:
                                try:
                                    b.extend(b"x")
                                except BufferError:
                                    exported += 1
                                else:
                                    del b[-1:]
                            assert exported > 0
                        for s in scopes[::2]:
                            s.cancel()
                    for i, r in enumerate(results):
                        if r is None:
                            assert i % 2 == 0  # cancelled before it finished
                            continue
                        assert r == [4096] * 16
                        assert bytes(bufs[i]) == b"".join(blob[o:o + 4096] for o in offs)
                    await _settled(ring)
                    for b in bufs:
                        b.extend(b"x")  # every export released once reaped
                assert in_flight > 0  # reads were cancelled while in flight
                assert await f.aread_at(10, 10) == blob[10:20]

    trio.run(main)


def test_trio_cancelled_reads_never_write_into_freed_memory(data: DataFile) -> None:
    """Cancel aread_into calls with reads in flight, drop every reference
    to their buffers, allocate canaries of the same size: the late writes
    of a buffer released too early would land in a canary."""
    path, blob, _ = data
    rng = random.Random(99)
    size = 64 * 1024

    async def main() -> None:
        with trio.fail_after(DEADLINE_S):
            with nowait.open(path) as f:
                ring = _ring()
                for _ in range(20):
                    drop_cache(path)
                    async with trio.open_nursery() as nursery:
                        for _ in range(8):
                            offs = [rng.randrange(0, len(blob) - 4096)
                                    for _ in range(size // 4096)]
                            nursery.start_soon(f.aread_into, bytearray(size), offs, 4096)
                        await trio.sleep(0)
                        nursery.cancel_scope.cancel()
                    gc.collect()
                    canaries = [bytearray(size) for _ in range(8)]
                    await _settled(ring)
                    assert all(not any(c) for c in canaries)

    trio.run(main)


def test_trio_run_ends_with_reads_in_flight(data: DataFile) -> None:
    """A run whose tasks were cancelled with reads in flight ends (its ring
    waits for the kernel), the buffers are released afterwards, and the
    next run gets a ring of its own."""
    path, blob, _ = data
    bufs = [bytearray(32 * 4096) for _ in range(4)]
    offs = [i * 8192 for i in range(32)]

    async def main() -> None:
        with nowait.open(path, nowait="off") as f:
            drop_cache(path)
            async with trio.open_nursery() as nursery:
                for b in bufs:
                    nursery.start_soon(f.aread_into, b, offs, 4096)
                await trio.sleep(0)
                nursery.cancel_scope.cancel()

    trio.run(main)
    gc.collect()
    for b in bufs:
        b.extend(b"x")  # not exported any more: the kernel is done with it

    async def again() -> bytes:
        with nowait.open(path) as f:
            return await f.aread_at(0, 100)

    assert trio.run(again) == blob[:100]


def test_trio_errors_reach_the_awaiting_task(data: DataFile) -> None:
    path, _, _ = data

    async def main() -> None:
        with trio.fail_after(DEADLINE_S):
            f = nowait.open(path)
            with pytest.raises(ValueError, match="negative"):
                await f.aread_at(-1, 10)
            with pytest.raises(TypeError):
                await f.aread_many(5, 10)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="buffer holds"):
                await f.aread_into(bytearray(10), [0, 1], 8)
            f.close()
            with pytest.raises(ValueError, match="closed file"):
                await f.aread_at(0, 10)
            with pytest.raises(ValueError, match="closed file"):
                await f.aread_many([0], 10)

    trio.run(main)


def test_outside_any_event_loop(data: DataFile) -> None:
    """A coroutine driven by hand, outside asyncio and trio: a RuntimeError
    that says where the methods run."""
    path, _, _ = data
    with nowait.open(path) as f:
        coro = f.aread_many([0], 10)
        with pytest.raises(RuntimeError, match="inside asyncio.*or trio"):
            coro.send(None)
        coro.close()

