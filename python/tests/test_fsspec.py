"""nowait:// in fsspec: cat_file, cat_ranges and open() answer what fsspec's
own LocalFileSystem answers for the same arguments (its semantics: None and
negative limits, ranges past the end, on_error), byte for byte against
os.pread; everything else is LocalFileSystem's; writing is refused; pandas
and PyArrow read Parquet through it."""

# fsspec ships no types: what NowaitFileSystem inherits from it is partly
# unknown to pyright.
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false

from __future__ import annotations

import errno
import importlib
import os
import random
from typing import Any, List, Optional, Tuple

import pytest

from conftest import DataDir, DataFile, pread

fsspec: Any = pytest.importorskip(
    "fsspec", reason="SKIP test_fsspec: fsspec is not installed (pip install fsspec)")
from fsspec.implementations.local import LocalFileSystem  # noqa: E402

from nowait.fsspec import NowaitFile, NowaitFileSystem  # noqa: E402


def limits(size: int, rng: random.Random, n: int) -> List[Tuple[Optional[int], Optional[int]]]:
    """Start/end pairs of every kind fsspec takes."""
    out: List[Tuple[Optional[int], Optional[int]]] = [
        (None, None), (0, None), (None, 100), (-100, None), (10, -10), (-50, -20),
        (size - 5, size + 100), (size + 10, size + 20), (0, 0)]
    for _ in range(n):
        s = rng.randrange(0, size)
        out.append((s, s + rng.choice([1, 100, 4096, 65536, 300000])))
    return out


def test_registered_for_the_nowait_protocol(data: DataFile) -> None:
    path, blob, _ = data
    fs = fsspec.filesystem("nowait")
    assert isinstance(fs, NowaitFileSystem)
    with fsspec.open(f"nowait://{path}", "rb") as f:
        assert f.read(100) == blob[:100]
    assert fs.cat_file(f"nowait://{path}", 5, 10) == blob[5:10]
    assert fs.info(path)["size"] == len(blob) == fs.size(f"nowait://{path}")
    assert path in fs.ls(os.path.dirname(path), detail=False)


def test_cat_file_matches_local_filesystem(data: DataFile) -> None:
    path, blob, _ = data
    fs, local = NowaitFileSystem(), LocalFileSystem()
    for s, e in limits(len(blob), random.Random(3), 30):
        want = local.cat_file(path, s, e)
        assert fs.cat_file(path, s, e) == want, (s, e)
        if s is not None and s >= 0 and e is not None and e >= s:
            assert want == pread(path, s, e - s)
    # An end before the start is a negative length: ValueError, as local.
    for ours_or_local in (fs, local):
        with pytest.raises(ValueError):
            ours_or_local.cat_file(path, 100, 50)


def test_cat_ranges_matches_local_filesystem_and_pread(data: DataFile) -> None:
    path, blob, _ = data
    fs, local = NowaitFileSystem(), LocalFileSystem()
    rng = random.Random(4)
    pairs = limits(len(blob), rng, 300)
    starts = [p[0] for p in pairs]
    ends = [p[1] for p in pairs]
    paths = [path] * len(pairs)
    want = [local.cat_file(path, s, e) for s, e in pairs]
    assert fs.cat_ranges(paths, starts, ends) == want
    # Nearby ranges are merged into one read; far ones are not: same bytes.
    for gap in (0, 1 << 20):
        assert fs.cat_ranges(paths, starts, ends, max_gap=gap) == want
    # Broadcast start/end, several files (in flight concurrently), a missing
    # file's ranges as exceptions or raised.
    missing = path + ".missing"
    got = fs.cat_ranges([path, missing, path], 10, 20)
    assert got[0] == got[2] == blob[10:20] and isinstance(got[1], FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        fs.cat_ranges([path, missing], 0, 1, on_error="raise")
    with pytest.raises(ValueError, match="one start and one end per path"):
        fs.cat_ranges([path, path], [0], [1, 2])


def test_open_reads_sequentially_and_seeks(data: DataFile) -> None:
    path, blob, _ = data
    fs = NowaitFileSystem(readahead=256 << 10)
    with fs.open(path, "rb") as f:
        assert isinstance(f, NowaitFile)
        got = bytearray()
        while chunk := f.read(100_000):
            got += chunk
        assert bytes(got) == blob
        f.seek(-1234, 2)
        assert f.read() == blob[-1234:]
        f.seek(5000)
        assert f.tell() == 5000 and f.read(10) == blob[5000:5010]
        buf = bytearray(4096)
        assert f.readinto(buf) == 4096 and bytes(buf) == blob[5010:9106]
    with fs.open(path, "rb", block_size=4096) as g:
        assert g.read() == blob


def test_writing_is_refused(data: DataFile, datadir: DataDir) -> None:
    path, _, _ = data
    d, _ = datadir
    fs = NowaitFileSystem()
    for call in (lambda: fs.open(os.path.join(d, "new"), "wb"),
                 lambda: fs.pipe_file(os.path.join(d, "new"), b"x"),
                 lambda: fs.rm(path),
                 lambda: fs.mkdir(os.path.join(d, "sub")),
                 lambda: fs.mv(path, path + ".moved")):
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.EROFS and "read-only" in str(e.value)
    assert os.path.exists(path) and not os.path.exists(os.path.join(d, "new"))


def test_pandas_and_pyarrow_read_parquet_through_it(datadir: DataDir) -> None:
    pd: Any = pytest.importorskip(
        "pandas", reason="SKIP test_pandas_parquet: pandas is not installed")
    pytest.importorskip("pyarrow", reason="SKIP test_pandas_parquet: pyarrow is not installed")
    pq: Any = importlib.import_module("pyarrow.parquet")

    d, _ = datadir
    path = os.path.join(d, "frame.parquet")
    df = pd.DataFrame({"i": range(50_000), "s": [f"row {i}" for i in range(50_000)]})
    df.to_parquet(path, row_group_size=5_000)
    back = pd.read_parquet(f"nowait://{path}")
    assert back.equals(df)
    t = pq.read_table(path, filesystem=NowaitFileSystem(), columns=["s"])
    assert t.column("s").to_pylist() == df["s"].tolist()
