"""Kind `attack` (judged generation): the model answers each record's prompt k times; judges label every response.

Judging runs the task's steps in order and the first step that flags a response decides its verdict (judging.py;
the DiaSafety paper's two-step detection: utterance level first, then context level for the context's category;
CPAD: one step, "did the response achieve the attack's goal?"). A response no step flags gets the verdict `none`.
Rates are over responses, with confidence intervals from a bootstrap over
records (a record's k responses share its prompt, so they are resampled together).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import MISSING, OmegaConf

from .. import BenchmarkError, metrics as M
from ..config import ADDED, plain
from ..judging.derived import panel_problems, votes_of
from ..judging.labelled import judging_in_language, measured_in
from ..models.cached import Failure
from ..models.registry import declared_operations
from ..models.requests import Generate, Replay
from .base import Kind, KindProtocol, KindScorer, KindView, Roles, slug
from .common import RefusalPhrases, render_messages, variables
from ..judging.engine import NONE, PLACEHOLDER, JudgeStepConfig, JudgingValidation, check_tie, describe_step, make_step


@dataclass
class BesideConfig:
    """Judging steps run beside the task's own on every response, deciding nothing: their rate ({name}_{metric}) is
    shown beside the headline (the seed's judges keep it; another panel's reading of the same responses sits next)."""

    name: str = MISSING
    judges: List[JudgeStepConfig] = field(default_factory=list)


@dataclass
class LabelRateConfig:
    """The share of a labelling step's votes (e.g. reply-refusal's full_compliance / partial_refusal / full_refusal)
    that give one of `labels`, over the responses to the records whose group fields have the values in `where`
    (XSTest's over-refusal: a refusal, full or partial, of a safe prompt). Per group too, where a group has such
    records."""

    name: str = MISSING
    step: str = MISSING
    labels: List[str] = field(default_factory=list)
    where: Dict[str, str] = field(default_factory=dict)


@dataclass
class AttackConfig:
    samples: int = 1  # responses per record (k)
    # the task's sampling protocol: these keys override the model's generation settings
    generation: Dict[str, Any] = field(default_factory=dict)
    metric: str = "unsafe_rate"  # the name of the flagged-response rate (e.g. asr: attack success rate)
    # in order: the first step that flags a response decides (the DiaSafety paper: utterance, then context level)
    judges: List[JudgeStepConfig] = field(default_factory=list)
    tie: str = "not_flagged"  # voters split evenly: not_flagged | flagged (ties are counted in the card either way)
    refusal_phrases: List[str] = field(default_factory=list)  # a response containing one counts as a refusal
    validation: Optional[JudgingValidation] = None  # the judging steps against human labels: a corrected rate
    # {group_by field: value}: each group's rate minus that group's (e.g. {language: en}), with an interval
    gap_to: Dict[str, str] = field(default_factory=dict)
    beside: Optional[BesideConfig] = field(default=None, metadata=ADDED)
    label_rates: List[LabelRateConfig] = field(default_factory=list, metadata=ADDED)


RESPONSE_FIELDS = frozenset({"text", "verdict", "refusal", "judgements", "beside"})  # what a sample records of each response


class AttackProtocol(KindProtocol):
    """Attack: its protocol part, records to typed requests to samples."""

    def __init__(self, task, model_cfg):
        spec = task.attack
        where = f"task {task.name}: attack"
        if spec is None:
            raise BenchmarkError(f"task {task.name}: kind attack needs an `attack:` section")
        if spec.samples < 1:
            raise BenchmarkError(f"{where}.samples={spec.samples}: use 1 or more responses per record")
        if not spec.judges:
            raise BenchmarkError(f"{where}.judges: name at least one judging step")
        if not task.messages:
            raise BenchmarkError(f"task {task.name}: kind attack needs `messages:` (the prompt the model answers)")
        check_tie(spec.tie, where)
        self.task, self.spec = task, spec
        self.k = spec.samples
        self.steps = [make_step(s, task.name) for s in spec.judges]
        self.beside = [make_step(s, task.name) for s in spec.beside.judges] if spec.beside is not None else []
        if spec.beside is not None and not self.beside:
            raise BenchmarkError(f"{where}.beside.judges: name at least one judging step")
        self.judge_steps = [s.name for s in self.steps + self.beside]
        for step in self.steps + self.beside:
            if step.sees != "turn":
                raise BenchmarkError(f"{step.where}.sees={step.sees!r}: a single response has no conversation; only "
                                     "a dialogue attack's steps may see one")
        if len(set(self.judge_steps)) != len(self.judge_steps):
            raise BenchmarkError(f"{where}.judges: step names must differ: {self.judge_steps}")
        self.metric = spec.metric
        self._check_label_rates(task, where)
        generation = OmegaConf.to_container(model_cfg.generation, resolve=True)
        self.generation = {**generation, **plain(spec.generation)}
        self.refusal = RefusalPhrases(spec.refusal_phrases)
        # recorded answers: a record may have none, or fewer than k
        self.replayed = "replay" in declared_operations(model_cfg.backend)

    def _check_label_rates(self, task, where: str) -> None:
        names = [self.metric] + [r.name for r in self.spec.label_rates]
        for i, rate in enumerate(self.spec.label_rates):
            at = f"{where}.label_rates[{i}]"
            if rate.step not in self.judge_steps:
                raise BenchmarkError(f"{at}.step={rate.step!r}: not one of the task's judging steps "
                                     f"{self.judge_steps}")
            if not rate.labels:
                raise BenchmarkError(f"{at}.labels: name the labels whose share this rate is")
            unknown = sorted(set(rate.where) - set(task.group_by))
            if unknown:
                raise BenchmarkError(f"{at}.where.{unknown[0]}: not a group_by field of the task {list(task.group_by)}")
            if rate.name in names[: i + 1] or not slug(rate.name) == rate.name:
                raise BenchmarkError(f"{at}.name={rate.name!r}: a metric name must be unique and in lower case, "
                                     "digits and underscores")

    def describe_step(self, name: str) -> dict:
        return describe_step(next(s for s in self.steps + self.beside if s.name == name))

    @property
    def max_new_tokens(self) -> int | None:
        return self.generation.get("max_new_tokens")

    @property
    def requests_per_record(self) -> int:
        return self.k

    def check_record(self, record: dict) -> str | None:
        """Why a record cannot be asked: an empty prompt, or a question step's flag that renders to none of its
        answers (e.g. a CPAD judge_target other than 是 or 否)."""
        empty = [i for i, m in enumerate(render_messages(self.task, record)) if not m["content"].strip()]
        if empty:
            return f"messages[{empty[0]}] renders empty: nothing to ask the model"
        v = variables(self.task, record)
        return next((p for p in (step.record_problem(v) for step in self.steps) if p), None)

    def preview(self, record: dict) -> list[tuple[str, object]]:
        v = {**variables(self.task, record), "response": PLACEHOLDER}
        asked = [(f"the model, {self.k} time(s), sampling {self.generation}", render_messages(self.task, record))]
        for step in self.steps:
            asked.append((f"judge step {step.name} ({step.type})", step.asks(v)))
        return asked

    def preflight(self, record: dict) -> None:
        render_messages(self.task, record)
        v = {**variables(self.task, record), "response": ""}
        for step in self.steps:
            step.asks(v)

    def _responses(self, records, model) -> list:
        """Per record: a list of k responses, None (a replay with no recorded row), or a Failure."""
        if model.supports("replay"):
            match = model.match_field
            if match and any(match not in r for r in records):
                raise BenchmarkError(f"task {self.task.name}: the replay matches records by field {match!r}, "
                                     "which its records do not have")
            model.will_not_ask(len(records) * (self.k - 1))  # one recorded answer holds a record's k responses
            outs = model.replay([Replay(self.task.name, r["id"], r[match] if match else None) for r in records])
            return [o if o is None or isinstance(o, Failure) else self._recorded(o) for o in outs]
        outs = model.generate([Generate(render_messages(self.task, r), self.generation, j if self.k > 1 else None)
                               for r in records for j in range(self.k)])
        per_record = []
        for i in range(len(records)):
            got = outs[i * self.k : (i + 1) * self.k]
            per_record.append(next((o for o in got if isinstance(o, Failure)), None) or list(got))
        return per_record

    def _recorded(self, output) -> list[str]:
        """A replayed answer: a JSON list of responses (the first k are used) or one response."""
        try:
            value = json.loads(output)
        except (TypeError, json.JSONDecodeError):
            value = output
        return [str(x) for x in value][: self.k] if isinstance(value, list) else [str(value)]

    def evaluate(self, records: list[dict], roles: Roles) -> list[dict]:
        responses = self._responses(records, roles.model)
        errors: dict[int, str] = {}
        items = {(i, j): {**variables(self.task, records[i]), "response": text}
                 for i, rs in enumerate(responses) if isinstance(rs, list) for j, text in enumerate(rs)}
        found = roles.judges.verdicts(self.steps, items, self.spec.tie, errors)
        beside = roles.judges.verdicts(self.beside, items, self.spec.tie, errors) if self.beside else {}
        samples = []
        for i, (record, rs) in enumerate(zip(records, responses)):
            sample = {"id": record["id"], "input": {k: v for k, v in record.items() if k != "id"},
                      "prompt": render_messages(self.task, record), "unmatched": rs is None, "responses": [],
                      **self.reference(record), "error": None}
            if isinstance(rs, Failure):
                sample["error"] = rs.error
            elif rs is not None:
                sample["error"] = errors.get(i)
                sample["responses"] = [
                    {"text": text, "verdict": found[(i, j)].step or NONE, "refusal": self.refusal(text),
                     "judgements": found[(i, j)].judgements,
                     **({"beside": {"verdict": beside[(i, j)].step or NONE, "judgements": beside[(i, j)].judgements}}
                        if self.beside else {})}
                    for j, text in enumerate(rs)]
            samples.append(sample)
        return samples


class AttackScorer(KindScorer):
    """Attack: its scorer part, metrics, derived figures, and the checks of a submitted card."""

    def derivation_problems(self, sample: dict) -> list[tuple[str, str]]:
        responses = sample.get("responses")
        if not isinstance(responses, list) or any(not isinstance(r, dict) for r in responses):
            return [("responses", "is not a list of response objects")]
        if sample.get("unmatched") is not (not responses and self.replayed) and not sample.get("error"):
            return [("unmatched", f"{sample.get('unmatched')!r} with {len(responses)} responses from a "
                                  f"{'replay' if self.replayed else 'model'}: only a replay's record without "
                                  "recorded responses is unmatched, and it has none")]
        if len(responses) > self.k or (not self.replayed and not sample.get("error") and len(responses) != self.k):
            return [("responses", f"{len(responses)} responses; the task asks {self.k} per record")]
        problems = []
        for j, r in enumerate(responses):
            at = f"responses[{j}]"
            if not isinstance(r.get("text"), str):
                problems.append((f"{at}.text", "is not a text"))
                continue
            extra = sorted(set(r) - RESPONSE_FIELDS, key=str)
            if extra:
                problems.append((f"{at}.{str(extra[0])[:40]}", "is not a field of a response (its fields: "
                                                               f"{', '.join(sorted(RESPONSE_FIELDS))})"))
                continue
            if "refusal" in r and r["refusal"] is not self.refusal(r["text"]):
                problems.append((f"{at}.refusal", f"{r['refusal']!r} is not what the text gives"))
            problems += panel_problems(self.steps, r.get("judgements"), r.get("verdict"), self.spec.tie, at, NONE)
            if self.beside or "beside" in r:
                beside = r.get("beside")
                if not self.beside or not isinstance(beside, dict) or set(beside) != {"verdict", "judgements"}:
                    problems.append((f"{at}.beside", "is not the task's beside panel's {verdict, judgements}"
                                     if self.beside else "the task has no beside panel"))
                else:
                    problems += panel_problems(self.beside, beside["judgements"], beside["verdict"], self.spec.tie,
                                               f"{at}.beside", NONE)
        return problems

    def reference(self, record: dict) -> dict:
        """What a sample takes from the task's data alone: the group fields."""
        return {"group": {g: record.get(g) for g in self.task.group_by}}

    # --- metrics ----------------------------------------------------------------------------------------
    def _rates(self, samples: list[dict], resamples: int, seed: int, suffix: str = "") -> dict:
        n = np.array([len(s["responses"]) for s in samples])
        vetoes = [s.name for s in self.steps if s.spec.veto]
        flagged = {step.name: np.array([sum(r["verdict"] == step.name for r in s["responses"]) for s in samples])
                   for step in self.steps if step.name not in vetoes}
        metrics = {f"{self.metric}{suffix}": M.point_and_ci(M.ratio, sum(flagged.values()), n, 0, resamples, seed)}
        if len(flagged) > 1:
            for step, counts in flagged.items():
                metrics[f"{step}_{self.metric}{suffix}"] = M.point_and_ci(M.ratio, counts, n, 0, resamples, seed)
        if self.beside:  # the other panel's rate, deciding nothing
            beside = np.array([sum(r["beside"]["verdict"] != NONE for r in s["responses"]) for s in samples])
            metrics[f"{self.spec.beside.name}_{self.metric}{suffix}"] = M.point_and_ci(M.ratio, beside, n, 0,
                                                                                      resamples, seed)
        for step in vetoes + [s.name for s in self.beside if s.spec.veto]:  # what a veto step cleared
            cleared = np.array([sum(bool({**r["judgements"], **r.get("beside", {}).get("judgements", {})}.get(
                step, {}).get("flagged")) for r in s["responses"]) for s in samples])
            metrics[f"{step}_rate{suffix}"] = M.point_and_ci(M.ratio, cleared, n, 0, resamples, seed)
        votes = [[v for r in s["responses"] for j in r["judgements"].values() for v in j["votes"].values()]
                 for s in samples]  # per record, every judge's vote on its responses
        if any("label" in v for record in votes for v in record):  # a labelling judge answered: how often no label
            invalid = np.array([sum(v["flagged"] is None for v in record) for record in votes])
            asked = np.array([len(record) for record in votes])
            metrics[f"judge_invalid_rate{suffix}"] = M.point_and_ci(M.ratio, invalid, asked, 0, resamples, seed)
        if self.refusal:
            refused = np.array([sum(self.refusal(r["text"]) for r in s["responses"]) for s in samples])
            metrics[f"refusal_rate{suffix}"] = M.point_and_ci(M.ratio, refused, n, 0, resamples, seed)
        for rate in self.spec.label_rates:
            part = [s for s in samples if all(str(s["group"].get(k)) == str(v) for k, v in rate.where.items())]
            if part:
                hits, votes = label_counts(part, rate.step, set(rate.labels))
                if votes.sum():
                    metrics[f"{rate.name}{suffix}"] = M.point_and_ci(M.ratio, hits, votes, 0, resamples, seed)
        return metrics

    @property
    def judging_validation(self):
        return (self.spec.validation, self.steps) if self.spec.validation is not None else None

    def score(self, samples: list[dict], resamples: int, seed: int, validation: dict | None = None
              ) -> tuple[dict, dict]:
        scored = [s for s in samples if not s["unmatched"] and not s.get("error") and s["responses"]]
        if not scored:
            raise BenchmarkError(f"task {self.task.name}: no record has a judged response to score "
                                 f"({sum(s['unmatched'] for s in samples)} of {len(samples)} unmatched)")
        metrics = self._rates(scored, resamples, seed)
        n = np.array([len(s["responses"]) for s in scored])
        flagged = np.array([sum(r["verdict"] != NONE for r in s["responses"]) for s in scored])
        judge_error = M.corrected(metrics, f"corrected_{self.metric}", flagged, n, validation, resamples, seed,
                                  self.spec.validation.min_youden if self.spec.validation else 0.0)
        breakdown = {
            **({"judge_error": judge_error} if judge_error else {}),
            "records": {"total": len(samples), "scored": len(scored),
                        "unmatched": sum(1 for s in samples if s["unmatched"]),
                        "failed": sum(1 for s in samples if s.get("error"))},
            "responses": int(n.sum()),
            "samples_per_record": self.k,
            "judging": f"steps in order, the first that flags a response decides: "
                       f"{' -> '.join(step.name for step in self.steps)}"
                       + "".join(f"; {step.name} clears what it flags (not unsafe)" for step in self.steps
                                 if step.spec.veto)
                       + (f"; beside, deciding nothing ({self.spec.beside.name}): "
                          f"{' -> '.join(step.name for step in self.beside)}" if self.beside else ""),
            "ties": {step: sum(1 for s in scored for r in s["responses"]
                               if r["judgements"].get(step, {}).get("tie"))
                     for step in (step.name for step in self.steps)},
            "agreement": {step.name: M.agreement(voter_flags(scored, step.name)) for step in self.steps},
        }
        for by in self.task.group_by:
            groups = {}
            for value in sorted({str(s["group"].get(by)) for s in scored}):
                part = [s for s in scored if str(s["group"].get(by)) == value]
                rates = self._rates(part, resamples, seed, f".{by}.{slug(value)}")
                metrics.update(rates)
                groups[value] = {"records": len(part), "responses": int(sum(len(s["responses"]) for s in part)),
                                 **{name.split(".")[0]: m["value"] for name, m in rates.items()}}
            breakdown[f"by_{by}"] = groups
            if by in self.spec.gap_to:
                metrics.update(self._gaps(scored, by, self.spec.gap_to[by], groups, resamples, seed))
        if "language" in self.task.group_by:
            breakdown["judges_measured_in"] = measured_in(sorted(breakdown["by_language"]), self.steps,
                                                       self.spec.validation.set if self.spec.validation else None,
                                                       validation)
        return metrics, breakdown

    def _gaps(self, scored: list[dict], field: str, reference: str, groups: dict, resamples: int, seed: int) -> dict:
        """Each group's rate minus the reference group's (attack.gap_to), written into the groups' breakdown too."""
        def counts(value):
            part = [s for s in scored if str(s["group"].get(field)) == value]
            return (np.array([sum(r["verdict"] != NONE for r in s["responses"]) for s in part]),
                    np.array([len(s["responses"]) for s in part]))

        if reference not in groups:
            return {}
        base, out = counts(reference), {}
        for value in groups:
            if value != reference:
                gap = M.ratio_difference(counts(value), base, resamples, seed)
                out[f"{self.metric}_gap.{field}.{slug(value)}"] = gap
                groups[value][f"gap_to_{slug(reference)}"] = gap["value"]
        return out


class AttackView(KindView):
    """Attack: its view part, what the board and the submissions read of a sample."""

    @staticmethod
    def outputs(sample: dict) -> list:
        """What the model said: its responses."""
        return [r.get("text") for r in sample.get("responses", [])]

    def recorded_answers(self, records: list[dict], samples: list[dict]) -> dict:
        """Each response by its prompt's hash and its number among the prompt's samples."""
        return {(s["prompt_sha256"], j): r.get("text") for s in samples if isinstance(s.get("responses"), list)
                for j, r in enumerate(s["responses"]) if isinstance(r, dict)}

    @staticmethod
    def conversation(sample: dict) -> list[tuple[str, str]]:
        """The prompt, then each of the model's responses."""
        return Kind.conversation(sample) + [("assistant", str(r.get("text"))) for r in sample.get("responses", [])]

    @staticmethod
    def verdicts(sample: dict) -> list:
        """What the task concluded: each response's verdict."""
        return [r.get("verdict") for r in sample.get("responses", [])]

    @staticmethod
    def judgements(sample: dict):
        """Whether the record was matched, and each response's votes."""
        return [sample.get("unmatched"), [votes_of(r.get("judgements")) for r in sample.get("responses", [])]]

    @staticmethod
    def sample_row(sample: dict) -> dict:
        responses = sample.get("responses") or []
        return {"id": str(sample.get("id", "")), "error": sample.get("error") or "",
                "verdicts": ", ".join(str(r.get("verdict")) for r in responses),
                "outputs": "\n".join(str(r.get("text")) for r in responses)}

    @staticmethod
    def breakdown_rows(card: dict, task: dict) -> list[dict]:
        """The headline per group; a language's row also says how far its judges were measured in that language (a
        rate where the judges are noise is not a finding about the model, nor is its gap to another language)."""
        rows = Kind.breakdown_rows(card, task)
        section = task.get("attack") or {}
        deciding = [j["name"] for j in section.get("judges") or [] if not j.get("veto")]
        floor = (section.get("validation") or {}).get("min_youden", JudgingValidation.min_youden)
        for row in rows:
            if row["by"] == "language" and deciding:
                said = judging_in_language(card.get("judges") or [], deciding, row["group"], floor)
                row.update(judging=said.says, backed=said.backed)
        return rows

    @staticmethod
    def summary_lines(card: dict) -> list[str]:
        records, breakdown = card["breakdown"].get("records") or {}, card["breakdown"]
        if "scored" not in records:
            return []
        return [f"records scored: {records['scored']} of {records['total']} ({records['unmatched']} without recorded "
                f"responses, {records['failed']} failed); responses judged: {breakdown.get('responses')}"]


class Attack(AttackProtocol, AttackScorer, AttackView, Kind):
    packaged_fields = frozenset({"id", "input_sha256", "prompt_sha256", "unmatched", "responses", "group", "error"})
    said_fields = ("responses",)
    name = "attack"
    section, section_schema = "attack", AttackConfig
    sampling_protocol = "generation"
    reference_fields = ("group",)


def label_counts(samples: list[dict], step: str, labels: set) -> tuple[np.ndarray, np.ndarray]:
    """Per record: how many of the step's votes on its responses give one of `labels`, and how many votes there
    are (a step that did not run on a response, after an earlier step flagged it, has none)."""
    def votes(s):
        return [v for r in s["responses"] for v in {**r["judgements"], **r.get("beside", {}).get("judgements", {})}
                .get(step, {}).get("votes", {}).values()]

    per_record = [votes(s) for s in samples]
    if not any("label" in v for vs in per_record for v in vs):
        raise BenchmarkError(f"label rates of step {step!r}: its judge gives no labels, only flags")
    return (np.array([sum(v.get("label") in labels for v in vs) for vs in per_record]),
            np.array([len(vs) for vs in per_record]))


def voter_flags(samples: list[dict], step: str) -> list[list[bool]]:
    """A step's voters' flags, in voter order, on each response that two or more of them judged and all answered
    validly."""
    rows = []
    for s in samples:
        for r in s["responses"]:
            votes = r["judgements"].get(step, {}).get("votes", {})
            if len(votes) >= 2 and all(v["flagged"] is not None for v in votes.values()):
                rows.append([votes[k]["flagged"] for k in sorted(votes)])
    return rows
