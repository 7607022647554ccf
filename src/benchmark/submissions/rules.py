"""The rules every published score card follows. What a card states that can be derived is derived again and compared,
never believed:

- from the task's definition: its version, headline, the hash of its config, and its pinned data: the records' hash,
  how many records a card covers and which ones the task cannot score (`pinned:` in the task file);
- from the task's data, through the pinned `reference_sha256`: every sample's id, gold label(s) and group fields,
  so the check holds where the data's licence keeps it out of the repository (the hash is the data's fingerprint;
  with the data at hand, `--data-root` names the records that differ);
- from the submitted outputs: every metric and every breakdown, recomputed by the task's own scoring;
- from the configs: their hashes; and the verification block, from its signature.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from datetime import datetime
from pathlib import Path


from .. import BenchmarkError
from ..composition import compose, task_schema
from ..config import ModelMetadata
from ..data import bundled_file
from ..identity import essential, file_sha256, model_sha256, reference_sha256, task_sha256
from ..judging import card_figures  # the module: it imports this package, which imports this
from ..judging.panels import NOT_MEASURED
from ..judging.validity import validation_sets
from ..judging.validity_record import labels_sha256
from ..kinds import kind_class, make_kind, score
from ..metrics import PUBLISHED_RESAMPLES, PUBLISHED_SEED
from ..models.weights import Fingerprint, WeightFile
from ..run.card_record import JudgingValidation, Metric, Run, ScoreCard, parsed
from . import checked
from .base import CARD_SUFFIX, KEY_NAME, MAX_BOOTSTRAP, SAMPLES_SUFFIX, Problem, TaskEntry, task_registry
from .checked import CheckStore, Given
from .configs import check_model_config, full_config, model_config_node
from .privacy import private_values
from .samples import DATA_KEYS, read_samples
from .signing import verification_problems
from .usage import usage_problems
from ..judging.card_votes import Votes, voter_problems

DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3}|\.\d{6})?(?:Z|[+-]\d{2}:\d{2})")


@functools.lru_cache(maxsize=None)
def _task_sha256(name: str) -> str:
    return task_sha256(task_registry()[name].config, task_schema())


def _essential_task(config) -> dict:
    """A task's definition without the values its schema gives by default: a field added to the schema later, with
    a default that keeps today's behaviour, leaves every earlier card's definition the task's."""
    return essential(config, task_schema())


def _record(card: dict, where: str) -> tuple[ScoreCard | None, list[Problem]]:
    """The card's typed record (run/card_record.py), or None and what the record refuses, field by field."""
    record, refused = parsed(card)
    return record, [Problem(where, field, _short(message)) for field, message in refused]


def _short(message: str, limit: int = 300) -> str:
    """A message that quotes a submitted value, cut to a readable line."""
    return message if len(message) <= limit else message[:limit] + f"… ({len(message):,} characters)"


DIFFERENCE = "_gap."  # a group's rate minus the reference group's (an attack task's gap_to): in [-1, 1]


def _metric_problems(headline: str, metrics: dict[str, Metric], where: str) -> list[Problem]:
    """The headline is among the metrics, and each metric's value lies in its interval (a share's in [0, 1])."""
    problems = []
    if headline not in metrics:
        problems.append(Problem(where, "task.headline", f"the headline metric {headline!r} is not in metrics"))
    for name, m in metrics.items():
        at = f"metrics.{name}"
        low = -1 if DIFFERENCE in name else 0
        if m.unit is None and not all(low - 1e-9 <= v <= 1 + 1e-9 for v in (m.value, m.ci_low, m.ci_high)):
            what = "a difference of two shares must lie in [-1, 1]" if low else "a share must lie in [0, 1]"
            problems.append(Problem(where, at, f"{what}; got {m.model_dump(include={'value', 'ci_low', 'ci_high'})}"))
        if not m.ci_low - 1e-9 <= m.value <= m.ci_high + 1e-9:
            problems.append(Problem(where, at, f"the CI [{m.ci_low}, {m.ci_high}] does not contain the value "
                                               f"{m.value}"))
    return problems


def _pinned_problems(card: ScoreCard, known: TaskEntry, where: str) -> list[Problem]:
    """The card's data against what the task pins: the records' hash, how many it covers, which it left out."""
    name, pinned, dataset = card.task.name, known.pinned, card.dataset
    if not pinned.sha256 or pinned.records is None or not pinned.reference_sha256:
        return [Problem(where, "dataset.sha256", f"task {name} has no pinned data yet, so no card can be checked "
                                                 f"against its data; a maintainer pins it in tasks/{name}.yaml "
                                                 f"(python -m benchmark.submit pin {name})")]
    problems = []
    if dataset.sha256 != pinned.sha256:
        problems.append(Problem(where, "dataset.sha256", f"{dataset.sha256} is not the hash of task {name}'s "
                                                         f"data ({pinned.sha256})"))
    malformed = sorted(str(m.id) for m in dataset.malformed)
    if malformed != sorted(pinned.malformed):
        problems.append(Problem(where, "dataset.malformed", f"{len(malformed)} records left out as malformed; task "
                                                            f"{name} cannot score exactly {len(pinned.malformed)}: "
                                                            f"{sorted(pinned.malformed)[:10]}"))
    expected = (pinned.records, pinned.records + len(pinned.malformed))
    if (dataset.n, dataset.n_total) != expected:
        problems.append(Problem(where, "dataset.n", f"{dataset.n} of {dataset.n_total} records: a published "
                                                    f"card of task {name} covers all {expected[0]} of its "
                                                    f"{expected[1]}"))
    return problems


def _config_problems(card: ScoreCard, where: str, thorough: bool, allow_remote_code: bool) -> list[Problem]:
    """Every config on the card follows the rules for submitted configs; thorough: its hash is recomputed."""
    problems = []
    for prefix, entry in _roles(card):
        found = check_model_config(entry.config, where, allow_remote_code, prefix + "config.", thorough)
        problems += found
        if thorough and not found and entry.config_sha256 != model_sha256(model_config_node(entry.config)):
            problems.append(Problem(where, f"{prefix}config_sha256", "is not the hash of the config beside it"))
        problems += _weights_problems(entry, where, prefix)
    return problems


def _weights_problems(entry, where: str, prefix: str) -> list[Problem]:
    """An entry's optional `weights` (the files loaded from the machine it ran on) are what its config pins."""
    weights = entry.weights
    if weights is None:
        return []
    files = Fingerprint(tuple(WeightFile(f.name, f.size, f.sha256) for f in weights.files))
    if weights.sha256 != files.sha256:
        return [Problem(where, f"{prefix}weights.sha256", "is not the hash of the files listed beside it")]
    if entry.config.get("sha256") != weights.sha256:
        return [Problem(where, f"{prefix}config.sha256", "does not pin the weights the card lists (weights.sha256)")]
    return []


def _roles(card: ScoreCard) -> list[tuple[str, object]]:
    """Every model entry on a card (the model, each judge, the attacker), with the prefix of its fields."""
    roles = [("model.", card.model)] + [(f"judges[{i}].", j) for i, j in enumerate(card.judges or [])]
    return roles + ([("attacker.", card.attacker)] if card.attacker is not None else [])


def _identity_problems(card: ScoreCard, where: str) -> list[Problem]:
    """Each model entry's name and backend are its config's: a card cannot claim one backend and run another."""
    return [Problem(where, f"{prefix}{key}", f"{stated!r:.100} is not its config's {key} "
                                             f"({entry.config.get(key)!r:.100})")
            for prefix, entry in _roles(card) for key, stated in (("name", entry.name), ("backend", entry.backend))
            if stated != entry.config.get(key)]


def _task_data(known: TaskEntry) -> tuple[set[str], str]:
    """Where a task's records come from, as a run names it (data_root, the task's URL or its hub data set; several
    sources joined in order: data.load_rows, Kind.data_sources), and the split they are."""
    def origins(data: dict) -> set[str]:
        bundled = bundled_file(data["path"]) is not None and f"bundled:{data['path']}"
        return {o for o in (f"data_root:{data['path']}", bundled, data.get("url"), data.get("hub") and f"hub:{data['hub']}")
                if o}

    data, split = kind_class(known.kind).data_sources(known.config)
    return {" + ".join(o) for o in itertools.product(*(origins(d) for d in data))}, split


def _source_problems(card: ScoreCard, known: TaskEntry, where: str) -> list[Problem]:
    """The card's data is the task's own: read from where the task reads it, and the task's split."""
    sources, split = _task_data(known)
    dataset, name = card.dataset, card.task.name
    problems = []
    if dataset.split != split:
        problems.append(Problem(where, "dataset.split", f"{dataset.split!r:.100}: task {name} scores its "
                                                        f"{split!r} split"))
    if dataset.source not in sources:
        problems.append(Problem(where, "dataset.source", f"{dataset.source!r:.200} is not where task {name} reads "
                                                         f"its data ({' or '.join(sorted(sources))})"))
    return problems


def _run_problems(run: Run, numbers: dict, where: str) -> list[Problem]:
    """A published run: every number finite (`numbers`: the run as its JSON reads, where a count may be an integer
    past float's range), started at a date-time, over the whole split, without failures."""
    problems = [Problem(where, field, f"{value!r:.40} is not a finite number")
                for field, value in _numbers(numbers, "run") if not _finite(value)]
    if not _date_time(run.started_at):
        problems.append(Problem(where, "run.started_at", f"{run.started_at!r:.60} is not an ISO 8601 date-time "
                                                         "(such as 2025-01-31T12:00:00+00:00)"))
    if run.limit is not None:
        problems.append(Problem(where, "run.limit", f"{run.limit}: a published card covers the whole split; run "
                                                    "without limit="))
    if run.failed:
        problems.append(Problem(where, "run.failed", f"{run.failed} requests failed; a published card has none: "
                                                     "rerun the same command, which asks only those again"))
    return problems


def _numbers(value, at: str):
    """Every number in a value, with its field: (field, number)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{at}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{at}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield at, value


def _finite(value) -> bool:
    """A JSON number that is not NaN or Infinity, nor an integer too large for a float."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _date_time(value: str) -> bool:
    if not DATE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:  # such as month 13
        return False
    return True


def check_card(path: Path, card: dict, model_config: dict | None, thorough: bool = True,
               allow_remote_code: bool = False, data_root: str | None = None,
               store: CheckStore | None = None) -> list[Problem]:
    """Every rule a published card follows. `thorough=False` skips reading the samples file, type-checking the
    configs' values and recomputing their hashes. `store`: what its samples give is looked up there (and kept) by
    their content."""
    record, problems = _record(card, str(path))
    if problems:
        return problems
    return _rule_problems(path, card, record, model_config, thorough, allow_remote_code, data_root, store)


def _rule_problems(path: Path, raw: dict, card: ScoreCard, model_config: dict | None, thorough: bool,
                   allow_remote_code: bool, data_root: str | None, store: CheckStore | None) -> list[Problem]:
    """The rules past the record's own (`raw`: the card as its JSON reads, for what is checked of the JSON itself:
    its numbers, its strings, the bytes a verifier signed)."""
    where, problems = str(path), []
    registry = task_registry()
    task = card.task
    if task.name not in registry:
        return [Problem(where, "task.name", f"unknown task {task.name!r}; tasks: {', '.join(sorted(registry))}")]
    known = registry[task.name]
    problems += _task_problems(path, card, known, where)
    problems += _pinned_problems(card, known, where)
    problems += _source_problems(card, known, where)
    validation_problems = _validation_problems(card, known, where)
    problems += validation_problems
    for i, judge in enumerate(card.judges or []):
        for key, name in (("step", judge.step), ("voter", judge.voter)):
            if not KEY_NAME.match(name):
                problems.append(Problem(where, f"judges[{i}].{key}", f"{name!r}: letters, digits, . _ : -"))
    problems += _statistics_problems(card.run, where)
    problems += _run_problems(card.run, raw["run"], where)
    problems += _metric_problems(task.headline, card.metrics, where)
    model = card.model
    if model_config is not None and not check_model_config(model.config, where, True, "model.config.", thorough):
        if full_config(model_config) != full_config(model.config):
            problems.append(Problem(where, "model.config", "differs from the folder's model.yaml"))
        elif full_config(model.metadata.model_dump(exclude_unset=True), ModelMetadata) \
                != full_config(model_config.get("metadata") or {}, ModelMetadata):
            problems.append(Problem(where, "model.metadata", "differs from the metadata in model.yaml"))
    problems += _identity_problems(card, where)
    config_problems = _config_problems(card, where, thorough, allow_remote_code)
    problems += config_problems
    if not config_problems:  # the voters, tokens and cost are derived from configs that read
        problems += [Problem(where, f, what) for f, what in voter_problems(card, _steps(card))]
        problems += [Problem(where, f, what) for f, what in usage_problems(card)]
        if not validation_problems:  # the figures and flags the shipped validity record gives these judges
            problems += card_figures.record_problems(card, _kind(card), where)
    problems += [Problem(where, f, f"holds {what}; package runs with `python -m benchmark.submit`")
                 for f, what in private_values({k: v for k, v in raw.items() if k != "verification"})]
    samples = card.samples
    samples_path = path.parent / samples.file
    if samples.file != task.name + SAMPLES_SUFFIX:
        problems.append(Problem(where, "samples.file", f"{samples.file!r}: must be {task.name}{SAMPLES_SUFFIX}"))
    elif samples_path.is_symlink() or not samples_path.is_file():
        problems.append(Problem(where, "samples.file", f"{samples.file} is missing or not a regular file"))
    elif thorough:
        problems += _samples_problems(samples_path, card, known, where, data_root, store)
    if card.verification is not None:
        problems += verification_problems(raw, card.verification, where)
    return problems


def _task_problems(path: Path, card: ScoreCard, known: TaskEntry, where: str) -> list[Problem]:
    """The card names its task as the suite defines it, and sits where a card of that task and model must."""
    task, problems = card.task, []
    for key, stated in (("version", task.version), ("headline", task.headline), ("kind", task.kind),
                        ("language", task.language)):
        if stated != getattr(known, key):
            problems.append(Problem(where, f"task.{key}", f"{stated!r}: task {task.name}'s {key} is "
                                                          f"{getattr(known, key)!r}"))
    if task.config is not None and _essential_task(task.config) != _essential_task(known.config):
        problems.append(Problem(where, "task.config", f"is not task {task.name}'s definition"))
    if task.config_sha256 != _task_sha256(task.name):
        problems.append(Problem(where, "task.config_sha256", f"is not the hash of task {task.name}'s definition "
                                                             "(the card was made with another version of the task)"))
    if path.name != task.name + CARD_SUFFIX:
        problems.append(Problem(where, "task.name", f"a card for task {task.name} must be named "
                                                    f"{task.name}{CARD_SUFFIX}"))
    if path.parent.name != card.model.name:
        problems.append(Problem(where, "model.name", f"{card.model.name!r} is not the folder's name "
                                                     f"{path.parent.name!r}"))
    return problems


def _statistics_problems(run: Run, where: str) -> list[Problem]:
    """The intervals are the suite's: its resamples and seed (a run's defaults), never the submitter's choice."""
    problems = []
    for key, stated, fixed in (("bootstrap", run.bootstrap, PUBLISHED_RESAMPLES), ("seed", run.seed, PUBLISHED_SEED)):
        if stated != fixed:
            problems.append(Problem(where, f"run.{key}", f"{str(stated)[:40]}: a published card's intervals use "
                                                         f"the suite's {key} {fixed} (run without {key}=)"))
    budget = run.budget
    if budget is not None:  # whether the run passed its limits follows from them and what it spent
        over = any(limit is not None and spent > limit for limit, spent in ((budget.tokens, budget.spent_tokens),
                                                                            (budget.cost, budget.spent_cost)))
        if budget.exceeded is not over:
            problems.append(Problem(where, "run.budget.exceeded", f"{str(budget.exceeded)[:20]}: it spent "
                                    f"{budget.spent_tokens!r:.20} tokens and {budget.spent_cost!r:.20} "
                                    f"against limits {budget.tokens!r:.20} and {budget.cost!r:.20}"))
    return problems


def _derivation_problems(path: Path, kind, samples: list[dict]) -> list[Problem]:
    """Every field of a sample that enters a metric, against what the task derives from the sample's outputs and
    judgements (judging/derived.py)."""
    problems = []
    for s in samples:
        problems += [Problem(str(path), f"{s['id']}: {field}", what) for field, what in kind.derivation_problems(s)]
    return problems


@functools.lru_cache(maxsize=None)
def _composed_task(name: str):
    return compose([f"task={name}"]).task


def rescored(card: ScoreCard, samples: list[dict], kind=None) -> tuple[dict, dict]:
    """The card's metrics and breakdown computed again from its samples by the task's own scoring (the card's
    resamples and seed, and its judges' outcome on their labelled set)."""
    kind = kind or _kind(card)
    return score(kind, samples, card.run.bootstrap, card.run.seed, _outcome(card))


def _outcome(card: ScoreCard) -> dict | str | None:
    """The judges' outcome on their labelled set as the kinds' scoring reads it, or why it was not measured."""
    outcome = card.judging_validation
    return outcome.model_dump(exclude_unset=True) if isinstance(outcome, JudgingValidation) else outcome


def _validation_problems(card: ScoreCard, known: TaskEntry, where: str) -> list[Problem]:
    """The judges' outcome on their labelled set: the set the task names, with the set's pinned data and labels (the
    flags are the judges' own: only re-running them, as verify does, can check those)."""
    outcome = card.judging_validation

    section = kind_class(known.kind).section
    declared = ((known.config.get(section) or {}).get("validation") or {}).get("set")
    if isinstance(outcome, str) and outcome != NOT_MEASURED:
        return [Problem(where, "judging_validation", f"{outcome[:60]!r}: the judges' outcome on their labelled set, or "
                                                     f"{NOT_MEASURED!r}")]
    if not isinstance(outcome, JudgingValidation):
        return []
    pinned = {vs.name: vs for vs in validation_sets()}.get(outcome.set)
    if outcome.set != declared or pinned is None:
        return [Problem(where, "judging_validation.set", f"{outcome.set!r}: task {card.task.name} measures "
                                                         f"its judges on {declared!r}")]
    problems = []
    if pinned.data.sha256 and outcome.data_sha256 != pinned.data.sha256:
        problems.append(Problem(where, "judging_validation.data_sha256", f"is not the hash of set {pinned.name}"))
    if pinned.labels_sha256 and labels_sha256(outcome.gold) != pinned.labels_sha256:
        problems.append(Problem(where, "judging_validation.gold", f"are not the human labels of set {pinned.name}"))
    near = outcome.gold if outcome.near is None else outcome.near
    if not len(outcome.gold) == len(outcome.flagged) == len(near) == outcome.n:
        problems.append(Problem(where, "judging_validation.n", "the labels, the flags, near and n differ in length"))
    return problems


def _kind(card: ScoreCard):
    return make_kind(_composed_task(card.task.name), model_config_node(card.model.config))


def _steps(card: ScoreCard) -> dict[str, dict]:
    """Every judging step the task's judges answer (the deciding ones, a second panel's beside them, a dialogue's
    attacker steps), name -> what a card records of each (step_type, prompt_sha256, and what it sees)."""
    kind = _kind(card)
    return {name: kind.describe_step(name) for name in kind.judge_steps}


def _samples_problems(path: Path, card: ScoreCard, known: TaskEntry, where: str, data_root: str | None,
                      store: CheckStore | None = None) -> list[Problem]:
    run = card.run
    if run.bootstrap > MAX_BOOTSTRAP:
        return [Problem(where, "run.bootstrap", f"{run.bootstrap!r:.40} resamples; validation draws them "
                                                f"again, so a published card uses at most {MAX_BOOTSTRAP:,}")]
    sha = store.sha256(path) if store is not None else file_sha256(path)
    if sha != card.samples.sha256:
        return [Problem(where, "samples.sha256", f"does not match {path.name}")]
    # what the samples give depends on them, the task and the scoring settings, never on the model's name: copies of
    # one samples file share it (data_root only names the records of a rejected file: it decides nothing)
    given_key = checked.key("given", sha, card.task.name, run.bootstrap, run.seed, _outcome(card),
                            {k: v for k, v in card.model.config.items() if k not in ("name", "metadata")},
                            [(j.step, j.voter, j.config) for j in card.judges or []])
    given = store.given(given_key) if store is not None else None
    if given is None:
        given = _given(path, card, known, data_root)
        if store is not None:
            store.keep_given(given_key, given)

    def placed(found):
        return [Problem(str(path) if on == "samples" else where, f, what) for on, f, what in found]

    problems = placed(given.early)
    if given.n >= 0 and (given.n != card.samples.n or given.n != card.dataset.n):
        problems.insert(sum(p.field == "id" for p in problems),
                        Problem(where, "samples.n", f"{path.name} has {given.n} samples; the card says "
                                                    f"{card.samples.n} (dataset.n {card.dataset.n})"))
    if problems or given.late:
        return problems or placed(given.late)

    version = card.metrics_version or 1
    kind = kind_class(card.task.kind)
    if version > kind.metrics_version():
        return [Problem(where, "metrics_version", f"{version!r:.20}: the kind {kind.name} has metrics versions 1 to "
                                                  f"{kind.metrics_version()}")]
    metrics = {name: m for name, m in given.metrics.items() if kind.in_version(name, version)}
    for name in sorted(set(metrics) | set(card.metrics)):
        mine, theirs = metrics.get(name), card.metrics.get(name)
        if mine is None or theirs is None:
            problems.append(Problem(where, f"metrics.{name}", "not a metric the task computes from these samples"
                                    if mine is None else "missing: the task computes it from these samples"))
            continue
        stated = theirs.model_dump(exclude_unset=True)
        if any(not _close(mine.get(k), stated.get(k)) for k in ("value", "ci_low", "ci_high", "n", "unit")):
            problems.append(Problem(where, f"metrics.{name}", f"{str(stated)[:200]} is not what the samples give: "
                                                              f"{mine}"))
    for key, differs in _differences(given.breakdown, card.breakdown, "breakdown"):
        problems.append(Problem(where, key, differs))
    return problems


def _given(path: Path, card: ScoreCard, known: TaskEntry, data_root: str | None) -> Given:
    """What the samples file gives under the card's task: its problems, its size, its metrics and breakdown."""
    try:
        fields = kind_class(card.task.kind).packaged_fields
        samples = read_samples(path, fields | set(DATA_KEYS))  # texts: reported below
    except BenchmarkError as e:
        return Given(n=-1, early=[("samples", "", str(e).removeprefix(f"{path}: "))])
    early = []
    ids = [s["id"] for s in samples]
    if len(set(ids)) != len(ids):
        early.append(("samples", "id", f"{len(ids) - len(set(ids))} repeated sample ids"))
    odd = [i for i in ids if not KEY_NAME.match(i)]
    if odd:
        early.append(("samples", "id", f"{odd[0]!r}: sample ids are letters, digits, . _ : -"))
    texts = sorted({k for s in samples for k in DATA_KEYS if k in s})
    if texts:
        early.append(("samples", texts[0], "holds the data set's own text; submissions keep its hash only (package "
                                           "with `python -m benchmark.submit`)"))
    failed = [s["id"] for s in samples if s.get("error")]
    if failed:
        early.append(("samples", "error", f"{len(failed)} samples failed (ids {failed[:5]}); a published card has "
                                          "none"))
    early += [("samples", f, f"holds {what}") for f, what in private_values([s.get("error") for s in samples])]
    given = Given(n=len(samples), early=early)
    if early:
        return given
    try:
        kind = _kind(card)
        if reference_sha256(kind.reference_fields, samples) != known.pinned.reference_sha256:
            differing = _differing_ids(card, kind, samples, data_root)
            given.late = [("samples", "target", "the samples' ids, gold labels or groups are not the task's own "
                                                "(their reference_sha256 differs from the task's pinned one)"
                           + (f"; records that differ: {differing[:10]}" if differing else
                              "; validate with --data-root to name the records"))]
            return given
        given.late = [("samples", p.field, p.message) for p in _derivation_problems(path, kind, samples)]
        votes = Votes(card, _steps(card))
        given.late += [("samples", f"{s['id']}: {f}", what) for s in samples for f, what in votes.sample_problems(s)]
        if not given.late:
            given.metrics, given.breakdown = rescored(card, samples, kind)
    except Exception as e:  # samples the task's scoring cannot read are not this task's samples
        given.late = [("samples", "", f"the task's scoring cannot read these samples: {type(e).__name__}: {e}")]
    return given


def _differing_ids(card: ScoreCard, kind, samples: list[dict], data_root: str | None) -> list[str]:
    """With the task's data at hand: the ids whose gold labels or groups differ from the data's (or that the data
    does not have)."""
    if not data_root:
        return []

    try:
        _, items, _ = kind.usable_records(data_root)
    except BenchmarkError:
        return []
    truth = {r["id"]: kind.reference(r) for r in items}
    submitted = {s["id"]: s for s in samples}
    differing = [i for i, s in submitted.items() if i not in truth
                 or any(_differences(truth[i].get(f), s.get(f), f) for f in kind.reference_fields)]
    return differing + sorted(set(truth) - set(submitted))


def _differences(mine, theirs, at: str) -> list[tuple[str, str]]:
    """Where a recomputed structure and the card's differ (floats within rounding), as (field, what)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        out = []
        for k in sorted(set(mine) | set(theirs), key=str):
            if k not in theirs or k not in mine:
                out.append((f"{at}.{k}", "missing: the samples give it" if k in mine else
                            "not what the samples give: they give nothing here"))
            else:
                out += _differences(mine[k], theirs[k], f"{at}.{k}")
        return out
    if isinstance(mine, (list, tuple)) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(mine, theirs)) for d in _differences(a, b, f"{at}[{i}]")]
    if _close(mine, theirs):
        return []
    return [(at, f"{str(theirs)[:80]} is not what the samples give: {str(mine)[:80]}")]


def _close(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        try:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
        except OverflowError:  # an integer too large for a float is close to itself only
            return a == b
    return a == b
