"""The asynchronous methods under trio (and anyio's trio backend).

One ring per trio run, kept in a :class:`trio.lowlevel.RunVar`, as asyncio
keeps one per event loop. Two system tasks of the run serve it:

- the completion task waits with :func:`trio.lowlevel.wait_readable` on
  the ring's eventfd, reaps, and reschedules each waiting task with its
  result (or its exception);
- the submit task hands the reads that tasks pushed to the kernel: a
  task that starts a read wakes it, and it runs after the tasks of the
  current batch, so the reads of every task that ran in it share one
  system call (the asyncio ring's one submit per loop iteration).

A task waits in :func:`trio.lowlevel.wait_task_rescheduled`. Cancelling it
takes it off the waiters at once; its read stays with the ring, which
keeps the read's memory (the ``bytes`` being filled, the caller's buffer
export) until the kernel is done with it and the completion is reaped,
and then drops the result. When the run ends its system tasks are
cancelled; the completion task then waits (the GIL released) until the
kernel has finished every read still in flight, so the ring is dropped
with nothing lent.

Imported only once a task of a trio run calls an asynchronous method.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import outcome
import trio

# The package's own extension module: not private use.
from . import _nowait  # pyright: ignore[reportPrivateUsage]


class _TrioRing:
    """The ring of one trio run (see the module docs)."""

    def __init__(self) -> None:
        self._ring = _nowait._Ring()
        self._fd = self._ring.fileno()
        self._waiters: Dict[int, trio.lowlevel.Task] = {}
        # The submit task while it is parked; None while it is scheduled
        # or running, when `_submit_wanted` tells it to submit again.
        self._submitter: Optional[trio.lowlevel.Task] = None
        self._submit_wanted = False
        trio.lowlevel.spawn_system_task(self._complete, name="nowait ring: completions")
        trio.lowlevel.spawn_system_task(self._submit_loop, name="nowait ring: submits")

    async def call(self, file: Any, kind: str, offsets: Any, size: Any,
                   buffer: Any = None, ioprio: int = 0) -> Any:
        """Start a call on the ring (its reads at I/O priority ``ioprio``)
        and wait for its result."""
        op, queued = self._ring.start(file, kind, offsets, size, buffer, ioprio)
        if queued:
            self._want_submit()
        self._waiters[op] = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            # Cancelled: the read goes on with the ring, which drops its
            # result (and then its memory) when it is reaped.
            self._waiters.pop(op, None)
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    def _want_submit(self) -> None:
        task, self._submitter = self._submitter, None
        if task is not None:
            trio.lowlevel.reschedule(task)
        else:
            self._submit_wanted = True

    def _fail_all(self, exc: BaseException) -> None:
        """The engine failed: fail every waiter rather than leave it hanging."""
        waiting = list(self._waiters.values())
        self._waiters.clear()
        for task in waiting:
            trio.lowlevel.reschedule(task, outcome.Error(exc))

    async def _submit_loop(self) -> None:
        me = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._submitter = None
            return trio.lowlevel.Abort.SUCCEEDED

        while True:
            if self._submit_wanted:
                self._submit_wanted = False
                # Let the other tasks of this batch start their reads too.
                await trio.lowlevel.cancel_shielded_checkpoint()
            else:
                self._submitter = me
                await trio.lowlevel.wait_task_rescheduled(abort)
            self._submit_wanted = False
            try:
                self._ring.submit()
            except Exception as exc:
                self._fail_all(exc)

    async def _complete(self) -> None:
        try:
            while True:
                await trio.lowlevel.wait_readable(self._fd)
                try:
                    finished = self._ring.poll()
                except Exception as exc:
                    self._fail_all(exc)
                    continue
                for op, ok, value in finished:
                    task = self._waiters.pop(op, None)
                    if task is None:
                        continue  # its caller was cancelled
                    trio.lowlevel.reschedule(
                        task, outcome.Value(value) if ok else outcome.Error(value))
        finally:
            # The run is ending: wait, without the GIL, for the kernel to
            # finish the reads still in flight (cancelled ones), so that
            # the ring is dropped with nothing lent.
            self._ring.settle()


_RING: trio.lowlevel.RunVar[_TrioRing] = trio.lowlevel.RunVar("nowait_ring")


def current_ring() -> Optional[_TrioRing]:
    """The ring of the running trio run (made at its first call), or None
    outside a trio run."""
    try:
        return _RING.get()
    except LookupError:
        ring = _TrioRing()
        _RING.set(ring)
        return ring
    except RuntimeError:
        return None
