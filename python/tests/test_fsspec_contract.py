"""fsspec's contract for nowait://: fsspec's own abstract tests where they
apply to a read-only filesystem (``get``), and the whole read API side by
side with fsspec's ``LocalFileSystem`` on the same files: every argument
``open`` takes, ``cat_file``/``cat_ranges`` edges, the file object,
pickling, ``get``/``get_file``, listing, and chaining through
``simplecache::``, ``filecache::`` and ``blockcache::``. The answers are
equal, and a failure is an exception of the type local raises (or a
subclass) with the same errno.

One difference is deliberate: local's ``cat_file(path, start, end)`` with
an end exactly one byte before the start reads ``f.read(-1)``, the rest of
the file; nowait:// raises ``ValueError`` as for every other negative
length (``test_an_end_one_before_the_start_is_refused``)."""

# fsspec ships no types: what NowaitFileSystem inherits from it is partly
# unknown to pyright.
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
# pyright: reportUnknownVariableType=false, reportUnknownArgumentType=false
# pyright: reportUnknownLambdaType=false, reportUntypedBaseClass=false
# pyright: reportUntypedFunctionDecorator=false, reportUnknownParameterType=false
# pyright: reportMissingParameterType=false, reportIncompatibleMethodOverride=false

from __future__ import annotations

import errno
import gzip
import io
import itertools
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import DataDir, write_random

fsspec: Any = pytest.importorskip(
    "fsspec", reason="SKIP test_fsspec: fsspec is not installed (pip install fsspec)")
from fsspec.callbacks import Callback  # noqa: E402
from fsspec.caching import caches  # noqa: E402
from fsspec.implementations.local import LocalFileSystem  # noqa: E402
from fsspec.tests.abstract import AbstractFixtures, AbstractGetTests  # noqa: E402

from nowait.fsspec import NowaitFile, NowaitFileSystem  # noqa: E402

#: Every cache fsspec's files take (``cache_type=``).
CACHE_TYPES = sorted(str(c) for c in caches if c)

Answer = Tuple[str, Any]


def plain(value: Any) -> Any:
    """`value` with each exception in it (cat's on_error="return" dicts,
    cat_ranges' lists) as its type and errno: the messages differ."""
    if isinstance(value, Exception):
        return ("exception", type(value), getattr(value, "errno", None))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def answer(call: Callable[[], Any]) -> Answer:
    """What a call gives: ("value", it) or ("error", (type, errno))."""
    try:
        return ("value", plain(call()))
    except Exception as exc:
        return ("error", (type(exc), getattr(exc, "errno", None)))


def assert_same(ours: Answer, local: Answer, what: object) -> None:
    """Equal values, or exceptions of local's type (or a subclass) with
    the same errno (where local's has one: its `FileNotFoundError(path)`
    from `get_file` has none, nowait's says ENOENT)."""
    assert ours[0] == local[0], (what, ours, local)
    if ours[0] == "value":
        assert ours[1] == local[1], what
    else:
        (otype, oerr), (ltype, lerr) = ours[1], local[1]
        assert issubclass(otype, ltype) and lerr in (None, oerr), (what, ours, local)


class Tree:
    """A directory of files to read both ways: a 3 MiB + 1234 byte file,
    a tiny and an empty one, a gzip file, a subdirectory with a nested
    file, a symlink to a file, and a directory's missing entry."""

    def __init__(self, root: str) -> None:
        self.root = root
        os.makedirs(os.path.join(root, "sub", "deeper"))
        self.big = os.path.join(root, "big.bin")
        self.tiny = os.path.join(root, "tiny.bin")
        self.empty = os.path.join(root, "empty.bin")
        self.gz = os.path.join(root, "lines.txt.gz")
        self.nested = os.path.join(root, "sub", "deeper", "nested.bin")
        self.link = os.path.join(root, "sub", "link.bin")
        self.missing = os.path.join(root, "missing.bin")
        self.blobs: Dict[str, bytes] = {
            self.big: write_random(self.big, 3 * 1024 * 1024 + 1234, seed=30),
            self.tiny: write_random(self.tiny, 10, seed=31),
            self.empty: write_random(self.empty, 0, seed=32),
            self.nested: write_random(self.nested, 70_000, seed=33),
        }
        text = "".join(f"line {i} of the file\n" for i in range(5000)).encode()
        with gzip.open(self.gz, "wb") as f:
            f.write(text)
        self.text = text
        os.symlink(self.tiny, self.link)

    @property
    def files(self) -> List[str]:
        return [self.big, self.tiny, self.empty, self.nested, self.link]


@pytest.fixture(scope="module")
def tree(datadir: DataDir) -> Iterator[Tree]:
    d = tempfile.mkdtemp(prefix="contract-", dir=datadir[0])
    yield Tree(d)
    shutil.rmtree(d, ignore_errors=True)


def limits(size: int) -> List[Tuple[Optional[int], Optional[int]]]:
    """Every kind of (start, end) fsspec takes, for a file of `size`
    bytes: None, negative (from the end, also past the start), past the
    end, empty, and negative lengths (an end before the start)."""
    out: List[Tuple[Optional[int], Optional[int]]] = [
        (None, None), (0, None), (None, 0), (None, 5), (None, -3), (3, None), (-4, None),
        (0, 0), (2, 2), (1, 7), (-6, -2), (size - 3, size + 50), (size, None),
        (size + 10, None), (size + 10, size + 20), (-size - 100, None),
        (None, -size - 100), (-size - 100, 4),
        # negative lengths: LocalFileSystem raises ValueError for each
        (8, 2), (5, -size), (-2, -9), (0, -size - 2), (size + 10, size + 5), (None, -size - 2),
        (6, 3), (size // 2, size // 4)]
    rng = random.Random(size)
    for _ in range(20):
        s = rng.randrange(0, max(size, 1))
        out.append((s, s + rng.choice([1, 100, 4096, 65536, 300000])))
    return out


def local_length(start: Optional[int], end: Optional[int], size: int) -> Optional[int]:
    """The length LocalFileSystem.cat_file passes to read() (None: read())."""
    s = 0 if start is None else (start if start >= 0 else max(0, size + start))
    if end is None:
        return None
    return (end if end >= 0 else size + end) - s


# --- fsspec's own abstract tests ---


class SetUpOnDisk(NowaitFileSystem):
    """nowait:// for fsspec's abstract get tests, whose own set-up writes
    the source tree with the filesystem under test (mkdir, touch, pipe, rm):
    here those writes go to disk through LocalFileSystem, as they would on
    any other writer; every read, listing and get is nowait://'s."""

    _disk = LocalFileSystem(auto_mkdir=True)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        self._disk.mkdir(self._strip_protocol(path), create_parents, **kwargs)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self._disk.makedirs(self._strip_protocol(path), exist_ok)

    def touch(self, path: str, truncate: bool = True, **kwargs: Any) -> None:
        self._disk.touch(self._strip_protocol(path), truncate, **kwargs)

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        self._disk.pipe_file(self._strip_protocol(path), value, **kwargs)

    def rm(self, path: Any, recursive: bool = False, maxdepth: Any = None) -> None:
        self._disk.rm(path, recursive, maxdepth)


class TestNowaitGet(AbstractFixtures, AbstractGetTests):  # type: ignore[misc]
    """fsspec.tests.abstract's get tests (copies out to local paths). The
    other abstract families (copy, put, pipe, move, open for writing)
    write into the filesystem, which nowait:// refuses
    (test_writes_are_refused_as_read_only)."""

    @pytest.fixture(scope="class")
    @classmethod
    def fs(cls) -> NowaitFileSystem:
        return SetUpOnDisk(auto_mkdir=True)

    @pytest.fixture
    def fs_path(self, tmpdir: Any) -> str:
        return str(tmpdir)


# --- cat_file and cat_ranges ---


def test_cat_file_answers_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    for path in tree.files + [tree.missing, tree.root]:
        size = os.path.getsize(path) if os.path.isfile(path) else 10
        for s, e in limits(size):
            if local_length(s, e, size) == -1:
                continue  # the one deliberate difference (module docs)
            want = answer(lambda: local.cat_file(path, s, e))
            assert_same(answer(lambda: fs.cat_file(path, s, e)), want, (path, s, e))
            assert_same(answer(lambda: fs.cat_file(f"nowait://{path}", s, e)), want, (path, s, e))
        if os.path.isfile(path):
            assert fs.cat_file(path) == tree.blobs.get(os.path.realpath(path), b"") or \
                path == tree.link


def test_an_end_one_before_the_start_is_refused(tree: Tree) -> None:
    """local reads the rest of the file (``read(-1)``) for a length of
    exactly -1; nowait:// refuses it as every other negative length."""
    fs, local = NowaitFileSystem(), LocalFileSystem()
    blob = tree.blobs[tree.big]
    assert local.cat_file(tree.big, 100, 99) == blob[100:]
    with pytest.raises(ValueError, match="negative length.*ends at byte 99, before its start"):
        fs.cat_file(tree.big, 100, 99)


def test_cat_ranges_answers_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    paths: List[str] = []
    starts: List[Optional[int]] = []
    ends: List[Optional[int]] = []
    for path in tree.files + [tree.missing, tree.root]:
        size = os.path.getsize(path) if os.path.isfile(path) else 10
        for s, e in limits(size):
            if local_length(s, e, size) != -1:
                paths.append(path)
                starts.append(s)
                ends.append(e)
    want: List[Answer] = [("error", (type(r), getattr(r, "errno", None)))
                          if isinstance(r, Exception) else ("value", r)
                          for r in local.cat_ranges(paths, starts, ends)]
    for gap in (None, 0, 1 << 20):
        got = fs.cat_ranges(paths, starts, ends, max_gap=gap)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            mine = (("error", (type(g), getattr(g, "errno", None)))
                    if isinstance(g, Exception) else ("value", g))
            assert_same(mine, w, (paths[i], starts[i], ends[i], gap))
    # on_error="raise": the first failure in order, of local's type
    for order in ([tree.big, tree.missing], [tree.big, tree.tiny]):
        pairs = ([0, 8], [5, 2])
        assert_same(answer(lambda: fs.cat_ranges(order, *pairs, on_error="raise")),
                    answer(lambda: local.cat_ranges(order, *pairs, on_error="raise")), order)


def test_cat_ranges_edges_answer_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    cases: List[Tuple[Any, Any, Any]] = [
        ([], [], []), ([], 0, 10), ([tree.big], 0, 10), ([tree.big] * 3, 5, None),
        ([tree.big, tree.tiny], [0], [1, 2]), ([tree.big], [0, 1], [5]), (tree.big, 0, 10)]
    for args in cases:
        assert_same(answer(lambda: fs.cat_ranges(*args)),
                    answer(lambda: local.cat_ranges(*args)), args)


def test_cat_and_the_whole_file_readers_answer_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    calls: List[Tuple[str, Callable[[Any], Any]]] = [
        ("cat one", lambda f: f.cat(tree.big)),
        ("cat list", lambda f: f.cat([tree.big, tree.tiny])),
        ("cat recursive", lambda f: f.cat(os.path.join(tree.root, "sub"), recursive=True)),
        ("cat missing", lambda f: f.cat([tree.big, tree.missing], on_error="return")),
        ("cat omit", lambda f: f.cat([tree.big, tree.missing], on_error="omit")),
        ("cat raise", lambda f: f.cat([tree.big, tree.missing])),
        ("head", lambda f: f.head(tree.big, 1000)),
        ("tail", lambda f: f.tail(tree.big, 1000)),
        ("tail of tiny", lambda f: f.tail(tree.tiny, 1000)),
        ("read_bytes", lambda f: f.read_bytes(tree.nested, 10, 5000)),
        ("read_text", lambda f: f.read_text(tree.big, encoding="latin-1")[:5000]),
        ("read_block", lambda f: f.read_block(tree.gz, 100, 5000)),
        ("read_block delimited", lambda f: f.read_block(tree.big, 1000, 300000, b"\n")),
        ("open gzip", lambda f: f.open(tree.gz, "rb", compression="gzip").read()),
        ("open infer", lambda f: f.open(tree.gz, "rb", compression="infer").read()),
        ("text lines", lambda f: f.open(tree.gz, "rt", compression="gzip",
                                        encoding="ascii").readlines()[-3:]),
    ]
    for name, call in calls:
        assert_same(answer(lambda: call(fs)), answer(lambda: call(local)), name)


# --- open(): every argument fsspec passes, the file object ---


def open_kwargs() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = [{}, {"block_size": 4096}, {"block_size": (1 << 20) + 3},
                                 {"autocommit": False}, {"cache_options": None},
                                 {"size": 123}]
    for ct in CACHE_TYPES:
        out.append({"cache_type": ct})
        out.append({"cache_type": ct, "block_size": 65536, "cache_options": {}})
    out.append({"cache_type": "blockcache", "cache_options": {"maxblocks": 2}})
    return out


def exercise(f: Any, rng: random.Random, size: int) -> List[Answer]:
    """A reader's mix of calls: reads of every length, seeks of every
    whence (also past the end and before the start), readline, readinto,
    iteration; what each gave."""
    out: List[Answer] = []
    for _ in range(60):
        op = rng.randrange(9)
        if op == 0:
            out.append(answer(lambda: f.read(rng.choice([0, 1, 100, 4096, 70000, 1 << 20]))))
        elif op == 1:
            out.append(answer(lambda: f.seek(rng.randrange(-10, size + 10))))
        elif op == 2:
            out.append(answer(lambda: f.seek(rng.randrange(-500, 500), 1)))
        elif op == 3:
            out.append(answer(lambda: f.seek(rng.randrange(-size - 10, 10), 2)))
        elif op == 4:
            out.append(answer(lambda: f.readline()))
        elif op == 5:
            buf = bytearray(rng.choice([0, 10, 5000]))
            out.append(answer(lambda: (f.readinto(buf), bytes(buf))))
        elif op == 6:
            out.append(answer(lambda: f.read(rng.choice([-2, -100]))))
        elif op == 7:
            out.append(answer(lambda: f.tell()))
        else:
            out.append(answer(lambda: f.read(None) if rng.random() < 0.1 else f.read(-1)[:10]))
    out.append(answer(lambda: f.seek(0)))
    out.append(answer(lambda: [len(line) for line in itertools.islice(f, 300)]))
    return out


@pytest.mark.parametrize("kwargs", open_kwargs(), ids=lambda k: ",".join(
    f"{a}={b}" for a, b in sorted(k.items())) or "defaults")
def test_open_answers_as_local_for_every_argument(tree: Tree, kwargs: Dict[str, Any]) -> None:
    fs, local = NowaitFileSystem(readahead=256 << 10), LocalFileSystem()
    for path in (tree.big, tree.tiny, tree.empty, tree.link):
        size = os.path.getsize(path)
        with fs.open(path, "rb", **kwargs) as ours, local.open(path, "rb", **kwargs) as theirs:
            assert isinstance(ours, NowaitFile)
            got = exercise(ours, random.Random(size), size)
            want = exercise(theirs, random.Random(size), size)
            for i, (g, w) in enumerate(zip(got, want)):
                assert_same(g, w, (path, kwargs, i))


def test_the_parts_cache_serves_known_parts_and_reads_the_rest(tree: Tree) -> None:
    """fsspec's "parts" cache (what ``open_parquet_file`` hands over) holds
    byte ranges fetched before: reads inside them come from there, reads
    outside from the file, never fsspec's ValueError or zero padding."""
    fs = NowaitFileSystem()
    blob = tree.blobs[tree.big]
    parts = {(0, 100): blob[:100], (5000, 9000): b"\xee" * 4000}  # marked to tell apart
    with fs.open(tree.big, "rb", cache_type="parts",
                 cache_options={"data": dict(parts), "strict": False}) as f:
        f.seek(6000)
        assert f.read(1000) == b"\xee" * 1000  # from the part handed over
        f.seek(50)
        assert f.read(100) == blob[50:150]  # straddles a part's end: from the file
        f.seek(20000)
        assert f.read(10) == blob[20000:20010]
        g = pickle.loads(pickle.dumps(f))  # reopened with no parts: all from the file
        assert g.read(10) == blob[20010:20020]
        g.close()


def test_closing_while_a_background_fetch_waits_returns(tree: Tree,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """fsspec's "background" cache fetches the next block on its own
    thread and, when the file closes, waits for that fetch: closing must
    not hold what the fetch waits for. The fetch is held back a little so
    that close() starts first."""
    real = getattr(NowaitFile, "_fetch_range")

    def late(self: NowaitFile, start: int, end: int) -> bytes:
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.05)
        return bytes(real(self, start, end))

    monkeypatch.setattr(NowaitFile, "_fetch_range", late)
    fs = NowaitFileSystem()

    def open_read_close() -> None:
        for _ in range(5):
            f = fs.open(tree.big, "rb", cache_type="background", block_size=65536)
            assert f.read(10) == tree.blobs[tree.big][:10]  # the next block is fetched
            f.close()

    worker = threading.Thread(target=open_read_close, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "close() waited for a fetch that waited for close()"


def test_cache_names_fsspec_lacks_are_refused(tree: Tree) -> None:
    """LocalFileSystem ignores `cache_type`; nowait:// honours it, so a
    name that is none of fsspec's caches is an error, not a silent default."""
    with pytest.raises(ValueError, match="cache_type='lru' is not one of fsspec's caches"):
        NowaitFileSystem().open(tree.big, "rb", cache_type="lru")


def test_file_object_answers_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    ours: Any = fs.open(tree.big, "rb")
    theirs: Any = local.open(tree.big, "rb")
    with ours, theirs:
        assert ours.name == theirs.name == tree.big
        assert os.fstat(ours.fileno()).st_ino == os.fstat(theirs.fileno()).st_ino
        for call in (lambda f: (f.readable(), f.seekable(), f.writable(), f.closed),
                     lambda f: f.seek(-1), lambda f: f.seek(-5, 1), lambda f: f.seek(-10 ** 9, 2),
                     lambda f: f.seek(0, 5), lambda f: f.seek(10 ** 9),
                     lambda f: f.seek(100, os.SEEK_DATA), lambda f: f.seek(7, os.SEEK_HOLE),
                     lambda f: f.seek(10 ** 9, os.SEEK_DATA),
                     lambda f: f.read(10), lambda f: f.tell(), lambda f: f.read(-2)):
            assert_same(answer(lambda: call(ours)), answer(lambda: call(theirs)), call)
        with pytest.raises(OSError) as e:
            ours.seek(-1)
        assert e.value.errno == errno.EINVAL and "before the start" in str(e.value)
    for call in (lambda f: f.read(1), lambda f: f.seek(0), lambda f: f.tell(),
                 lambda f: f.fileno(), lambda f: f.closed):
        assert_same(answer(lambda: call(ours)), answer(lambda: call(theirs)), call)


@pytest.mark.parametrize("cache_type", [None, *CACHE_TYPES])
def test_open_files_pickle_as_local(tree: Tree, cache_type: Optional[str]) -> None:
    """fsspec pickles a file as fsspec.spec.reopen(fs, path, ..., cache_type,
    ...): unpickled, it reads on from the same position."""
    fs, local = NowaitFileSystem(), LocalFileSystem()
    kwargs = {} if cache_type is None else {"cache_type": cache_type}
    blob = tree.blobs[tree.big]
    for f in (fs.open(tree.big, "rb", **kwargs), local.open(tree.big, "rb", **kwargs)):
        with f:
            f.seek(123_456)
            assert f.read(1000) == blob[123_456:124_456]
            g = pickle.loads(pickle.dumps(f))
            assert type(g) is type(f) and g.tell() == 124_456
            assert g.read(5000) == blob[124_456:129_456]
            g.seek(-10, 2)
            assert g.read() == blob[-10:]
            g.close()
    again = pickle.loads(pickle.dumps(fs))
    assert isinstance(again, NowaitFileSystem)
    assert again.cat_file(tree.tiny) == tree.blobs[tree.tiny]


# --- get and get_file: copy out to local paths ---


class Progress(Callback):  # type: ignore[misc]
    pass


def listing(root: str) -> Dict[str, bytes]:
    out: Dict[str, bytes] = {}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(d, name), root) + "/"] = b""
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), root)] = f.read()
    return out


def test_get_file_and_get_answer_as_local(tree: Tree, tmp_path: Any) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    for name in ("ours", "local"):
        os.makedirs(tmp_path / name)
    calls: List[Tuple[str, Callable[[Any, str], Any]]] = [
        ("file", lambda f, d: f.get_file(tree.big, os.path.join(d, "big.copy"))),
        ("into a directory", lambda f, d: f.get(tree.tiny, d + "/")),
        ("a directory", lambda f, d: f.get_file(os.path.join(tree.root, "sub"),
                                                os.path.join(d, "subdir"))),
        ("recursive", lambda f, d: f.get(tree.root + "/sub", os.path.join(d, "tree"),
                                         recursive=True)),
        ("glob", lambda f, d: f.get(tree.root + "/*.bin", os.path.join(d, "globbed") + "/")),
        ("missing", lambda f, d: f.get_file(tree.missing, os.path.join(d, "missing"))),
        ("same file", lambda f, d: f.get_file(tree.tiny, tree.tiny)),
        ("onto a directory", lambda f, d: f.get_file(tree.tiny, d)),
        ("no parent", lambda f, d: f.get_file(tree.tiny, os.path.join(d, "no", "such"))),
        ("to a file object", lambda f, d: (lambda b: (f.get_file(tree.nested, b),
                                                      b.getvalue()))(io.BytesIO())),
    ]
    for what, call in calls:
        assert_same(answer(lambda: call(fs, str(tmp_path / "ours"))),
                    answer(lambda: call(local, str(tmp_path / "local"))), what)
    assert listing(str(tmp_path / "ours")) == listing(str(tmp_path / "local"))
    assert (tmp_path / "ours" / "big.copy").read_bytes() == tree.blobs[tree.big]
    assert open(tree.tiny, "rb").read() == tree.blobs[tree.tiny]  # the same-file copy kept it
    # nowait's copy reports its progress
    progress = Progress()
    fs.get_file(tree.big, str(tmp_path / "progress"), callback=progress)
    assert progress.size == progress.value == len(tree.blobs[tree.big])


# --- listing and metadata: LocalFileSystem's ---


def test_listing_and_metadata_answer_as_local(tree: Tree) -> None:
    fs, local = NowaitFileSystem(), LocalFileSystem()
    r = tree.root
    calls: List[Tuple[str, Callable[[Any, str], Any]]] = [
        ("ls", lambda f, p: sorted(f.ls(p, detail=False))),
        ("ls detail", lambda f, p: sorted(f.ls(p, detail=True), key=lambda d: d["name"])),
        ("ls file", lambda f, p: f.ls(p + "/big.bin")),
        ("ls missing", lambda f, p: f.ls(p + "/missing.bin")),
        ("info", lambda f, p: f.info(p + "/big.bin")),
        ("info link", lambda f, p: f.info(p + "/sub/link.bin")),
        ("info dir", lambda f, p: f.info(p + "/sub")),
        ("info missing", lambda f, p: f.info(p + "/missing.bin")),
        ("find", lambda f, p: f.find(p)),
        ("find dirs", lambda f, p: f.find(p, withdirs=True, maxdepth=2)),
        ("find detail", lambda f, p: f.find(p, detail=True)),
        ("glob", lambda f, p: f.glob(p + "/**/*.bin")),
        ("glob one", lambda f, p: f.glob(p + "/*.gz")),
        ("walk", lambda f, p: list(f.walk(p))),
        ("du", lambda f, p: f.du(p)),
        ("du each", lambda f, p: f.du(p, total=False)),
        ("exists", lambda f, p: (f.exists(p + "/big.bin"), f.exists(p + "/missing.bin"))),
        ("kinds", lambda f, p: (f.isfile(p + "/big.bin"), f.isdir(p + "/sub"),
                                f.islink(p + "/sub/link.bin"), f.lexists(p + "/sub/link.bin"))),
        ("size", lambda f, p: (f.size(p + "/big.bin"), f.sizes([p + "/tiny.bin", p + "/sub"]))),
        ("size missing", lambda f, p: f.size(p + "/missing.bin")),
        ("times", lambda f, p: (f.modified(p + "/big.bin"), f.created(p + "/big.bin"))),
        ("checksum", lambda f, p: (f.checksum(p + "/big.bin"), f.ukey(p + "/big.bin"))),
        ("expand", lambda f, p: f.expand_path(p + "/sub", recursive=True)),
        ("expand glob", lambda f, p: f.expand_path([p + "/*.bin", p + "/sub"])),
    ]
    for what, call in calls:
        want = answer(lambda: call(local, r))
        assert_same(answer(lambda: call(fs, r)), want, what)
        assert_same(answer(lambda: call(fs, "nowait://" + r)), want, (what, "url"))


def test_open_files_and_urls_read_as_local(tree: Tree) -> None:
    ours = fsspec.open_files(f"nowait://{tree.root}/*.bin", "rb")
    theirs = fsspec.open_files(f"file://{tree.root}/*.bin", "rb")
    assert [o.path for o in ours] == [t.path for t in theirs]
    for o, t in zip(ours, theirs):
        with o as a, t as b:
            assert a.read() == b.read()
    with fsspec.open(f"nowait://{tree.gz}", "rt", compression="infer") as f:
        assert f.read() == tree.text.decode()


# --- chained caches over nowait:// ---


@pytest.mark.parametrize("cache", ["simplecache", "filecache", "blockcache"])
def test_chained_caches_read_as_over_local(tree: Tree, cache: str, tmp_path: Any) -> None:
    """The bytes on disk through each cache (blockcache:: over file:// itself
    fails in fsspec, setting `closed` on LocalFileOpener: the files' bytes
    are the reference here)."""
    blob = tree.blobs[tree.big]
    store = str(tmp_path / "store")
    with fsspec.open(f"{cache}::nowait://{tree.big}", "rb",
                     **{cache: {"cache_storage": store}}) as f:
        f.seek(1_000_000)
        assert f.read(70_000) == blob[1_000_000:1_070_000]
        f.seek(-100, 2)
        assert f.read() == blob[-100:]
    fs = fsspec.filesystem(cache, target_protocol="nowait", cache_storage=store)
    assert fs.cat_file(tree.big) == blob
    assert fs.cat_ranges([tree.big, tree.tiny], [10, 0], [20, None]) == [
        blob[10:20], tree.blobs[tree.tiny]]
    with fs.open(tree.nested, "rb") as g:
        assert g.read() == tree.blobs[tree.nested]
    again = pickle.loads(pickle.dumps(fs))
    assert again.cat_file(tree.nested, 5, 50) == tree.blobs[tree.nested][5:50]


# --- what writes is refused, and how ---


def test_writes_are_refused_as_read_only(tree: Tree) -> None:
    fs = NowaitFileSystem()
    new = os.path.join(tree.root, "new.bin")
    calls: List[Callable[[], Any]] = [
        lambda: fs.open(new, "wb"), lambda: fs.open(new, "ab"), lambda: fs.open(new, "xb"),
        lambda: fs.open(tree.big, "r+b"), lambda: fs.pipe_file(new, b"x"),
        lambda: fs.pipe(new, b"x"), lambda: fs.put_file(tree.big, new),
        lambda: fs.cp_file(tree.big, new), lambda: fs.copy(tree.big, new),
        lambda: fs.mv(tree.big, new), lambda: fs.rm(tree.big), lambda: fs.rm_file(tree.big),
        lambda: fs.touch(new), lambda: fs.mkdir(os.path.join(tree.root, "d")),
        lambda: fs.makedirs(os.path.join(tree.root, "d", "e")),
        lambda: fs.makedirs(tree.root), lambda: fs.rmdir(os.path.join(tree.root, "sub")),
        lambda: fs.open(new, "w").write("x"),
    ]
    for call in calls:
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.EROFS and "nowait:// is read-only" in str(e.value)
    fs.makedirs(tree.root, exist_ok=True)  # nothing to write: as local, no error
    for url in (f"nowait://{new}", f"nowait://{tree.root}/d/new.bin"):
        with pytest.raises(OSError) as e:
            with fsspec.open(url, "wb") as f:
                f.write(b"x")
        assert e.value.errno == errno.EROFS and "nowait:// is read-only" in str(e.value)
    with pytest.raises(OSError, match=r"read-only: opening .* with mode 'wb'"):
        with fsspec.open(f"nowait://{new}", "wb"):
            pass
    assert sorted(os.listdir(tree.root)) == sorted(
        ["big.bin", "tiny.bin", "empty.bin", "lines.txt.gz", "sub"])


def test_import_without_fsspec_says_what_to_install() -> None:
    code = ("import sys; sys.modules['fsspec'] = None\n"
            "try:\n    import nowait.fsspec\n"
            "except ModuleNotFoundError as e:\n    print(e.name, '|', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.startswith("fsspec |") and "pip install 'nowait[fsspec]'" in out, out
