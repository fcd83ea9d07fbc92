"""Errors: OSError subclasses with errno and filename, ValueError for a
request the file cannot take; never a panic."""

# These tests read the extension's sample of every library error: private names on purpose.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from typing import Dict, List

import pytest

import nowait
from conftest import DataDir, DataFile, modes


def test_missing_file(datadir: DataDir) -> None:
    d, _ = datadir
    path = os.path.join(d, "does-not-exist")
    with pytest.raises(FileNotFoundError) as e:
        nowait.open(path)
    assert e.value.errno == errno.ENOENT
    assert e.value.filename == path
    assert e.value.strerror is not None
    assert "cannot open" in e.value.strerror and "check the path" in e.value.strerror


def test_paths_as_open_takes_them(data: DataFile, datadir: DataDir) -> None:
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


def test_directory(datadir: DataDir) -> None:
    d, _ = datadir
    with pytest.raises(IsADirectoryError) as e:
        nowait.open(d)
    assert e.value.errno == errno.EISDIR
    assert e.value.filename == d
    assert "is a directory" in str(e.value)


def test_not_a_regular_file() -> None:
    """A character device is refused with ESPIPE, as a fifo or a socket:
    nowait reads only regular files and block devices, at offsets."""
    with pytest.raises(OSError) as e:
        nowait.open("/dev/null")
    assert e.value.errno == errno.ESPIPE and e.value.filename == "/dev/null"
    assert "character device" in str(e.value) and "not a regular file" in str(e.value)


def test_permission_denied(datadir: DataDir) -> None:
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

        def drop() -> None:
            os.setgid(65534)
            os.setuid(65534)

        # User nobody may not reach this interpreter's environment (a venv
        # under /root): give it a world-readable copy of the package (one
        # abi3 build serves any CPython >= 3.10) and try the interpreters in
        # turn.
        os.chmod(d, 0o755)
        pkg = os.path.join(d, "pkg")
        if not os.path.isdir(pkg):
            shutil.copytree(os.path.dirname(nowait.__file__), os.path.join(pkg, "nowait"))
        for root, _dirs, files in os.walk(pkg):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        env = dict(os.environ, PYTHONPATH=pkg)
        tried: List[str] = []
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


def test_misaligned_direct_on(data: DataFile) -> None:
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


def test_direct_on_where_impossible() -> None:
    # procfs refuses O_DIRECT at open (EINVAL); "auto" falls back to buffered.
    path = "/proc/version"
    with pytest.raises(OSError) as e:
        nowait.open(path, direct="on")
    assert e.value.errno == errno.EOPNOTSUPP and e.value.filename == path
    msg = str(e.value)
    assert "O_DIRECT" in msg and 'direct="off"' in msg and 'direct="auto"' in msg
    assert "Direct::" not in msg and "--direct" not in msg
    with open(path, "rb") as f:
        want = f.read()
    with nowait.open(path, direct="auto") as g:
        assert not g.direct
        assert g.read_at(0, 4096)[:20] == want[:20]


def test_offsets_too_large_are_overflow_errors(data: DataFile) -> None:
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


def test_too_large_read(data: DataFile) -> None:
    path, _, _ = data
    with nowait.open(path) as f:
        with pytest.raises(ValueError, match="limit"):
            f.read_at(0, 1 << 32)


# What each error of the library becomes here. The errno is the library's
# own (the number the C API returns and Rust's io::Error carries); the
# class follows from it: a request nowait refuses itself (EINVAL) is a
# ValueError, end of file inside an exact read an EOFError, the rest an
# OSError whose subclass Python picks from the errno.
EXPECTED = {
    "Open": (OSError, None),  # the kernel's answer: ENOENT, or EIO without one
    "IsDirectory": (IsADirectoryError, errno.EISDIR),
    "Unsupported": (OSError, errno.ESPIPE),
    "DirectUnsupported": (OSError, errno.EOPNOTSUPP),
    "Misaligned": (ValueError, errno.EINVAL),
    "BufferTooSmall": (ValueError, errno.EINVAL),
    "TooLarge": (ValueError, errno.EINVAL),
    "OffsetTooLarge": (ValueError, errno.EINVAL),
    "QueueFull": (OSError, errno.EBUSY),
    "Read": (OSError, errno.EIO),
    "UnexpectedEof": (EOFError, errno.ENODATA),
    "BackendUnavailable": (OSError, errno.EOPNOTSUPP),
    "Kernel": (OSError, errno.ENOMEM),
    "BadPosition": (ValueError, errno.EINVAL),
    "Config": (ValueError, errno.EINVAL),
    "Closed": (BrokenPipeError, errno.EPIPE),
    "FileTooLarge": (OSError, errno.EFBIG),
}


def test_every_error_reaches_python_with_the_librarys_errno() -> None:
    samples = nowait._nowait._error_samples()
    assert {name for name, _, _ in samples} == set(EXPECTED), "a variant without a case here"
    for name, lib_errno, exc in samples:
        cls, want = EXPECTED[name]
        assert isinstance(exc, cls), (name, type(exc), exc)
        # Every error carries the errno, ValueError and TypeError included.
        got_errno = getattr(exc, "errno")
        assert got_errno == lib_errno, (name, got_errno, lib_errno)
        if want is not None:
            assert lib_errno == want, (name, lib_errno, want)
        if isinstance(exc, OSError):
            # OSError's own subclass for the errno, where Python has one.
            assert type(exc) is type(OSError(lib_errno, "x")), (name, type(exc))
            if name in ("Open", "IsDirectory", "DirectUnsupported", "Read", "FileTooLarge"):
                assert exc.filename == "/data/sample", (name, exc.filename)
        msg = str(exc)
        for other_front_end in ("::", "--", "(os error", "NOWAIT_", "Direct"):
            assert other_front_end not in msg, (name, msg)


def test_messages_name_this_packages_arguments() -> None:
    by_name: Dict[str, List[str]] = {}
    for name, _, exc in nowait._nowait._error_samples():
        by_name.setdefault(name, []).append(str(exc))
    assert 'ask for direct="off" (buffered) or direct="auto"' in by_name["DirectUnsupported"][0]
    assert 'direct="auto" to bounce it' in by_name["Misaligned"][0]
    assert any("depth=100000 is out of range" in m for m in by_name["Config"])
    assert "No such file or directory (ENOENT); check the path" in by_name["Open"][0]
