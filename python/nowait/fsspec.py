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
- :meth:`NowaitFileSystem.open` returns a file object that, once reads
  look sequential, keeps the next window of the file in flight in the
  background while the caller consumes the current one.

Everything else (``ls``, ``info``, ``find``, ``glob``, ``get``…) is fsspec's
``LocalFileSystem``; what would write (``pipe``, ``put``, ``rm``, ``mv``,
``mkdir``, opening for writing…) raises ``OSError(EROFS)``.

The protocol is registered through the ``fsspec.specs`` entry point (no
import needed); importing this module registers it as well.
"""

from __future__ import annotations

import errno
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractBufferedFile

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


def _span(start: Optional[int], end: Optional[int], size: int) -> Tuple[int, int]:
    """fsspec's byte limits (None: the file's start or end; negative: from
    the end, as in a slice) as an absolute [start, end) within the file."""
    s = 0 if start is None else (max(0, size + start) if start < 0 else start)
    e = size if end is None else (size + end if end < 0 else end)
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
        start or end; negative: from the end), in one read."""
        with self._nowait_open(path) as f:
            if start is None and end is None:
                return f.read()
            s, e = _span(start, end, f.size)
            return f.read_at(s, e - s)

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
        ``on_error="return"`` a range that fails is its exception in the
        list; otherwise the first failure is raised."""
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
                spans = [_span(starts_l[i], ends_l[i], size) for i in idx]
                blocks = _merge(spans, gap, self.max_block)
                try:
                    data = f.read_many([b[0] for b in blocks], [b[1] - b[0] for b in blocks])
                except Exception as exc:
                    for i in idx:
                        out[i] = exc
                    return
                for i, (s, e), b in zip(idx, spans, _owner(spans, blocks)):
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
        if "r" not in mode or any(c in mode for c in "wax+"):
            raise _read_only(f"opening {path!r} with mode {mode!r}")
        return NowaitFile(self, self._strip_protocol(path), block_size=block_size,
                          readahead=self.readahead, **kwargs)

    # --- what would write ---

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        raise _read_only("pipe_file")

    def put_file(self, lpath: str, rpath: str, callback: Any = None, **kwargs: Any) -> None:
        raise _read_only("put_file")

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        raise _read_only("cp_file")

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
        raise _read_only("makedirs")

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


class NowaitFile(AbstractBufferedFile):  # type: ignore[misc]
    """A ``nowait://`` file open for reading, as ``NowaitFileSystem.open``
    returns it (seek, tell, read, readinto, iteration, context manager, as
    every fsspec file).

    Reads are served from a window of the file read with nowait. When a
    read starts where the previous one ended (sequential use), the next
    window (``readahead`` bytes, 4 MiB by default) is read in the
    background meanwhile, so a sequential reader finds it done; a seek
    elsewhere drops the windows ahead. At most two windows are held."""

    def __init__(self, fs: NowaitFileSystem, path: str, block_size: Optional[int] = None,
                 readahead: int = DEFAULT_READAHEAD, **kwargs: Any) -> None:
        self._nw = fs._nowait_open(path)
        self._window = max(readahead, block_size or 0, 1)
        self._buf = b""
        self._buf_start = 0
        self._ahead: Optional["Future[bytes]"] = None
        self._ahead_start = -1
        self._pool: Optional[ThreadPoolExecutor] = None
        super().__init__(fs, path, mode="rb", block_size=block_size or self._window,
                         cache_type="none", size=self._nw.size, **kwargs)

    def _start_ahead(self, start: int) -> None:
        if start >= self.size or self._nw.closed:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="nowait-readahead")
        self._ahead_start = start
        self._ahead = self._pool.submit(self._nw.read_at, start, self._window)

    def _fetch_range(self, start: int, end: int) -> bytes:
        buf_end = self._buf_start + len(self._buf)
        if not (self._buf_start <= start and end <= buf_end):
            if self._ahead is not None and self._ahead_start == start:
                data = self._ahead.result()
            else:
                if self._ahead is not None:
                    self._ahead.result()  # a seek elsewhere: drop it
                data = self._nw.read_at(start, max(end - start, self._window))
            self._ahead = None
            sequential = start == buf_end
            self._buf, self._buf_start = data, start
            buf_end = start + len(data)
            if sequential or start == 0:
                self._start_ahead(buf_end)
        lo = start - self._buf_start
        if lo == 0 and end - start == len(self._buf):
            return self._buf
        return self._buf[lo:end - self._buf_start]

    def close(self) -> None:
        if getattr(self, "_ahead", None) is not None:
            try:
                self._ahead.result()  # type: ignore[union-attr]
            except Exception:
                pass
            self._ahead = None
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=True)  # type: ignore[union-attr]
            self._pool = None
        super().close()
        if getattr(self, "_nw", None) is not None:
            self._nw.close()


fsspec.register_implementation("nowait", NowaitFileSystem, clobber=True)
