"""Kind `classify`: the model reads a record and answers with one label of a fixed set, per question.

Generative models answer in words (or in JSON, one field per question) and the answer is parsed; models with
log-likelihoods may rank the labels instead (`scoring: loglikelihood`); classifier backends return a label
directly, through the same parser; replayed predictions go through the same parser too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
from omegaconf import MISSING, OmegaConf

from .. import BenchmarkError
from .. import metrics as M
from ..config import LabelConfig
from ..judging.parsing import INVALID, LabelParser, extract_json
from ..models.cached import Failure
from ..models.registry import backend_class
from ..models.requests import Classify as ClassifyRequest, Generate, LogLikelihood, Replay
from ..templates import render
from ..text import pad, pct
from .base import Kind, KindProtocol, KindScorer, KindView, Roles, slug
from .common import render_messages, variables


@dataclass
class QuestionConfig:
    """One of several questions asked in one prompt, answered as one field of a JSON object."""

    name: str = MISSING  # metrics are named <name>.<metric>
    labels: List[LabelConfig] = field(default_factory=list)  # in option order: 1 is the first
    target: str = MISSING  # Jinja template that renders the gold label
    field: Optional[str] = None  # the answer's JSON key; null: `name`
    positive_coarse: Optional[str] = None


@dataclass
class TruncateConfig:
    """How a record too long for the model's context is cut: whole lines from the start of one field."""

    field: str = MISSING


@dataclass
class ClassifyConfig:
    # one question: its labels and gold label here; several: `questions` (and answer_format: json)
    labels: List[LabelConfig] = field(default_factory=list)
    target: Optional[str] = None  # Jinja template that renders the gold label from a record
    positive_coarse: Optional[str] = None  # the coarse class whose own F1 is a headline (e.g. unsafe)
    questions: List[QuestionConfig] = field(default_factory=list)
    answer_format: str = "text"  # text: the answer is a label | json: an object with one field per question
    numbered_options: bool = False  # an answer may give a label's position, 1..K
    whole_words: bool = True  # false for languages that attach particles to words (Korean)
    scoring: str = "generate"  # generate (parse the answer) | loglikelihood (rank the labels; one question)
    # a record that offers only some of the labels (multiple choice with 2 to 4 options): Jinja rendering how many,
    # the first N labels; an answer naming another is invalid, and log-likelihoods rank only those N. It reads
    # fields of the task's group_by, which a published sample keeps, so the count is checked without the data
    choices: Optional[str] = None
    # what classifier backends read, as Jinja templates (named parts: context, response)
    classifier_input: Dict[str, str] = field(default_factory=dict)
    # classifier backends say unsafe or not: the task's label for each verdict ({unsafe: LABEL, safe: LABEL})
    classifier_labels: Dict[str, str] = field(default_factory=dict)
    truncate: Optional[TruncateConfig] = None
    # the macro F1 per value of each group_by field, with its interval, as metrics `macro_f1.<field>.<slug>` (the
    # board draws them): for groups that hold every class (KoSBi's demographic categories); a group that is a class
    # (DiaSafety's categories) has accuracy per group in the breakdown, as every classify task
    group_macro_f1: bool = False

@dataclass
class Question:
    name: str | None  # None for a task with a single question: its metrics are unprefixed
    field: str | None
    labels: list[str]  # the fine labels
    coarse_of: dict[str, str]
    target: str
    positive_coarse: str | None
    parse: LabelParser

    def metric(self, name: str) -> str:
        return f"{self.name}.{name}" if self.name else name


class ClassifyProtocol(KindProtocol):
    """Classify: its protocol part, records to typed requests to samples."""

    def __init__(self, task, model_cfg):
        if task.classify is None:
            raise BenchmarkError(f"task {task.name}: kind classify needs a `classify:` section")
        spec = task.classify
        self.task, self.spec = task, spec
        # each record's gold labels, rendered once: checking the record and its sample's reference both need them
        self._targets: dict[int, tuple[dict, dict]] = {}
        where = f"task {task.name}: classify"
        if spec.questions:
            if spec.labels or spec.target:
                raise BenchmarkError(f"{where}: give either labels and target, or questions, not both")
            if spec.answer_format != "json":
                raise BenchmarkError(f"{where}: several questions need answer_format: json")
            self.questions = [
                self._question(q.name, q.field or q.name, q.labels, q.target, q.positive_coarse) for q in spec.questions
            ]
        else:
            if not spec.labels or not spec.target:
                raise BenchmarkError(f"{where}: needs labels and target (or questions)")
            field = "label" if spec.answer_format == "json" else None
            self.questions = [self._question(None, field, spec.labels, spec.target, spec.positive_coarse)]
        if spec.answer_format not in ("text", "json"):
            raise BenchmarkError(f"{where}.answer_format={spec.answer_format!r}: use text or json")
        self.scoring = model_cfg.scoring or spec.scoring
        if self.scoring not in ("generate", "loglikelihood"):
            raise BenchmarkError(f"scoring={self.scoring!r}: use generate or loglikelihood")
        if self.scoring == "loglikelihood" and (len(self.questions) > 1 or spec.answer_format == "json"):
            raise BenchmarkError(f"{where}: loglikelihood scoring needs a single question answered as text")
        if spec.choices is not None and not self.single:
            raise BenchmarkError(f"{where}.choices: for a single question")
        self.generation = OmegaConf.to_container(model_cfg.generation, resolve=True)
        # what this model's backend answers, as evaluate asks it: a recorded text, a classifier's verdict, a generated
        # text, or a log-likelihood per offered label; a sample whose output has another form was not given by it
        self.backend = backend_class(model_cfg)
        self.model_cfg = model_cfg
        ops = self.backend.operations
        self.output_form = ("text" if "replay" in ops else "verdict" if "classify" in ops else
                            "text" if self.scoring == "generate" else "log-likelihoods")
        names = {lab.name for lab in spec.labels}
        for verdict, label in spec.classifier_labels.items():
            if verdict not in ("unsafe", "safe") or label not in names:
                raise BenchmarkError(f"{where}.classifier_labels: {verdict}: {label!r}; give unsafe and safe each one "
                                     f"of the task's labels {sorted(names)}")

    def _question(self, name, field, labels, target, positive_coarse) -> Question:
        if not labels:
            raise BenchmarkError(f"task {self.task.name}: question {name or '(single)'} has no labels")
        return Question(
            name=name,
            field=field,
            labels=[lab.name for lab in labels if lab.fine],
            coarse_of={lab.name: lab.coarse for lab in labels if lab.coarse},
            target=target,
            positive_coarse=positive_coarse,
            parse=LabelParser(labels, self.spec.numbered_options, self.spec.whole_words),
        )

    @property
    def single(self) -> bool:
        return self.questions[0].name is None

    def _variables(self, record: dict) -> dict:
        return variables(self.task, record)

    def messages(self, record: dict) -> list[dict]:
        return render_messages(self.task, record)

    def targets(self, record: dict) -> dict:
        kept = self._targets.get(id(record))
        if kept is not None and kept[0] is record:  # the record is kept with them, so its id is never reused
            return kept[1]
        v = self._variables(record)
        out = {q.name: render(q.target, v, f"task {self.task.name}: {q.name or 'classify'}.target").strip()
               for q in self.questions}
        self._targets[id(record)] = (record, out)
        return out

    def offered(self, record: dict) -> list[str]:
        """The labels a record offers: all, or the first `classify.choices` of them."""
        labels = self.questions[0].labels
        if self.spec.choices is None:
            return labels
        where = f"task {self.task.name}: classify.choices"
        text = render(self.spec.choices, self._variables(record), where).strip()
        if not text.isdigit() or not 1 <= int(text) <= len(labels):
            raise BenchmarkError(f"{where} gives {text[:40]!r} for record {record.get('id')!r}: a number of labels, "
                                 f"1 to {len(labels)}")
        return labels[: int(text)]

    @staticmethod
    def _known(sample: dict) -> dict:
        """What a sample keeps of its record: its group (pinned with the task's reference, so a published card,
        which keeps no input, still says how many labels each record offered) and its input where kept."""
        return {**(sample.get("group") or {}), **(sample.get("input") or {})}

    def _restricted(self, record: dict, predictions: dict) -> dict:
        """A single question's answer that names a label the record does not offer is invalid."""
        if self.spec.choices is None or predictions[None] == INVALID or predictions[None] in self.offered(record):
            return predictions
        return {None: INVALID}

    @property
    def requests_per_record(self) -> int:
        return len(self.questions[0].labels) if self.scoring == "loglikelihood" else 1

    def check_record(self, record: dict) -> str | None:
        """Why a record cannot be scored (a gold label that is not a label of the task), or None."""
        for q, gold in zip(self.questions, self.targets(record).values()):
            if gold not in q.labels:
                return f"{q.metric('gold label')} {gold!r} is not one of the task's labels {q.labels}"
        return None

    def classifier_input(self, record: dict) -> dict:
        v = self._variables(record)
        return {k: render(t, v, f"task {self.task.name}: classifier_input.{k}")
                for k, t in self.spec.classifier_input.items()}

    def preview(self, record: dict) -> list[tuple[str, object]]:
        asked = [("the model (a language model)", self.messages(record))]
        if self.spec.classifier_input:
            asked.append(("the model (a classifier reads)", self.classifier_input(record)))
        return asked

    def preflight(self, record: dict) -> None:
        """Render every template once, so a broken task file fails before a model is loaded."""
        self.messages(record)
        self.classifier_input(record)

    def _fit(self, record: dict, model) -> tuple[dict, int]:
        """The record cut to the model's context: the fewest whole lines from the start of `truncate.field`.

        Returns the record and the lines cut; -1 when even the last line alone does not fit (sent as it is).
        """
        spec = self.spec.truncate
        if spec is None or not model.supports("overflow"):
            return record, 0
        lines = str(record[spec.field]).split("\n")

        def cut_to(k: int) -> dict:
            return {**record, spec.field: "\n".join(lines[k:])}

        def fits(k: int) -> bool:
            return model.overflow(self.messages(cut_to(k)), self.generation["max_new_tokens"]) <= 0

        if fits(0):
            return record, 0
        low, high = 1, len(lines) - 1  # binary search for the fewest lines to cut
        if high < low or not fits(high):
            return record, -1
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if fits(mid) else (mid + 1, high)
        return cut_to(low), low

    def evaluate(self, records: list[dict], roles: Roles) -> list[dict]:
        """One sample per record: what was asked, what came back, the parsed labels and the gold labels."""
        model = roles.model
        if model.match_field:
            raise BenchmarkError(f"task {self.task.name}: a replay matched by text (replay.match) answers attack tasks; "
                                 "classify tasks replay by record id")
        if model.supports("replay"):
            outs = model.replay([Replay(self.task.name, r["id"]) for r in records])
            return [self._sample(r, None, out, 0) for r, out in zip(records, outs)]
        if model.supports("classify"):
            where = f"task {self.task.name}: classify"
            if not self.spec.classifier_input or not self.single:
                raise BenchmarkError(f"{where}: a classifier model answers one question of a task with "
                                     "classify.classifier_input (what it reads)")
            if set(self.spec.classifier_labels) != {"unsafe", "safe"}:
                raise BenchmarkError(f"{where}: a classifier model says unsafe or not; map that to the task's labels "
                                     "with classify.classifier_labels: {unsafe: LABEL, safe: LABEL}")
            inputs = [self.classifier_input(r) for r in records]
            outs = model.classify([ClassifyRequest(x) for x in inputs])
            return [self._sample(r, x, o if isinstance(o, Failure) else self._classifier_label(o), 0, o)
                    for r, x, o in zip(records, inputs, outs)]
        fitted = [self._fit(r, model) for r in records]
        convs = [self.messages(r) for r, _ in fitted]
        if self.scoring == "generate":
            outs = model.generate([Generate(c, self.generation) for c in convs])
            return [self._sample(r, c, o, cut) for r, (_, cut), c, o in zip(records, fitted, convs, outs)]
        offered = [self.offered(r) for r in records]
        outs = model.loglikelihood([LogLikelihood(c, lab) for c, labels in zip(convs, offered) for lab in labels])
        model.will_not_ask(len(records) * len(self.questions[0].labels) - len(outs))
        samples, start = [], 0
        for r, (_, cut), c, labels in zip(records, fitted, convs, offered):
            lls, start = outs[start : start + len(labels)], start + len(labels)
            failed = next((o for o in lls if isinstance(o, Failure)), None)
            scores = dict(zip(labels, lls))
            # per byte, as lm-eval's acc_norm: a raw sum would favour short labels
            best = None if failed else max(labels, key=lambda lab: scores[lab] / len(lab.encode("utf-8")))
            samples.append(self._sample(r, c, failed or best, cut, failed or scores))
        return samples

    def _classifier_label(self, out: dict) -> str:
        """A classifier's verdict as one of the task's labels: the kind of unsafety it names, when that is a label
        of the task (the DiaSafety detector on DiaSafety), else the label classifier_labels gives its verdict."""
        category = out.get("category")
        if category in self.questions[0].labels:
            return category
        return self.spec.classifier_labels["unsafe" if out["unsafe"] else "safe"]

    def _answers(self, answer) -> dict:
        if self.spec.answer_format == "text":
            return {None: self.questions[0].parse(answer)}
        obj = extract_json(answer)
        parsed = {}
        for q in self.questions:
            value = obj.get(q.field) if obj else None
            if isinstance(value, dict):  # {"answer": 3, "reason": "..."}
                value = value.get("answer")
            parsed[q.name] = q.parse(value)
        return parsed

    def _sample(self, record, prompt, answer, cut: int, output=None) -> dict:
        """`answer` is what the parser reads; `output` what the model returned, when that differs.

        `input` is the record as loaded; `prompt` what the model was asked (cut to its context where needed)."""
        sample = {
            "id": record["id"],
            "input": {k: v for k, v in record.items() if k != "id"},
            "prompt": prompt,
        }
        if isinstance(answer, Failure):
            predictions = {q.name: INVALID for q in self.questions}
            sample.update(output=None, error=answer.error)
        else:
            predictions = self._answers(answer)
            if self.single:
                predictions = self._restricted(record, predictions)
            sample.update(output=answer if output is None else output, error=None)
        sample.update(self.reference(record))
        sample["prediction"] = predictions[None] if self.single else predictions
        if cut:
            sample["truncated_lines"] = cut
        return sample


class ClassifyScorer(KindScorer):
    """Classify: its scorer part, metrics, derived figures, and the checks of a submitted card."""

    def reference(self, record: dict) -> dict:
        """What a sample takes from the task's data alone: the gold label(s) and the group fields."""
        targets = self.targets(record)
        return {"target": targets[None] if self.single else targets,
                "group": {g: record.get(g) for g in self.task.group_by}}

    @functools.cached_property
    def verdict_rule(self):
        """The model backend's rule for its verdicts, its config read once for all of a card's samples."""
        return self.backend.verdict_rule(self.model_cfg)

    def derivation_problems(self, sample: dict) -> list[tuple[str, str]]:
        """The prediction, parsed again from what the model returned: a text by the task's parser, a classifier's
        verdict by classifier_labels, log-likelihoods by the best per byte."""
        out = sample.get("output")
        form = ("text" if isinstance(out, str) else "verdict" if isinstance(out, dict) and "unsafe" in out else
                "log-likelihoods" if isinstance(out, dict) else None)
        if not sample.get("error") and form != self.output_form:
            return [("output", f"is not what model backend {self.model_cfg.backend} gives ({self.output_form} "
                               f"here, scoring {self.scoring})")]
        if form == "verdict" and not sample.get("error"):
            problem = self.verdict_rule(out)
            if problem:
                return [("output", f"{problem[:200]}: not a verdict model backend {self.model_cfg.backend} gives")]
        if sample.get("error"):
            expected = {q.name: INVALID for q in self.questions}
        elif isinstance(out, str):
            expected = self._answers(out)
        elif isinstance(out, dict) and isinstance(out.get("unsafe"), bool) and self.single:
            # a submission keeps the hash of a string the data set also holds (a category named as in the data)
            hashed = {"sha256:" + hashlib.sha256(lab.encode("utf-8")).hexdigest(): lab for lab in self.questions[0].labels}
            expected = self._answers(self._classifier_label({**out, "category": hashed.get(out.get("category"),
                                                                                           out.get("category"))}))
        elif isinstance(out, dict) and out and self.single and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v <= 0
                for v in out.values()):  # a log-probability: finite, at most 0
            labels = self.offered(self._known(sample))
            if set(out) != set(labels):
                return [("output", f"log-likelihoods of {sorted(out)}; the record's labels are {list(labels)}")]
            expected = self._answers(max(labels, key=lambda lab: out[lab] / len(lab.encode("utf-8"))))
        else:
            return [("output", "is not a text, a classifier's verdict or log-likelihoods of the task's labels")]
        if self.single:
            expected = self._restricted(self._known(sample), expected)
        prediction = expected[None] if self.single else expected
        if sample.get("prediction") != prediction:
            return [("prediction", f"{str(sample.get('prediction'))[:80]} is not what the output gives: "
                                   f"{str(prediction)[:80]}")]
        return []

    # --- metrics ----------------------------------------------------------------------------------------
    def score(self, samples: list[dict], resamples: int, seed: int, validation: dict | None = None
              ) -> tuple[dict, dict]:
        metrics, breakdown = {}, {}
        for q in self.questions:
            gold = [s["target"] if self.single else s["target"][q.name] for s in samples]
            pred = [s["prediction"] if self.single else s["prediction"][q.name] for s in samples]
            m, b = self._score_question(q, gold, pred, samples, resamples, seed)
            metrics.update(m)
            if self.single:
                breakdown.update(b)
            else:
                breakdown[q.name] = b
        if self.spec.truncate is not None:
            breakdown["truncated"] = {
                "records": sum(1 for s in samples if s.get("truncated_lines", 0) > 0),
                "too_long": sum(1 for s in samples if s.get("truncated_lines") == -1),
                "field": self.spec.truncate.field,
            }
        return metrics, breakdown

    def _score_question(self, q: Question, gold_l, pred_l, samples, resamples, seed):
        # the classes the macro average runs over: the task's labels that occur among the gold labels
        present = [c for c in q.labels if c in set(gold_l)]
        gold, pred = M.encode(gold_l, present), M.encode(pred_l, present)
        k = len(present)
        invalid = np.array([p == INVALID for p in pred_l], dtype=np.int64)
        metrics = {
            q.metric("macro_f1"): M.point_and_ci(M.macro_f1, gold, pred, k, resamples, seed),
            q.metric("accuracy"): M.point_and_ci(M.accuracy, gold, pred, k, resamples, seed),
            q.metric("invalid_rate"): M.point_and_ci(M.rate, invalid, invalid, 1, resamples, seed),
        }
        breakdown = {
            "per_class": self._per_class(gold, pred, present, k),
            "confusion": {
                "labels": present + ["other"],
                "matrix": M.confusion(gold[None, :], pred[None, :], k)[0].tolist(),
            },
        }
        majority = Counter(gold_l).most_common(1)[0][0]
        always = M.encode([majority] * len(gold_l), present)
        breakdown["majority_baseline"] = {
            "label": majority,
            "accuracy": float(M.accuracy(gold[None], always[None], k)[0]),
            "macro_f1": float(M.macro_f1(gold[None], always[None], k)[0]),
        }
        coarse_classes = sorted({q.coarse_of[g] for g in gold_l if g in q.coarse_of})
        if coarse_classes:
            cg = M.encode([q.coarse_of.get(g, INVALID) for g in gold_l], coarse_classes)
            cp = M.encode([q.coarse_of.get(p, INVALID) for p in pred_l], coarse_classes)
            kc = len(coarse_classes)
            metrics[q.metric("coarse_macro_f1")] = M.point_and_ci(M.macro_f1, cg, cp, kc, resamples, seed)
            if q.positive_coarse in coarse_classes:
                c = coarse_classes.index(q.positive_coarse)
                metrics[q.metric(f"coarse_{q.positive_coarse}_f1")] = M.point_and_ci(
                    M.class_f1(c), cg, cp, kc, resamples, seed
                )
            breakdown["coarse_per_class"] = self._per_class(cg, cp, coarse_classes, kc)
        for by in self.task.group_by:
            values = [str(s["group"].get(by)) for s in samples]
            groups = {}
            for value in sorted(set(values)):
                mask = np.array([v == value for v in values])
                groups[value] = {
                    "n": int(mask.sum()),
                    "accuracy": float((gold[mask] == pred[mask]).mean()),
                    "invalid_rate": float(invalid[mask].mean()),
                }
                if self.spec.group_macro_f1:
                    metrics[q.metric(f"macro_f1.{by}.{slug(value)}")] = M.point_and_ci(
                        M.macro_f1, gold[mask], pred[mask], k, resamples, seed)
            breakdown[f"by_{by}"] = groups
        breakdown["predictions"] = dict(Counter(pred_l).most_common())
        return metrics, breakdown

    @staticmethod
    def _per_class(gold, pred, classes, k) -> dict:
        pc = M.per_class(gold[None, :], pred[None, :], k)
        return {
            c: {
                "precision": float(pc["precision"][0, i]),
                "recall": float(pc["recall"][0, i]),
                "f1": float(pc["f1"][0, i]),
                "support": int(pc["support"][0, i]),
            }
            for i, c in enumerate(classes)
        }


class ClassifyView(KindView):
    """Classify: its view part, what the board and the submissions read of a sample."""

    @staticmethod
    def outputs(sample: dict):
        """What the model said."""
        return sample.get("output")

    @staticmethod
    def conversation(sample: dict) -> list[tuple[str, str]]:
        """The prompt, then the model's answer (a classifier's verdict as JSON)."""
        output = sample.get("output")
        answer = [] if output is None else [("assistant", output if isinstance(output, str)
                                             else json.dumps(output, ensure_ascii=False))]
        return Kind.conversation(sample) + answer

    @staticmethod
    def verdicts(sample: dict):
        """What the task concluded from it."""
        return sample.get("prediction")

    @staticmethod
    def sample_row(sample: dict) -> dict:
        out = sample.get("output")
        return {"id": str(sample.get("id", "")), "error": sample.get("error") or "",
                "prediction": json.dumps(sample.get("prediction"), ensure_ascii=False),
                "gold": json.dumps(sample.get("target"), ensure_ascii=False),
                "outputs": out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)}

    @staticmethod
    def _per_class_parts(breakdown: dict) -> list[tuple[str | None, dict]]:
        """(question, its breakdown): one question's breakdown is the card's; several questions, one each."""
        if "per_class" in breakdown:
            return [(None, breakdown)]
        return [(name, b) for name, b in breakdown.items() if isinstance(b, dict) and "per_class" in b]

    @staticmethod
    def breakdown_rows(card: dict, task: dict) -> list[dict]:
        """The headline by group, and F1 per class of every question (the card gives no CI for those)."""
        rows = Kind.breakdown_rows(card, task)
        for question, part in Classify._per_class_parts(card["breakdown"]):
            for label, v in part["per_class"].items():
                f1 = v["f1"]
                if isinstance(f1, bool) or not isinstance(f1, (int, float)):
                    raise TypeError(f"breakdown per_class {label!r}: f1 {f1!r} is not a number")
                rows.append({"by": f"{question} · class F1" if question else "class F1", "group": label,
                             "value": 100 * f1, "ci_low": None, "ci_high": None})
        return rows

    @staticmethod
    def summary_lines(card: dict) -> list[str]:
        """Precision, recall and F1 per class of every question, and the majority-class baseline."""
        lines = []
        for question, part in Classify._per_class_parts(card["breakdown"]):
            title = f"{question}: " if question else ""
            per_class = part["per_class"]
            width = max(len(title) + 5, *(2 * len(c) for c in per_class)) + 2
            lines.append(f"{pad(title + 'class', width)} precision  recall     F1  support")
            for name, row in per_class.items():
                lines.append(f"{pad(name, width)}     {pct(row['precision'])}   {pct(row['recall'])}  "
                             f"{pct(row['f1'])}  {row['support']:7d}")
            base = part.get("majority_baseline")
            if base:
                lines.append(f"(always '{base['label']}': accuracy {pct(base['accuracy'])}, macro F1 "
                             f"{pct(base['macro_f1'])})")
            lines.append("")
        truncated = card["breakdown"].get("truncated", {}).get("records")
        if truncated:
            lines += [f"{truncated} inputs cut to fit the model's context", ""]
        return lines


class Classify(ClassifyProtocol, ClassifyScorer, ClassifyView, Kind):
    packaged_fields = frozenset({"id", "input_sha256", "prompt_sha256", "output", "error", "target", "group",
                                 "prediction", "truncated_lines"})
    said_fields = ("output",)
    name = "classify"
    section, section_schema = "classify", ClassifyConfig
    failed_samples = "counted as invalid answers in the metrics"
    reference_fields = ("target", "group")

