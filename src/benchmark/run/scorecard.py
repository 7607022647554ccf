"""Score cards: one JSON file per (model, task) run, checked as the typed record card_record.ScoreCard."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path

from .. import __version__, BenchmarkError
from ..files import write_json
from ..identity import file_sha256
from ..models.usage import cost
from ..paths import CHECKOUT
from .card_record import SCHEMA_VERSION, problems


def validate(card: dict, where: str = "score card") -> None:
    """Raise BenchmarkError naming the first field the typed record refuses."""
    found = problems(card)
    if found:
        field, message = found[0]
        raise BenchmarkError(f"{where}: field {field}: {message}")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "lm_eval": _version("lm_eval"),
        "datasets": _version("datasets"),
        "hydra": _version("hydra-core"),
        "benchmark": __version__,
    }


def git_commit() -> str | None:
    """The commit of the source checkout the suite runs from; None for an installed package (its version says)."""
    if CHECKOUT is None:
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _weights(fingerprint) -> dict:
    """A model entry's `weights`: the files it loaded from this machine (weights.Fingerprint), where it did."""
    return {"weights": fingerprint.as_card()} if fingerprint is not None else {}


def assemble(plan, done, metrics: dict, breakdown: dict, samples_path: Path, started_at: str, wall: float,
             overrides: list[str] | None = None) -> dict:
    """A run's score card (the typed record card_record.ScoreCard) from its plan (runner.Plan), what executing
    it gave (runner.Execution) and its scores."""
    from omegaconf import OmegaConf

    cfg, task, records = plan.cfg, plan.cfg.task, plan.records
    model_cfg, judge_cfgs, attacker_cfg = cfg.model, plan.judge_cfgs, plan.attacker_cfg
    known_sha = task.pinned.sha256
    return {
        "schema_version": SCHEMA_VERSION,
        "task": {"name": task.name, "version": task.version, "kind": task.kind, "language": task.language,
                 "headline": task.headline, "config_sha256": plan.hashes["task"],
                 "config": OmegaConf.to_container(task, resolve=True)},
        "model": {"name": model_cfg.name, "backend": model_cfg.backend, "config_sha256": plan.hashes["model"],
                  "metadata": OmegaConf.to_container(model_cfg.metadata, resolve=True),
                  "config": OmegaConf.to_container(model_cfg, resolve=True), **_weights(plan.weights["model"])},
        "dataset": {"source": records.source, "split": records.split, "n": len(plan.items),
                    "n_total": len(records.items) + len(records.malformed), "sha256": records.sha256,
                    "sha256_matches_task": None if not known_sha else records.sha256 == known_sha,
                    "malformed": plan.malformed},
        "judges": [
            {"step": step, "voter": key, "name": judge_cfgs[key].name, "backend": judge_cfgs[key].backend,
             "config_sha256": plan.hashes["judges"][key], **plan.kind.describe_step(step),
             "config": OmegaConf.to_container(judge_cfgs[key], resolve=True), **done.judge_facts.get(key, {}),
             **_weights(plan.weights["judges"].get(key))}
            for step, keys in plan.voters.items() for key in keys
        ],
        **({"attacker": {"name": attacker_cfg.name, "backend": attacker_cfg.backend,
                         "config_sha256": plan.hashes["attacker"],
                         "config": OmegaConf.to_container(attacker_cfg, resolve=True),
                         **_weights(plan.weights["attacker"])}} if attacker_cfg else {}),
        **({"judging_validation": done.validation} if done.validation is not None else {}),
        "metrics_version": plan.kind.metrics_version(),
        "metrics": metrics,
        "breakdown": breakdown,
        "run": {
            "started_at": started_at, "wall_s": round(wall, 3),
            "samples_per_s": round(done.asked / wall, 3) if done.asked else 0.0,
            "model_calls": done.model_calls, "judge_calls": done.judge_calls,
            "attacker_calls": done.attacker_calls, "cache_hits": done.cache_hits, "seconds": done.seconds,
            "tokens": {role: t.as_json() for role, t in done.tokens.items()},
            **({"cost": c} if (c := run_cost(done.tokens, _role_configs(cfg, plan))) else {}),
            **({"budget": done.budget.as_json()} if done.budget is not None else {}),
            "resumed": len(plan.items) - done.asked, "failed": sum(1 for s in done.samples if s.get("error")),
            "seed": cfg.seed, "limit": cfg.limit, "bootstrap": cfg.bootstrap, "overrides": list(overrides or []),
            "versions": versions(),
            "git_commit": git_commit(),
        },
        "samples": {"file": samples_path.name, "sha256": file_sha256(samples_path), "n": len(done.samples)},
    }


def _role_configs(cfg, plan) -> dict:
    """Each role's model config, keyed as Execution.tokens is."""
    return {"model": cfg.model, "attacker": plan.attacker_cfg,
            **{f"judge {key}": j for key, j in plan.judge_cfgs.items()}}


def declared_prices(model_cfg):
    """The config's prices where it declares both; None where it declares neither; an error for half of them."""
    prices = getattr(model_cfg, "prices", None)
    if prices is None or (prices.input_per_million is None and prices.output_per_million is None):
        return None
    for key in ("input_per_million", "output_per_million"):
        value = prices[key]
        if value is None or value < 0:
            raise BenchmarkError(f"model {model_cfg.name}: model.prices.{key}={value}; declare both prices, each 0 or "
                                 "more (per million tokens), or neither")
    return prices


def run_cost(tokens: dict, configs: dict) -> dict | None:
    """What the tokens asked now cost, per role whose model declares its prices and in total per currency; None
    where no role declares any."""
    by_role = {}
    for role, t in tokens.items():
        prices = declared_prices(configs.get(role))
        if prices is not None:
            by_role[role] = {"amount": round(cost(t, prices), 6), "currency": prices.currency}
    if not by_role:
        return None
    total: dict = {}
    for c in by_role.values():
        total[c["currency"]] = round(total.get(c["currency"], 0.0) + c["amount"], 6)
    return {"by_role": by_role, "total": total}


def write(card: dict, path: Path) -> None:
    """Validate, then write atomically (a crash never leaves half a card)."""
    validate(card, str(path))
    write_json(path, card)
