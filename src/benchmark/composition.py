"""Composition, above the kinds: the task and run schemas (the common records of config.py with every registered kind's
section), and the run config as `python -m benchmark OVERRIDES` composes it, checked file by file before Hydra reads
any of them, kept once composed (compose_cache.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Optional

from . import compose_cache
from .config import RunBase, TaskBase
from .kinds import registered
from .paths import CONF_DIR
from .safe_yaml import config_files, search_path_folders


_SCHEMAS: dict = {}


def task_schema() -> type:
    """The task file's schema, TaskConfig: TaskBase with each registered kind's own section (classify, attack, dialogue, and
    any kind registered since: kinds.register), made once per set of kinds."""
    return _schemas(_sections(registered()))[0]


def run_schema() -> type:
    """The composed run's schema, RunConfig: RunBase with the task as task_schema() has it."""
    return _schemas(_sections(registered()))[1]


def _schemas(sections: tuple) -> tuple[type, type]:
    """(TaskConfig, RunConfig) for these kinds' sections, made once."""
    if sections not in _SCHEMAS:
        task = dataclasses.make_dataclass("TaskConfig", [(name, Optional[schema], field(default=None))
                                                         for name, schema in sections], bases=(TaskBase,))
        task.__module__ = __name__
        run = dataclasses.make_dataclass("RunConfig", [("task", task, field(default_factory=task))],
                                         bases=(RunBase,))
        run.__module__ = __name__
        _SCHEMAS[sections] = (task, run)
    return _SCHEMAS[sections]


def _sections(kinds: dict) -> tuple:
    """(section, its dataclass) of every kind that has one, in name order."""
    return tuple(sorted(((k.section, k.section_schema) for k in kinds.values() if k.section), key=lambda s: s[0]))


def register() -> None:
    """The run's schema in Hydra's config store, which conf/config.yaml names."""
    from hydra.core.config_store import ConfigStore  # Hydra: lazy (see _hydra_compose)

    ConfigStore.instance().store(name="run_schema", node=run_schema())


def compose(overrides: list[str] | tuple[str, ...] = (), config_name: str = "config", keep: bool = True):
    """The run config as `python -m benchmark OVERRIDES` composes it, for code that runs the suite in-process. The
    run config is composed by Hydra once per set of inputs, then read back (compose_cache.py); `keep=False`: overrides
    that name a throwaway folder, whose config no later call asks for, are not kept."""
    files = config_files(search_path_folders(list(overrides)))
    if config_name != "config":
        files.check()
        return _hydra_compose(list(overrides), config_name)
    key = compose_cache.key(list(overrides), files.sha256, run_schema())
    cfg = compose_cache.read(key, run_schema())  # kept only once these very files had passed the checks
    if cfg is None:
        files.check()  # every config file, before Hydra reads any of them
        cfg = _hydra_compose(list(overrides), config_name)
        if keep:
            compose_cache.keep(key, cfg)
    return cfg


def _hydra_compose(overrides: list[str], config_name: str):
    # Hydra is imported only here and in register: a run composed before is read back without it (compose_cache.py),
    # and importing it costs about 0.4 s of the start (benchmarks/startup.py)
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()
