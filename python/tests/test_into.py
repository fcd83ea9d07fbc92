"""read_into: any writable buffer, records back to back, no copy beyond
the kernel's where alignment allows."""

from __future__ import annotations

import random

from typing import List

import pytest

import nowait
from conftest import DataFile, DirectMode, drop_cache, modes

np = pytest.importorskip("numpy", reason="SKIP numpy targets: numpy is not installed")


def offsets_for(blob_len: int, n: int, size: int, seed: int, align: int = 1) -> List[int]:
    rng = random.Random(seed)
    offs = [rng.randrange(0, blob_len) // align * align for _ in range(n)]
    offs[0] = (blob_len - size // 2) // align * align  # straddles end of file
    offs[1] = (blob_len + 4096) // align * align  # past end of file
    return offs


def expected_counts(blob: bytes, offs: List[int], size: int) -> List[int]:
    return [len(blob[o:o + size]) for o in offs]


@pytest.mark.parametrize("mode", ["off", "auto", "on"])
def test_into_bytearray_memoryview_numpy(data: DataFile, mode: DirectMode) -> None:
    path, blob, direct_ok = data
    if mode not in modes(direct_ok):
        pytest.skip(f"SKIP test_into[{mode}]: no filesystem here takes O_DIRECT")
    size = 4096
    align = 4096 if mode == "on" else 1
    offs = offsets_for(len(blob), 300, size, seed=3, align=align)
    want = expected_counts(blob, offs, size)
    drop_cache(path)
    with nowait.open(path, direct=mode) as f:
        # NumPy: 2-D uint8, the data loader's shape; page-aligned allocation
        # is not guaranteed, so under "on" use an aligned view.
        raw = np.zeros(len(offs) * size + 8192, dtype=np.uint8)
        start = (-raw.ctypes.data) % 4096
        arr = raw[start:start + len(offs) * size].reshape(len(offs), size)
        assert f.read_into(arr, offs, size) == want
        for i, o in enumerate(offs):
            assert arr[i, :want[i]].tobytes() == blob[o:o + want[i]]
        if mode == "on":
            return
        # bytearray and a memoryview of one at an odd address (bounced
        # under O_DIRECT with "auto", straight under "off").
        ba = bytearray(len(offs) * size + 1)
        mv = memoryview(ba)[1:]
        assert f.read_into(mv, offs, size) == want
        assert f.read_into(ba, offs, size) == want
        for i, o in enumerate(offs):
            assert bytes(ba[i * size:i * size + want[i]]) == blob[o:o + want[i]]
        # A float32 array is fine too: the bytes are what was read.
        fl = np.zeros((10, 1024), dtype=np.float32)
        f.read_into(fl, offs[2:12], size)
        assert fl.tobytes()[:size] == blob[offs[2]:offs[2] + size]


def test_into_odd_sizes_and_records_back_to_back(data: DataFile) -> None:
    path, blob, _ = data
    with nowait.open(path, direct="auto") as f:
        for size in (1, 100, 4097, 12345):
            offs = offsets_for(len(blob), 50, size, seed=size)
            ba = bytearray(b"\xee" * (len(offs) * size))
            counts = f.read_into(ba, offs, size)
            assert counts == expected_counts(blob, offs, size)
            for i, o in enumerate(offs):
                assert bytes(ba[i * size:i * size + counts[i]]) == blob[o:o + counts[i]]


def test_into_rejects_bad_buffers(data: DataFile) -> None:
    path, _, _ = data
    with nowait.open(path) as f:
        with pytest.raises(ValueError, match="need 8192"):
            f.read_into(bytearray(8191), [0, 4096], 4096)
        # TypeError, as for the standard library's readinto, whatever the
        # exporter raised.
        with pytest.raises(TypeError, match="writable, C-contiguous"):
            f.read_into(b"immutable bytes!", [0], 4)
        with pytest.raises(TypeError, match="writable, C-contiguous"):
            f.read_into(memoryview(bytearray(8)).toreadonly(), [0], 4)
        ro = np.zeros(8, dtype=np.uint8)
        ro.flags.writeable = False
        with pytest.raises(TypeError, match="writable, C-contiguous"):
            f.read_into(ro, [0], 4)
        with pytest.raises(TypeError, match="writable, C-contiguous"):
            # Not C-contiguous.
            f.read_into(np.zeros((8, 8), dtype=np.uint8)[:, ::2], [0], 4)
        with pytest.raises(TypeError, match="writable, C-contiguous"):
            f.read_into(memoryview(bytearray(16))[::2], [0], 4)
        with pytest.raises(TypeError):
            f.read_into(12, [0], 4)  # type: ignore[arg-type]


def test_into_buffer_released_after_call(data: DataFile) -> None:
    path, blob, _ = data
    ba = bytearray(4096)
    with nowait.open(path) as f:
        f.read_into(ba, [0], 4096)
    ba.extend(b"resizable again")  # the export was released
    assert bytes(ba[:4096]) == blob[:4096]
