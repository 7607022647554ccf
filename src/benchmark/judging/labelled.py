"""The human-labelled sets judges are measured on, as conf/judge_validation.yaml declares them (read once per
process): below the kinds, which name a set's language on a card, and judging/validity.py, which measures judges on them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from omegaconf import MISSING, OmegaConf

from .. import BenchmarkError
from ..config import DataConfig
from ..data import joined_entries, load_rows, local_file, with_canonical_fields, with_joined
from ..paths import CONF_DIR
from ..templates import render


@dataclass
class TrainSplit:
    """The labelled rows a judge is trained on, and the validation share carved from them: by a hash of each row's
    id within each label (stratified, independent of the file's order), so the same rows are held out every time."""

    data: DataConfig = field(default_factory=DataConfig)
    val_share: float = 0.2
    val_seed: int = 0
    # validation rows from a file of their own instead of a carved share: another source's rows (a held-out model's
    # replies), so that what is chosen on them is chosen for rows unlike the training rows
    val: Optional[DataConfig] = None
    # sets whose requests and replies no training row may hold (a yardstick drawn from the same source): a row sharing
    # either with one of their rows is left out, so that nothing a judge learns from is measured again
    exclude: List[str] = field(default_factory=list)


@dataclass
class ValidationSet:
    """A human-labelled set the classifier judges of tasks in its language are measured on
    (conf/judge_validation.yaml)."""

    name: str = MISSING
    description: str = ""
    # the language of its texts: a judge is measured on the sets in its task's language (a multi task's: all)
    language: str = "en"
    data: DataConfig = field(default_factory=DataConfig)
    input: Dict[str, str] = field(default_factory=dict)  # the judge's named parts (context, response), Jinja over a row
    unsafe: str = MISSING  # Jinja over a row: true where the human label is the positive one (unsafe; refused)
    # what the label says of a reply: harm (unsafe or not: harm judges are measured on the set), refusal (refused or
    # not: refusal judges are) or nothing (training rows only: no judge is measured on it)
    measures: str = "harm"
    # a refusal set's finer label, Jinja over a row: full_compliance | partial_refusal | full_refusal (XSTest's)
    classes: Optional[str] = None
    where: Optional[str] = None  # Jinja over a row: true for the rows the set holds (null: every row of its file)
    labels_sha256: Optional[str] = None  # of the rows' human labels, in order (a "0"/"1" string): pinned
    train: Optional[TrainSplit] = None  # where a judge is trained on the same labels (python -m benchmark.judge train)
    subsets: Dict[str, str] = field(default_factory=dict)  # name -> Jinja over a row, true in the subset: recall there


@dataclass
class ValidationConfig:
    sets: List[ValidationSet] = field(default_factory=list)


@functools.lru_cache(maxsize=1)
def validation_sets() -> tuple:
    config = OmegaConf.merge(OmegaConf.structured(ValidationConfig), OmegaConf.load(CONF_DIR / "judge_validation.yaml"))
    return tuple(OmegaConf.to_object(config).sets)


def set_files(vs: ValidationSet) -> list[str]:
    """The files a set's rows come from: its file, its further parts and the file it joins."""
    return [vs.data.path, *vs.data.parts] + ([vs.data.join.path] if vs.data.join is not None else [])


def absent_file(vs: ValidationSet, data_root: str | None) -> str | None:
    """The set's file (or a part, or the file it joins) that is neither under data_root nor bundled with the suite,
    or None when all are here."""
    for relative in set_files(vs):
        if local_file(data_root, relative, f"judge validation set {vs.name}") is None:
            return relative
    return None


def labelled_rows(vs: ValidationSet, data_root: str | None, data: DataConfig | None = None,
                  where: str | None = None) -> list[dict]:
    """A set's rows as its judges read them: its file (`data`: another of its files, the train split), joined with
    the file data.join names, keeping those its `where` holds; `where` names them in errors."""
    data = data or vs.data
    where = where or f"judge validation set {vs.name}"
    rows, _ = load_rows(data, data_root, where)
    if data.join is not None:
        rows = with_joined(rows, data.join, joined_entries(data.join, data_root, where))
    if data.fields:  # a column whose name a template cannot say ("acceptable?") under one it can
        rows = [with_canonical_fields(row, data.fields) for row in rows]
    if vs.where:
        kept = [row for row in rows if render(vs.where, row, f"{where}: where").strip() == "True"]
        if not kept:
            raise BenchmarkError(f"{where}: `where` holds none of the {len(rows)} rows of {data.path}")
        rows = kept
    return rows


def judge_inputs(vs: ValidationSet, rows: list[dict], where: str) -> list[dict[str, str]]:
    """Each row as the judge reads it: the set's input templates (context, response) rendered over it."""
    return [{k: render(t, row, f"{where}: input.{k}") for k, t in vs.input.items()} for row in rows]


def human_labels(vs: ValidationSet, rows: list[dict], where: str) -> list[int]:
    """1 where people called the row unsafe (the set's `unsafe` template), else 0."""
    return [int(render(vs.unsafe, row, f"{where}: unsafe").strip() == "True") for row in rows]


NOT_MEASURED = "not measured: the run said judge_validity=false"  # a run's judge facts and procedure outcome then


@dataclass(frozen=True)
class LanguageJudging:
    """How far a rate in one language can be read: whether its judges back it, and why (for a reader)."""

    backed: bool
    says: str


def judging_in_language(judges: list[dict], deciding: list[str], language: str, min_youden: float
                        ) -> LanguageJudging:
    """How far a card's rate in one language can be read, from its own judge entries: for each step whose flag makes
    a reply unsafe (`deciding`), its best Youden's J (sensitivity + specificity - 1) on the labelled sets of that
    language it was measured on. Under `min_youden` for any such step, the rate is the judges' noise there."""
    languages = {vs.name: vs.language for vs in validation_sets()}
    said = []
    for step in deciding:
        found = []
        for entry in (j for j in judges if isinstance(j, dict) and j.get("step") == step):
            for name, m in (entry.get("measured") or {}).items():
                try:
                    j = m["recall"]["value"] + m["specificity"]["value"] - 1
                except (KeyError, TypeError):
                    continue
                if languages.get(name) == language and j == j:
                    found.append((j, name))
        if not found:
            return LanguageJudging(False, f"not measured: no labelled set in this language for the {step} judge")
        j, name = max(found)
        said.append((j, name, step))
    where = "; ".join(f"{step} judge J {j:.2f} on {name}" for j, name, step in said)
    if min(said)[0] < min_youden:
        return LanguageJudging(False, f"noise: at best {where}, under {min_youden:g}")
    return LanguageJudging(True, f"measured: {where}")


def measured_in(languages: list[str], steps, procedure: str | None = None, outcome=None) -> dict:
    """For each language of a task's records, for each judging step: the labelled sets in that language it is measured
    on, or why none is. A classifier step's judges are measured alone, at run time, on every set in the language that
    gives the parts the step reads (the card's judge entries give the figures); a question step only with the task's other steps, on the task's own set
    (`procedure`: its attack.validation set; the card's judging_validation gives the `outcome`). A run that measured
    nothing (NOT_MEASURED) says so for every step; one whose procedure was not measured (its outcome the reason), so
    for the question steps."""
    sets = {vs.name: vs for vs in validation_sets()}
    out = {}
    for lang in languages:
        here = [vs for vs in sets.values() if vs.language == lang]
        together = [procedure] if procedure in sets and sets[procedure].language == lang else []
        out[lang] = {}
        for step in steps:
            if outcome == NOT_MEASURED:
                out[lang][step.name] = NOT_MEASURED
            elif step.type == "classifier":  # on the sets that give every part it reads (models.unreadable_set)
                measures = "refusal" if getattr(step.spec, "veto", False) else "harm"  # a veto step's judge: refusal
                kin = [vs for vs in here if vs.measures == measures]
                alone = [vs.name for vs in kin if set(step.spec.input) <= set(vs.input)]
                out[lang][step.name] = alone or (
                    "not measured: no labelled set in this language" if not here else
                    f"not measured: no labelled set of {measures} in this language" if not kin else
                    f"not measured: no labelled set in this language gives {' and '.join(sorted(step.spec.input))}")
            elif isinstance(outcome, str):
                out[lang][step.name] = outcome
            elif together:
                out[lang][step.name] = together
            else:
                out[lang][step.name] = ("not measured: no labelled set holds replies judged by this question"
                                        if procedure not in sets else
                                        f"not measured in this language: the task's steps are measured together on "
                                        f"{procedure} ({sets[procedure].language}) only")
    return out
