"""Dask and PyArrow read Parquet through nowait://:
``dask.dataframe.read_parquet`` over a folder of Parquet files gives what
the plain path gives (whole frames, a column projection with a row
filter, an aggregate), on the threaded scheduler and on worker processes,
with no option to work around anything, and the reads go through nowait;
``pyarrow.dataset`` likewise; a projection reads the bytes it needs."""

# pandas and Dask ship partial types.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import os
import tempfile
from typing import Any, Iterator, List

import pytest

from conftest import DataDir

REASON = ("SKIP test_dask_read_parquet: dask[dataframe] and pyarrow are not installed "
          "(pip install 'dask[dataframe]' pyarrow)")
dd: Any = pytest.importorskip("dask.dataframe", reason=REASON)
pytest.importorskip("pyarrow", reason=REASON)
pd: Any = pytest.importorskip("pandas", reason=REASON)
np: Any = pytest.importorskip("numpy", reason=REASON)
fsspec: Any = pytest.importorskip("fsspec", reason=REASON)

from nowait.fsspec import NowaitFileSystem  # noqa: E402


@pytest.fixture(scope="module")
def folder(datadir: DataDir) -> Iterator[str]:
    """Four Parquet files of 3 row groups each: ints, floats, strings, a
    timestamp and a category, different in every file."""
    d = tempfile.mkdtemp(prefix="dask-", dir=datadir[0])
    rng = np.random.default_rng(30)
    for part in range(4):
        n = 30_000 + 1_000 * part
        frame = pd.DataFrame({
            "id": np.arange(n, dtype=np.int64) + part * 100_000,
            "x": rng.random(n),
            "s": [f"row {part}-{i}" for i in range(n)],
            "t": pd.date_range("2026-01-01", periods=n, freq="s") + pd.Timedelta(days=part),
            "c": pd.Categorical(rng.choice(["a", "b", "c"], n)),
        })
        frame.to_parquet(os.path.join(d, f"part-{part}.parquet"), row_group_size=12_000)
    yield d
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The paths nowait:// opened in this process."""
    paths: List[str] = []
    real = getattr(NowaitFileSystem, "_open")

    def counting(self: NowaitFileSystem, path: str, *args: Any, **kwargs: Any) -> Any:
        paths.append(path)
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(NowaitFileSystem, "_open", counting)
    return paths


def test_dask_read_parquet_gives_what_the_plain_path_gives(folder: str,
                                                           opened: List[str]) -> None:
    ours = dd.read_parquet(f"nowait://{folder}")
    plain = dd.read_parquet(folder)
    assert ours.npartitions == plain.npartitions >= 4
    pd.testing.assert_frame_equal(ours.compute(), plain.compute())
    assert {os.path.basename(p) for p in opened} == {f"part-{i}.parquet" for i in range(4)}

    def projected(path: str) -> Any:
        return dd.read_parquet(path, columns=["id", "s"], filters=[("x", ">", 0.5)])
    pd.testing.assert_frame_equal(projected(f"nowait://{folder}").compute(),
                                  projected(folder).compute())

    def summary(path: str) -> Any:
        frame = dd.read_parquet(path, columns=["x", "c"])
        return frame.groupby("c", observed=True).x.agg(["sum", "count"]).compute()
    pd.testing.assert_frame_equal(summary(f"nowait://{folder}"), summary(folder))


def test_dask_read_parquet_on_worker_processes(folder: str) -> None:
    """The processes scheduler pickles the tasks, nowait:// filesystem
    included, into worker processes that read with their own engine."""
    ours = dd.read_parquet(f"nowait://{folder}", columns=["id", "t"])
    plain = dd.read_parquet(folder, columns=["id", "t"])
    got = ours.compute(scheduler="processes", num_workers=2)
    pd.testing.assert_frame_equal(got, plain.compute(scheduler="sync"))


def test_pyarrow_dataset_reads_the_folder_through_it(folder: str) -> None:
    """pyarrow.dataset over the folder with filesystem=NowaitFileSystem():
    the same table as pyarrow's own filesystem gives, filter and
    projection included."""
    pads: Any = pytest.importorskip("pyarrow.dataset", reason=REASON)
    for columns, flt in ((None, None), (["id", "c"], pads.field("x") < 0.25)):
        ours = pads.dataset(folder, filesystem=NowaitFileSystem(), format="parquet")
        plain = pads.dataset(folder, format="parquet")
        got = ours.to_table(columns=columns, filter=flt)
        assert got.num_rows > 0 and got.equals(plain.to_table(columns=columns, filter=flt))


def test_a_projection_reads_only_the_bytes_it_needs(folder: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow's read_table(columns=...) and Dask's read_parquet through
    nowait:// read the projected column chunks and the footer, not windows
    around them: nowait's own byte count is within 5% of what the
    projection needs, the footer counted as pyarrow reads it (the last
    64 KiB of the file, in one read)."""
    pq: Any = pytest.importorskip("pyarrow.parquet", reason=REASON)
    opened: List[Any] = []
    real = getattr(NowaitFileSystem, "_nowait_open")

    def counting(self: NowaitFileSystem, path: str) -> Any:
        f = real(self, path)
        opened.append(f)
        return f

    monkeypatch.setattr(NowaitFileSystem, "_nowait_open", counting)
    columns = ["id", "s"]
    paths = sorted(os.path.join(folder, n) for n in os.listdir(folder))
    need = 0
    for p in paths:
        md = pq.ParquetFile(p).metadata
        # the footer (its metadata, length and magic), read with the bytes
        # before it up to 64 KiB
        need += min(os.path.getsize(p), max(64 << 10, md.serialized_size + 8))
        for rg in range(md.num_row_groups):
            for c in range(md.num_columns):
                chunk = md.row_group(rg).column(c)
                if chunk.path_in_schema in columns:
                    need += chunk.total_compressed_size
    fs = NowaitFileSystem()
    got = [pq.read_table(p, columns=columns, filesystem=fs) for p in paths]
    want = [pq.read_table(p, columns=columns) for p in paths]
    assert all(g.equals(w) for g, w in zip(got, want))
    read = sum(f.stats()["bytes"] for f in opened)
    assert need <= read <= need * 1.05, (read, need)

    # Dask reads some footers once more while it plans: against what it
    # reads through fsspec's LocalFileSystem (the process's rchar).
    before = rchar()
    plain = dd.read_parquet(folder, columns=columns).compute(scheduler="sync")
    plain_read = rchar() - before
    opened.clear()
    frame = dd.read_parquet(f"nowait://{folder}", columns=columns).compute(scheduler="sync")
    pd.testing.assert_frame_equal(frame, plain)
    read = sum(f.stats()["bytes"] for f in opened)
    assert need <= read <= plain_read * 1.05, (read, plain_read, need)


def rchar() -> int:
    """The bytes this process has passed to read system calls."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
