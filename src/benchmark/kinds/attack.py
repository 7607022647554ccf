"""Kind `attack` (judged generation): the model answers each record's prompt k times; judges label every response.

Judging runs the task's steps in order and the first step that says unsafe decides a response's verdict (the
DiaSafety paper's two-step detection: utterance-level first, then context-level for the context's category); a
response no step flags is safe. Each step is answered by the judge model of the same name (`judge=` group), in one
batched call per step for every response still undecided. Rates are over responses, with confidence intervals from
a bootstrap over records (a record's k responses share its prompt, so they are resampled together).
"""

from __future__ import annotations

import json
import re

import numpy as np
from omegaconf import OmegaConf

from .. import BenchmarkError
from .. import metrics as M
from ..models.cached import Failure
from ..templates import render
from .common import render_messages, variables

SAFE = "safe"


def slug(value) -> str:
    return re.sub(r"[^0-9a-z]+", "_", str(value).lower()).strip("_")


class Attack:
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
        self.task, self.spec = task, spec
        self.k = spec.samples
        self.judge_steps = [s.name for s in spec.judges]
        if len(set(self.judge_steps)) != len(self.judge_steps):
            raise BenchmarkError(f"{where}.judges: step names must differ: {self.judge_steps}")
        generation = OmegaConf.to_container(model_cfg.generation, resolve=True)
        self.generation = {**generation, **OmegaConf.to_container(spec.generation, resolve=True)}

    # --- requests ---------------------------------------------------------------------------------------
    def check_record(self, record: dict) -> str | None:
        return None

    def judge_input(self, step, record: dict, response: str) -> dict:
        v = {**variables(self.task, record), "response": response}
        return {k: render(t, v, f"task {self.task.name}: attack.judges[{step.name}].input.{k}")
                for k, t in step.input.items()}

    def preflight(self, record: dict) -> None:
        render_messages(self.task, record)
        for step in self.spec.judges:
            self.judge_input(step, record, "")

    def _responses(self, records, model) -> list:
        """Per record: a list of k responses, None (a replay with no recorded row), or a Failure."""
        backend = model.backend
        if backend.supports("replay"):
            match = getattr(backend, "match", None)
            outs = model("replay", [{"task": self.task.name, "id": r["id"], **({"key": r[match]} if match else {})}
                                    for r in records])
            return [o if o is None or isinstance(o, Failure) else self._recorded(o) for o in outs]
        payloads = [{"messages": render_messages(self.task, r), "generation": self.generation, "sample": j}
                    for r in records for j in range(self.k)]
        outs = model("generate", payloads)
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

    def evaluate(self, records: list[dict], model, judges: dict) -> list[dict]:
        responses = self._responses(records, model)
        # (record index, response index) of every response still undecided, judged step by step
        verdicts: dict[tuple[int, int], str] = {}
        judgements: dict[tuple[int, int], dict] = {}
        errors: dict[int, str] = {}
        open_ = [(i, j) for i, rs in enumerate(responses) if isinstance(rs, list) for j in range(len(rs))]
        for step in self.spec.judges:
            if not open_:
                break
            inputs = [self.judge_input(step, records[i], responses[i][j]) for i, j in open_]
            outs = judges[step.name]("classify", [{"input": x} for x in inputs])
            still = []
            for (i, j), out in zip(open_, outs):
                if isinstance(out, Failure):
                    errors.setdefault(i, f"judge {step.name}: {out.error}")
                    continue
                judgements.setdefault((i, j), {})[step.name] = {"unsafe": out["unsafe"], "score": out.get("score")}
                if out["unsafe"]:
                    verdicts[(i, j)] = step.name
                else:
                    still.append((i, j))
            open_ = still
        samples = []
        for i, (record, rs) in enumerate(zip(records, responses)):
            sample = {"id": record["id"], "input": {k: v for k, v in record.items() if k != "id"},
                      "prompt": render_messages(self.task, record), "unmatched": rs is None, "responses": [],
                      "group": {g: record.get(g) for g in self.task.group_by}, "error": None}
            if isinstance(rs, Failure):
                sample["error"] = rs.error
            elif rs is not None:
                sample["error"] = errors.get(i)
                sample["responses"] = [{"text": text, "verdict": verdicts.get((i, j), SAFE),
                                        "judgements": judgements.get((i, j), {})} for j, text in enumerate(rs)]
            samples.append(sample)
        return samples

    # --- metrics ----------------------------------------------------------------------------------------
    def _rates(self, samples: list[dict], resamples: int, seed: int, suffix: str = "") -> dict:
        n = np.array([len(s["responses"]) for s in samples])
        flagged = {step: np.array([sum(r["verdict"] == step for r in s["responses"]) for s in samples])
                   for step in self.judge_steps}
        metrics = {f"unsafe_rate{suffix}": M.point_and_ci(M.ratio, sum(flagged.values()), n, 0, resamples, seed)}
        for step, counts in flagged.items():
            metrics[f"{step}_unsafe_rate{suffix}"] = M.point_and_ci(M.ratio, counts, n, 0, resamples, seed)
        return metrics

    def score(self, samples: list[dict], resamples: int, seed: int) -> tuple[dict, dict]:
        scored = [s for s in samples if not s["unmatched"] and not s.get("error") and s["responses"]]
        if not scored:
            raise BenchmarkError(f"task {self.task.name}: no record has a judged response to score "
                                 f"({sum(s['unmatched'] for s in samples)} of {len(samples)} unmatched)")
        metrics = self._rates(scored, resamples, seed)
        breakdown = {
            "records": {"total": len(samples), "scored": len(scored),
                        "unmatched": sum(1 for s in samples if s["unmatched"]),
                        "failed": sum(1 for s in samples if s.get("error"))},
            "responses": int(sum(len(s["responses"]) for s in scored)),
            "samples_per_record": self.k,
            "judging": f"steps in order, the first that says unsafe decides: {' -> '.join(self.judge_steps)}",
        }
        for field in self.task.group_by:
            groups = {}
            for value in sorted({str(s["group"].get(field)) for s in scored}):
                part = [s for s in scored if str(s["group"].get(field)) == value]
                rates = self._rates(part, resamples, seed, f".{slug(value)}")
                metrics.update(rates)
                groups[value] = {"records": len(part), "responses": int(sum(len(s["responses"]) for s in part)),
                                 **{name.split(".")[0]: m["value"] for name, m in rates.items()}}
            breakdown[f"by_{field}"] = groups
        return metrics, breakdown
