"""A run in the formats other tools read (an Inspect AI eval log, lm-eval's results JSON), and a submission folder
pushed to a Hugging Face dataset repository; `python -m benchmark export` (cli/export.py) calls these."""

from __future__ import annotations

import json
from pathlib import Path

from .. import BenchmarkError
from ..files import inside
from ..kinds import kind_class
from ..run.card_record import ScoreCard
from ..run.folder import read_samples
from .package import run_card, validate


def _run(folder: Path) -> tuple[ScoreCard, list[dict]]:
    _, card = run_card(folder, "export")
    samples = inside(folder, card.samples.file, f"{folder / 'scorecard.json'}: samples.file")
    return card, list(read_samples(samples).values())


def _messages(kind, sample: dict) -> list:
    """The sample's conversation (as its kind tells it) as Inspect chat messages."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds.get(role, ChatMessageUser)(content=text) for role, text in kind.conversation(sample)]


def to_inspect(folder: Path, out: Path | None = None) -> Path:
    """The run as an Inspect AI eval log, written with Inspect's own writer."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.scorer import Score

    card, samples = _run(folder)
    kind = kind_class(card.task.kind)
    task, model = card.task, card.model
    eval_samples = []
    for s in samples:
        messages = _messages(kind, s)
        prompt = [m for m in messages if m.role != "assistant"][:2] or str(kind.own_input(s))
        answer = kind.outputs(s)
        eval_samples.append(EvalSample(
            id=s["id"], epoch=1, input=prompt, target=json.dumps(s.get("target"), ensure_ascii=False)
            if s.get("target") is not None else "", messages=messages,
            scores={task.name: Score(value=json.dumps(kind.verdicts(s), ensure_ascii=False),
                                        answer=json.dumps(answer, ensure_ascii=False)[:2000],
                                        explanation=s.get("error") or None)},
            metadata={k: s[k] for k in ("group", "input") if k in s}, error=None))
    metrics = {name: EvalMetric(name=name, value=m.value, metadata={"ci_low": m.ci_low, "ci_high": m.ci_high,
                                                                     "n": m.n})
               for name, m in card.metrics.items()}
    log = EvalLog(
        status="success",
        eval=EvalSpec(created=card.run.started_at, task=task.name, task_version=task.version,
                      dataset=EvalDataset(name=task.name, location=card.dataset.source, samples=card.dataset.n),
                      model=f"{model.backend}/{model.name}", config=EvalConfig(limit=card.run.limit),
                      model_args={"config": model.config}, metadata={"benchmark_card": {
                          "task": task.model_dump(exclude_unset=True),
                          "dataset": card.dataset.model_dump(exclude_unset=True)}}),
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples),
                            scores=[EvalScore(name=task.name, scorer=f"benchmark:{task.kind}", metrics=metrics)]),
        samples=eval_samples,
    )
    out = Path(out or folder / f"{task.name}.eval")
    write_eval_log(log, str(out))
    return out


def to_lm_eval(folder: Path, out: Path | None = None) -> Path:
    """The run's metrics in lm-eval's results layout, written by lm-eval's own EvaluationTracker."""
    from lm_eval.loggers import EvaluationTracker

    card, _ = _run(folder)
    task, model, run = card.task, card.model, card.run
    figures = {"alias": task.name}
    for name, m in card.metrics.items():
        figures[f"{name},none"] = m.value
        figures[f"{name}_stderr,none"] = (m.ci_high - m.ci_low) / (2 * 1.96)
    better = (task.config or {}).get("better", "higher")
    document = {
        "results": {task.name: figures},
        "group_subtasks": {task.name: []},
        "configs": {task.name: task.config or {"task": task.name}},
        "versions": {task.name: task.version},
        "n-shot": {task.name: 0},
        "higher_is_better": {task.name: {task.headline: better == "higher"}},
        "n-samples": {task.name: {"original": card.dataset.n_total, "effective": card.dataset.n}},
        "config": {"model": model.backend, "model_args": model.config, "limit": run.limit,
                   "bootstrap_iters": run.bootstrap, "random_seed": run.seed},
        "git_hash": run.git_commit,
        "date": run.started_at,
    }
    out = Path(out or folder / "lm-eval")
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.model_name_sanitized = model.name
    tracker.save_results_aggregated(results=document, samples=None)
    return max((out / model.name).glob("results_*.json"))


def to_hub(folder: Path, repo: str, token: str | None = None, endpoint: str | None = None) -> str:
    """A submission folder (model.yaml, cards, samples) uploaded to a Hugging Face dataset repository with
    huggingface_hub; the folder is validated first, so nothing that would not be published is pushed."""
    from huggingface_hub import HfApi

    valid, problems = validate([folder])
    if problems or not valid:
        raise BenchmarkError(f"{folder} does not validate, so it is not pushed:\n  " + "\n  ".join(map(str, problems)))
    api = HfApi(endpoint=endpoint, token=token)
    api.create_repo(repo, repo_type="dataset", exist_ok=True)
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo, repo_type="dataset",
                               path_in_repo=folder.name, commit_message=f"benchmark submission {folder.name}")
    return commit.commit_url
