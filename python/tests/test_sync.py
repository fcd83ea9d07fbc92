"""Blocking reads, byte for byte against os.pread."""

from __future__ import annotations

import os
import random
import threading
from typing import Any, List, Literal, Tuple

import pytest

import nowait
from conftest import DataDir, DataFile, DirectMode, drop_cache, modes, pread


def random_requests(rng: random.Random, file_size: int, n: int,
                    align: int = 1) -> List[Tuple[int, int]]:
    """Offsets and sizes anywhere, including past and straddling end of file."""
    reqs: List[Tuple[int, int]] = []
    for i in range(n):
        kind = i % 5
        if kind == 0:  # straddles end of file
            off = file_size - rng.randrange(1, 9000)
        elif kind == 1:  # past end of file
            off = file_size + rng.randrange(0, 10000)
        else:
            off = rng.randrange(0, file_size)
        size = rng.choice([0, 1, 7, 512, 4096, 4097, 10000, 65536, rng.randrange(1, 200000)])
        if align > 1:
            off = off // align * align
            size = max(align, size // align * align)
        reqs.append((max(off, 0), size))
    return reqs


@pytest.mark.parametrize("mode", ["off", "auto", "on"])
def test_read_at_matches_pread(data: DataFile, mode: DirectMode) -> None:
    path, blob, direct_ok = data
    if mode not in modes(direct_ok):
        pytest.skip(f"SKIP test_read_at_matches_pread[{mode}]: no filesystem here takes O_DIRECT")
    rng = random.Random(1)
    align = 4096 if mode == "on" else 1
    with nowait.open(path, direct=mode) as f:
        assert f.mode == mode
        if mode == "on":
            assert f.direct
        if mode == "off":
            assert not f.direct
        for off, size in random_requests(rng, len(blob), 300, align):
            got = f.read_at(off, size)
            assert isinstance(got, bytes)
            assert got == pread(path, off, size) == blob[off:off + size], (off, size)


@pytest.mark.parametrize("mode", ["off", "auto", "on"])
def test_read_many_matches_pread(data: DataFile, mode: DirectMode) -> None:
    path, blob, direct_ok = data
    if mode not in modes(direct_ok):
        pytest.skip(f"SKIP test_read_many_matches_pread[{mode}]: no filesystem here takes O_DIRECT")
    rng = random.Random(2)
    align = 4096 if mode == "on" else 1
    drop_cache(path)
    with nowait.open(path, direct=mode) as f:
        # More records than the queue is deep: the backlog refills it.
        reqs = random_requests(rng, len(blob), 700, align)
        offsets = [o for o, _ in reqs]
        sizes = [s for _, s in reqs]
        got = f.read_many(offsets, sizes)
        assert len(got) == len(reqs)
        for (o, s), g in zip(reqs, got):
            assert g == blob[o:o + s], (o, s)
        # One size for all.
        offsets = [rng.randrange(0, len(blob)) // align * align for _ in range(100)]
        got = f.read_many(offsets, 4096)
        assert got == [blob[o:o + 4096] for o in offsets]
        assert f.read_many([], 4096) == []
        stats = f.stats()
        assert stats["reads"] == 800 and stats["calls"] == 3 and stats["errors"] == 0
        assert stats["bytes"] == sum(len(blob[o:o + s]) for o, s in reqs) + sum(
            len(g) for g in got)


def test_empty_file_and_zero_sizes(datadir: DataDir) -> None:
    d, _ = datadir
    path = os.path.join(d, "empty.bin")
    open(path, "wb").close()
    with nowait.open(path) as f:
        assert f.size == 0
        assert f.read_at(0, 4096) == b""
        assert f.read_at(12345, 0) == b""
        assert f.read_many([0, 4096, 1], [10, 0, 4096]) == [b"", b"", b""]
        buf = bytearray(b"x" * 30)
        assert f.read_into(buf, [0, 10, 20], 10) == [0, 0, 0]


def test_size_mismatch_and_bad_arguments(data: DataFile) -> None:
    path, _, _ = data
    with nowait.open(path) as f:
        with pytest.raises(ValueError, match="2 sizes for 3 offsets"):
            f.read_many([0, 1, 2], [1, 2])
        with pytest.raises(ValueError, match="offset -1 is negative"):
            f.read_at(-1, 10)
        with pytest.raises(ValueError, match="offset -5 is negative"):
            f.read_many([0, -5], 10)
        with pytest.raises(ValueError, match="size -3 is negative"):
            f.read_at(0, -3)
        with pytest.raises(TypeError):
            f.read_many(5, 10)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            f.read_many(["a"], 10)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not a mode"):
        nowait.open(path, direct="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        nowait.open(path, direct=3)  # type: ignore[arg-type]


def test_close_and_context_manager(data: DataFile) -> None:
    path, blob, _ = data
    f = nowait.open(path)
    assert not f.closed
    assert f.read_at(5, 5) == blob[5:10]
    f.close()
    f.close()  # idempotent
    assert f.closed
    assert "closed" in repr(f)
    with pytest.raises(ValueError, match="closed file"):
        f.read_at(0, 1)
    with pytest.raises(ValueError, match="closed file"):
        f.read_into(bytearray(4), [0], 4)
    with nowait.open(path) as g:
        pass
    assert g.closed


def test_threads_share_a_file(data: DataFile) -> None:
    """Several Python threads read the same File at once (the GIL is
    released while the engine waits); every result is byte-exact."""
    path, blob, _ = data
    errors: List[Any] = []
    drop_cache(path)
    with nowait.open(path) as f:
        def worker(seed: int) -> None:
            try:
                rng = random.Random(seed)
                for _ in range(20):
                    offs = [rng.randrange(0, len(blob)) for _ in range(64)]
                    got = f.read_many(offs, 4096)
                    for o, g in zip(offs, got):
                        if g != blob[o:o + 4096]:
                            errors.append((seed, o))
                    one = rng.randrange(0, len(blob))
                    if f.read_at(one, 100) != blob[one:one + 100]:
                        errors.append((seed, one))
            except BaseException as e:  # report, don't hang the join
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
            assert not t.is_alive(), "a reading thread did not finish"
    assert errors == []


def test_gil_released_while_waiting(data: DataFile) -> None:
    """While one thread waits in the engine, another runs Python code: a
    spinner thread records timestamps, and some must fall well inside one
    long read_many call (with the GIL held, none could)."""
    import time
    path, blob, direct_ok = data
    done = threading.Event()
    ticks: List[float] = []

    def spinner() -> None:
        while not done.is_set():
            ticks.append(time.monotonic())

    # O_DIRECT reads (where possible) go to the disk every time: a long call.
    mode = "on" if direct_ok else "off"
    offs = [i * 4096 for i in range(len(blob) // 4096)] * 8
    with nowait.open(path, direct=mode) as f:  # type: ignore[arg-type]
        t = threading.Thread(target=spinner)
        t.start()
        try:
            time.sleep(0.01)
            drop_cache(path)
            t0 = time.monotonic()
            got = f.read_many(offs, 4096)
            t1 = time.monotonic()
        finally:
            done.set()
            t.join(10)
    assert got[:3] == [blob[0:4096], blob[4096:8192], blob[8192:12288]]
    if t1 - t0 < 0.05:
        pytest.skip(f"SKIP test_gil_released_while_waiting: the call took only "
                    f"{(t1 - t0) * 1000:.1f} ms, too short to tell")
    # Past the first switch interval (5 ms) of the call and before its end.
    inside = [x for x in ticks if t0 + 0.02 < x < t1 - 0.005]
    assert inside, f"no Python code ran during a {(t1 - t0) * 1000:.0f} ms read_many"


def test_backend_and_probe(data: DataFile) -> None:
    path, _, _ = data
    with nowait.open(path) as f:
        assert f.backend in ("uring", "aio+pool", "aio", "pool", "sync")
        st = f.stats()
        assert st["backend"] == f.backend and st["backend_reason"]
        assert st["path"] == path and st["fs"]
    p = nowait.probe()
    m = p["machine"]
    assert m["cpus"] >= 1 and m["kernel_release"]
    assert isinstance(m["io_uring"]["available"], bool)
    assert m["backend"]["kind"] in ("uring", "aio+pool", "aio", "pool", "sync")
    assert "Auto backend" in p["text"]
    pf = nowait.probe(path)
    assert nowait.probe()["file"] is None
    fp = pf["file"]
    assert fp is not None
    # The library's one shape: the C library's JSON has the same keys.
    assert fp["kind"] == "regular" and fp["size_bytes"] == os.path.getsize(path)
    assert fp["path"] == path
    assert fp["rwf_nowait"]["works"] is (fp["rwf_nowait"]["refused"] is None)
    assert fp["rwf_nowait"]["words"] in pf["text"]
    assert path in pf["text"]
    with pytest.raises(FileNotFoundError):
        nowait.probe(path + ".missing")


def test_fork_child_gets_its_own_queue(data: DataFile) -> None:
    """A child forked after the parent read (DataLoader workers) must not
    touch the parent's ring: it builds its own and reads correctly, and the
    parent keeps working."""
    path, blob, _ = data
    with nowait.open(path) as f:
        assert f.read_many([0, 4096], 100) == [blob[0:100], blob[4096:4196]]
        pid = os.fork()
        if pid == 0:  # child: report through the exit code only
            ok = False
            try:
                ok = (f.read_many([8192, 1], 50) == [blob[8192:8242], blob[1:51]]
                      and f.read_at(len(blob) - 10, 100) == blob[-10:])
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert f.read_at(3, 3) == blob[3:6]


def test_open_reads_through_the_page_cache_by_default(data: DataFile) -> None:
    """nowait.open(path) is buffered, as open() and np.memmap are, and a
    cached read is answered by the page-cache-first try."""
    path, blob, direct_ok = data
    pread(path, 0, len(blob))  # cached
    with nowait.open(path) as f:
        assert f.mode == "off" and not f.direct and f.nowait == "adaptive"
        assert f.read_at(8192, 4096) == blob[8192:12288]
        s = f.stats()
        assert s["direct"] is False and s["nowait_path_hits"] == 1, s
    if direct_ok:
        with nowait.open(path, direct="auto") as g:
            assert g.direct and g.mode == "auto"
            assert g.read_at(8192, 4096) == blob[8192:12288]


def test_batches_try_the_page_cache_first(data: DataFile) -> None:
    """On a buffered file, read_many and read_into read each cached record
    on the calling thread (preadv2 RWF_NOWAIT), the rest through the queue:
    same bytes, end of file included; nowait="off" skips the try."""
    path, blob, _ = data
    pread(path, 0, len(blob))  # cached
    n = len(blob)
    offs = [0, 4096, 100_000, n - 100, n + 10, 77]
    with nowait.open(path, nowait="always") as f:
        got = f.read_many(offs, 4096)
        assert got == [blob[o:o + 4096] for o in offs]
        buf = bytearray(6 * 4096)
        counts = f.read_into(buf, offs, 4096)
        assert counts == [len(blob[o:o + 4096]) for o in offs]
        for i, (o, c) in enumerate(zip(offs, counts)):
            assert buf[i * 4096:i * 4096 + c] == blob[o:o + c]
        s = f.stats()
        # Every record but the one past the end (0 bytes: only a plain
        # read tells end of file from a miss) came from the page cache.
        assert s["nowait_path_hits"] >= 2 * (len(offs) - 1) - 2, s
        assert s["reads"] == 2 * len(offs) and s["errors"] == 0, s
    with nowait.open(path, nowait="off") as g:
        assert g.read_many(offs, 4096) == [blob[o:o + 4096] for o in offs]
        assert g.stats()["nowait_path_hits"] == 0


def test_a_batch_with_one_uncached_record(data: DataFile) -> None:
    """A batch whose records are cached but one: the ones before it are
    read on the calling thread, it and the rest go to the queue (the rest
    still tried from the page cache there), and the uncached record is
    tried once, not again by the queue. Bytes right in both layouts."""
    path, blob, _ = data
    hole = 1 << 20
    offs = [0, 8192, 65536, hole, 4096, 2 << 20, 12288]
    for method in ("read_many", "read_into"):
        # Cached but for 512 KiB around `hole`: the file evicted, then the
        # rest read back without readahead (the page cache may hold large
        # folios, which a ranged eviction would keep whole).
        drop_cache(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            os.pread(fd, hole - (256 << 10), 0)
            os.pread(fd, len(blob), hole + (256 << 10))
        finally:
            os.close(fd)
        with nowait.open(path, nowait="always") as f:
            if method == "read_many":
                assert f.read_many(offs, 4096) == [blob[o:o + 4096] for o in offs]
            else:
                buf = bytearray(len(offs) * 4096)
                assert f.read_into(buf, offs, 4096) == [4096] * len(offs)
                assert bytes(buf) == b"".join(blob[o:o + 4096] for o in offs)
            s = f.stats()
            assert s["reads"] == len(offs) and s["calls"] == 1, s
            assert s["nowait_path_hits"] == len(offs) - 1, s
            assert s["nowait_path_misses"] + s["nowait_path_partial"] == 1, s


def _resident_share(path: str) -> float:
    """Share of ``path`` in the page cache (mincore over a mapping)."""
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    size = os.path.getsize(path)
    pages = (size + 4095) // 4096
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) as m:
        view = (ctypes.c_char * size).from_buffer(m)
        vec = (ctypes.c_ubyte * pages)()
        r = libc.mincore(ctypes.c_void_p(ctypes.addressof(view)), ctypes.c_size_t(size), vec)
        err = ctypes.get_errno()
        del view  # the mapping can close only once no ctypes object exports it
        assert r == 0, os.strerror(err)
        return sum(v & 1 for v in vec) / pages


@pytest.mark.parametrize("cache", ["keep", "drop", "adaptive"])
def test_cache_policy_reads_match_and_drop_leaves_the_file_uncached(
        data: DataFile, cache: Literal["keep", "drop", "adaptive"]) -> None:
    path, blob, _ = data
    drop_cache(path)
    with nowait.open(path, direct="off", cache=cache) as f:
        for off in range(0, len(blob), 65536):
            assert f.read_at(off, 65536) == blob[off:off + 65536]
        st = f.stats()
    assert st["cache"] == cache
    share = _resident_share(path)
    if cache == "keep" or st["fs"] == "tmpfs":
        # tmpfs has no uncached reads: its reads stay cached, and say why.
        assert share > 0.9, share
        if st["fs"] == "tmpfs" and cache == "drop":
            assert (st["dontcache"] or "").startswith("off"), st["dontcache"]
    elif cache == "drop":
        assert st["dontcache"] == "accepted", st
        assert share < 0.25, share
    else:
        # adaptive: a 3 MiB file is far from half of any memory limit here.
        assert share > 0.9 and not st["cache_scanning"], (share, st)


def test_cache_policy_is_checked(data: DataFile) -> None:
    path, _, _ = data
    with pytest.raises(ValueError, match='cache="sometimes" is not a policy'):
        nowait.open(path, cache="sometimes")  # type: ignore[arg-type]
