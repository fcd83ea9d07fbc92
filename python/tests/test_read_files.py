"""nowait.read_files / aread_files: whole files by path, the bytes
Path.read_bytes gives, errors as OSError per item; NowaitFileSystem.cat
on top; the folder dataset example."""

import asyncio
import errno
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Sequence, Union

import pytest

import nowait
from nowait.fsspec import NowaitFileSystem

HERE = Path(__file__).resolve().parent


def _tree(tmp_path: Path) -> List[Any]:
    paths: List[Any] = []
    for i, size in enumerate([0, 1, 4095, 4096, 70_000, 300_001, 3 << 20]):
        p = tmp_path / f"f{i}"
        p.write_bytes(os.urandom(size))
        paths.append(str(p))
    (tmp_path / "sub").mkdir()
    paths.append(str(tmp_path / "sub"))
    paths.append(str(tmp_path / "missing"))
    raw = os.fsencode(str(tmp_path)) + b"/\xff\xfe"
    with open(raw, "wb") as f:
        f.write(b"latin")
    paths.append(raw)
    return paths


def _check(paths: Sequence[Any], got: Sequence[Union[bytes, OSError]]) -> None:
    assert len(got) == len(paths)
    for p, g in zip(paths, got):
        try:
            want = Path(os.fsdecode(p)).read_bytes()
        except OSError as e:
            assert isinstance(g, OSError), (p, g)
            assert type(g) is type(e) and g.errno == e.errno, (p, g, e)
            assert g.filename is not None
        else:
            assert isinstance(g, bytes) and g == want, p


def test_read_files_matches_read_bytes(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    _check(paths, nowait.read_files(paths))
    _check(paths, nowait.read_files(iter(paths)))
    got = nowait.read_files([tmp_path / "sub", tmp_path / "missing"])
    assert isinstance(got[0], IsADirectoryError) and isinstance(got[1], FileNotFoundError)
    assert "missing" in str(got[1])


def test_on_error_raise_and_the_size_limit(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    with pytest.raises(IsADirectoryError):
        nowait.read_files(paths, on_error="raise")
    got = nowait.read_files(paths[:7], max_file_size=70_000)
    assert isinstance(got[5], OSError) and got[5].errno == errno.EFBIG
    assert got[4] == Path(paths[4]).read_bytes()
    with pytest.raises(ValueError, match="on_error"):
        nowait.read_files(paths, on_error="ignore")  # type: ignore[arg-type]


def test_aread_files_on_asyncio(tmp_path: Path) -> None:
    paths = _tree(tmp_path)

    async def main() -> List[Union[bytes, OSError]]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.ensure_future(tick())
        got = await nowait.aread_files(paths)
        t.cancel()
        assert ticks > 0
        return got

    _check(paths, asyncio.run(main()))


def test_fsspec_cat_reads_many_files_in_one_batch(tmp_path: Path) -> None:
    paths = _tree(tmp_path)[:7]
    fs = NowaitFileSystem()
    got = fs.cat(paths)
    strip = getattr(fs, "_strip_protocol")
    assert set(got) == {strip(p) for p in paths}
    for p in paths:
        assert got[strip(p)] == Path(p).read_bytes()
    assert fs.cat(paths[4]) == Path(paths[4]).read_bytes()
    missing = str(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        fs.cat([paths[1], missing])
    out = fs.cat([paths[1], missing], on_error="return")
    assert isinstance(out[missing], FileNotFoundError)
    assert fs.cat([paths[1], missing], on_error="omit") == {paths[1]: Path(paths[1]).read_bytes()}


def test_folder_dataset_example_runs_and_pickles(tmp_path: Path) -> None:
    sys.path.insert(0, str(HERE.parent / "examples"))
    try:
        import folder_dataset
    finally:
        sys.path.pop(0)
    (tmp_path / "a").mkdir()
    for i in range(5):
        (tmp_path / "a" / f"{i}.bin").write_bytes(bytes([i]) * (i * 1000))
    ds = folder_dataset.FolderDataset(str(tmp_path))
    ds2 = pickle.loads(pickle.dumps(ds))
    assert len(ds2) == 5 and ds2[3] == bytes([3]) * 3000
    assert ds2.__getitems__([4, 0]) == [bytes([4]) * 4000, b""]
    r = subprocess.run([sys.executable, str(HERE.parent / "examples" / "folder_dataset.py")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "300 files checked" in r.stdout
