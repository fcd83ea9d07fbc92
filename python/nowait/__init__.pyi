"""Type stubs of the nowait package (see __init__.py for the documentation)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _nowait

__all__ = ["File", "open", "probe", "__version__"]

__version__: str

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

class File(_nowait.File):
    """A file open for reading with nowait; a context manager."""

    def __enter__(self) -> "File": ...
    def __exit__(self, *exc: object) -> None: ...
    async def aread_at(self, offset: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``offset`` on the running event loop
        (fewer only at end of file); cancelling the task is safe. A buffered
        read whose bytes are all in the page cache returns at once, without
        the ring (see ``open``'s ``nowait``)."""
        ...
    async def aread_many(
        self, offsets: Sequence[int], size: Union[int, Sequence[int]]
    ) -> List[bytes]:
        """One record per offset, all submitted at once, on the running loop."""
        ...
    async def aread_into(self, buffer: Any, offsets: Sequence[int], size: int) -> List[int]:
        """Fill ``buffer`` with the records back to back on the running loop;
        returns the bytes read per record."""
        ...

def open(path: _Path, direct: Union[str, bool] = "off", nowait: str = "adaptive") -> File:
    """Open ``path`` for reading; ``direct`` is "off" (the page cache, default), "auto" or "on" (O_DIRECT);
    ``nowait`` ("adaptive", "always" or "off") is whether ``aread_at`` and
    ``read_at`` first try the page cache alone with ``preadv2(RWF_NOWAIT)``."""
    ...

def probe(path: Optional[_Path] = None) -> Dict[str, Any]:
    """What the machine (and ``path``) can do, as ``nowait probe`` prints it."""
    ...
