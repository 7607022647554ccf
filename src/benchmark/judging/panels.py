"""A run's roles beside the model under test: the judge panel the task's steps need (its voters and their configs),
what a card records of each judge (and its measured agreement with human labels), the task's judging validation, the
attacker, and the pool of backends a process keeps loaded between runs."""

from __future__ import annotations

from omegaconf import OmegaConf

from .. import BenchmarkError
from ..identity import sha256_json
from ..models import load_backend
from ..models.cached import CachedModel
from .engine import Panel
from .labelled import NOT_MEASURED
from .validity import judge_procedure, measure, sets_for
from .validity_record import shipped

def judge_panel(cfg, kind) -> tuple[dict[str, list[str]], dict]:
    """The voters of each judging step the task declares, and their model configs by panel key."""
    if not kind.judge_steps:
        return {}, {}
    task = cfg.task.name
    if cfg.judge is None:
        raise BenchmarkError(f"task {task} needs judges for {kind.judge_steps}; choose a panel with judge=NAME "
                             "(conf/judge/)")
    unknown = sorted(set(cfg.judge.voters) - set(kind.judge_steps))
    if unknown:
        raise BenchmarkError(f"judge {cfg.judge.name}: voters for {unknown}, which task {task} does not judge "
                             f"(its steps: {kind.judge_steps})")
    voters = {s: list(cfg.judge.voters.get(s) or [s]) for s in kind.judge_steps}
    missing = sorted({v for vs in voters.values() for v in vs if v not in cfg.judge.models})
    if missing:
        raise BenchmarkError(f"judge {cfg.judge.name} has no model {missing} for the steps of task {task}; "
                             f"it has {sorted(cfg.judge.models)}")
    return voters, {v: cfg.judge.models[v] for vs in voters.values() for v in vs}


def open_panel(p, cache, backend) -> Panel:
    """The run's judges, each through the response cache as its content is hashed (`p`: the run's plan, runner.Plan;
    `backend(config)`: the loaded backend of a model config): the Panel a run measures and judges through."""
    judges = {key: CachedModel(backend(j), p.hashes["judges"][key], cache, j, p.cfg.seed)
              for key, j in p.judge_cfgs.items()}
    return Panel({step: [(key, judges[key]) for key in keys] for step, keys in p.voters.items()})


def judge_facts(judge: CachedModel, cfg) -> dict:
    """What a card records about a judge: the backend's own facts and, for a classifier, its measured agreement with
    human labels (validity.py: from the shipped record where it holds this judge, unless validity_record=false)."""
    facts = judge.backend.describe()
    if not judge.backend.supports("classify"):
        return facts
    if not cfg.judge_validity:
        return {**facts, "measured": NOT_MEASURED}
    asked = judge.aside()  # not the run's judge calls
    sets = sets_for(cfg.task.language, type(judge.backend).measures)
    unread = {vs.name: f"not measured: {why}" for vs in sets
              if (why := type(judge.backend).unreadable_set(judge.config, vs.input)) is not None}
    measured = measure(asked, cfg.data_root, cfg.bootstrap, cfg.seed, [vs for vs in sets if vs.name not in unread],
                       shipped() if cfg.validity_record else None, cfg.progress)
    return {**facts, "measured": {vs.name: unread.get(vs.name) or measured[vs.name] for vs in sets}}


def facts_outdated(facts: dict, cfg) -> bool:
    """A run's recorded judge facts were measured on other sets than its task's language has now for a judge of harm or
    of refusal (a set declared or withdrawn since): they are measured again. By the sets' names only: a set changed
    under its name is not seen."""
    lists = [[vs.name for vs in sets_for(cfg.task.language, measures)] for measures in ("harm", "refusal")]
    return bool(cfg.judge_validity) and any(isinstance(f.get("measured"), dict) and list(f["measured"]) not in lists
                                            for f in facts.values())


def judging_validation(kind, panel: Panel, cfg):
    """The task's judging steps on their labelled set, through the run's panel (not its judge calls)."""
    if not cfg.judge_validity:
        return NOT_MEASURED
    spec, steps = kind.judging_validation
    record = shipped() if cfg.validity_record else None
    return judge_procedure(spec, steps, panel.aside(), kind.spec.tie, cfg.data_root, record, cfg.progress,
                           cfg.task.name)


def attacker_config(cfg, kind):
    if not kind.needs_attacker:
        return None
    if cfg.attacker is None:
        raise BenchmarkError(f"task {cfg.task.name} needs an attacker model: attacker=NAME (conf/attacker/)")
    return cfg.attacker


class BackendPool:
    """The backends of the last run in this process, kept loaded: a sweep on the basic launcher, or a notebook, that
    runs the same model again (on another task, with other settings) does not load it again. A run asks it for each
    distinct model config once (`get`), and hands back what it loaded (`keep`)."""

    def __init__(self):
        self.kept: dict = {}

    @staticmethod
    def key(config, allow_remote_code: bool, data_root) -> str:
        """One backend per distinct model: generation settings travel with each request, so they make no other."""
        return sha256_json([{k: v for k, v in OmegaConf.to_container(config, resolve=True).items()
                             if k not in ("name", "metadata", "generation")}, allow_remote_code, data_root])

    def holds(self, key: str) -> bool:
        return key in self.kept

    def get(self, key: str, config, allow_remote_code: bool, data_root):
        return self.kept.get(key) or load_backend(config, allow_remote_code, data_root)

    def keep(self, loaded: dict) -> None:
        """The run's backends replace the earlier ones; a replay is left out (it rereads its file)."""
        self.kept = {k: b for k, b in loaded.items() if not b.supports("replay")}
