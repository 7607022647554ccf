"""What every part of the submissions package shares: the folder's layout, the limits on what is read, problems, and
the tasks a card may belong to."""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field, fields
from typing import Any

from ..paths import REPO_ROOT, TASKS_DIR  # noqa: F401  (TASKS_DIR: where the board finds a task's definition)
from ..safe_yaml import MAX_DEPTH  # collections nested in any submitted value, JSON or YAML (the published: 10)
from ..composition import compose
from ..config import PinnedConfig

SUBMISSIONS_DIR = REPO_ROOT / "submissions"
VERIFIER_KEYS = SUBMISSIONS_DIR / "verifier_keys.json"
MODEL_FILE = "model.yaml"
CARD_SUFFIX = ".json"
SAMPLES_SUFFIX = ".samples.jsonl.gz"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")  # what `submit` gives a new folder
# what a published folder may be called (fullmatch): printable ASCII, no space at either end
FOLDER = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,98}[\x21-\x7e])?")
KEY_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}\Z")  # judge steps and voters, sample ids

# every read of a submitted file is bounded: no file can take the validator or the board down
MAX_CONFIG_BYTES = 64 * 1024
MAX_CARD_BYTES = 16 * 2**20
MAX_KEYS = 2_000  # keys of one object in a card or a sample (a card's metrics are the most: a few hundred at most)
MAX_SAMPLE_LINE = 4 * 2**20  # one sample's JSON, decompressed
MAX_SAMPLES = 100_000  # lines of one samples file (the largest task has about 10,000 records)
MAX_SAMPLES_BYTES = 64 * 2**20  # one samples file, decompressed (the largest published one: about 5 MiB)
MAX_VALUES = 2_000_000  # JSON values in one card or samples file (the largest published: about 233,000)
MAX_FILES = 200  # entries of one model folder
MAX_PROBLEMS = 20  # problems listed per file; the rest are counted
MAX_STRING = 64 * 1024  # characters of one string or key in a card or a sample (the published: 2,853 at most)
MAX_BOOTSTRAP = 10_000  # a card's bootstrap resamples, which validation draws again (the suite's default: 1,000)


@dataclass
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}" if self.field else f"{self.path}: {self.message}"


def capped(problems: list[Problem]) -> list[Problem]:
    """At most MAX_PROBLEMS per file; one more line says how many were left out."""
    out, per_file = [], {}
    for p in problems:
        per_file[p.path] = per_file.get(p.path, 0) + 1
        if per_file[p.path] <= MAX_PROBLEMS:
            out.append(p)
    out += [Problem(path, "", f"and {n - MAX_PROBLEMS} more problems") for path, n in per_file.items()
            if n > MAX_PROBLEMS]
    return out


class OutOfBounds(ValueError):
    """A JSON value past one of the limits; `path` leads to it from the top (keys, and indexes of arrays)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.path: list[str | int] = []

    def __str__(self) -> str:
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path[:8]).lstrip(".")
        return f"{field}{'…' if len(self.path) > 8 else ''}: {self.args[0]}" if self.path else self.args[0]


def name_key(name: str) -> str:
    """What a model's name looks like on the board: names with one key make look-alike rows (case, Unicode
    compatibility forms, spaces or a newline at either end)."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def json_values(text: str) -> int:
    """At most how many values parsing `text` as JSON makes: every value but the outermost is an element of an array
    or an object, and every element but a container's first follows a comma. Counted before parsing (commas and
    brackets inside strings count too), so a bound on it holds while the parser allocates."""
    return text.count(",") + text.count("[") + text.count("{") + 1


def strict_json(text: str) -> Any:
    """JSON as a submission may hold it: no key twice in one object (json.loads would keep the last without a word),
    no collection nested deeper than MAX_DEPTH, no object with more than MAX_KEYS keys, no string longer than
    MAX_STRING (so no pattern ever reads a longer one), every number finite (no NaN or Infinity, which Python's reader
    takes, nor 1e309, which it reads as infinity: a rule such as "score at or above the threshold" holds vacuously on
    NaN), every string text (no lone surrogate, which no UTF-8 writer can write back). ValueError names what breaks
    the rule, and where."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:  # far deeper than MAX_DEPTH: the parser gave up before the walk could name the field
        raise OutOfBounds(f"nested deeper than {MAX_DEPTH} levels") from None
    if isinstance(value, (dict, list)):
        _within_bounds(value, 1)
    elif isinstance(value, str):
        _text(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise OutOfBounds(f"{value} is not a finite number")
    return value


def _text(value: str) -> None:
    if len(value) > MAX_STRING:
        raise OutOfBounds(f"{len(value):,} characters in one string; at most {MAX_STRING:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise OutOfBounds(f"a lone surrogate ({value[e.start]!r}) at character {e.start}: not text") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {twice!r} appears twice in one object; a JSON reader would silently keep the last")
    return out


def _within_bounds(value: dict | list, depth: int) -> None:
    """OutOfBounds at the first collection nested deeper than MAX_DEPTH (the walk never goes deeper itself), object
    with more than MAX_KEYS keys, or string or key longer than MAX_STRING."""
    if depth > MAX_DEPTH:
        raise OutOfBounds(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict) and len(value) > MAX_KEYS:
        raise OutOfBounds(f"{len(value):,} keys in one object; at most {MAX_KEYS:,}")
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        try:
            if isinstance(key, str):
                _text(key)
            if isinstance(item, (dict, list)):
                _within_bounds(item, depth + 1)
            elif isinstance(item, str):
                _text(item)
            elif isinstance(item, float) and not math.isfinite(item):
                raise OutOfBounds(f"{item} is not a finite number")
        except OutOfBounds as e:
            e.path.insert(0, key[:40].encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(key, str)
                          else key)
            raise


@dataclass(frozen=True)
class TaskEntry:
    """A task as its readers see it: the fields they show, typed, and its composed definition whole (`config`: what
    its hash covers and its kind's own sections read)."""

    name: str
    kind: str
    language: str
    headline: str
    version: int = 1
    better: str = "higher"  # higher | lower: which way the headline improves
    citation: str = ""
    description: str = ""
    config: dict = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, config: dict) -> TaskEntry:
        """The entry of a composed task definition (`config`, as a plain dict)."""
        return cls(**{f.name: config[f.name] for f in fields(cls) if f.name != "config" and f.name in config},
                   config=config)

    @property
    def pinned(self) -> PinnedConfig:
        return PinnedConfig(**(self.config.get("pinned") or {}))


@functools.lru_cache(maxsize=1)
def task_registry() -> dict[str, TaskEntry]:
    """Every task in tasks/, composed as a run would compose it (inherited fields included), by name."""
    from omegaconf import OmegaConf

    tasks = {}
    for path in sorted(TASKS_DIR.glob("*.yaml")):
        task = compose([f"task={path.stem}"]).task
        tasks[task.name] = TaskEntry.of(OmegaConf.to_container(task, resolve=True))
    return tasks
