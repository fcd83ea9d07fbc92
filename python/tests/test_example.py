"""The example data loader runs and checks every record."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import DataDir

pytest.importorskip("numpy", reason="SKIP test_example: numpy is not installed")

HERE = os.path.dirname(os.path.abspath(__file__))


def test_dataset_example(datadir: DataDir) -> None:
    d, _ = datadir
    script = os.path.join(HERE, "..", "examples", "dataset.py")
    env = dict(os.environ, NOWAIT_TEST_DIR=d)
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=110,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "4096 records in batches of 64: ok" in r.stdout


def test_dataset_in_process(datadir: DataDir) -> None:
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    try:
        import dataset
    finally:
        sys.path.pop(0)
    d, _ = datadir
    path = os.path.join(d, "shard-small.bin")
    dataset.make_shard(path, 100, 512)
    ds = dataset.ShardDataset(path, 512)
    assert len(ds) == 100
    dataset.check_record(99, ds[-1])
    items = ds.__getitems__([5, 3, 99])
    for i, rec in zip([5, 3, 99], items):
        dataset.check_record(i, rec)
    with pytest.raises(IndexError):
        ds[100]
    with pytest.raises(IndexError):
        ds.batch([100])
