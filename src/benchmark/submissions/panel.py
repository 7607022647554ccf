"""Whether a card was judged by its task's declared judge panel: the task's default `judge=` panel, every judge's
config as shipped (its name included) and, for a trained judge, the artifact its shipped config pins (`sha256:`). A card judged otherwise
is valid but non-standard: the board shows it apart and never ranks it with the standard cards, since its rates come
from judges the suite has not measured (a renamed keyword list can call itself diasafety-detector)."""

from __future__ import annotations

import functools

from ..composition import compose
from ..config import GenerationConfig
from ..judging.panels import judge_panel
from ..kinds import kind_class, make_kind
from ..run.card_record import ScoreCard
from .configs import full_config

# what a judge's config may set differently from the shipped one without changing its verdicts
_RUNTIME = ("batch_size", "num_concurrent", "max_retries", "retry_wait", "timeout", "device", "sha256", "metadata")


@functools.lru_cache(maxsize=None)
def standard_panel(task: str) -> tuple[dict, dict]:
    """({(step, voter): the judge's config as shipped, runtime fields left out}, {voter: its pinned artifact's sha256})."""
    from omegaconf import OmegaConf

    cfg = compose([f"task={task}"])
    voters, models = judge_panel(cfg, make_kind(cfg.task, cfg.model))
    configs = {(step, voter): _comparable(OmegaConf.to_container(models[voter], resolve=True))
               for step, keys in voters.items() for voter in keys}
    pinned = {voter: models[voter].sha256 for keys in voters.values() for voter in keys if models[voter].sha256}
    return configs, pinned


def _comparable(config: dict) -> dict:
    return {k: v for k, v in full_config(config).items() if k not in _RUNTIME}


def panel_status(card: ScoreCard) -> str | None:
    """None when the card's judges are the task's declared panel; else why not, in one line."""
    standard, pinned = standard_panel(card.task.name)
    if not standard:
        return None
    given = {(j.step, j.voter): j for j in card.judges or []}
    if set(given) != set(standard):
        return (f"judged by {sorted(f'{s}/{v}' for s, v in given)}, not the task's panel "
                f"{sorted(f'{s}/{v}' for s, v in standard)}")
    for (step, voter), shipped in standard.items():
        config = given[(step, voter)].config
        mine = _comparable(config)
        if mine != shipped:
            key = next(k for k in sorted(set(mine) | set(shipped)) if mine.get(k) != shipped.get(k))
            return (f"judge {step}: {str(config.get('name'))[:40]!r} is not the task's {shipped['name']!r} as shipped "
                    f"({key}: {str(mine.get(key))[:40]} where the panel has {str(shipped.get(key))[:40]})")
        if voter in pinned and config.get("sha256") != pinned[voter]:
            return (f"judge {step}: {shipped['name']}'s weights {str(config.get('sha256'))[:12]}… are not the "
                    f"published ones ({pinned[voter][:12]}…)")
    return attacker_status(card)


@functools.lru_cache(maxsize=None)
def standard_attacker(task: str) -> dict | None:
    """The task's declared attacker config as shipped, runtime fields left out (None: the task has no attacker)."""
    from omegaconf import OmegaConf

    cfg = compose([f"task={task}"])
    attacker = cfg.get("attacker")
    return _comparable(OmegaConf.to_container(attacker, resolve=True)) if attacker is not None else None


def attacker_status(card: ScoreCard) -> str | None:
    """None when a card's attacker is its task's declared one as shipped; else why not (another attacker is another
    attack, which the suite publishes as a task of its own, such as toxicchat_qwen_attacker)."""
    shipped = standard_attacker(card.task.name)
    given = card.attacker.config if card.attacker is not None else None
    if shipped is None or given is None:
        return None if shipped is None and given is None else (
            "an attacker the task does not have" if shipped is None else "no attacker config on the card")
    mine = _comparable(given)
    if mine != shipped:
        key = next(k for k in sorted(set(mine) | set(shipped)) if mine.get(k) != shipped.get(k))
        return (f"attacker {str(given.get('name'))[:40]!r} is not the task's {shipped['name']!r} as shipped "
                f"({key}: {str(mine.get(key))[:40]} where the task's has {str(shipped.get(key))[:40]})")
    return None


@functools.lru_cache(maxsize=None)
def fixed_generation(task: str) -> dict | None:
    """The generation settings a task fixes for the model under test ({} where it fixes none), or None for a task
    that does not generate."""
    from omegaconf import OmegaConf

    cfg = compose([f"task={task}"])
    kind = kind_class(cfg.task.kind)
    if kind.sampling_protocol is None:
        return None
    return OmegaConf.to_container(cfg.task[kind.section][kind.sampling_protocol], resolve=True) or {}


def protocol_status(card: ScoreCard) -> str | None:
    """None when the model's own generation settings leave what the task measures as the task defines it: every
    setting the task does not fix (stop strings, top_k, ...) at the suite's default. A config that cuts answers at a
    stop string, say, measures another thing, so its card is shown apart and never ranked."""
    from dataclasses import asdict

    fixed = fixed_generation(card.task.name)
    if fixed is None:
        return None
    own = card.model.config.get("generation") or {}
    for key, default in asdict(GenerationConfig()).items():
        if key not in fixed and key in own and own[key] != default:
            return (f"the model's generation.{key} is {str(own[key])[:40]}; task {card.task.name} runs every "
                    f"model at {default!r} (its protocol fixes {', '.join(sorted(fixed)) or 'nothing else'})")
    return None
