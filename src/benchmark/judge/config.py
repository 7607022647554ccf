"""The settings of the judge wing's commands (`python -m benchmark.judge train|evaluate NAME`): a classifier judge's
training (conf/judge_train/NAME.yaml) and the DiaSafety detector's training and report (conf/detector_train.yaml,
conf/detector_evaluate.yaml), each checked against its record here."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

from omegaconf import MISSING, OmegaConf

from .. import BenchmarkError
from ..models.encoders import Lora


DIASAFETY_REMOTE = (
    "https://raw.githubusercontent.com/thu-coai/DiaSafety/5106a041b1c7e36f30e02a97c44897a7f2057278/DiaSafety_dataset"
)


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
class MoreRows:
    """Training rows from another labelled set (conf/judge_train: more_rows): the rows of its training split that it
    does not carve for its own validation, those its `keep` template (Jinja over a row) holds true for, each of the
    class its `label` template names, read through that set's input templates. They are learnt from only: what is
    chosen is chosen on the judge's own set."""

    set: str = MISSING
    keep: str = "true"
    label: str = MISSING


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
    # a judge of several classes, as the set's `classes` template names each row's (XSTest's full_compliance,
    # partial_refusal, full_refusal); the first is the unflagged one, and the judge flags a row when the others'
    # probability together reaches its threshold. Empty: two classes, the set's `unsafe` label.
    classes: List[str] = field(default_factory=list)
    more_rows: List[MoreRows] = field(default_factory=list)


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


def register() -> None:
    """The detector's two schemas in Hydra's config store, which conf/detector_*.yaml name."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    cs.store(name="detector_train_schema", node=DetectorTrainConfig)
    cs.store(name="detector_evaluate_schema", node=DetectorEvalConfig)


def training_settings(path: Path, schema: type, overrides: list[str]):
    """A training's settings: its YAML file checked against its schema, with key=value overrides; data_root from
    $BENCHMARK_DATA_ROOT where neither sets it."""
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(schema), OmegaConf.load(path), OmegaConf.from_dotlist(list(overrides)))
    except Exception as e:  # a wrong key or type, named by OmegaConf
        raise BenchmarkError(f"{path}: {e}".splitlines()[0]) from None
    if cfg.data_root is None:
        cfg.data_root = os.environ.get("BENCHMARK_DATA_ROOT")
    return cfg
