"""Errors: OSError subclasses with errno and filename, ValueError for a
request the file cannot take; never a panic."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys

import pytest

import nowait
from conftest import modes


def test_missing_file(datadir):
    d, _ = datadir
    path = os.path.join(d, "does-not-exist")
    with pytest.raises(FileNotFoundError) as e:
        nowait.open(path)
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == path
    assert e.value.strerror is not None
    assert "cannot open" in e.value.strerror and "check the path" in e.value.strerror


def test_paths_as_open_takes_them(data, datadir):
    """str, bytes and os.PathLike paths open the same file; a name that is
    not UTF-8 comes back from ``name`` as os.fsdecode gives it and opens the
    file again; a NUL byte is a ValueError and a non-path a TypeError, as in
    Python's own ``open``."""
    import pathlib
    path, blob, _ = data
    for p in (path, os.fsencode(path), pathlib.Path(path), pathlib.PurePosixPath(path)):
        with nowait.open(p, direct="off") as f:
            assert f.read_at(5, 20) == blob[5:25]
            assert f.name == path
    d, _ = datadir
    odd = os.path.join(os.fsencode(d), b"caf\xe9.bin")
    with open(odd, "wb") as w:
        w.write(b"not utf-8")
    try:
        with nowait.open(odd, direct="off") as f:
            assert isinstance(f.name, str) and os.fsencode(f.name) == odd
            with nowait.open(f.name, direct="off") as g:
                assert g.read_at(0, 9) == b"not utf-8"
        assert nowait.probe(odd)["file"] is not None
    finally:
        os.unlink(odd)
    for bad in ("a\0b", b"a\0b"):
        with pytest.raises(ValueError, match="NUL"):
            nowait.open(bad)
    for wrong in (None, 1.5, True, [path]):
        with pytest.raises(TypeError):
            nowait.open(wrong)  # type: ignore[arg-type]


def test_directory(datadir):
    d, _ = datadir
    with pytest.raises(IsADirectoryError) as e:
        nowait.open(d)
    assert e.value.errno == errno.EISDIR
    assert e.value.filename == d
    assert "is a directory" in str(e.value)


def test_not_a_regular_file():
    with pytest.raises(OSError) as e:
        nowait.open("/dev/null")
    assert "not a regular file" in str(e.value) or e.value.errno is not None


def test_permission_denied(datadir):
    d, _ = datadir
    path = os.path.join(d, "secret.bin")
    with open(path, "wb") as f:
        f.write(b"x" * 100)
    os.chmod(path, 0o000)
    try:
        if os.geteuid() != 0:
            with pytest.raises(PermissionError) as e:
                nowait.open(path)
            assert e.value.errno == errno.EACCES and e.value.filename == path
            return
        # root reads anything: check in a child that drops to nobody.
        code = (
            "import nowait, sys\n"
            "try:\n"
            f"    nowait.open({path!r})\n"
            "except PermissionError as e:\n"
            f"    assert e.errno == 13 and e.filename == {path!r}, e\n"
            "    print('PermissionError', e)\n"
            "    sys.exit(0)\n"
            "sys.exit(3)\n"
        )

        def drop():
            os.setgid(65534)
            os.setuid(65534)

        # User nobody may not reach this interpreter's environment (a venv
        # under /root): give it a world-readable copy of the package (one
        # abi3 build serves any CPython >= 3.9) and try the interpreters in
        # turn.
        os.chmod(d, 0o755)
        pkg = os.path.join(d, "pkg")
        if not os.path.isdir(pkg):
            shutil.copytree(os.path.dirname(nowait.__file__), os.path.join(pkg, "nowait"))
        for root, dirs, files in os.walk(pkg):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        env = dict(os.environ, PYTHONPATH=pkg)
        tried = []
        candidates = [sys.executable, shutil.which("python3") or "", "/usr/bin/python3"]
        for exe in dict.fromkeys(candidates):
            if not exe or not os.path.exists(exe):
                continue
            try:
                # Can nobody run this interpreter and import the copy at all?
                probe = subprocess.run([exe, "-c", "import nowait"], preexec_fn=drop, env=env,
                                       cwd="/", capture_output=True, text=True, timeout=60)
            except PermissionError as e:
                tried.append(f"{exe}: {e}")
                continue
            if probe.returncode != 0:
                tried.append(f"{exe}: {probe.stderr.strip().splitlines()[-1:]}")
                continue
            r = subprocess.run([exe, "-c", code], preexec_fn=drop, env=env, cwd="/",
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (exe, r.stdout, r.stderr)
            assert "PermissionError" in r.stdout
            return
        pytest.skip("SKIP test_permission_denied: running as root and user nobody cannot "
                    f"run a Python here ({'; '.join(tried)})")
    finally:
        os.chmod(path, 0o600)


def test_misaligned_direct_on(data):
    path, _, direct_ok = data
    if "on" not in modes(direct_ok):
        pytest.skip("SKIP test_misaligned_direct_on: no filesystem here takes O_DIRECT")
    with nowait.open(path, direct="on") as f:
        with pytest.raises(ValueError) as e:
            f.read_at(4097, 4096)
        msg = str(e.value)
        assert "offset 4097" in msg and "4096 bytes" in msg and "multiples of" in msg
        with pytest.raises(ValueError, match="offset 0"):
            f.read_many([0], 100)
        buf = bytearray(8192 + 1)
        with pytest.raises(ValueError, match="not aligned"):
            f.read_into(memoryview(buf)[1:], [0, 4096], 4096)
        # The file still works after the errors.
        assert len(f.read_at(0, 4096)) == 4096


def test_direct_on_where_impossible():
    # procfs refuses O_DIRECT at open (EINVAL); "auto" falls back to buffered.
    path = "/proc/version"
    with pytest.raises(OSError) as e:
        nowait.open(path, direct="on")
    assert e.value.errno == errno.EINVAL and e.value.filename == path
    assert "O_DIRECT" in str(e.value) and 'direct="auto"' in str(e.value)
    assert "Direct::" not in str(e.value)
    with open(path, "rb") as f:
        want = f.read()
    with nowait.open(path, direct="auto") as g:
        assert not g.direct
        assert g.read_at(0, 4096)[:20] == want[:20]


def test_offsets_too_large_are_overflow_errors(data):
    """An offset of 2**63 or more is an OverflowError for every method, as
    for os.pread; a non-int offset is a TypeError."""
    path, _, _ = data
    with nowait.open(path, direct="off") as f:
        with pytest.raises(OverflowError):
            f.read_at(2**63, 4)
        with pytest.raises(OverflowError):
            f.read_many([0, 2**63], 4)
        with pytest.raises(OverflowError):
            f.read_into(bytearray(8), [2**64], 4)
        with pytest.raises(TypeError):
            f.read_many(["0"], 4)  # type: ignore[list-item]
        with pytest.raises(OverflowError):
            f.read_many([0], 2**63)
    # The name in an OSError is the one asked for, also when it is not
    # UTF-8 (as Python's open gives it back).
    with pytest.raises(FileNotFoundError) as e:
        nowait.open(b"/nonexistent/caf\xe9")
    assert os.fsencode(e.value.filename) == b"/nonexistent/caf\xe9"


def test_too_large_read(data):
    path, _, _ = data
    with nowait.open(path) as f:
        with pytest.raises(ValueError, match="limit"):
            f.read_at(0, 1 << 32)
