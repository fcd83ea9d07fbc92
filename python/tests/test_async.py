"""asyncio: completions reach the loop through the engine's eventfd;
cancelling a task with reads in flight is safe."""

# These tests reach the ring nowait keeps per event loop: private names on purpose.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import gc
import random
import threading
from typing import Any, List, Tuple

import pytest

import nowait
from conftest import DataDir, DataFile, DirectMode, drop_cache, modes, run


def np_address(buf: bytearray) -> int:
    """Address of a buffer's first byte (via ctypes)."""
    import ctypes
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))


@pytest.mark.parametrize("mode", ["off", "auto", "on"])
def test_aread_matches(data: DataFile, mode: DirectMode) -> None:
    path, blob, direct_ok = data
    if mode not in modes(direct_ok):
        pytest.skip(f"SKIP test_aread_matches[{mode}]: no filesystem here takes O_DIRECT")
    align = 4096 if mode == "on" else 1
    rng = random.Random(7)
    reqs: List[Tuple[int, int]] = []
    for _ in range(400):
        off = rng.randrange(0, len(blob) + 8192) // align * align
        choices = [4096, 8192, 1 << 16] if align > 1 else [0, 1, 100, 4096, 5000]
        size = rng.choice(choices)
        reqs.append((off, size))
    drop_cache(path)

    async def main() -> None:
        with nowait.open(path, direct=mode) as f:
            # 400 concurrent tasks on a ring of 256 slots: the backlog refills it.
            got = await asyncio.gather(*(f.aread_at(o, s) for o, s in reqs))
            for (o, s), g in zip(reqs, got):
                assert g == blob[o:o + s], (o, s)
            offs = [o for o, _ in reqs[:64]]
            many = await f.aread_many(offs, 4096)
            assert many == [blob[o:o + 4096] for o in offs]
            sizes = [s for _, s in reqs[:64]]
            many = await f.aread_many(offs, sizes)
            assert many == [blob[o:o + s] for o, s in zip(offs, sizes)]
            if mode == "on":
                # O_DIRECT wants an aligned target: a page-aligned slice.
                raw = bytearray(65 * 4096)
                start = (-np_address(raw)) % 4096
                ba = memoryview(raw)[start:start + 64 * 4096]
                with pytest.raises(ValueError, match="not aligned"):
                    await f.aread_into(memoryview(raw)[start + 1:], offs, 4096)
            else:
                ba = bytearray(64 * 4096)  # type: ignore[assignment]
            counts = await f.aread_into(ba, offs, 4096)
            assert counts == [len(blob[o:o + 4096]) for o in offs]
            for i, o in enumerate(offs):
                assert bytes(ba[i * 4096:i * 4096 + counts[i]]) == blob[o:o + counts[i]]
            assert f.stats()["async_calls"] == (404 if mode == "on" else 403)
    run(main())


def test_cancel_with_reads_in_flight(data: DataFile) -> None:
    path, blob, _ = data
    rng = random.Random(11)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        # Reads in flight on the ring: none answered from the page cache.
        with nowait.open(path, direct="auto", nowait="off") as f:
            for round_ in range(5):
                drop_cache(path)
                offs = [rng.randrange(0, len(blob)) for _ in range(200)]
                tasks = [asyncio.ensure_future(f.aread_at(o, 4096)) for o in offs]
                bufs = [bytearray(16 * 4096) for _ in range(10)]
                into = [asyncio.ensure_future(f.aread_into(b, offs[:16], 4096)) for b in bufs]
                await asyncio.sleep(0)  # every task has started its reads
                ring = nowait._rings[loop]
                assert ring._ring.outstanding() > 0 or round_ > 0
                # A bytearray with a read in flight cannot be resized.
                if not into[0].done():
                    with pytest.raises(BufferError):
                        bufs[0].extend(b"x")
                for t in tasks[::2] + into[::2]:
                    t.cancel()
                results: List[Any] = await asyncio.gather(*tasks, *into, return_exceptions=True)
                for o, r in zip(offs, results[:200]):
                    if isinstance(r, asyncio.CancelledError):
                        continue
                    assert r == blob[o:o + 4096]
                for b, r in zip(bufs, results[200:]):
                    if isinstance(r, asyncio.CancelledError):
                        continue
                    assert r == [4096] * 16
                    assert bytes(b[:4096]) == blob[offs[0]:offs[0] + 4096]
                # Drop our references to the buffers of cancelled reads: the
                # engine keeps them alive until the kernel is done.
                del bufs, into, tasks
                gc.collect()
                # Wait until every cancelled read was reaped.
                for _ in range(2000):
                    if ring._ring.outstanding() == 0:
                        break
                    await asyncio.sleep(0.005)
                assert ring._ring.outstanding() == 0
            # The loop and later reads still work.
            assert await f.aread_at(10, 10) == blob[10:20]
            assert await f.aread_many([0, 1], 3) == [blob[0:3], blob[1:4]]
    run(main())


def test_buffer_resizable_after_cancelled_read_completes(data: DataFile) -> None:
    path, blob, _ = data

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with nowait.open(path) as f:
            drop_cache(path)
            ba = bytearray(64 * 4096)
            t = asyncio.ensure_future(f.aread_into(ba, [i * 4096 for i in range(64)], 4096))
            await asyncio.sleep(0)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            ring = nowait._rings[loop]
            for _ in range(2000):
                if ring._ring.outstanding() == 0:
                    break
                await asyncio.sleep(0.005)
            # Let the loop run the eventfd callback that releases the export.
            await asyncio.sleep(0.01)
            ba.extend(b"x")  # no BufferError: the export was released
            assert bytes(ba[:4096]) == blob[:4096]
    run(main())


def test_errors_reach_the_awaiting_task(data: DataFile, datadir: DataDir) -> None:
    path, _, direct_ok = data

    async def main() -> None:
        with nowait.open(path) as f:
            with pytest.raises(ValueError, match="negative"):
                await f.aread_at(-1, 10)
            with pytest.raises(ValueError, match="need 8192"):
                await f.aread_into(bytearray(10), [0, 4096], 4096)
        if direct_ok:
            with nowait.open(path, direct="on") as g:
                with pytest.raises(ValueError, match="offset 3"):
                    await g.aread_at(3, 4096)
                assert len(await g.aread_at(0, 4096)) == 4096
        f.close()
        with pytest.raises(ValueError, match="closed"):
            await f.aread_at(0, 1)
    run(main())


def test_close_with_reads_in_flight(data: DataFile) -> None:
    path, blob, _ = data

    async def main() -> None:
        f = nowait.open(path)
        drop_cache(path)
        tasks = [asyncio.ensure_future(f.aread_at(i * 4096, 4096)) for i in range(100)]
        await asyncio.sleep(0)
        f.close()  # the fd stays open until the reads in flight finish
        got = await asyncio.gather(*tasks)
        assert got == [blob[i * 4096:(i + 1) * 4096] for i in range(100)]
    run(main())


def test_loops_in_several_threads(data: DataFile) -> None:
    path, blob, _ = data
    errors: List[BaseException] = []

    def worker(seed: int) -> None:
        try:
            rng = random.Random(seed)

            async def main() -> None:
                with nowait.open(path) as f:
                    for _ in range(10):
                        offs = [rng.randrange(0, len(blob)) for _ in range(50)]
                        got = await asyncio.gather(*(f.aread_at(o, 512) for o in offs))
                        assert got == [blob[o:o + 512] for o in offs]
            run(main())
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
        assert not t.is_alive()
    assert errors == []


def test_new_loop_after_old_one_closed(data: DataFile) -> None:
    path, blob, _ = data
    with nowait.open(path) as f:
        for _ in range(3):
            assert run(f.aread_at(100, 10)) == blob[100:110]


def test_loops_closed_with_reads_in_flight_are_let_go(data: DataFile) -> None:
    """A read still in flight when asyncio.run returns (a wait_for timeout)
    must not keep its loop, its ring's file descriptors or the caller's
    buffer for ever: the next loop's first read lets go of closed loops."""
    import os
    import weakref
    path, blob, _ = data
    loops: List["weakref.ref[asyncio.AbstractEventLoop]"] = []
    buffers: List[bytearray] = []

    def nfds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def main(i: int, f: nowait.File) -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        drop_cache(path)
        ba = bytearray(256 * 1024)
        buffers.append(ba)
        try:
            await asyncio.wait_for(f.aread_into(ba, [(i * 7) % 8 * 4096], 256 * 1024), 1e-6)
        except asyncio.TimeoutError:
            pass

    with nowait.open(path, direct="off", nowait="off") as f:
        asyncio.run(main(0, f))
        before = nfds()
        for i in range(1, 40):
            asyncio.run(main(i, f))
        # One more loop's first read lets go of the last closed one too.
        assert asyncio.run(_read_one(f)) == blob[100:110]
        gc.collect()
        assert nfds() <= before + 2, (before, nfds())
        alive = sum(r() is not None for r in loops)
        assert alive == 0, f"{alive} of {len(loops)} closed loops are still alive"
        for i, ba in enumerate(buffers):
            ba.extend(b"x")  # no BufferError: the read's export was released
            o = (i * 7) % 8 * 4096
            n = min(256 * 1024, len(blob) - o)
            # The read either finished before the loop closed or was reaped
            # when its ring was dropped: its bytes are the file's or zeros.
            got = bytes(ba[:n])
            assert got == blob[o:o + n] or got == bytes(n), i


async def _read_one(f: nowait.File) -> bytes:
    return await f.aread_at(100, 10)


def test_stats_count_async_reads(data: DataFile) -> None:
    """reads, bytes and errors count the asynchronous calls too: page-cache
    hits, reads through the ring, batches and failures."""
    path, blob, _ = data

    async def main() -> None:
        for nowait_mode in ("always", "off"):
            with nowait.open(path, direct="off", nowait=nowait_mode) as f:
                assert await f.aread_at(0, 4096) == blob[:4096]
                assert await f.aread_many([4096, 8192], 100) == [blob[4096:4196], blob[8192:8292]]
                ba = bytearray(3 * 512)
                assert await f.aread_into(ba, [0, 512, len(blob) - 12], 512) == [512, 512, 12]
                st = f.stats()
                assert st["async_calls"] == 3 and st["calls"] == 0, st
                assert st["reads"] == 6, st
                assert st["bytes"] == 4096 + 200 + 512 + 512 + 12, st
                assert st["errors"] == 0, st
        # A failed asynchronous read counts in errors (page 0 of this
        # process's memory is not mapped: EIO).
        with nowait.open("/proc/self/mem", direct="off", nowait="off") as f:
            with pytest.raises(OSError):
                await f.aread_at(0, 4096)
            st = f.stats()
            assert st["errors"] == 1 and st["async_calls"] == 1, st
    run(main())


def test_cancelled_reads_never_write_into_freed_memory(data: DataFile) -> None:
    """Stress: cancel aread_into calls with reads in flight, drop every
    reference to their buffers, then allocate canaries of the same size
    (the allocator hands freed memory back first). If a buffer were
    released before the kernel finished, the late writes would land in a
    canary; they must all stay zero."""
    path, blob, _ = data
    rng = random.Random(99)
    size = 64 * 1024  # large enough for its own mmap'd or reused block

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with nowait.open(path, direct="off") as f:
            for _ in range(30):
                drop_cache(path)
                tasks: List["asyncio.Future[List[int]]"] = []
                for _ in range(8):
                    offs = [rng.randrange(0, len(blob) - 4096) for _ in range(size // 4096)]
                    tasks.append(asyncio.ensure_future(
                        f.aread_into(bytearray(size), offs, 4096)))
                await asyncio.sleep(0)
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                del tasks
                gc.collect()
                canaries = [bytearray(size) for _ in range(8)]
                ring = nowait._rings[loop]
                for _ in range(4000):
                    if ring._ring.outstanding() == 0:
                        break
                    await asyncio.sleep(0.002)
                assert ring._ring.outstanding() == 0
                await asyncio.sleep(0)
                for c in canaries:
                    assert not any(c), "a cancelled read wrote into reused memory"
            assert await f.aread_at(0, 8) == blob[:8]
    run(main(), timeout=110)
