"""Kind `classify`: the model reads a record and answers with one label of a fixed set.

Generative models answer in words and the answer is parsed; models with log-likelihoods may rank the labels
instead (`scoring: loglikelihood`); classifier backends return a label directly, through the same parser.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError
from .. import metrics as M
from ..models.cached import Failure
from ..templates import render

INVALID = "invalid"
_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:final\s+)?(?:answer|label|category|class|prediction)\s*(?:is)?\s*[:\-=]?\s*", re.I)
_STRIP = " \t\r\n.,;:!?\"'`*_()[]{}<>"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip(_STRIP).lower())


class LabelParser:
    """Maps a free-text answer to a label name, or `invalid`.

    1. The whole answer (after a leading "Answer:"/"Label:" and surrounding punctuation) is a label, alias or
       abbreviation.
    2. Otherwise every mention of a label in the answer is found (longest mention wins where two overlap, so
       "not safe" is not read as "safe"); one distinct fine label mentioned is the answer; several are ambiguous,
       hence invalid; with no fine label, one distinct coarse-only answer (e.g. "Unsafe") is the answer.
    """

    def __init__(self, labels):
        self.fine = {lab.name for lab in labels if lab.fine}
        self.exact: dict[str, str] = {}
        self.exact_cased: dict[str, str] = {}
        patterns = []
        for lab in labels:
            for form in [lab.name, *lab.aliases]:
                self.exact[_norm(form)] = lab.name
                words = r"\s+".join(re.escape(w) for w in form.split())
                patterns.append((re.compile(rf"(?<![\w-]){words}(?![\w-])", re.I), lab.name))
            if lab.abbreviation:
                self.exact_cased[lab.abbreviation] = lab.name
                patterns.append((re.compile(rf"(?<![\w-]){re.escape(lab.abbreviation)}(?![\w-])"), lab.name))
        self.patterns = patterns

    def __call__(self, text: str | None) -> str:
        if not text or not text.strip():
            return INVALID
        head = _PREFIX.sub("", text.strip(), count=1)
        if head.strip(_STRIP) in self.exact_cased:
            return self.exact_cased[head.strip(_STRIP)]
        if _norm(head) in self.exact:
            return self.exact[_norm(head)]
        spans = []
        for pattern, name in self.patterns:
            spans += [(m.start(), m.end(), name) for m in pattern.finditer(text)]
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        taken: list[tuple[int, int, str]] = []
        for s in spans:
            if all(s[1] <= t[0] or s[0] >= t[1] for t in taken):
                taken.append(s)
        found = {name for _, _, name in taken}
        fine = found & self.fine
        if len(fine) == 1:
            return fine.pop()
        if not fine and len(found) == 1:
            return found.pop()
        return INVALID


class Classify:
    def __init__(self, task, model_cfg):
        if task.classify is None:
            raise BenchmarkError(f"task {task.name}: kind classify needs a `classify:` section")
        spec = task.classify
        if not spec.labels:
            raise BenchmarkError(f"task {task.name}: classify.labels is empty")
        self.task = task
        self.spec = spec
        self.labels = [lab.name for lab in spec.labels if lab.fine]
        self.coarse_of = {lab.name: lab.coarse for lab in spec.labels if lab.coarse}
        self.coarse_classes = sorted({c for c in self.coarse_of.values()})
        self.parse = LabelParser(spec.labels)
        self.scoring = model_cfg.scoring or spec.scoring
        if self.scoring not in ("generate", "loglikelihood"):
            raise BenchmarkError(f"scoring={self.scoring!r}: use generate or loglikelihood")
        self.generation = OmegaConf.to_container(model_cfg.generation, resolve=True)

    # --- requests ---------------------------------------------------------------------------------------
    def _variables(self, record: dict) -> dict:
        return {**record, "options": self.task.options}

    def messages(self, record: dict) -> list[dict]:
        v = self._variables(record)
        return [
            {"role": m.role, "content": render(m.content, v, f"task {self.task.name}: messages[{i}]")}
            for i, m in enumerate(self.task.messages)
        ]

    def target(self, record: dict) -> str:
        return render(self.spec.target, self._variables(record), f"task {self.task.name}: classify.target").strip()

    def check_record(self, record: dict) -> str | None:
        """Why a record cannot be scored (its gold label is not a label of the task), or None."""
        gold = self.target(record)
        if gold not in self.labels:
            return f"gold label {gold!r} is not one of the task's labels {self.labels}"
        return None

    def preflight(self, record: dict) -> None:
        """Render every template once, so a broken task file fails before a model is loaded."""
        self.messages(record)
        for k, t in self.spec.classifier_input.items():
            render(t, self._variables(record), f"task {self.task.name}: classifier_input.{k}")

    def evaluate(self, records: list[dict], model) -> list[dict]:
        """One sample per record: what was asked, what came back, the parsed label and the gold label."""
        backend = model.backend
        if backend.supports("classify"):
            mode = "classify"
        elif self.scoring == "loglikelihood":
            mode = "loglikelihood"
        else:
            mode = "generate"
        samples = []
        if mode == "classify":
            if not self.spec.classifier_input:
                raise BenchmarkError(f"task {self.task.name}: classifier models need classify.classifier_input")
            inputs = [
                {k: render(t, self._variables(r), f"task {self.task.name}: classifier_input.{k}")
                 for k, t in self.spec.classifier_input.items()}
                for r in records
            ]
            outs = model("classify", [{"input": x} for x in inputs])
            for r, x, out in zip(records, inputs, outs):
                samples.append(self._sample(r, x, out, lambda o: o["label"]))
        elif mode == "generate":
            convs = [self.messages(r) for r in records]
            outs = model("generate", [{"messages": c, "generation": self.generation} for c in convs])
            for r, c, out in zip(records, convs, outs):
                samples.append(self._sample(r, c, out, lambda o: o))
        else:
            convs = [self.messages(r) for r in records]
            payloads = [{"messages": c, "continuation": lab} for c in convs for lab in self.labels]
            outs = model("loglikelihood", payloads)
            k = len(self.labels)
            for i, (r, c) in enumerate(zip(records, convs)):
                lls = outs[i * k : (i + 1) * k]
                failed = next((o for o in lls if isinstance(o, Failure)), None)
                out = failed or dict(zip(self.labels, lls))
                samples.append(self._sample(r, c, out, lambda o: max(o, key=o.get)))
        return samples

    def _sample(self, record, prompt, out, to_answer) -> dict:
        sample = {
            "id": record["id"],
            "input": {k: v for k, v in record.items() if k != "id"},
            "prompt": prompt,
            "target": self.target(record),
            "group": {g: record.get(g) for g in self.task.group_by},
        }
        if isinstance(out, Failure):
            sample.update(output=None, prediction=INVALID, error=out.error)
        else:
            answer = to_answer(out)
            sample.update(output=out, prediction=self.parse(answer), error=None)
        return sample

    # --- metrics ----------------------------------------------------------------------------------------
    def score(self, samples: list[dict], resamples: int, seed: int) -> tuple[dict, dict]:
        gold_l = [s["target"] for s in samples]
        pred_l = [s["prediction"] for s in samples]
        # the fine classes the macro average runs over: those that occur, as scikit-learn does without `labels`
        present = [c for c in self.labels if c in set(gold_l) | set(pred_l)]
        gold, pred = M.encode(gold_l, present), M.encode(pred_l, present)
        k = len(present)
        metrics = {
            "macro_f1": M.point_and_ci(M.macro_f1, gold, pred, k, resamples, seed),
            "accuracy": M.point_and_ci(M.accuracy, gold, pred, k, resamples, seed),
        }
        invalid = np.array([p == INVALID for p in pred_l], dtype=np.int64)
        metrics["invalid_rate"] = M.point_and_ci(M.rate_of(1), invalid, invalid, 1, resamples, seed)
        breakdown = {"per_class": self._per_class(gold, pred, present, k)}
        breakdown["confusion"] = {
            "labels": present + ["other"],
            "matrix": M.confusion(gold[None, :], pred[None, :], k)[0].tolist(),
        }
        if self.coarse_classes:
            cg_l = [self.coarse_of.get(g, INVALID) for g in gold_l]
            cp_l = [self.coarse_of.get(p, INVALID) for p in pred_l]
            cc = self.coarse_classes
            cg, cp = M.encode(cg_l, cc), M.encode(cp_l, cc)
            metrics["coarse_macro_f1"] = M.point_and_ci(M.macro_f1, cg, cp, len(cc), resamples, seed)
            if self.spec.positive_coarse in cc:
                c = cc.index(self.spec.positive_coarse)
                metrics[f"coarse_{self.spec.positive_coarse}_f1"] = M.point_and_ci(
                    M.class_f1(c), cg, cp, len(cc), resamples, seed
                )
            breakdown["coarse_per_class"] = self._per_class(cg, cp, cc, len(cc))
        for field in self.task.group_by:
            groups = {}
            for value in sorted({str(s["group"].get(field)) for s in samples}):
                mask = np.array([str(s["group"].get(field)) == value for s in samples])
                groups[value] = {
                    "n": int(mask.sum()),
                    "accuracy": float((gold[mask] == pred[mask]).mean()),
                    "invalid_rate": float(np.mean([p == INVALID for p, m in zip(pred_l, mask) if m])),
                }
            breakdown[f"by_{field}"] = groups
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
