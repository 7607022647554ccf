"""The score card as a typed record: what a run may write and what a submitted card must be, field by field.

Every object refuses fields it does not declare; every number is finite and in its range, every flag a bool, every
count an integer (strict: no "1" for 1, no true for 1, no 1.5 for a count), every hash 64 hex digits. A field that
may be absent is never null unless null means something (a run's `limit`, a model's unknown `organisation`). The
runner validates each card through this record before writing it (scorecard.write), validation reads a submitted
card through it first (submissions/rules.py), and the card's JSON Schema (src/benchmark/scorecard.schema.json) is
generated from it: `python -m benchmark.run.card_record > src/benchmark/scorecard.schema.json`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, ValidationError, \
    field_validator

from ..kinds import registered

SCHEMA_VERSION = 1

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Name = Annotated[str, StringConstraints(min_length=1)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Seconds = Annotated[float, Field(ge=0)]
Share = Annotated[float, Field(ge=0, le=1)]
Bits = Annotated[str, StringConstraints(pattern=r"^[01]+$")]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{1,8}$")]
# no whitespace and none of the characters Markdown or HTML give a meaning: a metric's name is shown as it is
MetricName = Annotated[str, StringConstraints(pattern=r"^[^\s\[\](){}<>*`!|\\$&#~\"']{1,200}$")]
RoleKey = Annotated[str, StringConstraints(pattern=r"^(model|attacker|judge [A-Za-z0-9_.-]{1,64})$")]
Commit = Annotated[str, StringConstraints(pattern=r"^([0-9a-f]{40}|[0-9a-f]{64})$")]


def Either(text: str, record) -> type:
    """A why-not text, or the record: told apart by their JSON type (a tagged union, so a refused field is named by
    its own path, not by each alternative's)."""
    return Annotated[Union[Annotated[str, Tag("<text>")], Annotated[record, Tag("<record>")]],
                     Discriminator(lambda v: "<text>" if isinstance(v, str) else "<record>"),
                     Field(description=text)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class Metric(Record):
    value: float
    ci_low: float
    ci_high: float
    n: Count
    unit: str = Field(None, description="absent: a share in [0, 1]; otherwise the unit of value (e.g. turns)")


class WeightFile(Record):
    name: Name
    size: Count
    sha256: Sha256


class Weights(Record):
    """The weight files a model loaded from a path on the machine it ran on (a local folder or checkpoint; absent for
    a hub id or packaged weights): each file's name, size and sha256, and the sha256 of that list, which the config's
    sha256 pins."""

    sha256: Sha256
    files: List[WeightFile]


class Task(Record):
    name: Name
    version: Positive
    kind: str = Field(description="a registered task kind (kinds.registered)")
    language: Annotated[str, StringConstraints(min_length=2)]
    headline: str
    config_sha256: Sha256
    config: Dict[str, Any] = Field(None, description="the task's config as it ran (resolved)")

    @field_validator("kind")
    @classmethod
    def _registered(cls, kind: str) -> str:
        if kind not in registered():
            raise ValueError(f"{kind[:40]!r} is not a task kind of the suite ({', '.join(sorted(registered()))})")
        return kind


class Metadata(Record):
    """Public facts shown on the leaderboard."""

    organisation: Optional[str] = None
    parameters: Optional[str] = None
    open_weights: Optional[bool] = None
    languages: List[str] = None
    license: Optional[str] = None
    url: Optional[str] = None


class Role(Record):
    """A model the run asked (the model measured, or a dialogue attack's attacker): its config as it ran."""

    name: Name
    backend: Name
    config_sha256: Sha256
    config: Dict[str, Any]
    weights: Weights = None


class Model(Role):
    metadata: Metadata


class Malformed(Record):
    id: Union[str, int]
    error: str


class Dataset(Record):
    source: str
    split: str
    n: Positive
    n_total: Count
    sha256: Sha256
    sha256_matches_task: Optional[bool] = None
    malformed: List[Malformed]


class Tokens(Record):
    prompt: Count
    completion: Count
    cached_prompt: Count
    cached_completion: Count
    uncounted: Count = Field(description="requests whose tokens the backend cannot count")
    counted_by: List[Literal["api", "tokenizer"]]

    @field_validator("counted_by")
    @classmethod
    def _once(cls, ways: list) -> list:
        if len(set(ways)) != len(ways):
            raise ValueError("names a way of counting twice")
        return ways


class Amount(Record):
    amount: Seconds
    currency: Currency


class Cost(Record):
    """What the tokens asked by this run cost, at the prices its model configs declare."""

    by_role: Dict[str, Amount]
    total: Dict[Currency, Seconds]


class Budget(Record):
    """The run's limits and what its folder spent against them, over every invocation; exceeded: the run ended past
    a limit (a record's estimate was low); cannot_stop: the roles the budget could not see."""

    tokens: Optional[Count]
    cost: Optional[Seconds]
    spent_tokens: Count
    spent_cost: Seconds
    currency: Optional[Currency]
    exceeded: bool
    cannot_stop: Annotated[List[Annotated[str, StringConstraints(max_length=400)]], Field(max_length=64)]


class Run(Record):
    started_at: str
    wall_s: Seconds
    seconds: Dict[str, Seconds] = Field(None, description="of wall_s: loading the backends, and each role's wait "
                                                          "for its answers")
    samples_per_s: Seconds
    model_calls: Count
    judge_calls: Dict[str, Count] = Field(None, description="requests asked of each judging step")
    attacker_calls: Count = None
    cache_hits: Count
    resumed: Count
    failed: Count
    seed: Count
    limit: Optional[Count]
    bootstrap: Count
    versions: Dict[str, Optional[str]]
    git_commit: Optional[Commit] = Field(description="the suite's commit (null: an installed package, whose "
                                                     "version says)")
    overrides: List[str] = Field(None, description="the command line's overrides (key=value), as given")
    tokens: Dict[RoleKey, Tokens] = Field(None, description="tokens read (prompt) and written (completion) per role: "
                                                         "model, attacker, 'judge KEY'; cached_*: answers the "
                                                         "response cache gave")
    cost: Cost = None
    budget: Budget = None

    @field_validator("versions")
    @classmethod
    def _versions(cls, versions: dict) -> dict:
        missing = [k for k in ("python", "torch", "transformers", "lm_eval", "benchmark") if k not in versions]
        if missing:
            raise ValueError(f"names no version of {missing[0]}")
        return versions


class Samples(Record):
    file: str
    sha256: Sha256
    n: Positive


class Measured(Record):
    """A judge's figures on one labelled set."""

    n: Count
    unsafe: Optional[Share] = None
    data_sha256: Sha256 = None
    sha256_matches: Optional[bool] = None
    precision: Metric = None
    recall: Metric = None
    f1: Metric = None
    specificity: Metric = None
    macro_f1: Metric = None


class Judge(Record):
    """The judge of one judging step's voter: its identity, config hash, and its measured quality where known."""

    step: str
    voter: str
    name: str
    backend: str
    config_sha256: Sha256
    config: Dict[str, Any]
    weights: Weights = None
    step_type: str = None
    prompt_sha256: Sha256 = None
    sees: str = None
    # per labelled set its figures, or why that set was not measured; or why none was (judge_validity=false)
    measured: Either("why no set was measured (judge_validity=false)",
                     Dict[str, Either("why this set was not measured", Measured)]) = None
    # what a trained judge's manifest says of its training (models/classifier.py judge_facts)
    design: str = None
    encoder: str = None
    input: str = None
    members: Positive = None
    phrases: Count = None
    set: Optional[str] = None
    threshold: float = None
    with_context: bool = None
    weights_sha256: Sha256 = None
    val: Optional[Dict[str, Any]] = None
    evaluation: Dict[str, Any] = None


class RecordCheck(Record):
    n: Positive
    differ: Count
    near: Count


class VerificationResult(Record):
    """What `python -m benchmark.submit verify` finds: a random sample of the records re-run with the model config,
    and how far the re-run agrees with the submitted samples. Signed, it is the card's Verification."""

    verified: bool
    at: str
    by: str = None
    seed: int
    n: Count
    verdict_agreement: Share
    output_agreement: Share
    min_agreement: float
    card_sha256: Sha256 = None
    failed: Count = None
    disagreeing_ids: List[Union[str, int]] = None
    misjudged_ids: List[Union[str, int]] = None  # records both runs answered alike but judged otherwise (20 at most)
    judgement_mismatches: Count = None
    reference_mismatches: Count = None
    near_boundary: Count = None
    judge_records: Dict[str, Either("why it could not be rechecked", RecordCheck)] = None
    judge_records_agree: bool = None
    judging_validation_agrees: bool = None
    judge_sample: Count = None


class Verification(VerificationResult):
    """Written by `python -m benchmark.submit verify --key ...`, never by a submitter: the verdict and the verifier's
    Ed25519 signature over the card's hash and this block; valid only for a key listed in
    submissions/verifier_keys.json."""

    card_sha256: Sha256
    key_id: str
    signature: str


class JudgingValidation(Record):
    """The task's judging steps, in order, run over a human-labelled set: the set, its size and data hash, and the
    labels and the flags as 0/1 strings in the set's order; `near` marks the rows where a trained judge's vote came
    within verify's tolerance of its decision boundary."""

    set: str
    n: Positive
    data_sha256: Sha256
    gold: Bits
    flagged: Bits
    near: Bits = None


class ScoreCard(Record):
    """The result of one model on one task. Version 1."""

    schema_version: Literal[1]
    task: Task
    model: Model
    dataset: Dataset
    metrics_version: Positive = Field(None, description="the version of the kind's metrics the card was scored "
                                                         "under (kinds/base.py MetricSpec); absent: 1")
    metrics: Annotated[Dict[MetricName, Metric], Field(min_length=1)]
    breakdown: Dict[str, Any]
    run: Run
    samples: Samples
    judges: List[Judge] = None
    attacker: Role = None
    verification: Verification = None
    judging_validation: Either("why the procedure was not measured", JudgingValidation) = None


def problems(card) -> list[tuple[str, str]]:
    """(field, what is wrong) for each field of `card` that the record refuses, in the card's order."""
    return parsed(card)[1]


def parsed(card) -> tuple[ScoreCard | None, list[tuple[str, str]]]:
    """The card as its record, or None and (field, what is wrong) for each field the record refuses."""
    if not isinstance(card, dict):
        return None, [("(top level)", "a score card is a JSON object")]
    try:
        return ScoreCard.model_validate(card), []
    except ValidationError as e:
        return None, [(".".join(str(p) for p in err["loc"] if not str(p).startswith("<")) or "(top level)",
                       _message(err)) for err in e.errors()]


def _message(err: dict) -> str:
    if err["type"] == "extra_forbidden":
        return "is not a field of the score card here"
    if err["type"] == "missing":
        return "is missing"
    number = err["input"]
    if err["type"] in ("float_type", "finite_number") and isinstance(number, (int, float)) \
            and not isinstance(number, bool):  # NaN, or an integer past float's range
        return f"{str(number)[:40]} is not a finite number"
    return f"{err['msg']} (got {err['input']!r:.60})"


def schema() -> dict:
    """The card's JSON Schema, generated from the record."""
    out = ScoreCard.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"scorecard/{SCHEMA_VERSION}", **out}


if __name__ == "__main__":
    print(json.dumps(schema(), indent=2, ensure_ascii=False))
