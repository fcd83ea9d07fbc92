"""A map-style dataset over a shard file of fixed-size records.

Each record is ``record_size`` bytes at ``index * record_size`` in the shard.
A batch is fetched with one ``File.read_into`` straight into a NumPy array:
every record of the batch is submitted to the kernel at once, and the bytes
land in the array with no copy beyond the kernel's.

Works on its own (``python dataset.py``: writes a small shard, iterates it in
shuffled batches and checks every record) and plugs into
``torch.utils.data.DataLoader`` when PyTorch is installed: ``ShardDataset``
has ``__len__``/``__getitem__`` (one record) and ``__getitems__`` (a batch,
which DataLoader's fetcher calls with the sampler's indices in one go).

The file is opened in ``__init__``: a ``nowait.File`` pickles as "open
this path with these options", so DataLoader workers started with ``spawn``
or ``forkserver`` each open it again, and ``fork`` workers inherit it.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from typing import Any, Callable, List, Literal, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

import nowait


class ShardDataset:
    """Records ``0..len-1`` of a shard file, each ``record_size`` bytes.

    ``transform``, if given, is applied to the ``uint8`` array of one record
    (``__getitem__``) or of a batch, shape ``(n, record_size)``
    (``__getitems__`` / :meth:`batch`).
    """

    def __init__(self, path: str, record_size: int,
                 direct: Literal["off", "auto", "on"] = "off",
                 transform: Optional[Callable[[NDArray[np.uint8]], Any]] = None) -> None:
        self.path = path
        self.record_size = record_size
        self.direct = direct
        self.transform = transform
        size = os.path.getsize(path)
        if size % record_size:
            raise ValueError(
                f"{path} is {size} bytes, not a whole number of {record_size}-byte records")
        self._len = size // record_size
        self.file = nowait.open(path, direct=direct)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: int) -> Any:
        if not -self._len <= index < self._len:
            raise IndexError(f"record {index} of {self._len}")
        index %= self._len
        out = np.empty(self.record_size, dtype=np.uint8)
        self.file.read_into(out, [index * self.record_size], self.record_size)
        return self.transform(out) if self.transform else out

    def batch(self, indices: Sequence[int], out: Optional[NDArray[np.uint8]] = None) -> NDArray[np.uint8]:
        """Records ``indices`` as one ``(n, record_size)`` array: one
        ``read_into`` for the whole batch (pass ``out`` to reuse an array)."""
        n = len(indices)
        if out is None:
            out = np.empty((n, self.record_size), dtype=np.uint8)
        for i in indices:
            if not 0 <= i < self._len:
                raise IndexError(f"record {i} of {self._len}")
        counts = self.file.read_into(out, [i * self.record_size for i in indices],
                                     self.record_size)
        if any(c != self.record_size for c in counts):
            raise EOFError(f"{self.path} was truncated while reading: got {counts}")
        return out

    def __getitems__(self, indices: List[int]) -> List[Any]:
        """Batch fetch, as torch's DataLoader calls it (torch >= 2.1). Returns
        a list of per-record arrays (views of one batch array), which the
        default collate function stacks."""
        arr = self.batch(indices)
        if self.transform:
            arr = self.transform(arr)
        return list(arr)


def make_shard(path: str, records: int, record_size: int) -> None:
    """A shard whose record i is filled with a pattern derived from i."""
    with open(path, "wb") as f:
        for i in range(records):
            rec = np.full(record_size, i % 251, dtype=np.uint8)
            rec[:8] = np.frombuffer(i.to_bytes(8, "little"), dtype=np.uint8)
            f.write(rec.tobytes())


def check_record(i: int, rec: NDArray[np.uint8]) -> None:
    assert int.from_bytes(rec[:8].tobytes(), "little") == i, i
    assert (rec[8:] == i % 251).all(), i


def main() -> int:
    records, record_size, batch = 4096, 4096, 64
    with tempfile.TemporaryDirectory(dir=os.environ.get("NOWAIT_TEST_DIR")) as d:
        path = os.path.join(d, "shard.bin")
        make_shard(path, records, record_size)
        ds = ShardDataset(path, record_size)
        rng = np.random.default_rng(0)
        order = rng.permutation(len(ds))
        out = np.empty((batch, record_size), dtype=np.uint8)
        for start in range(0, len(order), batch):
            idx = order[start:start + batch].tolist()
            arr = ds.batch(idx, out[:len(idx)])
            for i, rec in zip(idx, arr):
                check_record(i, rec)
        check_record(17, ds[17])
        print(f"plain: {len(ds)} records in batches of {batch}: ok ({ds.file.backend})")
        try:
            torch: Any = importlib.import_module("torch")
            DataLoader: Any = importlib.import_module("torch.utils.data").DataLoader
        except ImportError:
            print("torch is not installed: skipping the DataLoader run")
            return 0
        loader = DataLoader(ds, batch_size=batch, shuffle=True, num_workers=2)
        seen = 0
        for b in loader:
            assert isinstance(b, torch.Tensor) and b.shape[1] == record_size
            for rec in b.numpy():
                check_record(int.from_bytes(rec[:8].tobytes(), "little"), rec)
            seen += b.shape[0]
        assert seen == len(ds)
        print(f"DataLoader: {seen} records through 2 workers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
