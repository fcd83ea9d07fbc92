"""Stubs of the compiled module nowait._nowait."""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypeVar, Union, final

_T = TypeVar("_T")

__all__ = ["File", "_Ring", "probe", "__version__"]

__version__: str

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

class File:
    """An open file. Use ``nowait.open``; blocking methods release the GIL."""

    def __new__(
        cls: type[_T], path: _Path, direct: Union[str, bool, None] = None,
        nowait: Optional[str] = None,
    ) -> _T: ...
    @property
    def name(self) -> str:
        """The path the file was opened with."""
        ...
    @property
    def mode(self) -> str:
        """The direct mode asked for: "auto", "on" or "off"."""
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
    def nowait(self) -> str:
        """The page-cache-first mode of aread_at and read_at: "adaptive",
        "always" or "off"."""
        ...
    @property
    def backend(self) -> str:
        """The backend reads take: "uring", "aio+pool", "pool" or "sync"."""
        ...
    @property
    def size(self) -> int:
        """The file's size in bytes."""
        ...
    def close(self) -> None:
        """Close the file (idempotent); reads in flight finish first."""
        ...
    def read_at(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset``; fewer only at end of file.
        Tried from the page cache first on a buffered file (see ``nowait``)."""
        ...
    def read_many(
        self, offsets: Sequence[int], size: Union[int, Sequence[int]]
    ) -> List[bytes]:
        """One record per offset, all submitted at once; ``size`` is one int
        or one per offset."""
        ...
    def read_into(self, buffer: Any, offsets: Sequence[int], size: int) -> List[int]:
        """Fill a writable, C-contiguous buffer with ``size``-byte records read
        at ``offsets``, back to back; returns the bytes read per record. The
        kernel writes into the buffer itself where alignment allows."""
        ...
    def stats(self) -> Dict[str, Any]:
        """Counters of this file, its backend and why, O_DIRECT alignment,
        filesystem and nowait-path state (``nowait_path_hits``,
        ``_misses``, ... of the page-cache tries of ``aread_at`` and
        ``read_at``). ``calls`` counts the blocking calls and ``async_calls``
        the asynchronous ones; ``reads``, ``bytes`` and ``errors`` count
        both (an asynchronous call's once its reads are collected, also if
        its task was cancelled meanwhile)."""
        ...
    def _read_cached(self, offset: int, size: int) -> Optional[bytes]:
        """aread_at's page-cache-first try (internal): the bytes, or None
        for the ring."""
        ...

@final
class _Ring:
    """The queue of one asyncio event loop (internal; see nowait._LoopRing)."""

    def __new__(cls, depth: int = 256, submit: str = "adaptive") -> "_Ring": ...
    def fileno(self) -> int: ...
    def outstanding(self) -> int: ...
    def queue_stats(self) -> Dict[str, int]: ...
    def submit_chunk(self) -> int: ...
    def start(
        self, file: File, kind: str, offsets: Any, size: Any, buffer: Any = None
    ) -> Tuple[int, bool]: ...
    def submit(self) -> None: ...
    def settle(self) -> None: ...
    def poll(self) -> List[Tuple[int, bool, Any]]: ...

def probe(path: Optional[_Path] = None) -> Dict[str, Any]: ...

def _error_samples() -> List[Tuple[str, int, BaseException]]:
    """For the test suite: one error of every kind the library has, as this
    module raises it (variant, errno the library decided, exception)."""
