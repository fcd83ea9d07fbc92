"""anyio: the asynchronous methods work on both of its backends, asyncio
(the asyncio ring) and trio (the trio ring), with the same bytes."""

from __future__ import annotations

import pytest

import nowait
from conftest import DataFile, drop_cache


def test_anyio_backends(data: DataFile) -> None:
    try:
        import anyio
    except ImportError:
        pytest.skip("SKIP test_anyio_backends: anyio is not installed")
    path, blob, _ = data

    async def main() -> bytes:
        async with nowait.open(path) as f:
            drop_cache(path)  # through the ring
            head = await f.aread_at(100, 50) + (await f.aread_many([0], 10))[0]
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for o in range(0, len(blob), 65536):
                        tg.start_soon(f.aread_at, o, 4096)
            return head + await f.aread_at(100, 50)  # cached now

    assert anyio.run(main, backend="asyncio") == blob[100:150] + blob[:10] + blob[100:150]
    try:
        import trio  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        pytest.skip("SKIP test_anyio_backends: trio is not installed (asyncio checked)")
    assert anyio.run(main, backend="trio") == blob[100:150] + blob[:10] + blob[100:150]

    async def in_thread() -> bytes:
        with nowait.open(path) as f:
            return await anyio.to_thread.run_sync(f.read_at, 7, 9)

    assert anyio.run(in_thread, backend="trio") == blob[7:16]
