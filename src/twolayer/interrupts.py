"""Interrupts that Python drops are delivered again.

Python cannot propagate an exception raised inside a gc callback (JAX registers one, which runs at every
collection), a ``__del__`` or a weakref callback: it prints "Exception ignored in" and goes on. A SIGINT whose handler
runs there raises its ``KeyboardInterrupt`` into that void, and a simulation meant to stop runs on to its end (a
``reproduce --jobs 2`` worker did so in a suite run, and its parent waited for it until the test's timeout).

With ``redeliver_dropped_interrupts()`` (for the process's life) or within ``dropped_interrupts_delivered_again()``
(a block), such a ``KeyboardInterrupt`` is sent again as SIGINT to the main thread from another one,
``REDELIVER_SECONDS`` later (a handler that ran within ``sys.unraisablehook`` would be dropped as well), so the
process's SIGINT handler raises it at an ordinary line. ``on_lost`` is called first (a handler that ignores
repeated SIGINTs uses it to take the next one). Every other unraisable exception goes to the hook that was there.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator

REDELIVER_SECONDS = 0.05


def send_sigint_to_the_main_thread() -> None:
    """SIGINT to the main thread, where Python runs signal handlers: it also ends a blocking call there (a sleep).
    Where there is no ``pthread_kill`` (Windows), ``raise_signal`` (``os.kill(pid, SIGINT)`` would end the process
    there)."""
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:
        signal.raise_signal(signal.SIGINT)


def redeliver_dropped_interrupts(on_lost: Callable[[], None] = lambda: None) -> Callable:
    """From now on, a ``KeyboardInterrupt`` that Python drops is raised again (module docstring); returns the
    ``sys.unraisablehook`` it replaced."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            on_lost()
            resend = threading.Timer(REDELIVER_SECONDS, send_sigint_to_the_main_thread)
            resend.daemon = True  # a process that ends first is not kept for it
            resend.start()
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    return previous


@contextlib.contextmanager
def dropped_interrupts_delivered_again(on_lost: Callable[[], None] = lambda: None) -> Iterator[None]:
    """``redeliver_dropped_interrupts`` within the block; the previous hook is restored after it."""
    previous = redeliver_dropped_interrupts(on_lost)
    try:
        yield
    finally:
        sys.unraisablehook = previous
