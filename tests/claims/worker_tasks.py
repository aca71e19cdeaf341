"""Module-level tasks for ``tests/claims/test_workers.py`` (spawned workers import them by name)."""

from __future__ import annotations

import gc
import os
import signal
import time


def square(item, emit):
    emit("seen", item)
    if item == "raise":
        raise ValueError("bad item")
    if item == "die":
        os._exit(3)  # the process ends without returning, as when the kernel kills it for memory
    return item * item


def slow(item, emit):
    emit("seen", item)
    time.sleep(60)  # until the parent's SIGINT ends it (a KeyboardInterrupt in the worker)
    return item


def send_sigint_inside_a_gc_callback():
    """SIGINT to this process from a gc callback, so that the handler's KeyboardInterrupt is raised inside the
    callback, where Python drops it (as it did inside JAX's gc callback in a suite run)."""
    def callback(phase, info):
        if phase == "start":
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100_000):  # the handler runs here, within the callback
                pass

    gc.callbacks.append(callback)
    gc.collect()


def interrupted_inside_a_gc_callback(item, emit):
    """A task whose interrupt Python drops (``send_sigint_inside_a_gc_callback``)."""
    send_sigint_inside_a_gc_callback()
    emit("seen", item)
    time.sleep(60)  # the lost interrupt, delivered again, ends it
    return item
