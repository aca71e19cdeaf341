"""Worker processes for ``reproduce --jobs N``: independent tasks on N processes, their progress events
forwarded to the parent as they happen, and a task whose process dies isolated from the others.

``map_in_processes(fn, items, jobs=N, on_event=...)`` calls ``fn(item, emit)`` in N spawned processes (each
keeps its compiled programs between its tasks; across processes the persistent XLA cache shares them).
``emit(name, *args)`` in a worker reaches ``on_event(worker, name, args)`` in the parent, on the parent's
thread, while the tasks run (``worker`` is the worker's process id). Returns, per item, what ``fn`` returned,
the exception it raised, or ``WorkerDied``: when a process dies (killed for memory, a crash in compiled code),
every unfinished task is run again alone in a fresh process, so only the task that kills its own process is
lost. Ctrl-C in the parent interrupts the workers' tasks (SIGINT: a run records its interruption, as in one
process), starts no further task and raises ``KeyboardInterrupt``. The parent takes its first SIGINT at its next
poll (``DeferredInterrupt``), never inside a read of the event pipe: a ``KeyboardInterrupt`` between a message's
length and its bytes would leave the pipe unreadable and the parent blocked in the read that follows (the likely
cause of a parent that did not exit within 120 s of its SIGINT, once in a suite run). A worker's interrupt that
Python drops (raised inside JAX's gc callback, in another suite run) is delivered again (``twolayer.interrupts``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from twolayer.interrupts import redeliver_dropped_interrupts

POLL_SECONDS = 0.1  # how often the parent forwards the workers' events while it waits


@dataclass(frozen=True)
class WorkerDied:
    """The process running a task ended without returning (``reason`` says how)."""

    reason: str


class DeferredInterrupt:
    """Within the block, the first SIGINT only sets ``pending`` and ``check()`` raises ``KeyboardInterrupt`` at a point
    the caller chose; a second SIGINT raises at once (a user who insists). Off the main thread (where Python delivers
    no signal) the block changes nothing."""

    def __init__(self):
        self.pending = False
        self.previous = None

    def __enter__(self) -> DeferredInterrupt:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame):
        if self.pending:
            raise KeyboardInterrupt
        self.pending = True

    def check(self) -> None:
        if self.pending:
            raise KeyboardInterrupt

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


_EVENTS: Any = None  # the worker's end of the event queue (set by ``_start_worker``)
_INTERRUPTED = False  # the worker got SIGINT: it starts no further task
_LOST = False  # the KeyboardInterrupt raised for it was dropped by Python: the next SIGINT raises it again


def _on_interrupt(signum, frame):
    """The first SIGINT raises ``KeyboardInterrupt`` in the task; later ones (the terminal's and the parent's
    both arrive) are ignored, so they cannot cut short the run's recording of its interruption, unless the first
    one was lost (``_on_lost``)."""
    global _INTERRUPTED, _LOST
    if not _INTERRUPTED or _LOST:
        _INTERRUPTED, _LOST = True, False
        raise KeyboardInterrupt


def _on_lost() -> None:
    """The KeyboardInterrupt of the first SIGINT was dropped (``twolayer.interrupts``): the next SIGINT raises."""
    global _LOST
    _LOST = True


def _start_worker(events, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    global _EVENTS
    _EVENTS = events
    signal.signal(signal.SIGINT, _on_interrupt)
    redeliver_dropped_interrupts(_on_lost)
    if initializer is not None:
        initializer(*initargs)


def _emit(name: str, *args) -> None:
    _EVENTS.put((os.getpid(), name, args))


def _call(fn: Callable[[Any, Callable[..., None]], Any], item: Any) -> Any:
    if _INTERRUPTED:  # a task queued before the interrupt reached this worker
        raise KeyboardInterrupt
    return fn(item, _emit)


def map_in_processes(fn: Callable[[Any, Callable[..., None]], Any], items: Iterable[Hashable], *, jobs: int,
                     on_event: Callable[[int, str, tuple], None] = lambda worker, name, args: None,
                     initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> dict[Any, Any]:
    """``{item: fn(item, emit)}`` computed on ``jobs`` spawned processes, in the order of ``items`` (see the
    module docstring). ``fn``, ``initializer`` and the items must be picklable (module-level functions)."""
    items = list(dict.fromkeys(items))
    results: dict[Any, Any] = {}
    alone = False  # after a process died: every remaining task in its own fresh process
    while len(results) < len(items):
        todo = [i for i in items if i not in results]
        batch = todo[:1] if alone else todo
        try:
            _run_pool(fn, batch, 1 if alone else max(1, jobs), on_event, initializer, initargs, results)
        except BrokenProcessPool as e:
            if alone:
                results[batch[0]] = WorkerDied(f"its worker process died ({e})")
            alone = True
    return {i: results[i] for i in items}


def _run_pool(fn, batch: list, jobs: int, on_event, initializer, initargs, results: dict) -> None:
    context = multiprocessing.get_context("spawn")  # never fork a process that has started JAX's threads
    events = context.SimpleQueue()  # written synchronously: an event reaches the pipe before the task returns
    others = set(multiprocessing.active_children())
    with DeferredInterrupt() as interrupt:
        try:
            with ProcessPoolExecutor(max_workers=min(jobs, len(batch)), mp_context=context, initializer=_start_worker,
                                     initargs=(events, initializer, initargs)) as pool:
                futures: dict[Future, Any] = {pool.submit(_call, fn, item): item for item in batch}
                pending = set(futures)
                try:
                    while pending:
                        finished, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                        _forward(events, on_event)
                        broken = [e for future in finished if (e := _collect(future, futures[future], results))]
                        if broken:
                            raise broken[0]
                        interrupt.check()
                except KeyboardInterrupt:  # stop as one process stops: the workers' runs record their interruption
                    for future in pending:
                        future.cancel()
                    for worker in set(multiprocessing.active_children()) - others:
                        os.kill(worker.pid, signal.SIGINT)
                    raise
        finally:
            _forward(events, on_event)  # what the workers flushed while they exited
        interrupt.check()  # a SIGINT after the last task finished


def _collect(future: Future, item, results: dict) -> BrokenProcessPool | None:
    """Store the task's result (or the exception it raised: the other tasks go on); a dead pool is returned."""
    try:
        results[item] = future.result()
    except BrokenProcessPool as e:
        return e
    except Exception as e:
        results[item] = e
    return None


def _forward(events, on_event) -> None:
    while not events.empty():
        worker, name, args = events.get()
        on_event(worker, name, args)
