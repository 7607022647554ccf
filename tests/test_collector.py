"""The collector settings of a command that runs once and exits (benchmark/collector.py), and of every other caller."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from benchmark.run import collector


def test_in_process_callers_keep_the_collector_as_it_was():
    """Tests, notebooks and sweeps go on after a run: nothing they load is frozen, collection is never paused."""
    frozen = gc.get_freeze_count()
    with collector.long_lived():
        assert gc.isenabled()
        kept = [[i] for i in range(1000)]
    collector.before_exit()
    assert gc.get_freeze_count() == frozen and gc.isenabled() and kept


def test_a_one_command_process_loads_without_collecting_then_freezes_what_it_loaded():
    code = """
import gc
from benchmark.run import collector
collector.one_command()
with collector.long_lived():
    paused = not gc.isenabled()
    loaded = [[i] for i in range(1000)]
frozen = gc.is_tracked(loaded) and not any(o is loaded for o in gc.get_objects())  # no collection walks it
garbage = [[] for _ in range(10)]
for g in garbage:
    g.append(g)  # cycles made after loading: still collected
del garbage, g
found = gc.collect()
print(paused, gc.isenabled(), frozen, found >= 10)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True", "True"]


def test_collection_stays_off_where_the_caller_had_turned_it_off():
    code = """
import gc
from benchmark.run import collector
collector.one_command()
gc.disable()
with collector.long_lived():
    pass
print(gc.isenabled())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"]


def test_garbage_left_in_cycles_while_loading_is_collected_not_frozen():
    """Loading a model can leave a discarded copy of its weights in reference cycles (SmolLM2's: 538 MB); a frozen
    object is never collected, so that garbage must go before the rest is frozen."""
    code = """
import gc, weakref
from benchmark.run import collector
collector.one_command()
class Weights:
    pass
with collector.long_lived():
    kept = Weights()
    dropped = Weights()
    dropped.me = dropped  # a cycle: only the cyclic collector frees it
    gone = weakref.ref(dropped)
    del dropped
print(gone() is None, gc.get_freeze_count() > 0, kept is not None)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True"]


@pytest.mark.parametrize("one_command", [True, False])
def test_a_run_freezes_its_backend_only_in_a_one_command_process(one_command, data_root, tmp_path):
    code = f"""
import gc
from benchmark.run import collector, runner
from benchmark.composition import compose
if {one_command}:
    collector.one_command()
runner.run(compose(["limit=5", "progress=false", "results_dir={tmp_path}"], keep=False))
[backend] = runner.POOL.kept.values()
print(gc.is_tracked(backend), any(o is backend for o in gc.get_objects()), gc.isenabled())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-3:] == ["True", str(not one_command), "True"]

