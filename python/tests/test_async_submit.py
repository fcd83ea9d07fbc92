"""When asyncio reads reach the kernel (issue #14): while the queue paces
(reads wait on a device) a read is submitted by the call that starts it,
two at a time, instead of at the next loop iteration; a completion that
wakes a waiter schedules the submit for the iteration the waiter runs in.
Results stay byte-exact against os.pread, with cancellation."""

# These tests drive the rings and the queue directly: private names on purpose.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import threading
from typing import Any, Dict, List, Tuple, TypeVar

import nowait
from conftest import DataFile, drop_cache, run


R = TypeVar("R")


def use_ring(loop: asyncio.AbstractEventLoop, ring: R) -> R:
    """Make `ring` the one nowait uses for `loop` (before its first read)."""
    nowait._rings[loop] = ring
    nowait._forget_last()
    return ring


def wait_all(ring: nowait._nowait._Ring, ids: List[int]) -> Dict[int, Any]:
    """Poll a bare _Ring until every id in `ids` finished; {id: result}."""
    got: Dict[int, Any] = {}
    while len(got) < len(ids):
        select.select([ring.fileno()], [], [], 10)
        for op, ok, value in ring.poll():
            assert ok, value
            got[op] = value
    return got


def test_paced_ring_submits_every_second_read_at_start(data: DataFile) -> None:
    path, blob, _ = data
    ring = nowait._nowait._Ring(submit="paced")
    assert ring.submit_chunk() == 2
    with nowait.open(path, direct="off") as f:
        drop_cache(path)
        ids: List[int] = []
        op, queued = ring.start(f, "one", 0, 4096)
        ids.append(op)
        assert queued, "one read is less than a system call's worth"
        assert ring.queue_stats()["paced_submits"] == 0
        op, queued = ring.start(f, "one", 5000, 4096)
        ids.append(op)
        assert not queued, "the second read completes a chunk: submitted at once"
        assert ring.queue_stats()["paced_submits"] == 1
        op, queued = ring.start(f, "many", [1, 70000, len(blob) - 10], 100)
        ids.append(op)
        assert not queued, "a call of more than a chunk goes out at once"
        # Three reads, paced: two system calls (2 + 1), never one plug.
        assert ring.queue_stats()["paced_submits"] == 3
        op, queued = ring.start(f, "one", 9, 1)
        ids.append(op)
        assert queued
        ring.submit()
        got = wait_all(ring, ids)
    assert got[ids[0]] == blob[0:4096]
    assert got[ids[1]] == blob[5000:9096]
    assert got[ids[2]] == [blob[1:101], blob[70000:70100], blob[-10:]]
    assert got[ids[3]] == blob[9:10]


def test_batch_ring_leaves_reads_for_the_loop_submit(data: DataFile) -> None:
    path, blob, _ = data
    ring = nowait._nowait._Ring(submit="batch")
    assert ring.submit_chunk() > 1 << 32
    with nowait.open(path, direct="off") as f:
        ids: List[int] = []
        before = ring.queue_stats()["syscalls"]
        for i in range(5):
            op, queued = ring.start(f, "one", i * 3000, 3000)
            ids.append(op)
            assert queued
        # Pushing may register the file (one syscall), never submit.
        assert ring.queue_stats()["syscalls"] - before <= 1
        ring.submit()
        got = wait_all(ring, ids)
    assert [got[i] for i in ids] == [blob[i * 3000:(i + 1) * 3000] for i in range(5)]


class _Recording(nowait._LoopRing):  # type: ignore[misc]
    """Notes, after each completion callback, whether a submit is scheduled."""

    def __init__(self, loop: asyncio.AbstractEventLoop, submit: str) -> None:
        super().__init__(loop, submit)  # pyright: ignore[reportUnknownMemberType]
        self.after_wake: List[bool] = []

    def _on_readable(self) -> None:
        waiting = len(self._futures)
        super()._on_readable()  # pyright: ignore[reportUnknownMemberType]
        if len(self._futures) < waiting:
            self.after_wake.append(self._submit_scheduled)


def test_completion_schedules_the_submit_for_the_woken_tasks(data: DataFile) -> None:
    path, blob, _ = data

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ring = use_ring(loop, _Recording(loop, "batch"))
        # nowait="off": every read through the ring (cached ones would not be).
        with nowait.open(path, direct="off", nowait="off") as f:
            async def chain(start: int) -> List[Tuple[int, bytes]]:
                out: List[Tuple[int, bytes]] = []
                for k in range(20):
                    o = (start + k * 7919) % len(blob)
                    out.append((o, await f.aread_at(o, 100)))
                return out
            results = await asyncio.gather(*(chain(s * 1000) for s in range(4)))
        for chain_ in results:
            for o, got in chain_:
                assert got == blob[o:o + 100]
        # Every callback that woke a waiter left a submit scheduled, to run
        # after the waiters in the next iteration.
        assert ring.after_wake and all(ring.after_wake), ring.after_wake
    run(main())


def test_paced_many_tasks_with_cancellation_match_pread(data: DataFile) -> None:
    """64 tasks, each awaiting aread_at / aread_into in a loop on a paced
    ring (the path uncached reads take), a quarter of them cancelled while
    reads are in flight: every finished read equals os.pread's bytes, and
    every cancelled read is reaped."""
    path, blob, _ = data
    fd = os.open(path, os.O_RDONLY)
    rng = random.Random(1414)
    plans: List[List[Tuple[int, int]]] = []
    for _ in range(64):
        reads: List[Tuple[int, int]] = []
        for _ in range(40):
            off = rng.randrange(0, len(blob) + 4096)
            size = rng.choice([1, 512, 4096, 5000, 65536])
            reads.append((off, size))
        plans.append(reads)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ring = use_ring(loop, nowait._LoopRing(loop, "paced"))
        with nowait.open(path, direct="auto") as f:
            async def worker(t: int, reads: List[Tuple[int, int]]) -> List[Tuple[Any, ...]]:
                done: List[Tuple[Any, ...]] = []
                for i, (off, size) in enumerate(reads):
                    if (t + i) % 3 == 0:
                        buf = bytearray(2 * size)
                        counts = await f.aread_into(buf, [off, off + size], size)
                        done.append(("into", off, size, bytes(buf), counts))
                    else:
                        done.append(("at", off, size, await f.aread_at(off, size)))
                return done

            for round_ in range(3):
                drop_cache(path)
                tasks = [asyncio.ensure_future(worker(t, p)) for t, p in enumerate(plans)]
                for _ in range(5):
                    await asyncio.sleep(0)
                for t in tasks[round_::4]:
                    t.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                finished = 0
                for r in results:
                    if isinstance(r, asyncio.CancelledError):
                        continue
                    assert not isinstance(r, BaseException), r
                    for rec in r:
                        if rec[0] == "at":
                            _, off, size, got = rec
                            assert got == os.pread(fd, size, off), (off, size)
                        else:
                            _, off, size, buf, counts = rec
                            want = [os.pread(fd, size, off), os.pread(fd, size, off + size)]
                            assert counts == [len(w) for w in want], (off, size)
                            assert buf[:counts[0]] == want[0]
                            assert buf[size:size + counts[1]] == want[1]
                        finished += 1
                assert finished >= 48 * 40
                for _ in range(4000):
                    if ring._ring.outstanding() == 0:
                        break
                    await asyncio.sleep(0.002)
                assert ring._ring.outstanding() == 0
            stats = ring._ring.queue_stats()
            assert stats["errors"] == 0
            # The ring paced (at most two reads per system call) throughout;
            # that the starting call submits is shown by the test above.
            assert stats["paced_submits"] >= stats["pushed"] // 2, stats
    try:
        run(main(), timeout=110)
    finally:
        os.close(fd)


def test_child_forked_inside_a_coroutine_gets_its_own_ring(data: DataFile) -> None:
    """The hot path skips the fork check. A child forked inside a running
    coroutine (multiprocessing's fork start method from an asyncio service)
    that runs asyncio.run() must read through a ring of its own: the parent's
    loop still looks like it runs in this thread there."""
    path, blob, _ = data

    async def main() -> None:
        loop = asyncio.get_running_loop()
        # nowait="off": the first read goes through (and makes) the loop's ring.
        with nowait.open(path, direct="off", nowait="off") as f:
            assert await f.aread_at(10, 20) == blob[10:30]
            parent_ring = nowait._rings[loop]
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    signal.alarm(30)

                    async def child() -> bool:
                        got = await f.aread_many([100, 5000], 50)
                        mine = nowait._rings[asyncio.get_running_loop()]
                        return got == [blob[100:150], blob[5000:5050]] and mine is not parent_ring
                    code = 0 if asyncio.run(child()) else 2
                except BaseException:
                    code = 3
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            assert await f.aread_at(7, 3) == blob[7:10]
            assert nowait._rings[loop] is parent_ring
    run(main())


def test_reads_go_to_the_running_loop_not_the_last_used_one(data: DataFile) -> None:
    """aread_* skip asyncio.get_running_loop() (a getpid() per call before
    Python 3.12) when the loop used last runs in this thread; a loop that is
    alive but not running, or runs in another thread, must not be taken."""
    path, blob, _ = data
    first = asyncio.new_event_loop()
    try:
        with nowait.open(path, direct="off") as f:
            assert first.run_until_complete(f.aread_at(0, 10)) == blob[:10]
            # `first` stays alive (and last used) while another loop runs here.
            assert run(f.aread_at(20, 10)) == blob[20:30]
            assert first.run_until_complete(f.aread_many([1, 2], 2)) == [blob[1:3], blob[2:4]]

            # `first` running in another thread while this thread runs its own.
            started = threading.Event()
            stop = first.create_future()

            def serve() -> None:
                async def main() -> None:
                    assert await f.aread_at(5, 5) == blob[5:10]
                    started.set()
                    await stop
                first.run_until_complete(main())

            t = threading.Thread(target=serve)
            t.start()
            try:
                assert started.wait(30)

                async def here() -> List[bytes]:
                    return await asyncio.gather(*(f.aread_at(o, 7) for o in range(0, 700, 7)))
                assert run(here()) == [blob[o:o + 7] for o in range(0, 700, 7)]
            finally:
                first.call_soon_threadsafe(stop.set_result, None)
                t.join(30)
            assert not t.is_alive()
    finally:
        first.close()
