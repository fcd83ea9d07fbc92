"""Types of the nowait package's arguments and results: the option
values (``Literal``), offsets and sizes (any iterable of ints, NumPy's
integer arrays included), the buffer protocol, and the dicts ``stats()``
and ``probe()`` return (``TypedDict``)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, SupportsIndex, Union

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

__all__ = ["Buffer", "WritableBuffer", "FileStats", "Probe", "MachineProbe", "UringProbe", "SetupFlagProbe",
           "AioProbe", "BackendProbe", "ErrnoProbe", "DirectAlignment", "FlagProbe", "FileProbe"]

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


class ErrnoProbe(TypedDict):
    """An errno and its name (``EOPNOTSUPP``)."""

    errno: int
    name: str


class SetupFlagProbe(TypedDict):
    """One io_uring setup flag tried: accepted, or the errno it was refused
    with."""

    flag: str
    accepted: bool
    refused: Optional[ErrnoProbe]


class UringProbe(TypedDict):
    """``probe()["machine"]["io_uring"]``: ``available``, then its read
    opcodes and setup flags, or why not (``refused``, ``reason``); the keys
    of the other case are None."""

    available: bool
    op_read: Optional[bool]
    op_read_fixed: Optional[bool]
    flags: Optional[List[SetupFlagProbe]]
    refused: Optional[ErrnoProbe]
    reason: Optional[str]


class AioProbe(TypedDict):
    """``probe()["machine"]["aio"]``: whether native AIO can be set up, or why not."""

    available: bool
    reason: Optional[str]


class BackendProbe(TypedDict):
    """``probe()["machine"]["backend"]``: the backend reads take and why
    (``kind`` None and ``reason`` the error when none can be set up)."""

    kind: Optional[str]
    reason: str
    detail: Optional[str]


class MachineProbe(TypedDict):
    """``probe()["machine"]``."""

    kernel_release: str
    cpus: int
    io_uring_disabled: Optional[str]
    memlock_bytes: Optional[int]
    io_uring: UringProbe
    aio: AioProbe
    backend: BackendProbe
    #: whether the kernel knows RWF_DONTCACHE: "known", "unknown" or
    #: "failed (ERRNO)"
    rwf_dontcache: str


class DirectAlignment(TypedDict):
    """``probe(path)["file"]["direct"]``: whether O_DIRECT reads are
    possible, with the file's alignment, or why not."""

    possible: bool
    mem_align: Optional[int]
    offset_align: Optional[int]
    align_source: Optional[str]
    reason: Optional[str]


class FlagProbe(TypedDict):
    """``probe(path)["file"]["rwf_nowait"]`` and ``["rwf_dontcache"]``: what
    one read with the flag answered (``why``: "unsupported",
    "syscall_refused" or "failed"), in words too."""

    works: bool
    why: Optional[Literal["unsupported", "syscall_refused", "failed"]]
    refused: Optional[ErrnoProbe]
    #: RWF_NOWAIT only: whether byte 0 was in the page cache
    byte0_cached: Optional[bool]
    words: str


class FileProbe(TypedDict):
    """``probe(path)["file"]``."""

    path: str
    kind: Literal["regular", "block_device"]
    fs: str
    size_bytes: int
    direct: DirectAlignment
    io_poll: Optional[bool]
    backend: str
    buffered_path: str
    direct_path: Optional[str]
    rwf_nowait: FlagProbe
    nowait_path_hit_ratio: float
    nowait_path_off: Optional[str]
    rwf_dontcache: FlagProbe


class Probe(TypedDict):
    """``probe()``: the library's probe document (the C library's
    ``nowait_probe`` JSON has the same keys), with ``text``, the report
    ``nowait probe`` prints; ``file`` is None unless a path was given."""

    machine: MachineProbe
    file: Optional[FileProbe]
    text: str
