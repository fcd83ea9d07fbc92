"""Stubs of the compiled module nowait._nowait."""

from typing import Any, Dict, Iterable, List, Literal, Optional, Tuple, TypeVar, Union, final

from typing_extensions import disjoint_base

from ._typing import (
    WritableBuffer,
    FileStats,
    Probe,
    _Direct,
    _NowaitMode,
    _CachePolicy,
    _Offsets,
    _Path,
    _Sizes,
)

_T = TypeVar("_T")

__all__ = [
    "File",
    "IOPRIO_CLASS_BE",
    "IOPRIO_CLASS_IDLE",
    "IOPRIO_CLASS_RT",
    "_Ring",
    "ioprio",
    "probe",
    "read_files",
    "_error_samples",
    "__version__",
]

__version__: str

IOPRIO_CLASS_RT: int
"""I/O priority class "real time": served first; needs CAP_SYS_ADMIN."""
IOPRIO_CLASS_BE: int
"""I/O priority class "best effort", every thread's default class."""
IOPRIO_CLASS_IDLE: int
"""I/O priority class "idle": served when nothing else waits."""

def ioprio(cls: int, level: int) -> int:
    """The ``ioprio=`` value of priority class ``cls`` (``IOPRIO_CLASS_*``)
    and ``level`` (0, the highest, to 7), as ``ioprio_set(2)`` spells it."""
    ...

@disjoint_base
class File:
    """An open file. Use ``nowait.open``; blocking methods release the GIL."""

    def __new__(
        cls: type[_T],
        path: Union[_Path, int],
        direct: Optional[_Direct] = None,
        nowait: Optional[_NowaitMode] = None,
        closefd: bool = True,
        cache: Optional[_CachePolicy] = None,
    ) -> _T: ...
    @property
    def name(self) -> Union[str, int]:
        """The path the file was opened with (the descriptor for one opened
        from a descriptor)."""
        ...
    @property
    def mode(self) -> Literal["off", "auto", "on"]:
        """The direct mode asked for."""
        ...
    @property
    def closed(self) -> bool:
        """True once close() was called."""
        ...
    @property
    def direct(self) -> bool:
        """True if reads bypass the page cache (O_DIRECT)."""
        ...
    @property
    def nowait(self) -> _NowaitMode:
        """The page-cache-first mode of aread_at and read_at."""
        ...
    @property
    def cache(self) -> _CachePolicy:
        """What buffered reads leave in the page cache."""
        ...
    @property
    def backend(self) -> str:
        """The backend reads take: "uring", "aio+pool", "pool" or "sync"."""
        ...
    @property
    def size(self) -> int:
        """The file's size in bytes."""
        ...
    @property
    def _from_fd(self) -> Optional[int]: ...
    def fileno(self) -> int:
        """The descriptor reads go through (nowait's own)."""
        ...
    def close(self) -> None:
        """Close the file (idempotent); reads in flight finish first."""
        ...
    def read_at(self, offset: int, size: int, *, ioprio: int = 0) -> bytes:
        """Read up to ``size`` bytes at ``offset``; fewer only at end of file.
        Tried from the page cache first on a buffered file (see ``nowait``).
        ``ioprio`` (every read method takes it): the I/O priority of the
        reads that reach the kernel (``nowait.ioprio(cls, level)``; 0: the
        thread's); one the kernel refuses raises OSError (EINVAL, EPERM)."""
        ...
    def read_many(self, offsets: _Offsets, size: _Sizes, *, ioprio: int = 0) -> List[bytes]:
        """One record per offset, all submitted at once; ``size`` is one int
        or one per offset."""
        ...
    def read_into(
        self, buffer: WritableBuffer, offsets: _Offsets, size: _Sizes, *, ioprio: int = 0
    ) -> List[int]:
        """Fill a writable, C-contiguous buffer with the records read at
        ``offsets``, back to back (one size, or one per record: packed);
        returns the bytes read per record."""
        ...
    def readinto(self, buffer: WritableBuffer, offset: int, *, ioprio: int = 0) -> int:
        """Read ``len(buffer)`` bytes at ``offset`` into ``buffer``; returns
        the bytes read."""
        ...
    def read(self, *, ioprio: int = 0) -> bytes:
        """The whole file."""
        ...
    def stats(self) -> FileStats:
        """Counters of this file, its backend and why, O_DIRECT alignment,
        filesystem and nowait-path state."""
        ...
    def _read_cached(self, offset: int, size: int) -> Optional[bytes]: ...

@final
class _Ring:
    """The queue of one asyncio event loop or trio run (internal; see
    nowait._LoopRing and nowait._trio)."""

    def __new__(cls, depth: int = 256, submit: str = "adaptive") -> "_Ring": ...
    def fileno(self) -> int: ...
    def outstanding(self) -> int: ...
    def queue_stats(self) -> Dict[str, int]: ...
    def submit_chunk(self) -> int: ...
    def start(
        self,
        file: File,
        kind: str,
        offsets: Any,
        size: Any,
        buffer: Any = None,
        ioprio: int = 0,
    ) -> Tuple[int, bool]: ...
    def submit(self) -> None: ...
    def settle(self) -> None: ...
    def poll(self) -> List[Tuple[int, bool, Any]]: ...

def probe(path: Optional[_Path] = None) -> Probe: ...

def read_files(
    paths: Iterable[_Path],
    *,
    on_error: str = "return",
    max_file_size: Optional[int] = None,
    budget_bytes: Optional[int] = None,
) -> List[Union[bytes, OSError]]: ...

def _error_samples() -> List[Tuple[str, int, BaseException]]:
    """For the test suite: one error of every kind the library has, as this
    module raises it (variant, errno the library decided, exception)."""
