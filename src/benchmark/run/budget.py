"""A run's budget (budget.tokens=, budget.cost=): what the run folder has spent so far, across reruns, and, before
each chunk, how many of its records fit in what is left. Each record is projected from the estimate `preview`
prints (estimate.py: its prompt counted, at most max_new_tokens per answer), scaled up where the run has spent more
per estimated token than that (other roles, later turns); a chunk is cut at the first record that would pass a
limit, so a run ends past its budget by at most what one record's estimate missed. A run whose first record cannot
be estimated well (other roles that count, several requests per record) asks one record before it trusts a scale."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .. import BenchmarkError
from ..files import write_json
from ..models.base import counts_tokens
from ..models.usage import cost
from .estimate import Estimate
from .scorecard import declared_prices

SPENT_FILE = "spent.json"  # beside samples.jsonl: what every invocation on this folder asked for, in total


@dataclass
class Spent:
    tokens: int = 0  # tokens read and written by requests asked (cached answers cost nothing)
    cost: float = 0.0  # at the roles' declared prices, in the run's one currency
    records: int = 0  # records answered by the invocations that spent it


@dataclass(frozen=True)
class Outcome:
    """What a budgeted run spent against its limits, for its card (run.budget)."""

    tokens: int | None
    cost: float | None
    spent: Spent
    currency: str | None
    cannot_stop: tuple[str, ...]  # the roles the budget cannot see, one line each

    @property
    def exceeded(self) -> bool:
        return ((self.tokens is not None and self.spent.tokens > self.tokens)
                or (self.cost is not None and self.spent.cost > self.cost))

    def as_json(self) -> dict:
        return {"tokens": self.tokens, "cost": self.cost, "spent_tokens": self.spent.tokens,
                "spent_cost": round(self.spent.cost, 6), "currency": self.currency, "exceeded": self.exceeded,
                "cannot_stop": list(self.cannot_stop)}


class Budget:
    """The limits of one run folder. `roles`: role -> (CachedModel, its model config), as the runner holds them;
    `estimates`: record id -> the model's Estimate for it (None: no budget is set, so nothing was estimated)."""

    def __init__(self, cfg, run_dir: Path, roles: dict, estimates: dict[str, Estimate] | None = None,
                 requests_per_record: int = 1):
        self.limit_tokens, self.limit_cost = cfg.budget.tokens, cfg.budget.cost
        self.path, self.roles, self.estimates = run_dir / SPENT_FILE, roles, estimates or {}
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
        self.cannot_stop = tuple(self._blind_spots())
        counting = [role for role, (model, _) in roles.items() if counts_tokens(model.backend)]
        # a first chunk projected from the model's estimate alone would miss what the other roles spend, and later
        # turns of a conversation read more than its first: such a run probes with one record before it trusts a scale
        self.uncertain = requests_per_record > 1 or any(role != "model" for role in counting)
        self.before = self._read()  # what earlier invocations spent
        self.records = 0  # answered by this invocation
        self.estimated = Spent()  # the estimates of the records answered by this invocation

    @property
    def active(self) -> bool:
        return self.limit_tokens is not None or self.limit_cost is not None

    def _blind_spots(self):
        """A line for each role a set budget cannot see: one that counts no tokens, or, for budget.cost, one that
        declares no prices."""
        for role, (model, config) in self.roles.items():
            if not counts_tokens(model.backend):
                for key, limit in (("budget.tokens", self.limit_tokens), ("budget.cost", self.limit_cost)):
                    if limit is not None:
                        yield (f"{key}: {role} {config.name} ({config.backend}) counts no tokens; the budget cannot "
                               "stop it")
            elif self.limit_cost is not None and self.prices[role] is None:
                yield f"budget.cost: {role} {config.name} declares no prices; the budget cannot stop it"

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

    def done(self, chunk: list) -> None:
        """The records of `chunk` are answered and their samples are on disk: record the spending."""
        self.records += len(chunk)
        model_prices = self.prices.get("model")
        for record in chunk:
            e = self.estimates.get(record["id"])
            if e is not None:
                self.estimated.tokens += e.tokens
                self.estimated.cost += e.cost(model_prices) if model_prices is not None else 0.0
        s = self.spent()
        write_json(self.path, {"tokens": s.tokens, "cost": round(s.cost, 6), "records": s.records,
                               "currency": self.currency})

    def outcome(self) -> Outcome | None:
        if not self.active:
            return None
        return Outcome(self.limit_tokens, self.limit_cost, self.spent(), self.currency, self.cannot_stop)

    def _projections(self, s: Spent):
        """record -> (tokens, cost) it is projected to spend: its estimate times how far the spending of this
        invocation ran above the estimates (never below 1); where the model counts nothing (no estimates), the
        spending per record so far."""
        now = Spent(s.tokens - self.before.tokens, s.cost - self.before.cost)
        scale_tokens = max(1.0, now.tokens / self.estimated.tokens) if self.estimated.tokens else 1.0
        scale_cost = max(1.0, now.cost / self.estimated.cost) if self.estimated.cost else 1.0
        model_prices = self.prices.get("model")
        each = (s.tokens / s.records, s.cost / s.records) if s.records else (0.0, 0.0)

        def project(record) -> tuple[float, float]:
            e = self.estimates.get(record["id"])
            if e is None:
                return each
            if model_prices is None:  # what it costs is the other roles': their spending per record so far
                return e.tokens * scale_tokens, each[1]
            return e.tokens * scale_tokens, e.cost(model_prices) * scale_cost

        return project

    def fit(self, chunk: list, answered: int, total: int, samples: Path) -> list:
        """The leading records of `chunk` whose projected spending fits in what is left of every limit; the budget's
        message, with how far the run got and what the next record would take, where not even one fits."""
        if not self.active:
            return chunk
        s = self.spent()
        project = self._projections(s)
        tokens, money, fits = float(s.tokens), s.cost, 0
        if not self._passes(tokens, money, reached=True):
            for record in chunk:
                t, c = project(record)
                if self._passes(tokens + t, money + c):
                    break
                tokens, money, fits = tokens + t, money + c, fits + 1
        if self.uncertain and not s.records:
            fits = min(fits, 1)
        if fits:
            return chunk[:fits]
        t, c = project(chunk[0])
        key, limit, spent, each, unit = next(
            ((k, lim, sp, e, u) for k, lim, sp, e, u in (
                ("budget.tokens", self.limit_tokens, s.tokens, t, "tokens"),
                ("budget.cost", self.limit_cost, s.cost, c, self.currency))
             if lim is not None and sp + e > lim or lim is not None and sp >= lim),
            ("budget.tokens", self.limit_tokens, s.tokens, t, "tokens"))
        shown = (lambda x: f"{x:,.0f}") if key == "budget.tokens" else (lambda x: f"{x:.6f}")
        whole = sum(project(r)[key == "budget.cost"] for r in chunk)
        raise BenchmarkError(
            f"{key}={limit} reached: {answered} of {total} records answered (their samples are kept in {samples}), "
            f"{shown(spent)} {unit} spent, and the next record would take about {shown(each)} more (the next "
            f"{len(chunk)}: about {shown(whole)}). Rerun the same command with a higher {key} to go on: no request "
            "already answered is asked again")

    def _passes(self, tokens: float, money: float, reached: bool = False) -> bool:
        """Whether spending this much passes a limit (reached: or has used it up)."""
        over = (lambda x, lim: x >= lim) if reached else (lambda x, lim: x > lim)
        return ((self.limit_tokens is not None and over(tokens, self.limit_tokens))
                or (self.limit_cost is not None and over(money, self.limit_cost)))
