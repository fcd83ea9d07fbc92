"""Shared fixtures: data files with seeded random bytes on a filesystem that
takes O_DIRECT where there is one, and a watchdog on every test."""

from __future__ import annotations

import asyncio
import errno
import faulthandler
import os
import random
import shutil
import sys
import tempfile

from typing import Any, Coroutine, Generator, List, Literal, Set, Tuple, TypeVar, cast

import pytest

#: The `data` fixture: (path, its bytes, whether the filesystem takes O_DIRECT).
DataFile = Tuple[str, bytes, bool]
#: The `datadir` fixture: (directory, whether it takes O_DIRECT).
DataDir = Tuple[str, bool]
#: A `direct=` mode of nowait.open.
DirectMode = Literal["off", "auto", "on"]
#: A `nowait=` mode of nowait.open.
NowaitMode = Literal["adaptive", "always", "off"]

# Every call that waits must provably return: a test that hangs dumps every
# thread's stack and fails the run instead of blocking CI.
WATCHDOG_S = 120


EXPECTED_SKIPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".ci",
                              "expected-skips")


def _expected_skips() -> Set[str]:
    try:
        with open(EXPECTED_SKIPS) as f:
            return {line.split(": ", 1)[0].strip() for line in f
                    if line.strip() and not line.startswith("#")}
    except OSError:
        return set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Any, None]:
    """No quiet passes (issue #11): with CI=true a skip fails unless
    .ci/expected-skips lists its name (`SKIP <name>: <reason>`)."""
    outcome = yield
    report: Any = outcome.get_result()
    if not report.skipped or os.environ.get("CI") != "true":
        return
    longrepr: Any = report.longrepr
    if isinstance(longrepr, tuple):
        reason = str(cast("tuple[Any, Any, Any]", longrepr)[2])
    else:
        reason = str(longrepr)
    text = reason.split("SKIP ", 1)[-1]
    name = text.split(": ", 1)[0].strip()
    if name not in _expected_skips():
        report.outcome = "failed"
        report.longrepr = (f"unexpected skip in CI: {reason}; make it run on the CI machine "
                           f"or list `{name}: <why>` in .ci/expected-skips")


@pytest.fixture(autouse=True)
def _watchdog() -> Generator[None, None, None]:
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _takes_o_direct(d: str) -> bool:
    path = os.path.join(d, ".nowait-odirect-probe")
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(path)
    return True


def _pick_dir() -> tuple[str, bool]:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("NOWAIT_TEST_DIR"), tempfile.gettempdir(), "/var/tmp", here]
    for c in candidates:
        if c and os.path.isdir(c) and os.access(c, os.W_OK) and _takes_o_direct(c):
            return c, True
    return tempfile.gettempdir(), False


@pytest.fixture(scope="session")
def datadir() -> Generator[DataDir, None, None]:
    base, direct_ok = _pick_dir()
    d = tempfile.mkdtemp(prefix="nowait-py-", dir=base)
    yield d, direct_ok
    shutil.rmtree(d, ignore_errors=True)


def write_random(path: str, size: int, seed: int) -> bytes:
    data = random.Random(seed).randbytes(size) if sys.version_info >= (3, 9) else os.urandom(size)
    with open(path, "wb") as f:
        f.write(data)
    return data


@pytest.fixture(scope="session")
def data(datadir: DataDir) -> DataFile:
    """(path, bytes, direct_ok): 3 MiB + 1234 bytes of seeded random data
    (the size is not a multiple of 4096, so reads straddle end of file)."""
    d, direct_ok = datadir
    path = os.path.join(d, "data.bin")
    blob = write_random(path, 3 * 1024 * 1024 + 1234, seed=14)
    return path, blob, direct_ok


def drop_cache(path: str) -> None:
    """Evict the file from the page cache (best effort: fadvise)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def modes(direct_ok: bool) -> List[DirectMode]:
    """The direct modes this filesystem can run."""
    return ["off", "auto", "on"] if direct_ok else ["off", "auto"]


def pread(path: str, offset: int, size: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


ENOENT = errno.ENOENT


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T], timeout: float = 90) -> T:
    """asyncio.run with a deadline: a wake-up that never arrives fails the
    test (asyncio.TimeoutError) instead of hanging it."""
    async def guarded() -> T:
        return await asyncio.wait_for(coro, timeout)
    return asyncio.run(guarded())
