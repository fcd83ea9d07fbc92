"""anyio: on its asyncio backend the asynchronous methods work; on trio
they refuse with an error that says what is supported."""

from __future__ import annotations

import pytest

import nowait
from conftest import DataFile


def test_anyio_backends(data: DataFile) -> None:
    try:
        import anyio
    except ImportError:
        pytest.skip("SKIP test_anyio_backends: anyio is not installed")
    path, blob, _ = data

    async def main() -> bytes:
        async with nowait.open(path) as f:
            return await f.aread_at(100, 50) + (await f.aread_many([0], 10))[0]

    assert anyio.run(main, backend="asyncio") == blob[100:150] + blob[:10]
    try:
        import trio  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        pytest.skip("SKIP test_anyio_backends: trio is not installed (asyncio checked)")
    for coro in (main, ):
        with pytest.raises(RuntimeError, match="run on asyncio.*this task runs on trio"):
            anyio.run(coro, backend="trio")

    async def in_thread() -> bytes:
        with nowait.open(path) as f:
            return await anyio.to_thread.run_sync(f.read_at, 7, 9)

    assert anyio.run(in_thread, backend="trio") == blob[7:16]
