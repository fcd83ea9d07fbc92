"""Type stubs of the nowait package (see __init__.py for the documentation)."""

from typing import Any, Dict, Iterable, List, Literal, Optional, Union

from . import _nowait
from ._nowait import (
    IOPRIO_CLASS_BE as IOPRIO_CLASS_BE,
    IOPRIO_CLASS_IDLE as IOPRIO_CLASS_IDLE,
    IOPRIO_CLASS_RT as IOPRIO_CLASS_RT,
    ioprio as ioprio,
)
from ._typing import (
    WritableBuffer,
    FileStats as FileStats,
    Probe as Probe,
    _Direct,
    _NowaitMode,
    _CachePolicy,
    _Offsets,
    _Path,
    _Sizes,
)

__all__ = [
    "File",
    "FileStats",
    "IOPRIO_CLASS_BE",
    "IOPRIO_CLASS_IDLE",
    "IOPRIO_CLASS_RT",
    "Probe",
    "aread_files",
    "ioprio",
    "open",
    "probe",
    "read_files",
    "__version__",
]

__version__: str

class File(_nowait.File):
    """A file open for reading with nowait; a context manager (``with`` and
    ``async with``), picklable and copyable (reopened by path)."""

    def __enter__(self) -> "File": ...
    def __exit__(self, *exc: object) -> None: ...
    async def __aenter__(self) -> "File": ...
    async def __aexit__(self, *exc: object) -> None: ...
    def _options(self) -> Dict[str, Any]: ...
    def __reduce__(self) -> "tuple[Any, ...]": ...
    def __copy__(self) -> "File": ...
    def __deepcopy__(self, memo: Dict[int, Any]) -> "File": ...
    async def aread_at(self, offset: int, size: int, *, ioprio: int = 0) -> bytes:
        """Read up to ``size`` bytes at ``offset`` on the running event loop,
        asyncio's or trio's (fewer only at end of file); cancelling the task is safe. A buffered
        read whose bytes are all in the page cache returns at once, without
        the ring (see ``open``'s ``nowait``). ``ioprio`` (every ``a*`` method
        takes it): the I/O priority of the reads that reach the kernel."""
        ...
    async def aread_many(self, offsets: _Offsets, size: _Sizes, *, ioprio: int = 0) -> List[bytes]:
        """One record per offset, all submitted at once, on the running loop."""
        ...
    async def aread_into(
        self, buffer: WritableBuffer, offsets: _Offsets, size: _Sizes, *, ioprio: int = 0
    ) -> List[int]:
        """Fill ``buffer`` with the records back to back on the running loop;
        returns the bytes read per record."""
        ...
    async def areadinto(self, buffer: WritableBuffer, offset: int, *, ioprio: int = 0) -> int:
        """Read ``len(buffer)`` bytes at ``offset`` into ``buffer``."""
        ...
    async def aread(self, *, ioprio: int = 0) -> bytes:
        """The whole file, on the running loop."""
        ...

def open(
    path: Union[_Path, int],
    direct: _Direct = "off",
    nowait: _NowaitMode = "adaptive",
    closefd: bool = True,
    cache: _CachePolicy = "keep",
) -> File:
    """Open ``path`` (or a file descriptor) for reading; ``direct`` is "off"
    (the page cache, default), "auto" or "on" (O_DIRECT); ``nowait``
    ("adaptive", "always" or "off") is whether ``aread_at`` and ``read_at``
    first try the page cache alone with ``preadv2(RWF_NOWAIT)``; ``cache``
    ("keep", "drop" or "adaptive") is what buffered reads leave in the page
    cache ("drop": ``RWF_DONTCACHE``)."""
    ...

def read_files(
    paths: Iterable[_Path],
    *,
    on_error: Literal["return", "raise"] = "return",
    max_file_size: Optional[int] = None,
    budget_bytes: Optional[int] = None,
) -> List[Union[bytes, OSError]]:
    """The bytes of each file, in the order of ``paths``, read whole; a path
    that fails is its ``OSError`` in the list (``on_error="raise"``: raised)."""
    ...

async def aread_files(
    paths: Iterable[_Path],
    *,
    on_error: Literal["return", "raise"] = "return",
    max_file_size: Optional[int] = None,
    budget_bytes: Optional[int] = None,
) -> List[Union[bytes, OSError]]:
    """``read_files`` on the running asyncio loop (one executor thread per batch)."""
    ...

def probe(path: Optional[_Path] = None) -> Probe:
    """What the machine (and ``path``) can do, as ``nowait probe`` prints it."""
    ...

def _reopen(path: Any, options: Dict[str, Any]) -> File: ...

# Internals the test suite looks at (see __init__.py).
_rings: Any
_last: Any
def _running_ring() -> Any: ...
def _forget_closed_loops() -> None: ...
_LoopRing: Any
def _forget_last() -> None: ...
