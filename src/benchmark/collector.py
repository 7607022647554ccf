"""Python's cyclic garbage collector in a command that runs once and exits (`python -m benchmark ...`).

Importing the suite and its libraries, composing the config and loading a backend make hundreds of thousands of
objects that live until the process ends: modules, classes, a classifier's vocabulary, a model's layers. The
collector walks all of them again and again while they are made, and once more when the interpreter tears down,
and finds nothing to free: in the default run, about a fifth of its time (docs/results.md). So such a process makes
them with collection paused and then freezes them (keeps them out of every later collection); what the run makes
afterwards is collected as usual.

Only such a process: in one that goes on (the tests, a notebook, a sweep that loads one model after another) a
frozen object dropped later, a replaced backend say, would never be collected."""

from __future__ import annotations

import gc
from contextlib import contextmanager

_ONE_COMMAND = False


def one_command() -> None:
    """This process runs one command and exits: what it loads may be frozen."""
    global _ONE_COMMAND
    _ONE_COMMAND = True


@contextmanager
def long_lived():
    """Objects made inside live as long as the process: where it runs one command, no collection while they are
    made and none of them walked by a later one; elsewhere nothing changes."""
    if not _ONE_COMMAND:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def before_exit() -> None:
    """At the end of the command, its files and caches closed: the interpreter frees what is left without walking it
    for cycles first."""
    if _ONE_COMMAND:
        gc.freeze()
