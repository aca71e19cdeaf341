"""Module-level tasks for ``tests/claims/test_workers.py`` (spawned workers import them by name)."""

from __future__ import annotations

import os
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
