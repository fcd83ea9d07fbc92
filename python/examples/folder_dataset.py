"""A map-style dataset over a folder of files (images, clips, documents).

Item ``i`` is the bytes of the ``i``-th file (sorted by path); a batch is
fetched with one :func:`nowait.read_files` call, so every file of the batch
is opened and read at once, cached ones without a thread. The dataset holds
only the list of paths: it pickles as that list, so DataLoader workers
started with ``spawn`` or ``forkserver`` get it as they are, and ``fork``
workers inherit it.

Works on its own (``python folder_dataset.py``: writes a small folder,
iterates it in shuffled batches and checks every file) and plugs into
``torch.utils.data.DataLoader`` when PyTorch is installed: it has
``__len__``/``__getitem__`` (one file) and ``__getitems__`` (a batch, which
DataLoader's fetcher calls with the sampler's indices in one go).
"""

from __future__ import annotations

import importlib
import os
import pickle
import random
import sys
import tempfile
from typing import Any, Callable, List, Optional, Sequence

import nowait


class FolderDataset:
    """Every file under ``root`` (recursively, sorted); ``transform``, if
    given, is applied to each file's bytes."""

    def __init__(self, root: str, transform: Optional[Callable[[bytes], Any]] = None) -> None:
        self.root = root
        self.transform = transform
        self.paths: List[str] = sorted(
            os.path.join(d, f) for d, _, files in os.walk(root) for f in files)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> Any:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> List[Any]:
        got = nowait.read_files([self.paths[i] for i in indices], on_error="raise")
        out: List[Any] = []
        for b in got:
            assert isinstance(b, bytes)
            out.append(self.transform(b) if self.transform else b)
        return out


def _content(i: int) -> bytes:
    return bytes((i * 31 + k) % 251 for k in range(100 + i * 997 % 70_000))


def main() -> int:
    with tempfile.TemporaryDirectory() as root:
        for i in range(300):
            sub = os.path.join(root, f"class{i % 7}")
            os.makedirs(sub, exist_ok=True)
            with open(os.path.join(sub, f"{i:05d}.bin"), "wb") as f:
                f.write(_content(i))
        ds = FolderDataset(root)
        ds = pickle.loads(pickle.dumps(ds))  # as a spawned worker gets it
        order = list(range(len(ds)))
        random.Random(0).shuffle(order)
        checked = 0
        for b in range(0, len(order), 32):
            batch = order[b:b + 32]
            for i, data in zip(batch, ds.__getitems__(batch)):
                n = int(os.path.basename(ds.paths[i]).split(".")[0])
                assert data == _content(n), ds.paths[i]
                checked += 1
        try:
            tud: Any = importlib.import_module("torch.utils.data")
        except ImportError:
            print(f"{checked} files checked (PyTorch not installed: DataLoader not run)")
            return 0
        def as_is(batch: List[Any]) -> List[Any]:
            return batch

        loader = tud.DataLoader(ds, batch_size=16, collate_fn=as_is)
        through = sum(len(b) for b in loader)
        print(f"{checked} files checked; {through} through DataLoader")
        return 0


if __name__ == "__main__":
    sys.exit(main())
