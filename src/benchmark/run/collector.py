"""Python's cyclic garbage collector in a command that runs once and exits (`python -m benchmark ...`).

Importing the suite and its libraries, composing the config and loading a backend make hundreds of thousands of
objects that live until the process ends: modules, classes, a classifier's vocabulary, a model's layers. The
collector walks all of them again and again while they are made, and once more when the interpreter tears down,
and finds nothing to free: in the default run, about a fifth of its time (docs/results.md). So such a process makes
them with collection paused, collects once (loading leaves garbage in cycles: SmolLM2's leaves a discarded copy of
its weights, 538 MB), and freezes what is left (keeps it out of every later collection); what the run makes
afterwards is collected as usual.

Only such a process: in one that goes on (the tests, a notebook, a sweep that loads one model after another), a
frozen object dropped later in a reference cycle, a replaced backend say, would never be freed. The price here: a
load's garbage in cycles is freed when the load ends, not while it runs (SmolLM2's 538 MB stay until then)."""

from __future__ import annotations

import gc
from contextlib import contextmanager

_ONE_COMMAND = False


def one_command() -> None:
    """This process runs one command and exits: what it loads may be frozen."""
    global _ONE_COMMAND
    _ONE_COMMAND = True


@contextmanager
def long_lived(collect: bool = True):
    """Objects made inside live as long as the process: where it runs one command, no collection while they are
    made, one walk when they are done (collect=False: none, where the block leaves little garbage), and none by a
    later collection; elsewhere nothing changes."""
    if not _ONE_COMMAND:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collect:
            gc.collect()  # the garbage the block left in cycles, before the rest is frozen for good
        gc.freeze()
        if enabled:
            gc.enable()


def before_exit() -> None:
    """At the end of the command, its files and caches closed: the interpreter frees what is left without walking it
    for cycles first."""
    if _ONE_COMMAND:
        gc.freeze()
