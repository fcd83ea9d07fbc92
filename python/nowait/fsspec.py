"""``nowait://``: a read-only local filesystem for fsspec whose reads go
through the nowait engine.

pandas, PyArrow, Dask, Ray Data and Hugging Face ``datasets`` read through
fsspec, so ``pd.read_parquet("nowait:///data/part-0.parquet")`` (or any
``nowait://`` URL, or ``NowaitFileSystem()`` passed as ``filesystem=``)
reads with nowait inside them:

- :meth:`NowaitFileSystem.cat_file` is one read (``File.read_at``, or
  ``File.read`` for a whole file);
- :meth:`NowaitFileSystem.cat_ranges` puts every range of a call in flight
  at once (one ``read_many`` per file, the files' batches concurrently),
  after merging ranges of a file that lie within ``max_gap`` bytes of each
  other into one read;
- :meth:`NowaitFileSystem.open` returns a file object that takes every
  argument fsspec passes (``cache_type``, ``cache_options``,
  ``block_size``, ``autocommit``...) and, once reads look sequential,
  keeps the next window of the file in flight in the background while the
  caller consumes the current one;
- :meth:`NowaitFileSystem.get_file` (and so ``get``, ``simplecache::``,
  ``filecache::``) copies out to local paths through those files.

Everything else (``ls``, ``info``, ``find``, ``glob``…) is fsspec's
``LocalFileSystem``; what would write (``pipe``, ``put``, ``rm``, ``mv``,
``mkdir``, opening for writing…) raises ``OSError(EROFS)``. The answers
are ``LocalFileSystem``'s, with the differences python/README.md lists.

The protocol is registered through the ``fsspec.specs`` entry point (no
import needed); importing this module registers it as well.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

try:
    import fsspec
    from fsspec.caching import KnownPartsOfAFile, caches
    from fsspec.implementations.local import LocalFileSystem
    from fsspec.spec import AbstractBufferedFile
    from fsspec.utils import isfilelike
except ModuleNotFoundError as _missing:  # pragma: no cover - exercised in a subprocess
    if (_missing.name or "").split(".")[0] != "fsspec":
        raise
    raise ModuleNotFoundError(
        "nowait.fsspec (the nowait:// filesystem) needs fsspec, which is not installed: "
        "pip install 'nowait[fsspec]' (or pip install fsspec)", name="fsspec") from _missing

import nowait

__all__ = ["NowaitFileSystem", "NowaitFile"]

#: Ranges of a file closer than this are read as one (``cat_ranges``).
DEFAULT_MAX_GAP = 64 << 10
#: A merged read is not grown past this by merging (``cat_ranges``).
DEFAULT_MAX_BLOCK = 16 << 20
#: How much of a file :class:`NowaitFile` keeps in flight ahead of a
#: sequential reader.
DEFAULT_READAHEAD = 4 << 20


def _read_only(what: str) -> OSError:
    return OSError(errno.EROFS, f"nowait:// is read-only: {what} is not supported; "
                                "write through fsspec's local filesystem (file://)")


def _span(start: Optional[int], end: Optional[int], size: int, path: str) -> Tuple[int, int]:
    """fsspec's byte limits (None: the file's start or end; negative: from
    the end, as in a slice) as an absolute [start, end) within the file.

    As ``LocalFileSystem.cat_file``: a negative start past the file's start
    is its start, an end past its end is its end, a start past its end gives
    no bytes; an end before the start is a ``ValueError``."""
    s = 0 if start is None else (max(0, size + start) if start < 0 else start)
    if end is None:
        return s, max(s, size)
    e = size + end if end < 0 else end
    if e < s:
        raise ValueError(
            f"nowait:// cat of {path!r} (start={start}, end={end}, a file of {size} bytes) "
            f"asks for a negative length: the range ends at byte {e}, before its start at "
            f"byte {s}; pass an end at or after the start (None reads to the end)")
    return s, max(s, min(e, size))


class NowaitFileSystem(LocalFileSystem):  # type: ignore[misc]
    """Local files read through nowait (see the module docs).

    ``direct`` and ``nowait`` are :func:`nowait.open`'s; ``max_gap`` and
    ``max_block`` tune how :meth:`cat_ranges` merges ranges; ``readahead``
    is how far :meth:`open`'s file objects read ahead.
    """

    protocol = ("nowait",)
    root_marker = "/"

    def __init__(self, direct: Any = "off", nowait: Any = "adaptive",
                 max_gap: int = DEFAULT_MAX_GAP, max_block: int = DEFAULT_MAX_BLOCK,
                 readahead: int = DEFAULT_READAHEAD, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.open_options: Dict[str, Any] = {"direct": direct, "nowait": nowait}
        self.max_gap = max_gap
        self.max_block = max_block
        self.readahead = readahead

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        path = fsspec.utils.stringify_path(path)
        if isinstance(path, str):
            for prefix in ("nowait://", "nowait::", "nowait:"):
                if path.startswith(prefix):
                    path = path[len(prefix):]
                    break
        return str(LocalFileSystem._strip_protocol(path))

    def unstrip_protocol(self, name: str) -> str:
        return "nowait://" + self._strip_protocol(name)

    def _nowait_open(self, path: str) -> nowait.File:
        return nowait.open(self._strip_protocol(path), **self.open_options)

    # --- reads through the engine ---

    def cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None,
                 **kwargs: Any) -> bytes:
        """The bytes of ``path`` from ``start`` to ``end`` (None: the file's
        start or end; negative: from the end), in one read. An end before
        the start raises ``ValueError``, as ``LocalFileSystem`` does."""
        with self._nowait_open(path) as f:
            if start is None and end is None:
                return f.read()
            s, e = _span(start, end, f.size, path)
            return f.read_at(s, e - s) if e > s else b""

    def cat(self, path: Any, recursive: bool = False, on_error: str = "raise",
            **kwargs: Any) -> Any:
        """As fsspec's ``cat``: the bytes of one file, or a dict of path to
        bytes for several (a list, a glob, a folder with ``recursive``).
        Several whole files are read in one :func:`nowait.read_files` batch;
        ``on_error`` is fsspec's ("raise", "omit", "return")."""
        paths = self.expand_path(path, recursive=recursive)
        if kwargs or not (len(paths) > 1 or isinstance(path, list)
                          or paths[0] != self._strip_protocol(path)):
            return super().cat(path, recursive=recursive, on_error=on_error, **kwargs)
        got = nowait.read_files(paths)
        out: Dict[str, Any] = {}
        for p, b in zip(paths, got):
            if isinstance(b, BaseException):
                if on_error == "raise":
                    raise b
                if on_error == "return":
                    out[p] = b
            else:
                out[p] = b
        return out

    def cat_ranges(self, paths: List[str], starts: Union[int, None, Sequence[Optional[int]]],
                   ends: Union[int, None, Sequence[Optional[int]]],
                   max_gap: Optional[int] = None, on_error: str = "return",
                   **kwargs: Any) -> List[Union[bytes, Exception]]:
        """The bytes of each (path, start, end) range, in order. Every range
        of the call is in flight at once: ranges of one file closer than
        ``max_gap`` (default: the filesystem's, 64 KiB) are merged into one
        read, and each file's reads go to the kernel in one batch
        (``read_many``), the files' batches concurrently. With
        ``on_error="return"`` a range that fails (a missing file, an end
        before its start) is its exception in the list; otherwise the first
        failure is raised."""
        if not isinstance(paths, list):
            raise TypeError("paths must be a list of paths, one per range")
        n = len(paths)
        starts_l: List[Optional[int]] = (
            list(starts) if isinstance(starts, (list, tuple)) else [starts] * n)  # type: ignore[list-item]
        ends_l: List[Optional[int]] = (
            list(ends) if isinstance(ends, (list, tuple)) else [ends] * n)  # type: ignore[list-item]
        if len(starts_l) != n or len(ends_l) != n:
            raise ValueError(f"{n} paths, {len(starts_l)} starts and {len(ends_l)} ends; "
                             "pass one start and one end per path (or one int for all)")
        if n == 0:
            return []
        gap = self.max_gap if max_gap is None else max_gap
        by_path: Dict[str, List[int]] = {}
        for i, p in enumerate(paths):
            by_path.setdefault(self._strip_protocol(p), []).append(i)
        out: List[Union[bytes, Exception, None]] = [None] * n

        def one_file(path: str, idx: List[int]) -> None:
            try:
                f = self._nowait_open(path)
            except Exception as exc:  # every range of the file fails alike
                for i in idx:
                    out[i] = exc
                return
            with f:
                size = f.size
                wanted: List[int] = []
                spans: List[Tuple[int, int]] = []
                for i in idx:
                    try:
                        spans.append(_span(starts_l[i], ends_l[i], size, path))
                        wanted.append(i)
                    except ValueError as exc:
                        out[i] = exc
                blocks = _merge(spans, gap, self.max_block)
                try:
                    data = f.read_many([b[0] for b in blocks], [b[1] - b[0] for b in blocks])
                except Exception as exc:
                    for i in wanted:
                        out[i] = exc
                    return
                for i, (s, e), b in zip(wanted, spans, _owner(spans, blocks)):
                    bs, _ = blocks[b]
                    chunk = data[b]
                    out[i] = chunk if (s, e) == (bs, bs + len(chunk)) else chunk[s - bs:e - bs]

        items = list(by_path.items())
        if len(items) == 1:
            one_file(*items[0])
        else:
            with ThreadPoolExecutor(min(len(items), 16)) as pool:
                for fut in [pool.submit(one_file, p, idx) for p, idx in items]:
                    fut.result()
        result: List[Union[bytes, Exception]] = []
        for r in out:
            assert r is not None
            if isinstance(r, Exception) and on_error != "return":
                raise r
            result.append(r)
        return result

    def _open(self, path: str, mode: str = "rb", block_size: Optional[int] = None,
              autocommit: bool = True, cache_options: Optional[Dict[str, Any]] = None,
              **kwargs: Any) -> "NowaitFile":
        """A file open for reading: every argument ``fsspec``'s ``open``
        passes (``block_size``, ``cache_type``, ``cache_options``,
        ``autocommit``, ``size``...) is taken; see :class:`NowaitFile`."""
        if sorted(mode) != ["b", "r"]:
            raise _read_only(f"opening {path!r} with mode {mode!r} (only 'rb' reads)")
        return NowaitFile(self, self._strip_protocol(path), mode="rb", block_size=block_size,
                          autocommit=autocommit, cache_options=cache_options,
                          readahead=self.readahead, **kwargs)

    def lexists(self, path: str, **kwargs: Any) -> bool:
        return os.path.lexists(self._strip_protocol(path))

    # --- copying out to local files (reads through the engine) ---

    def get_file(self, path1: str, path2: Any, callback: Any = None, **kwargs: Any) -> None:
        """Copy ``path1`` to the local path (or writable file object)
        ``path2``, as ``LocalFileSystem.get_file``: a directory is created
        as a directory, a missing source is ``FileNotFoundError``. The
        source is read through nowait, the next window in flight while the
        last one is written."""
        src = self._strip_protocol(path1)
        if isfilelike(path2):
            self._copy_out(src, path2, callback)
            return
        dst = LocalFileSystem._strip_protocol(path2)
        if self.auto_mkdir:
            os.makedirs(self._parent(dst), exist_ok=True)
        if os.path.isfile(src):
            if os.path.exists(dst) and os.path.samefile(src, dst):
                raise shutil.SameFileError(f"{src!r} and {dst!r} are the same file")
            with open(dst, "wb") as out:
                self._copy_out(src, out, callback)
        elif os.path.isdir(src):
            os.makedirs(dst, exist_ok=True)
        else:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)

    def _copy_out(self, src: str, out: Any, callback: Any) -> None:
        with self.open(src, "rb") as f:
            if callback is not None:
                callback.set_size(f.size)
            while True:
                chunk = f.read(self.readahead)
                if not chunk:
                    break
                out.write(chunk)
                if callback is not None:
                    callback.relative_update(len(chunk))

    # --- what would write ---

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        raise _read_only("pipe_file")

    def put_file(self, lpath: str, rpath: str, callback: Any = None, **kwargs: Any) -> None:
        raise _read_only("put_file")

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        raise _read_only("cp_file (copy within nowait://; get/get_file copy out to local paths)")

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: Any = None,
           **kwargs: Any) -> None:
        raise _read_only("mv")

    def rm_file(self, path: str) -> None:
        raise _read_only("rm_file")

    def rm(self, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        raise _read_only("rm")

    def rmdir(self, path: str) -> None:
        raise _read_only("rmdir")

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        raise _read_only("mkdir")

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        # fsspec.open(url, "wb") makes the parent first: with exist_ok an
        # existing directory changes nothing, so the open itself says why
        # it cannot write.
        if exist_ok and os.path.isdir(self._strip_protocol(path)):
            return
        raise _read_only(f"makedirs ({path!r})")

    def touch(self, path: str, truncate: bool = True, **kwargs: Any) -> None:
        raise _read_only("touch")

    def link(self, src: str, dst: str, **kwargs: Any) -> None:
        raise _read_only("link")

    def symlink(self, src: str, dst: str, **kwargs: Any) -> None:
        raise _read_only("symlink")

    def chmod(self, path: str, mode: int) -> None:
        raise _read_only("chmod")


def _merge(spans: List[Tuple[int, int]], gap: int, max_block: int) -> List[Tuple[int, int]]:
    """The reads that cover `spans`: sorted, merged where the gap between
    two is at most `gap` and the merged read stays within `max_block`
    (a longer span is one read of its own)."""
    merged: List[Tuple[int, int]] = []
    for s, e in sorted(set(spans)):
        if merged:
            ms, me = merged[-1]
            if s - me <= gap and max(e, me) - ms <= max_block:
                merged[-1] = (ms, max(me, e))
                continue
        merged.append((s, e))
    return merged


def _owner(spans: List[Tuple[int, int]], blocks: List[Tuple[int, int]]) -> List[int]:
    """For each span, the index of the merged read that covers it."""
    import bisect
    starts = [b[0] for b in blocks]
    owners = []
    for s, e in spans:
        b = bisect.bisect_right(starts, s) - 1
        while not (blocks[b][0] <= s and e <= blocks[b][1]):
            b -= 1  # an earlier, longer read covers it
        owners.append(b)
    return owners


class _KnownParts(KnownPartsOfAFile):  # type: ignore[misc]
    """fsspec's ``"parts"`` cache (the byte ranges a caller fetched before,
    e.g. ``fsspec.parquet.open_parquet_file``'s) over a local file: a read
    within a known part is served from it, any other read from the file,
    so a read outside the parts gets the file's bytes (neither fsspec's
    ``ValueError`` nor zero padding), as a local file gives them."""

    def __init__(self, blocksize: int, fetcher: Any, size: int, **options: Any) -> None:
        super().__init__(blocksize, fetcher, size, **options)
        self._file_size = size

    def _fetch(self, start: Optional[int], stop: Optional[int]) -> bytes:
        start = 0 if start is None else start
        stop = self._file_size if stop is None else min(stop, self._file_size)
        if start >= stop:
            return b""
        self.total_requested_bytes += stop - start
        for (lo, hi), part in self.data.items():
            if lo <= start and stop <= hi:
                self.hit_count += 1
                return bytes(part[start - lo:stop - lo])
        self.miss_count += 1
        return bytes(self.fetcher(start, stop))


class NowaitFile(AbstractBufferedFile):  # type: ignore[misc]
    """A ``nowait://`` file open for reading, as ``NowaitFileSystem.open``
    returns it: seek, tell, read, readinto, readline, iteration, ``name``,
    ``fileno()``, context manager and pickling (reopened by path at the
    same position, as fsspec's files are), as a local file opened by
    ``LocalFileSystem``.

    Reads reach the file through ``_fetch_range``, below fsspec's cache of
    the ``cache_type`` asked for (``"none"`` by default: nowait's own
    window serves them). A read that starts where the previous one ended,
    or at the file's start, reads a window (``readahead`` bytes, 4 MiB by
    default, or ``block_size`` if larger) and the next window in the
    background meanwhile, so a sequential reader finds it done; a read
    elsewhere reads just the bytes asked and drops the windows ahead. At
    most two windows are held."""

    def __init__(self, fs: NowaitFileSystem, path: str, mode: str = "rb",
                 block_size: Optional[int] = None, autocommit: bool = True,
                 cache_type: str = "none", cache_options: Optional[Dict[str, Any]] = None,
                 size: Optional[int] = None, readahead: int = DEFAULT_READAHEAD,
                 **kwargs: Any) -> None:
        # `size` (a size fsspec learnt before, e.g. when unpickling) is
        # not trusted: the file's size now is, as a local file's.
        if cache_type not in caches:
            raise ValueError(f"cache_type={cache_type!r} is not one of fsspec's caches "
                             f"({', '.join(sorted(str(c) for c in caches if c))})")
        self._nw = fs._nowait_open(path)
        self._window = max(readahead, block_size or 0, 1)
        self._buf = b""
        self._buf_start = 0
        self._ahead: Optional["Future[bytes]"] = None
        self._ahead_start = -1
        self._pool: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()
        try:
            super().__init__(fs, path, mode=mode, block_size=block_size or self._window,
                             autocommit=autocommit,
                             cache_type="none" if cache_type == "parts" else cache_type,
                             cache_options=None if cache_type == "parts" else cache_options,
                             size=self._nw.size, **kwargs)
            if cache_type == "parts":
                self.cache = _KnownParts(self.blocksize, self._fetch_range, self.size,
                                         **(cache_options or {}))
        except BaseException:
            self._nw.close()
            raise

    @property
    def name(self) -> str:
        """The file's path (no protocol), as a local file's ``name``."""
        return str(self.path)

    def fileno(self) -> int:
        """The descriptor nowait reads the file through."""
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return int(self._nw.fileno())

    def seek(self, loc: int, whence: int = 0) -> int:
        """Set the position (``whence`` 0: from the start, 1: from here,
        2: from the end, ``os.SEEK_DATA``/``os.SEEK_HOLE``), past the end
        too; a position before the start is ``OSError(EINVAL)``, as a local
        file's."""
        if self.closed:
            raise ValueError("seek of closed file")
        loc = int(loc)
        if whence in (os.SEEK_DATA, os.SEEK_HOLE):
            # The next data or hole at or after `loc`, as lseek(2) says
            # (ENXIO past the end); nowait's reads take no file position.
            self.loc = os.lseek(self._nw.fileno(), loc, whence)
            return int(self.loc)
        if whence not in (0, 1, 2):
            raise ValueError(f"invalid whence ({whence}, should be 0, 1, 2, "
                             "os.SEEK_DATA or os.SEEK_HOLE)")
        base = (0, self.loc, self.size)[whence]
        if base + loc < 0:
            raise OSError(errno.EINVAL, f"seek to {base + loc} (offset {loc}, whence {whence}) "
                                        f"is before the start of {self.path!r}; seek to 0 or "
                                        "later", self.path)
        return int(super().seek(loc, whence))

    def tell(self) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        return int(self.loc)

    def read(self, length: Optional[int] = -1) -> bytes:
        """Up to ``length`` bytes from the position (-1 or None: to the
        end); another negative length is ``ValueError``, as a local
        file's."""
        if length is not None and int(length) < -1:
            raise ValueError(f"read length must be non-negative or -1, not {length}")
        return bytes(super().read(length))

    def _start_ahead(self, start: int) -> None:
        if start >= self.size or self._nw.closed:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="nowait-readahead")
        self._ahead_start = start
        self._ahead = self._pool.submit(self._nw.read_at, start, self._window)

    def _fetch_range(self, start: int, end: int) -> bytes:
        # fsspec's background cache fetches from its own thread while the
        # reader's thread may fetch too: one fetch at a time.
        if end <= start:
            return b""
        with self._lock:
            return self._fetch_locked(start, end)

    def _fetch_locked(self, start: int, end: int) -> bytes:
        buf_end = self._buf_start + len(self._buf)
        if not (self._buf_start <= start and end <= buf_end):
            sequential = start == buf_end or start == 0
            if self._ahead is not None and self._ahead_start == start:
                data = self._ahead.result()
                short = min(end, self.size) - start - len(data)
                if short > 0:  # a read longer than the window
                    data += self._nw.read_at(start + len(data), short)
            else:
                if self._ahead is not None:
                    self._ahead.result()  # a seek elsewhere: drop it
                want = max(end - start, self._window) if sequential else end - start
                data = self._nw.read_at(start, want)
            self._ahead = None
            self._buf, self._buf_start = data, start
            buf_end = start + len(data)
            if sequential:
                self._start_ahead(buf_end)
        lo = start - self._buf_start
        if lo == 0 and end - start == len(self._buf):
            return self._buf
        return self._buf[lo:end - self._buf_start]

    def close(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before the file was opened
            return
        # fsspec closes its cache first, waiting for the fetches of a
        # background cache (which take the fetch lock: closing under it
        # would wait for them forever); then, under the lock, whatever
        # fetch is still running finishes before the file closes.
        super().close()
        with lock:
            if self._ahead is not None:
                try:
                    self._ahead.result()
                except Exception:
                    pass
                self._ahead = None
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            self._nw.close()


fsspec.register_implementation("nowait", NowaitFileSystem, clobber=True)
