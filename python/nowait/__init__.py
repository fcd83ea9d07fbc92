"""nowait: fast file reads on Linux for data loaders and asyncio services.

Open a file with :func:`open`, then read records one at a time
(:meth:`File.read_at`), in batches submitted at once (:meth:`File.read_many`),
or straight into a NumPy array, ``bytearray`` or any writable buffer
(:meth:`File.read_into`). The same calls exist for asyncio and trio
(:meth:`File.aread_at`, :meth:`File.aread_many`, :meth:`File.aread_into`):
completions reach the event loop through an eventfd the loop watches, with
no thread per read.

Underneath is the nowait Rust engine: io_uring where the kernel allows it,
otherwise native AIO and a thread pool with the ``RWF_NOWAIT`` nowait path,
otherwise plain ``pread``. A result shorter than asked means end of file and
nothing else; every failure is an exception that says what was asked and
what to do (``OSError`` subclasses with ``errno`` and ``filename``,
``ValueError`` for a request the file cannot take).

Example::

    import nowait, numpy as np

    with nowait.open("shard.bin") as f:
        first = f.read_at(0, 4096)
        batch = np.empty((32, 4096), dtype=np.uint8)
        counts = f.read_into(batch, [i * 4096 for i in range(32)], 4096)
"""

from __future__ import annotations

import sys

if not sys.platform.startswith("linux"):
    raise ImportError(
        "nowait supports Linux only: it reads files with io_uring, RWF_NOWAIT and "
        f"O_DIRECT, which this platform ({sys.platform}) does not have; "
        "use os.pread or a thread pool here"
    )

import asyncio
import functools
import os
import weakref
from asyncio import _get_running_loop
from threading import get_ident as _get_ident
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _nowait
from ._nowait import IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT, __version__, ioprio
from ._typing import FileStats, Probe

__all__ = ["File", "FileStats", "IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE", "IOPRIO_CLASS_RT", "Probe",
           "aread_files", "ioprio", "open", "probe", "read_files", "__version__"]

_Size = Union[int, Sequence[int]]


class _LoopRing:
    """The queue of one event loop: reads started by tasks of that loop go
    out on it; its completion eventfd is registered with ``loop.add_reader``
    so the loop learns of completions without a thread.

    When reads reach the kernel: while the engine paces (reads wait on a
    device, at most two per system call) the call that starts a read
    submits it as soon as two are queued, so the device is fed while the
    other tasks woken by the same completions still run; while it batches
    (page-cache hits complete inside the submit) the reads of every task
    that ran in a loop iteration go out in one submit at its end, scheduled
    by the completion callback right behind the tasks it wakes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, submit: str = "adaptive") -> None:
        self._ring = _nowait._Ring(submit=submit)
        self._pid = os.getpid()
        self._futures: Dict[int, asyncio.Future] = {}
        self._fd = self._ring.fileno()
        self._submit_scheduled = False
        # Weak: the ring is the value of a WeakKeyDictionary keyed by the loop.
        self._loop = weakref.ref(loop)
        loop.add_reader(self._fd, self._on_readable)

    def _fail_all(self, exc: BaseException) -> None:
        """The engine failed: fail every waiter rather than leave it hanging."""
        waiting = list(self._futures.values())
        self._futures.clear()
        for fut in waiting:
            if not fut.done():
                fut.set_exception(exc)

    def _submit(self) -> None:
        self._submit_scheduled = False
        try:
            self._ring.submit()
        except BaseException as exc:
            self._fail_all(exc)

    def _on_readable(self) -> None:
        try:
            finished = self._ring.poll()
        except BaseException as exc:
            self._fail_all(exc)
            return
        futures = self._futures
        woke = False
        for op, ok, value in finished:
            fut = futures.pop(op, None)
            # A cancelled waiter left its read to finish here: its buffer was
            # held by the engine until now and is released with this result.
            if fut is None or fut.done():
                continue
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)
            woke = True
        if woke and not self._submit_scheduled:
            # The waiters' tasks run in the next iteration, most of them
            # starting their next read; a submit scheduled now runs right
            # after them, in that same iteration, instead of one later.
            loop = self._loop()
            if loop is not None:
                self._submit_scheduled = True
                loop.call_soon(self._submit)

    def start(self, loop: asyncio.AbstractEventLoop, file: "File", kind: str,
              offsets: Any, size: Any, buffer: Any = None,
              ioprio: int = 0) -> "asyncio.Future[Any]":
        """Start a call; returns the future its result is set on."""
        op, queued = self._ring.start(file, kind, offsets, size, buffer, ioprio)
        fut = loop.create_future()
        self._futures[op] = fut
        if queued and not self._submit_scheduled:
            # Reads left queued (the engine submits at once only while it
            # paces, see Queue::submit_chunk): one submit per loop iteration
            # for the reads of every task that ran in it.
            self._submit_scheduled = True
            loop.call_soon(self._submit)
        return fut


_rings: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopRing]" = (
    weakref.WeakKeyDictionary()
)


# The ring of the loop used last: skips the dictionary (and the fork check)
# on the hot path. Forgotten in a forked child, whose rings are the parent's.
# That relies on CPython's at-fork hooks: a process forked by a raw fork(2)
# from C (no PyOS_AfterFork_Child) and then running asyncio would reuse the
# parent's ring; os.fork, multiprocessing and subprocess all run the hooks.
_last: "tuple[Any, Optional[_LoopRing]]" = (lambda: None, None)


def _forget_last() -> None:
    global _last
    _last = (lambda: None, None)


def _loop_gone(ring_id: int) -> None:
    """A loop was collected: its ring goes too (it is held only by the
    rings dictionary, whose weak key just died, and by ``_last``). Dropping
    it closes its queue and hands the results' freed memory back to the
    system (the ring's ``TrimOnDrop``)."""
    if _last[1] is not None and id(_last[1]) == ring_id:
        _forget_last()


os.register_at_fork(after_in_child=_forget_last)


def _no_loop(what: str) -> RuntimeError:
    """The error for an asynchronous call made outside an event loop."""
    return RuntimeError(f"no running event loop: await File.{what} inside asyncio (asyncio.run, "
                        "uvloop, anyio) or trio")


def _trio_ring(what: str) -> Any:
    """The ring of the running trio run, or the error for a call made
    outside any event loop. trio is imported only if the caller has."""
    if "trio" in sys.modules:
        from . import _trio
        ring = _trio.current_ring()
        if ring is not None:
            return ring
    raise _no_loop(what)


def _call(file: "File", what: str, kind: str, offsets: Any, size: Any,
          buffer: Any = None, ioprio: int = 0) -> Any:
    """Start a call on the running loop's ring, its reads at I/O priority
    ``ioprio``; returns what to await for its result (an asyncio future, or
    under trio the coroutine that waits for it)."""
    ref, ring = _last
    loop = ref()
    if ring is None or getattr(loop, "_thread_id", None) != _get_ident():
        loop = _get_running_loop()
        if loop is None:
            return _trio_ring(what).call(file, kind, offsets, size, buffer, ioprio)
        ring = _ring_for(loop)
    return ring.start(loop, file, kind, offsets, size, buffer, ioprio)


def _forget_closed_loops() -> None:
    """Drop the rings of event loops that were closed.

    A read still in flight when its loop closed (a task cancelled by a
    timeout just before ``asyncio.run`` returned) keeps a future, and the
    future keeps the loop: the weak key would never die, and each such loop
    would keep its ring's file descriptors and the buffers it reads into.
    Nothing can be delivered to a closed loop, so its waiters are dropped;
    reads their calls queued and the loop never submitted are dropped
    unread (nothing writes their buffers), and dropping the ring waits for
    the kernel to finish with the buffers of the others (reads of cached
    data are done already; others take a device's time) and then releases
    them."""
    # A copy of the underlying dict taken in one step: another thread's loop
    # may add its ring meanwhile (iterating the WeakKeyDictionary itself
    # would then fail with "dictionary changed size during iteration").
    for ref in list(_rings.data):
        loop = ref()
        if loop is None or not loop.is_closed():
            continue
        ring = _rings.pop(loop, None)
        if ring is None:
            continue
        ring._futures.clear()
        if _last[1] is ring:
            _forget_last()
        # Wait for the kernel with the GIL released (a read of a slow
        # device must not stop the other threads), then drop the ring.
        ring._ring.settle()


def _ring_for(loop: asyncio.AbstractEventLoop) -> _LoopRing:
    global _last
    ref, ring = _last
    if ring is not None and ref() is loop:
        return ring
    ring = _rings.get(loop)
    if ring is None or ring._pid != os.getpid():
        # None yet, or inherited through fork: the parent's ring is not ours.
        # A new loop: the good time to let go of the rings of closed ones
        # (asyncio.run makes a loop per call).
        _forget_closed_loops()
        ring = _LoopRing(loop)
        _rings[loop] = ring
        weakref.finalize(loop, _loop_gone, id(ring))
    _last = (weakref.ref(loop), ring)
    return ring


class File(_nowait.File):
    """A file open for reading with nowait (see :func:`open`).

    Blocking methods release the GIL while the engine waits, so several
    Python threads can read the same ``File`` at once. The asynchronous
    methods run on the calling task's event loop: asyncio's (uvloop's), or
    the trio run's. A ``File`` is a context manager; :meth:`close` is
    idempotent.
    """

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> "File":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"direct={self.mode!r}"
        return f"<nowait.File {self.name!r} {state}>"

    def _options(self) -> Dict[str, Any]:
        """The options :func:`open` was called with (what a copy and a
        pickle reopen the file with)."""
        return {"direct": self.mode, "nowait": self.nowait, "cache": self.cache}

    def __reduce__(self) -> "tuple[Any, ...]":
        """Pickle as "open this path with these options": the receiving
        process (a ``spawn`` or ``forkserver`` worker, ``Pool.map``, a
        PyTorch DataLoader worker) opens the file again, by path. Counters
        (``stats()``) start from zero there."""
        fd = self._from_fd
        if fd is not None:
            raise TypeError(
                f"cannot pickle {self!r}: it was opened from file descriptor {fd}, which does "
                "not travel to another process; open the file by path "
                "(nowait.open(path, ...)) to pickle it")
        if self.closed:
            raise ValueError(f"cannot pickle {self!r}: the file is closed")
        return (_reopen, (self.name, self._options()))

    def __copy__(self) -> "File":
        """Another ``File`` of the same file with the same options, with its
        own descriptor (opened again by path; one opened from a descriptor
        is opened again from this file's descriptor)."""
        if self.closed:
            raise ValueError(f"cannot copy {self!r}: the file is closed")
        if self._from_fd is not None:
            return File(self.fileno(), closefd=False, **self._options())
        return _reopen(self.name, self._options())

    def __deepcopy__(self, memo: Dict[int, Any]) -> "File":
        return self.__copy__()

    async def aread_at(self, offset: int, size: int, *, ioprio: int = 0) -> bytes:
        """Read up to ``size`` bytes at ``offset`` on the running loop.

        Returns fewer bytes only at end of file. Cancelling the awaiting
        task is safe: the read finishes in the background.

        On a buffered file (see :func:`open`'s ``nowait``) the read is first
        tried from the page cache alone, ``preadv2(RWF_NOWAIT)`` on the
        loop's thread: when every byte is cached the bytes come back at
        once, with no future, no ring and no trip through the loop. A task
        reading only cached data thus runs on without suspending, up to 128
        hits in a row on a thread; the next read then goes through the ring
        so the loop runs the other tasks (under trio too: such a hit is no
        checkpoint).

        ``ioprio`` (every ``a*`` method takes it, as the blocking ones do):
        the I/O priority of the reads that go to the kernel, made by
        :func:`ioprio` (0, the default: the thread's); a page-cache hit
        needs none. A priority the kernel refuses raises ``OSError``
        (EINVAL for an unknown class, EPERM for the real-time class without
        CAP_SYS_ADMIN).
        """
        # Page cache first: bytes, or None for the ring (a miss, a partly
        # cached range, end of file, O_DIRECT, the mode or the file's hit
        # ratio says no, a bad argument: start() raises).
        # Only inside a running loop, hit or miss alike: code that works on
        # a warm cache must not fail on a cold one.
        if _get_running_loop() is None:
            ring = _trio_ring("aread_at")
            data = self._read_cached(offset, size)
            if data is not None:
                return data
            return await ring.call(self, "one", offset, size, None, ioprio)
        data = self._read_cached(offset, size)
        if data is not None:
            return data
        # _call and _LoopRing.start inlined: this is the call a service
        # makes per record (two Python calls less per read).
        ref, ring = _last
        loop = ref()
        if ring is None or getattr(loop, "_thread_id", None) != _get_ident():
            loop = _get_running_loop()
            ring = _ring_for(loop)
        op, queued = ring._ring.start(self, "one", offset, size, None, ioprio)
        fut = loop.create_future()
        ring._futures[op] = fut
        if queued and not ring._submit_scheduled:
            ring._submit_scheduled = True
            loop.call_soon(ring._submit)
        return await fut

    async def aread_many(self, offsets: Any, size: Any, *, ioprio: int = 0) -> List[bytes]:
        """Read one record per offset (all submitted at once) on the running
        loop; ``offsets`` is any iterable of ints or an integer NumPy array,
        ``size`` one int for every record or one per offset."""
        return await _call(self, "aread_many", "many", offsets, size, None, ioprio)

    async def aread_into(self, buffer: Any, offsets: Any, size: Any, *,
                         ioprio: int = 0) -> List[int]:
        """Fill ``buffer`` with the records read at ``offsets``, back to
        back, on the running loop (``size``: one int, or one per offset for
        variable-length records packed); returns the bytes read per record.

        The buffer stays exported (a ``bytearray`` cannot be resized) until
        every read is done, even if the awaiting task is cancelled.
        """
        return await _call(self, "aread_into", "into", offsets, size, buffer, ioprio)

    async def areadinto(self, buffer: Any, offset: int, *, ioprio: int = 0) -> int:
        """Read ``len(buffer)`` bytes (its size in bytes) at ``offset`` into
        ``buffer`` on the running loop; returns the bytes read (fewer only
        at end of file)."""
        return await _call(self, "areadinto", "intoone", offset, 0, buffer, ioprio)

    async def aread(self, *, ioprio: int = 0) -> bytes:
        """The whole file, as it is when the call starts, on the running
        loop (in 2 MiB parts, many at once, into the one ``bytes``)."""
        return await _call(self, "aread", "whole", 0, 0, None, ioprio)


def _reopen(path: Any, options: Dict[str, Any]) -> File:
    """Unpickle a :class:`File`: open its path again with its options."""
    return open(path, **options)


def open(path: Union[int, str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
         direct: Union[str, bool] = "off", nowait: str = "adaptive",
         closefd: bool = True, cache: str = "keep") -> File:
    """Open ``path`` for reading.

    ``path`` is a path or an open file descriptor (an ``int``). A
    descriptor's file is opened again through ``/proc/self/fd`` with the
    flags asked here (the caller's descriptor, its offset and flags are left
    as they are); with ``closefd`` (the default, as for :func:`io.open`)
    :meth:`File.close` closes the caller's descriptor too. A file opened by
    path can be pickled and copied (it is opened again by path with the same
    options); one opened from a descriptor can be copied, not pickled.

    ``direct``: ``"off"`` (default) reads through the page cache, as
    ``open()``, ``np.memmap`` and aiofiles do, with the page-cache-first
    try below. ``"auto"`` opens with ``O_DIRECT`` where the filesystem
    allows it and bounces unaligned reads through an aligned buffer;
    ``"on"`` requires ``O_DIRECT`` and refuses unaligned reads with a
    ``ValueError`` naming the offset, size and alignment.

    Choose ``O_DIRECT`` when the data is read once and is much larger than
    memory (a scan that would otherwise evict what other readers keep
    cached; ``cache="drop"`` below does that through the page cache), when the application caches records itself (the page cache
    would hold a second copy), or to measure the device. Keep the default
    when data is read again (epochs over a data set that fits in memory: a
    cached pass is several times faster than one from the device) or shared
    with other processes.

    ``nowait``: whether :meth:`File.aread_at` and :meth:`File.read_at` first
    try a buffered read from the page cache alone (``preadv2`` with
    ``RWF_NOWAIT``, on the calling thread, the GIL held for the copy) and
    return it at once when every byte is cached.
    ``"adaptive"`` (default) tries while the file's hit ratio stays at or
    above 1/8 and re-probes every 32 skipped reads; ``"always"`` tries every
    read; ``"off"`` sends every read through the loop's ring (or the
    queue, for ``read_at``). Files opened with ``O_DIRECT`` never try.
    ``File.stats()`` counts the outcomes (``nowait_path_*``).

    ``cache``: what buffered reads of the file leave in the page cache.
    ``"keep"`` (default) keeps what they bring in; ``"drop"`` reads with
    ``RWF_DONTCACHE`` (Linux 6.14; fio's ``uncached=1``): the pages a read
    brings in are dropped once copied, pages cached before stay, so reading
    a large file once does not evict what other files depend on;
    ``"adaptive"`` drops only while the file is read as a scan (sequential
    runs, or reads of 1 MiB or more) and is at least half the memory the
    page cache can have (the memory cgroup's limit) and mostly not cached.
    Where the filesystem has no uncached reads (tmpfs, FUSE) reads stay
    cached. ``O_DIRECT`` reads ignore it. ``File.stats()`` says what the
    file took (``cache``, ``dontcache``, ``cache_scanning``).

    Raises ``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``
    (all ``OSError`` with ``errno`` and ``filename``) when the file cannot be
    opened.
    """
    return File(path, direct, nowait, closefd, cache)


def probe(path: Optional[Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]] = None
          ) -> Dict[str, Any]:
    """What this machine (and ``path``, if given) can do: io_uring and its
    setup flags, AIO, the backend reads take and why, and for a file its
    filesystem, size, O_DIRECT alignment, ``RWF_NOWAIT`` support and the path
    a buffered and a direct read take. ``result["text"]`` is what the
    ``nowait probe`` command prints."""
    return _nowait.probe(path)


def read_files(paths: Iterable[Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]], *,
               on_error: str = "return", max_file_size: Optional[int] = None,
               budget_bytes: Optional[int] = None) -> List[Union[bytes, OSError]]:
    """The bytes of each file, in the order of ``paths``, read whole.

    Cached files are opened and read without a thread (io_uring's inline
    open, or ``openat2(RESOLVE_CACHED)`` and ``preadv2(RWF_NOWAIT)``); only
    what would wait goes to one. A path that fails (missing, a directory,
    no permission, longer than ``max_file_size``) is its ``OSError`` in the
    list (``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``,
    errno EFBIG), the others are read all the same; ``on_error="raise"``
    raises the first failure instead. ``budget_bytes`` bounds what the
    buffers of files being read hold at once (default 64 MiB; the default
    ``max_file_size`` is 16 MiB). The GIL is released while files are read.
    """
    return _nowait.read_files(paths, on_error=on_error, max_file_size=max_file_size,
                              budget_bytes=budget_bytes)


async def aread_files(paths: Iterable[Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]], *,
                      on_error: str = "return", max_file_size: Optional[int] = None,
                      budget_bytes: Optional[int] = None) -> List[Union[bytes, OSError]]:
    """:func:`read_files` on the running asyncio loop: the batch runs on the
    loop's default executor (one thread for the whole batch, not one per
    file), so the loop keeps running. Cancelling the task stops waiting;
    the batch itself finishes in the background."""
    listed = list(paths)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(
        _nowait.read_files, listed, on_error=on_error, max_file_size=max_file_size,
        budget_bytes=budget_bytes))
