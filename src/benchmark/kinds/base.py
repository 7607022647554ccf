"""The contract between a task kind and the rest of the suite: the runner, the report, submission checks and the
leaderboard meet a kind only through these methods, never by guessing the shape of its samples.

A sample is a JSON object: `id`, `error` (None, or why its request failed), the fields `reference_fields` names
(what it takes from the task's data alone: gold labels, groups), the data's own texts under `input` and `prompt`
(dropped from submissions), and the kind's own fields (outputs, verdicts, judgements).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from .. import BenchmarkError
from ..data import load_records
from ..judging.engine import Panel
from ..models.protocol import Model


@dataclass
class Roles:
    """The models a kind's evaluate asks (models.protocol.Model; a run gives cached models): the model under test,
    the judge panel its steps are asked through (judging.engine.Panel), and the attacker of a kind that needs one
    (`needs_attacker`)."""

    model: Model
    judges: Panel = field(default_factory=lambda: Panel({}))
    attacker: Model | None = None


@dataclass(frozen=True)
class Said:
    """One message of a sample's transcript: who speaks in a chat view ("user" or "assistant"), a caption naming
    the speaker and the judges' verdicts, and the text as submitted (shown as plain text)."""

    role: str
    caption: str
    text: str


@dataclass(frozen=True)
class Transcript:
    caption: str
    said: list[Said]


def slug(value) -> str:
    """A group's value as the last part of a metric's name (`<metric>.<field>.<slug>`): lower case, any run of
    spaces, punctuation or brackets one underscore, letters of every script kept."""
    return re.sub(r"[^0-9a-z\u00c0-\uffff]+", "_", str(value).lower()).strip("_")


@dataclass(frozen=True)
class MetricSpec:
    """A metric a kind added after its first metrics version: the metric names it covers (an fnmatch pattern, e.g.
    "balanced_accuracy" or "*.balanced_accuracy" for every question's), the version that added it, and how it is
    computed. A card records the version it was scored under; validation compares only the metrics that version
    has, so adding a metric rejects no published card."""

    pattern: str
    since: int
    about: str


class KindProtocol(ABC):
    """Every kind: its protocol part, records to typed requests to samples."""

    @abstractmethod
    def __init__(self, task, model_cfg):
        """`task`: the task config (plain dataclasses); `model_cfg`: the model under test's config."""

    # --- records and requests ---------------------------------------------------------------------------
    @classmethod
    def data_sources(cls, task: dict) -> tuple[list[dict], str]:
        """Where `load_records` reads a task's records (the task as a plain dict): its data configs, joined in this
        order, and the split the records are."""
        return [task["data"]], task["data"]["split"]

    def load_records(self, data_root: str | None):
        """The task's records (data.Records): by default its data file, one record per row."""
        return load_records(self.task, data_root)

    def usable_records(self, data_root: str | None):
        """(the task's records as loaded, those it can score, {"id", "error"} for each of the others): what a run
        evaluates and what a published card must cover."""
        records = self.load_records(data_root)
        malformed = list(records.malformed)
        items = []
        for record in records.items:
            problem = self.check_record(record)
            if problem:
                malformed.append({"id": record["id"], "error": problem})
            else:
                items.append(record)
        return records, items, malformed

    @property
    def requests_per_record(self) -> int:
        """How many requests the model under test answers per record (a run's progress plans with it)."""
        return 1

    @property
    def max_new_tokens(self) -> int | None:
        """The most tokens the task lets the model under test write per answer, where it sets its own (None: the
        model's setting)."""
        return None

    @abstractmethod
    def check_record(self, record: dict) -> str | None:
        """Why a record cannot be scored (it is reported as malformed), or None."""

    @abstractmethod
    def preflight(self, record: dict) -> None:
        """Render every template once for one record, so a broken task file fails before a model loads."""

    @abstractmethod
    def evaluate(self, records: list[dict], roles: Roles) -> list[dict]:
        """One sample per record, asking the models of `roles`."""

    @abstractmethod
    def preview(self, record: dict) -> list[tuple[str, object]]:
        """What a run asks for one record, for a look before running: (who is asked, chat messages or an input)."""

    def describe_step(self, name: str) -> dict:
        """What a card records about a judging step (its type, the hash of its prompt)."""
        return {}


class KindScorer(ABC):
    """Every kind: its scorer part, metrics, derived figures, and the checks of a submitted card."""

    @abstractmethod
    def reference(self, record: dict) -> dict:
        """The sample fields taken from the task's data alone ({field: value} for `reference_fields`)."""

    @property
    def judging_validation(self):
        """(the task's JudgingValidation, the judging steps it measures), or None: a task whose rate is corrected for
        its judges' errors declares which labelled set measures its judging steps."""
        return None

    def derivation_problems(self, sample: dict) -> list[tuple[str, str]]:
        """(field, what is wrong) wherever a field of the sample that enters a metric is not what the task derives
        from the sample's own outputs and judgements (judging/derived.py), or a count is not what the task declares.
        Validation reports them: a published card's scores rest on nothing a submitter could rewrite unnoticed."""
        return []

    # --- scores -------------------------------------------------------------------------------------------
    @classmethod
    def metrics_version(cls) -> int:
        """The version of the kind's metrics a new card is scored under."""
        return max((m.since for m in cls.added_metrics), default=1)

    @classmethod
    def in_version(cls, metric: str, version: int) -> bool:
        """Whether a card scored under `version` has the metric of this name."""
        from fnmatch import fnmatchcase

        return all(m.since <= version for m in cls.added_metrics if fnmatchcase(metric, m.pattern))

    @abstractmethod
    def score(self, samples: list[dict], resamples: int, seed: int,
              validation: dict | None = None) -> tuple[dict, dict]:
        """(metrics, breakdown): every metric {value, ci_low, ci_high, n} with a bootstrap interval. `validation`:
        the judging steps' outcome on their labelled set (validity.judge_procedure), for the corrected rate."""


class KindView(ABC):
    """Every kind: its view part, what the board and the submissions read of a sample."""

    # --- reading samples and cards (no instance needed: the board and submit have no model config) ----------
    @staticmethod
    @abstractmethod
    def outputs(sample: dict):
        """What the models said, comparable between two runs of the same record."""

    @staticmethod
    @abstractmethod
    def verdicts(sample: dict):
        """What the task concluded from it, comparable between two runs of the same record."""

    @staticmethod
    def transcript(sample: dict) -> Transcript | None:
        """The sample as a conversation to read message by message, for kinds whose samples are one (None)."""
        return None

    def recorded_answers(self, records: list[dict], samples: list[dict]) -> dict:
        """A card's recorded model answers keyed as this task asks them: (sha256 of the messages, sample number) ->
        text, so that a rebuild of the card asks its models only what the card does not hold. Kinds whose samples do
        not hold their models' answers refuse."""
        raise BenchmarkError(f"kind {self.name}: its samples do not hold the answers a rebuild would ask for: rebuild "
                             "the card by running its model")

    @staticmethod
    def own_input(sample: dict):
        """The data set's input as a run's own samples keep it (a submission keeps only its hash)."""
        return sample.get("input")

    @staticmethod
    def conversation(sample: dict) -> list[tuple[str, str]]:
        """The sample as chat messages (role, text): what the model was asked (its prompt, where the sample keeps
        one), then what was said; the exports use it."""
        prompt = sample.get("prompt") if isinstance(sample.get("prompt"), list) else []
        return [(str(m.get("role")), str(m.get("content"))) for m in prompt if isinstance(m, dict)]

    @staticmethod
    def judgements(sample: dict):
        """What each judge voted on each judged output ({step: {voter: flagged}} per output), comparable between two
        runs: where both runs gave the same outputs, the judges must have said the same of them. None: no judges."""
        return None

    @staticmethod
    @abstractmethod
    def sample_row(sample: dict) -> dict:
        """The sample as one row of a table (the sample browser): short fields; texts under `outputs`."""

    @staticmethod
    def breakdown_rows(card: dict, task: dict) -> list[dict]:
        """The card's breakdowns as chart rows {by, group, value (%), ci_low, ci_high}: by default the headline
        metric per group (`<headline>.<field>.<value>` metrics)."""
        head, rows = task["headline"], []
        for name, m in card["metrics"].items():
            if name.startswith(head + ".") and name.count(".") >= head.count(".") + 2:
                field, value = name[len(head) + 1:].split(".", 1)
                k = 1 if "unit" in m else 100
                rows.append({"by": field, "group": value, "value": k * m["value"], "ci_low": k * m["ci_low"],
                             "ci_high": k * m["ci_high"]})
        return rows

    @staticmethod
    def summary_lines(card: dict) -> list[str]:
        """Lines the printed summary shows about what was scored (records, responses, conversations)."""
        return []


class Kind(KindProtocol, KindScorer, KindView):
    """A kind of task: what it declares, over its three parts (protocol, scorer, view); a kind of its own is the
    same, its parts each a subclass of these (kinds/classify.py)."""

    name: str  # the `kind:` a task file names
    # the task file's section that configures the kind (e.g. `dialogue:`) and its dataclass, defined beside the kind,
    # which the task schema takes in (composition.task_schema); None: the kind has no section
    section: str | None = None
    section_schema: type | None = None
    # the field of its section where a task fixes the model under test's generation settings over the model's own
    # (the task's sampling protocol); None: the kind fixes none, and a card's own settings are not checked against it
    sampling_protocol: str | None = None
    added_metrics: tuple[MetricSpec, ...] = ()  # metrics added since version 1 (every other metric is version 1's)
    # the fields of a published sample (the data set's texts replaced by their hashes), and those of them that hold
    # what the models said (a data set's text copied there is hashed when the run is packaged)
    packaged_fields: frozenset[str] = frozenset()
    said_fields: tuple[str, ...] = ()
    reference_fields: tuple[str, ...] = ()  # the sample fields that come from the task's data alone
    judge_steps: list[str] = []  # the judging steps whose judges the run loads (a judge panel answers them)
    needs_attacker: bool = False  # a dialogue attack: the run loads an attacker model too
    failed_samples: str = "left out of the metrics"  # what the metrics do with a sample whose request failed

