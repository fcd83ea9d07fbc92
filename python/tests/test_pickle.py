"""Files travel to other processes and are copied by reopening them by path
with the same options: pickle, copy, deepcopy, multiprocessing with spawn,
forkserver and fork, and PyTorch's DataLoader where PyTorch is installed."""

from __future__ import annotations

import copy
import importlib
import multiprocessing
import os
import pickle
from typing import Any, Literal, Optional

import pytest

import nowait
from conftest import DataFile


def read_some(f: nowait.File, offset: int) -> "tuple[bytes, str, str, bool]":
    """In a worker: read with the file the parent passed (module-level so
    spawn and forkserver workers can import it)."""
    return f.read_at(offset, 1000), f.mode, f.nowait, f.closed


def test_pickle_reopens_by_path_with_the_same_options(data: DataFile) -> None:
    path, blob, direct_ok = data
    mode: Literal["auto", "off"] = "auto" if direct_ok else "off"
    with nowait.open(path, direct=mode, nowait="always", cache="drop") as f:
        f.read_at(0, 10)
        for g in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f)):
            assert isinstance(g, nowait.File) and g is not f
            assert (g.name, g.mode, g.nowait, g.direct) == (f.name, f.mode, f.nowait, f.direct)
            assert g.cache == "drop" and g.stats()["cache"] == "drop"
            assert g.fileno() != f.fileno()
            assert g.read_at(5000, 100) == blob[5000:5100]
            assert g.stats()["reads"] == 1  # counters start anew
            g.close()
        assert not f.closed
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(f)


def test_pickle_refuses_a_file_opened_from_a_descriptor(data: DataFile) -> None:
    path, blob, _ = data
    fd = os.open(path, os.O_RDONLY)
    with nowait.open(fd) as f:
        with pytest.raises(TypeError, match=f"opened from file descriptor {fd}.*by path"):
            pickle.dumps(f)
        g = copy.copy(f)  # a copy in this process reopens its descriptor
        assert g.read_at(0, 50) == blob[:50]
        g.close()
        assert f.read_at(0, 50) == blob[:50]


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_workers_get_working_files(data: DataFile, method: str) -> None:
    """Pool.map pickles the File into each worker, which reads its own
    copy; with fork, a File inherited through the fork works as well."""
    path, blob, _ = data
    ctx: Any = multiprocessing.get_context(method)
    with nowait.open(path, nowait="off") as f:
        f.read_at(0, 10)
        offs = [0, 4096, 70000, len(blob) - 500]
        with ctx.Pool(2) as pool:
            got = pool.starmap(read_some, [(f, o) for o in offs])
        assert [g[0] for g in got] == [blob[o:o + 1000] for o in offs]
        assert all(g[1:] == ("off", "off", False) for g in got)
        if method == "fork":
            q = ctx.Queue()
            global _inherited_file
            p = ctx.Process(target=_inherited, args=(q, len(blob)))
            _inherited_file = f
            p.start()
            got = q.get(timeout=60)
            p.join(60)
            assert p.exitcode == 0 and got == blob[-1000:]


_inherited_file: Optional[nowait.File] = None


def _inherited(q: "multiprocessing.Queue[bytes]", size: int) -> None:
    assert _inherited_file is not None
    q.put(_inherited_file.read_at(size - 1000, 4096))


class _Records:
    """A map-style dataset that opens its file in __init__, as users write
    one (PyTorch's DataLoader pickles it into each worker)."""

    def __init__(self, path: str, n: int) -> None:
        self.f = nowait.open(path)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        import numpy as np
        return np.frombuffer(self.f.read_at(i * 4096, 4096), dtype=np.uint8)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_torch_dataloader_with_two_workers(data: DataFile, method: str) -> None:
    try:
        torch: Any = importlib.import_module("torch")
        DataLoader: Any = importlib.import_module("torch.utils.data").DataLoader
    except ImportError:
        pytest.skip("SKIP test_torch_dataloader: PyTorch is not installed "
                    "(the spawn/forkserver worker tests above cover the pickling)")
    path, blob, _ = data
    ds = _Records(path, 64)
    loader = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context=method)
    seen = 0
    for b in loader:
        assert isinstance(b, torch.Tensor)
        for row in b:
            assert bytes(row.numpy()) == blob[seen * 4096:(seen + 1) * 4096]
            seen += 1
    assert seen == 64
