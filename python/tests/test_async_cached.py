"""aread_at from the page cache first (issue #14): a buffered read whose
bytes are all cached is done at once with preadv2(RWF_NOWAIT) on the
loop's thread, with no future and no ring; anything else (a miss, a partly
cached range, end of file, O_DIRECT, nowait="off") takes the ring.
Results are byte-exact against os.pread either way."""

# These tests reach the ring nowait keeps per event loop: private names on purpose.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import asyncio
import os
import random

from typing import Any, List, Mapping

import pytest

import nowait
from conftest import DataDir, DataFile, NowaitMode, drop_cache, modes, pread, run


def warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def tries(st: Mapping[str, Any]) -> int:
    return sum(st[f"nowait_path_{k}"] for k in ("hits", "partial", "misses", "refused"))


def skip_if_refused(st: Mapping[str, Any], name: str) -> None:
    if st["nowait_path_off"] is not None:
        pytest.skip(f"SKIP {name}: no RWF_NOWAIT reads on this filesystem "
                    f"({st['fs']}: {st['nowait_path_off']})")


@pytest.mark.parametrize("mode", ["always", "adaptive"])
def test_cached_reads_match_pread_without_the_ring(data: DataFile, mode: NowaitMode) -> None:
    path, blob, _ = data
    warm(path)
    rng = random.Random(15)
    n = len(blob)
    # Inside the file (hits), straddling end of file (a hit of the bytes up
    # to it: the size is not a multiple of 4096), past it (b"", via the ring).
    inside = [(rng.randrange(0, n - 70000), rng.choice([1, 100, 4096, 5000, 65536]))
              for _ in range(100)]
    straddle = [(n - 10, 4096), (n - 5000, 8192), (n - 1, 1 << 20)]
    past = [(n, 4096), (n + 8192, 10)]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with nowait.open(path, direct="off", nowait=mode) as f:
            assert f.nowait == mode
            for o, s in inside + straddle:
                assert await f.aread_at(o, s) == blob[o:o + s] == pread(path, o, s), (o, s)
            st = f.stats()
            skip_if_refused(st, "test_cached_reads_match_pread_without_the_ring")
            # Every one of them answered from the page cache, with no ring,
            # but for one in 128 hits in a row on this thread (counted since
            # this thread's last ring read, maybe in an earlier test).
            # (A cached page can answer EAGAIN now and then, its folio
            # locked for a moment by someone else: a miss or two, which the
            # ring then reads.)
            yields = st["nowait_path_yields"]
            misses = st["nowait_path_misses"]
            missed = misses + st["nowait_path_partial"]
            assert yields <= 1 and missed <= 2, st
            assert st["nowait_path_hits"] + yields + missed == len(inside) + len(straddle), st
            ring = nowait._rings.get(loop)
            ring_before = ring._ring.queue_stats()["completed"] if ring else 0
            assert ring_before == yields + missed, st
            assert st["async_calls"] == len(inside) + len(straddle)
            for o, s in past:
                assert await f.aread_at(o, s) == b"" == pread(path, o, s)
            # End of file: 0 bytes, which only the ring's plain read tells
            # from a miss. (Or, for the read that ends a run of 128 hits on
            # this thread, a yield: the run may have started in an earlier
            # test.)
            st = f.stats()
            new_yields = st["nowait_path_yields"] - yields
            assert new_yields <= 1, st
            assert st["nowait_path_misses"] - misses + new_yields == len(past), st
            completed = nowait._rings[loop]._ring.queue_stats()["completed"]
            assert completed == ring_before + len(past)
            # Many tasks at once: still exact.
            reqs = inside[:60]
            got = await asyncio.gather(*(f.aread_at(o, s) for o, s in reqs))
            assert got == [blob[o:o + s] for o, s in reqs]
    run(main())


def test_cold_file_is_read_through_the_ring(data: DataFile) -> None:
    path, blob, _ = data
    rng = random.Random(16)
    n = len(blob)
    reqs = [(rng.randrange(0, n + 8192), rng.choice([1, 4096, 5000, 65536]))
            for _ in range(150)]

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with nowait.open(path, direct="off", nowait="always") as f:
            drop_cache(path)
            for o, s in reqs:
                assert await f.aread_at(o, s) == blob[o:o + s] == pread(path, o, s), (o, s)
            st = f.stats()
            skip_if_refused(st, "test_cold_file_is_read_through_the_ring")
            yields = st["nowait_path_yields"]
            assert tries(st) + yields == len(reqs), st
            # Some reads found their pages missing (the first one at least);
            # each of those went through the ring and came back exact.
            went_to_ring = st["nowait_path_misses"] + st["nowait_path_partial"]
            assert went_to_ring > 0, st
            completed = nowait._rings[loop]._ring.queue_stats()["completed"]
            assert completed == went_to_ring + yields
    run(main())


def test_adaptive_stops_trying_a_cold_file(data: DataFile, datadir: DataDir) -> None:
    d, _ = datadir
    path = os.path.join(d, "cold-big.bin")
    size = 32 << 20
    with open(path, "wb") as out:
        out.write(random.Random(17).randbytes(size))
    rng = random.Random(18)
    # Each 128 KiB slot once, so a read never finds what an earlier one (or
    # its readahead) brought in; the file's hit ratio falls below 1/8.
    reqs = [k * (128 << 10) + 512 for k in rng.sample(range(size // (128 << 10)), 200)]

    async def main() -> None:
        with nowait.open(path, direct="off") as f:
            drop_cache(path)
            for o in reqs:
                assert await f.aread_at(o, 4096) == pread(path, o, 4096)
            st = f.stats()
            skip_if_refused(st, "test_adaptive_stops_trying_a_cold_file")
            assert st["nowait_path_skipped"] > 0, st
            assert (tries(st) + st["nowait_path_skipped"] + st["nowait_path_yields"]
                    == len(reqs)), st
    try:
        run(main())
    finally:
        os.unlink(path)


def test_direct_and_off_never_try(data: DataFile) -> None:
    path, blob, direct_ok = data
    warm(path)
    cases = [("off", "off")] + ([("on", "always")] if direct_ok else [])
    if "auto" in modes(direct_ok) and direct_ok:
        cases.append(("auto", "always"))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for direct, mode in cases:
            with nowait.open(path, direct=direct, nowait=mode) as f:  # type: ignore[arg-type]
                assert f.direct == (direct != "off")
                ring = nowait._rings.get(loop)
                before = ring._ring.queue_stats()["completed"] if ring else 0
                for i in range(20):
                    assert await f.aread_at(i * 4096, 4096) == blob[i * 4096:(i + 1) * 4096]
                st = f.stats()
                assert tries(st) == st["nowait_path_skipped"] == st["nowait_path_yields"] == 0, \
                    (direct, mode, st)
                after = nowait._rings[loop]._ring.queue_stats()["completed"]
                assert after - before == 20
    run(main())


def test_cancelling_a_mix_of_cached_and_ring_reads(data: DataFile) -> None:
    path, blob, _ = data
    rng = random.Random(19)
    n = len(blob)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with nowait.open(path, direct="off", nowait="always") as f:
            for round_ in range(6):
                # Cold half of the rounds: most reads go to the ring.
                if round_ % 2:
                    drop_cache(path)
                else:
                    warm(path)
                offs = [rng.randrange(0, n) for _ in range(200)]
                tasks = [asyncio.ensure_future(f.aread_at(o, 4096)) for o in offs]
                # Half are cancelled before they run, half after their first step.
                for t in tasks[::4]:
                    t.cancel()
                await asyncio.sleep(0)
                for t in tasks[1::4]:
                    t.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                for o, r in zip(offs, results):
                    if isinstance(r, asyncio.CancelledError):
                        continue
                    assert r == blob[o:o + 4096]
                ring = nowait._rings.get(loop)
                if ring is not None:
                    for _ in range(2000):
                        if ring._ring.outstanding() == 0:
                            break
                        await asyncio.sleep(0.005)
                    assert ring._ring.outstanding() == 0
            st = f.stats()
            skip_if_refused(st, "test_cancelling_a_mix_of_cached_and_ring_reads")
            assert st["nowait_path_hits"] > 0 and st["nowait_path_misses"] > 0, st
            assert await f.aread_at(10, 10) == blob[10:20]
    run(main())


def test_a_task_reading_cached_data_lets_the_others_run(data: DataFile) -> None:
    """Cached hits return without suspending; after 128 in a row one goes
    through the ring, so the loop gets to run the other tasks.

    A cached page can now and then answer RWF_NOWAIT with EAGAIN; that read
    goes to the ring and suspends too, which only shortens a run. So the
    test bounds the longest run of reads between two turns of another task,
    not the number of yields."""
    path, blob, _ = data
    warm(path)

    async def main() -> None:
        done = 0
        ticks: List[int] = []
        stop = False

        async def ticker() -> None:
            while not stop:
                ticks.append(done)
                await asyncio.sleep(0)

        with nowait.open(path, direct="off", nowait="always") as f:
            t = asyncio.ensure_future(ticker())
            await asyncio.sleep(0)
            for i in range(400):
                o = (i * 4099) % (len(blob) - 100)
                assert await f.aread_at(o, 100) == blob[o:o + 100]
                done += 1
            stop = True
            await t
            st = f.stats()
            skip_if_refused(st, "test_a_task_reading_cached_data_lets_the_others_run")
            assert st["nowait_path_hits"] > 200, st
            assert st["nowait_path_yields"] >= 1, st
        # The ticker ran at least once per 129 reads: the reader never kept
        # the loop for longer than its budget.
        ticks.append(done)
        gaps = [b - a for a, b in zip(ticks, ticks[1:])]
        assert max(gaps) <= 129, (max(gaps), ticks)
    run(main())


def test_bad_nowait_mode(data: DataFile) -> None:
    path, _, _ = data
    with pytest.raises(ValueError, match="not a mode"):
        nowait.open(path, nowait="sometimes")  # type: ignore[arg-type]
    with nowait.open(path) as f:
        assert f.nowait == "adaptive" and f.stats()["nowait"] == "adaptive"


def test_errors_unchanged_with_the_cached_path(data: DataFile) -> None:
    path, blob, _ = data
    warm(path)

    async def main() -> None:
        f = nowait.open(path, direct="off", nowait="always")
        with pytest.raises(ValueError, match="negative"):
            await f.aread_at(-1, 10)
        with pytest.raises(ValueError, match="negative"):
            await f.aread_at(0, -10)
        with pytest.raises(TypeError):
            await f.aread_at(1.5, 10)  # type: ignore[arg-type]
        with pytest.raises(OverflowError):
            await f.aread_at(1 << 70, 10)
        assert await f.aread_at(0, 0) == b""
        assert await f.aread_at(5, 7) == blob[5:12]
        f.close()
        with pytest.raises(ValueError, match="closed"):
            await f.aread_at(0, 1)
    run(main())


def test_blocking_read_at_tries_the_page_cache_first(data: DataFile) -> None:
    """read_at takes the same first try: cached reads are hits (byte-exact,
    counted as calls, reads and bytes); past end of file and with
    nowait="off" the queue reads them."""
    path, blob, _ = data
    warm(path)
    rng = random.Random(16)
    n = len(blob)
    reads = [(rng.randrange(0, n - 70000), rng.choice([1, 4096, 5000, 65536]))
             for _ in range(200)] + [(n - 10, 4096), (n + 4096, 10)]
    with nowait.open(path, direct="off", nowait="always") as f:
        for o, s in reads:
            assert f.read_at(o, s) == blob[o:o + s] == pread(path, o, s), (o, s)
        st = f.stats()
        skip_if_refused(st, "test_blocking_read_at_tries_the_page_cache_first")
        # Every read inside the file hits; the one past end of file is a
        # miss (0 bytes: only the queue's plain read tells it from a miss).
        # (Or a miss or two more: a cached page can answer EAGAIN now and
        # then, its folio locked for a moment by someone else.)
        assert len(reads) - 3 <= st["nowait_path_hits"] <= len(reads) - 1, st
        assert st["nowait_path_hits"] + st["nowait_path_misses"] \
            + st["nowait_path_partial"] == len(reads), st
        assert st["calls"] == len(reads) and st["reads"] == len(reads), st
        assert st["bytes"] == sum(len(blob[o:o + s]) for o, s in reads), st
        assert st["async_calls"] == 0, st
    with nowait.open(path, direct="off", nowait="off") as f:
        for o, s in reads[:50]:
            assert f.read_at(o, s) == blob[o:o + s], (o, s)
        st = f.stats()
        assert tries(st) == 0 and st["nowait_path_hits"] == 0, st
        assert st["reads"] == 50, st


def test_aread_at_needs_a_running_loop_even_on_a_hit(data: DataFile) -> None:
    """Driven outside asyncio, a cached read fails as a cold one does
    (rather than working only while the data happens to be cached)."""
    path, _, _ = data
    warm(path)
    with nowait.open(path, direct="off", nowait="always") as f:
        for off in (0, 1 << 40):
            coro = f.aread_at(off, 100)
            with pytest.raises(RuntimeError, match="running event loop"):
                coro.send(None)
            coro.close()
        assert f.stats()["nowait_path_hits"] == 0
