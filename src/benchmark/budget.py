"""A run's budget (budget.tokens=, budget.cost=): what the run folder has spent so far, across reruns, and the check
before each chunk that stops the run cleanly when the chunk would pass a limit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import BenchmarkError
from .files import write_json
from .models.usage import cost

SPENT_FILE = "spent.json"  # beside samples.jsonl: what every invocation on this folder asked for, in total


@dataclass
class Spent:
    tokens: int = 0  # tokens read and written by requests asked (cached answers cost nothing)
    cost: float = 0.0  # at the roles' declared prices, in the run's one currency
    records: int = 0  # records answered by the invocations that spent it


class Budget:
    """The limits of one run folder. `roles`: role -> (CachedModel, its model config), as the runner holds them."""

    def __init__(self, cfg, run_dir: Path, roles: dict):
        from .scorecard import declared_prices

        self.limit_tokens, self.limit_cost = cfg.budget.tokens, cfg.budget.cost
        self.path, self.roles = run_dir / SPENT_FILE, roles
        self.prices = {role: declared_prices(config) for role, (_, config) in roles.items()}
        currencies = {p.currency for p in self.prices.values() if p is not None}
        for key, value in (("budget.tokens", self.limit_tokens), ("budget.cost", self.limit_cost)):
            if value is not None and value < 0:
                raise BenchmarkError(f"{key}={value}: use 0 or more, or null for no limit")
        if self.limit_cost is not None:
            if not currencies:
                raise BenchmarkError(f"budget.cost={self.limit_cost}: no model of this run declares its prices "
                                     "(model.prices.input_per_million and output_per_million)")
            if len(currencies) > 1:
                raise BenchmarkError(f"budget.cost={self.limit_cost}: the run's models charge in "
                                     f"{' and '.join(sorted(currencies))}; one budget needs one currency")
        self.currency = next(iter(currencies), None)
        self.before = self._read()  # what earlier invocations spent
        self.records = 0  # answered by this invocation

    @property
    def active(self) -> bool:
        return self.limit_tokens is not None or self.limit_cost is not None

    def _read(self) -> Spent:
        if not self.path.is_file():
            return Spent()
        try:
            data = json.loads(self.path.read_text())
            return Spent(int(data["tokens"]), float(data["cost"]), int(data["records"]))
        except (ValueError, KeyError, TypeError):
            raise BenchmarkError(f"{self.path}: not what this suite writes; remove it to count the run's spending "
                                 "from zero") from None

    def spent(self) -> Spent:
        now_tokens = sum(model.tokens.new for model, _ in self.roles.values())
        now_cost = sum(cost(model.tokens, self.prices[role]) for role, (model, _) in self.roles.items()
                       if self.prices[role] is not None)
        return Spent(self.before.tokens + now_tokens, self.before.cost + now_cost, self.before.records + self.records)

    def done(self, records: int) -> None:
        """A chunk of `records` is answered and its samples are on disk: record the spending."""
        self.records += records
        s = self.spent()
        write_json(self.path, {"tokens": s.tokens, "cost": round(s.cost, 6), "records": s.records,
                               "currency": self.currency})

    def check(self, next_records: int, answered: int, total: int, samples: Path) -> None:
        """Stop before a chunk of `next_records` that would pass a limit, at the spending per record so far (the
        first chunk of a fresh folder has nothing to go by, and runs)."""
        if not self.active:
            return
        s = self.spent()
        per_record = (s.tokens / s.records, s.cost / s.records) if s.records else (0.0, 0.0)
        for key, limit, spent, each, unit in (
                ("budget.tokens", self.limit_tokens, s.tokens, per_record[0], "tokens"),
                ("budget.cost", self.limit_cost, s.cost, per_record[1], self.currency)):
            if limit is None:
                continue
            projected = spent + each * next_records
            if spent >= limit or (s.records and projected > limit):
                shown = (lambda x: f"{x:,.0f}") if key == "budget.tokens" else (lambda x: f"{x:.4f}")
                raise BenchmarkError(
                    f"{key}={limit} reached: {answered} of {total} records answered (their samples are kept in "
                    f"{samples}), {shown(spent)} {unit} spent, and the next {next_records} would take about "
                    f"{shown(each * next_records)} more. Rerun the same command with a higher {key} to go on: no "
                    "request already answered is asked again")
