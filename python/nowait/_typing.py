"""Types of the nowait package's arguments and results: the option
values (``Literal``), offsets and sizes (any iterable of ints, NumPy's
integer arrays included), the buffer protocol, and the dicts ``stats()``
and ``probe()`` return (``TypedDict``)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, SupportsIndex, Union

from typing import Literal, Protocol, TypedDict

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
elif TYPE_CHECKING:
    from typing_extensions import Buffer
else:
    Buffer = object


class _ArrayInterface(Protocol):
    """A NumPy array (or anything with the array interface): NumPy's stubs
    declare its buffer protocol (``__buffer__``) only for Python 3.12+."""

    @property
    def __array_interface__(self) -> Dict[str, Any]: ...


#: What read_into/readinto write into: a writable, C-contiguous buffer
#: (bytearray, memoryview, mmap, array.array, NumPy array).
WritableBuffer = Union[Buffer, _ArrayInterface]

__all__ = ["Buffer", "WritableBuffer", "FileStats", "Probe", "UringProbe", "BackendProbe", "DirectAlignment",
           "FileProbe"]

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
#: ``direct=``: "off" (the page cache, default), "auto", "on"; True is "on",
#: False "off".
_Direct = Union[Literal["off", "auto", "on"], bool]
#: ``nowait=``: the page-cache-first try of read_at/aread_at.
_NowaitMode = Literal["adaptive", "always", "off"]
#: ``cache=``: what buffered reads leave in the page cache ("drop":
#: RWF_DONTCACHE on every read, "adaptive": on a large file's scan reads).
_CachePolicy = Literal["keep", "drop", "adaptive"]
#: Offsets: any iterable of ints, e.g. a list, a range, a generator or an
#: integer NumPy array.
_Offsets = Iterable[SupportsIndex]
#: Sizes: one for every record, or one per offset.
_Sizes = Union[SupportsIndex, Iterable[SupportsIndex]]

class FileStats(TypedDict):
    """``File.stats()``: counters, backend and page-cache-first state. The
    keys about the open file (``direct`` to ``nowait_path_off``, and
    ``dontcache`` to ``cache_switches``) are None once it is closed."""

    path: Union[str, int]
    mode: Literal["off", "auto", "on"]
    closed: bool
    calls: int
    async_calls: int
    reads: int
    bytes: int
    errors: int
    backend: str
    backend_reason: str
    backend_detail: str
    direct: Optional[bool]
    dio_mem_align: Optional[int]
    dio_offset_align: Optional[int]
    fs: Optional[str]
    buffered_reason: Optional[str]
    inline_reason: Optional[str]
    nowait_path_hit_ratio: Optional[float]
    nowait_path_off: Optional[str]
    #: whether the file's reads can be uncached: "accepted", "not asked yet"
    #: or "off: " and why
    dontcache: Optional[str]
    #: the adaptive policy reads the file's scan reads uncached now
    cache_scanning: Optional[bool]
    #: times the adaptive policy changed its mind about the file
    cache_switches: Optional[int]
    nowait: _NowaitMode
    cache: _CachePolicy
    nowait_path_hits: int
    nowait_path_partial: int
    nowait_path_misses: int
    nowait_path_refused: int
    nowait_path_skipped: int
    nowait_path_yields: int


class UringProbe(TypedDict):
    """``probe()["io_uring"]``: ``available``, then its read opcodes and
    setup flags (each "accepted" or the errno name), or why not (``errno``,
    ``reason``); the keys of the other case are None."""

    available: bool
    op_read: Optional[bool]
    op_read_fixed: Optional[bool]
    flags: Optional[Dict[str, str]]
    errno: Optional[int]
    reason: Optional[str]


class BackendProbe(TypedDict):
    """``probe()["backend"]``: the backend reads take and why (``kind``
    None and ``reason`` the error when none can be set up)."""

    kind: Optional[str]
    reason: str
    detail: Optional[str]


class DirectAlignment(TypedDict):
    """``probe(path)["file"]["direct"]``: the file's O_DIRECT alignment."""

    mem_align: int
    offset_align: int
    source: str


class FileProbe(TypedDict):
    """``probe(path)["file"]``."""

    path: str
    kind: Literal["regular file", "block device"]
    fs: str
    size: int
    direct: Optional[DirectAlignment]
    direct_reason: Optional[str]
    io_poll: Optional[bool]
    backend: str
    buffered_path: str
    direct_path: Optional[str]
    rwf_nowait: str
    nowait_path_hit_ratio: float
    nowait_path_off: Optional[str]
    #: whether the file's filesystem takes RWF_DONTCACHE, in words
    rwf_dontcache: str


class Probe(TypedDict):
    """``probe()``: what ``nowait probe`` prints, as a dict (``text`` is the
    printed report); ``file`` is None unless a path was given."""

    kernel_release: str
    cpus: int
    io_uring_disabled: Optional[str]
    memlock_bytes: Optional[int]
    io_uring: UringProbe
    aio: str
    backend: BackendProbe
    #: whether the kernel knows RWF_DONTCACHE: "known", "unknown" or
    #: "failed (ERRNO)"
    rwf_dontcache: str
    file: Optional[FileProbe]
    text: str
