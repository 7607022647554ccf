"""Published score cards: `submissions/<model>/` holds `model.yaml` and, per task, `<task>.json` (the score card)
and `<task>.samples.jsonl.gz` (its per-sample log without the data sets' own texts).

Everything here treats a submission as data: YAML is read with the safe loader, nothing from a submission is
imported or instantiated, and every problem names the file and the field. The leaderboard loads through `load`.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import io
import ipaddress
import json
import math
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_type_hints
from urllib.parse import urlsplit, urlunsplit

import jsonschema
import yaml

from . import BenchmarkError
from .hashing import sha256_json
from .paths import REPO_ROOT, TASKS_DIR

SUBMISSIONS_DIR = REPO_ROOT / "submissions"
MODEL_FILE = "model.yaml"
CARD_SUFFIX = ".json"
SAMPLES_SUFFIX = ".samples.jsonl.gz"
# a sample's copies of the data set's own texts; the data sets' licences differ, so submissions keep hashes only
DATA_KEYS = ("input", "prompt")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
SECRET_KEY = re.compile(r"^(.*[_-])?(api[_-]?key|token|secret|password|passwd|authori[sz]ation|cookie)$", re.I)
SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|ghp_[A-Za-z0-9]{20,})")
ABSOLUTE_PATH = re.compile(r"^(/|~|[A-Za-z]:[\\/])")


@dataclass
class Problem:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}" if self.field else f"{self.path}: {self.message}"


@dataclass
class Card:
    """One accepted score card, with its model folder's config."""

    path: Path
    card: dict
    model_config: dict

    @property
    def samples_path(self) -> Path:
        return self.path.parent / self.card["samples"]["file"]


@dataclass
class Loaded:
    cards: list[Card] = field(default_factory=list)
    rejected: list[Problem] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------- the tasks


@functools.lru_cache(maxsize=1)
def task_registry() -> dict[str, dict]:
    """Every task in tasks/, composed as a run would compose it (inherited fields included), by name."""
    from omegaconf import OmegaConf

    from .schema import compose

    tasks = {}
    for path in sorted(TASKS_DIR.glob("*.yaml")):
        task = compose([f"task={path.stem}"]).task
        tasks[task.name] = OmegaConf.to_container(task, resolve=True)
    return tasks


# --------------------------------------------------------------------------------------- model configs are data


class _DataLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The safe loader, refusing every tag (`!function`, `!!python/...`) with the tag's name."""


def _refuse_tag(loader, suffix, node):
    raise yaml.constructor.ConstructorError(
        None, None, f"tag {node.tag} is not allowed: a submitted config is data, never code", node.start_mark)


_DataLoader.add_multi_constructor("!", _refuse_tag)
_DataLoader.add_multi_constructor("tag:yaml.org,2002:python/", _refuse_tag)


def read_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_DataLoader)
    except yaml.YAMLError as e:
        raise BenchmarkError(f"{path}: {e}") from None


@functools.lru_cache(maxsize=None)
def _fields(cls) -> dict[str, Any]:
    """A config dataclass's fields and, for nested config dataclasses, their class (None: a free-form value)."""
    out = {}
    for name, t in get_type_hints(cls).items():
        nested = [a for a in (t, *get_args(t)) if dataclasses.is_dataclass(a)]
        out[name] = nested[0] if nested else None
    return out


def check_model_config(data: Any, where: str, allow_remote_code: bool = False, prefix: str = "",
                       types: bool = True) -> list[Problem]:
    """The rules for a submitted model config: known keys only, plain values only, no code, no remote code, and
    (types=True) every value of its field's type."""
    if not isinstance(data, dict):
        return [Problem(where, prefix.rstrip("."), "a model config must be a mapping of keys to values")]
    blob = json.dumps(data, sort_keys=True, default=str)
    return [Problem(where, f, m) for f, m in _config_problems(blob, allow_remote_code, prefix, types)]


@functools.lru_cache(maxsize=4096)
def _config_problems(blob: str, allow_remote_code: bool, prefix: str, types: bool) -> tuple[tuple[str, str], ...]:
    """check_model_config's findings as (field, message), computed once per distinct config."""
    from .models import LMEVAL_BACKENDS, SUITE_BACKENDS
    from .schema import ModelConfig

    data = json.loads(blob)
    where = ""
    problems = []

    def walk(value, path):
        if isinstance(value, dict):
            for k, v in value.items():
                if str(k).startswith("_"):
                    problems.append(Problem(where, f"{path}{k}", "keys starting with _ (such as _target_) are not "
                                                                   "allowed: a submitted config is data, never code"))
                walk(v, f"{path}{k}.")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path.rstrip('.')}[{i}].")
        elif isinstance(value, str) and "${" in value:
            problems.append(Problem(where, path.rstrip("."), f"interpolation {value!r} is not allowed: values must be "
                                                             "literal (no environment variables, no resolvers)"))

    def unknown(value, cls, path):
        if not isinstance(value, dict):
            return
        known = _fields(cls)
        for k, v in value.items():
            if str(k).startswith("_"):
                continue  # reported by walk
            if k not in known:
                problems.append(Problem(where, f"{path}{k}", f"unknown key; {cls.__name__} has "
                                                             f"{', '.join(sorted(known))}"))
            elif known[k] is not None and v is not None:
                unknown(v, known[k], f"{path}{k}.")

    walk(data, prefix)
    unknown(data, ModelConfig, prefix)
    if problems:
        return tuple((p.field, p.message) for p in problems)
    for key in ("name", "backend"):
        if not data.get(key):
            problems.append(Problem(where, f"{prefix}{key}", "missing"))
    backend = data.get("backend")
    if backend and backend not in LMEVAL_BACKENDS + SUITE_BACKENDS:
        problems.append(Problem(where, f"{prefix}backend", f"unknown backend {backend!r}; available: "
                                                           f"{', '.join(LMEVAL_BACKENDS + SUITE_BACKENDS)}"))
    remote = data.get("trust_remote_code") is True or (data.get("args") or {}).get("trust_remote_code") is True
    if remote and not allow_remote_code:
        problems.append(Problem(where, f"{prefix}trust_remote_code", "true: the model runs code from its repository; "
                                "a maintainer must review that code and validate with --allow-remote-code"))
    if not problems and types:
        from omegaconf import OmegaConf

        try:
            OmegaConf.merge(OmegaConf.structured(ModelConfig), data)
        except Exception as e:  # omegaconf's validation errors name the key and the expected type
            msg = str(e).splitlines()[0]
            key = getattr(e, "full_key", "") or ""
            problems.append(Problem(where, f"{prefix}{key}", msg))
    return tuple((p.field, p.message) for p in problems)


def model_config_node(data: dict):
    """A checked model config as the typed node a run uses (only after check_model_config passed)."""
    from omegaconf import OmegaConf

    from .schema import ModelConfig

    return OmegaConf.merge(OmegaConf.structured(ModelConfig), data)


def _full(data: dict, cls=None) -> dict:
    """A config with every field its dataclass defaults (plain dicts: cheap enough for a thousand cards)."""
    from .schema import ModelConfig

    cls = cls or ModelConfig
    nested = _fields(cls)
    out = {f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
           for f in dataclasses.fields(cls)}
    out = {k: (dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v) for k, v in out.items()}
    for k, v in data.items():
        out[k] = _full(v, nested[k]) if nested.get(k) and isinstance(v, dict) else v
    return out


# ----------------------------------------------------------------------------------------------- private values


def _private_host(host: str) -> bool:
    if not host or host == "<host>":  # empty, or already replaced by scrub
        return False
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
        return ip.is_private or ip.is_loopback or ip.is_link_local
    except ValueError:
        pass
    return host == "localhost" or "." not in host or host.endswith((".local", ".lan", ".internal", ".corp", ".home"))


def _scrub_string(s: str, roots: list[tuple[Path, str]], env: list[tuple[str, str]]) -> str:
    if "://" in s:
        parts = urlsplit(s)
        if parts.hostname and _private_host(parts.hostname):
            netloc = "<host>" + (f":{parts.port}" if parts.port else "")
            s = urlunsplit(parts._replace(netloc=netloc))
    elif ABSOLUTE_PATH.match(s):
        p = Path(os.path.expanduser(s))
        for root, label in roots:
            try:
                return label + p.resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                continue
        return "<local>/" + p.name
    for name, value in env:
        s = s.replace(value, f"<env:{name}>")
    return SECRET_VALUE.sub("<removed>", s)


def scrub(obj: Any, data_root: str | None = None) -> Any:
    """A copy without what is private to the machine it ran on: absolute paths (made relative to the repository or
    data_root, else reduced to their last part), private host names, environment values, keys and tokens."""
    roots = [(REPO_ROOT.resolve(), "")]
    if data_root:
        roots.insert(0, (Path(data_root).expanduser().resolve(), "data_root:"))
    env = sorted(((k, v) for k, v in os.environ.items() if len(v) >= 8 and not ABSOLUTE_PATH.match(v)
                  and "=" not in v), key=lambda kv: -len(kv[1]))
    host = socket.gethostname()
    if len(host) >= 4:
        env.append(("HOSTNAME", host))

    def go(value, key=""):
        if isinstance(value, dict):
            return {k: ("<removed>" if SECRET_KEY.search(str(k)) and k != "api_key_env" and v else go(v, k))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [go(v) for v in value]
        if isinstance(value, str):
            return _scrub_string(value, roots, env)
        return value

    return go(obj)


def private_values(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """Fields that still hold a local path or a private host (a hand-made card, or one not packaged by `submit`)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += private_values(v, f"{path}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += private_values(v, f"{path.rstrip('.')}[{i}].")
    elif isinstance(obj, str):
        if ABSOLUTE_PATH.match(obj):
            found.append((path.rstrip("."), "an absolute local path"))
        elif "://" in obj and _private_host(urlsplit(obj).hostname or ""):
            found.append((path.rstrip("."), "a private host name"))
        elif SECRET_VALUE.search(obj):
            found.append((path.rstrip("."), "what looks like an API key or token"))
    return found


# ----------------------------------------------------------------------------------------------------- samples


def strip_sample(sample: dict) -> dict:
    """The data set's texts replaced by their hash; the model's outputs and the judgements kept."""
    out = {}
    for k, v in sample.items():
        if k in DATA_KEYS:
            out[f"{k}_sha256"] = sha256_json(v)
        else:
            out[k] = v
    return out


def write_samples(samples: list[dict], path: Path) -> str:
    """gzip with a fixed timestamp, so the same samples always give the same file and hash."""
    raw = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(raw)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def read_samples(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ------------------------------------------------------------------------------------------------- validation


def card_sha256(card: dict) -> str:
    """The hash a verification is bound to: the card without its verification block."""
    return sha256_json({k: v for k, v in card.items() if k != "verification"})


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    from .scorecard import load_schema

    return jsonschema.Draft202012Validator(load_schema())


def _schema_problems(card: dict, where: str) -> list[Problem]:
    validator = _validator()
    return [Problem(where, ".".join(str(p) for p in e.absolute_path) or "(top level)", e.message)
            for e in sorted(validator.iter_errors(card), key=lambda e: list(e.absolute_path))]


def _metric_problems(card: dict, where: str) -> list[Problem]:
    problems = []
    headline = card["task"]["headline"]
    if headline not in card["metrics"]:
        problems.append(Problem(where, "task.headline", f"the headline metric {headline!r} is not in metrics"))
    for name, m in card["metrics"].items():
        at = f"metrics.{name}"
        values = {k: m[k] for k in ("value", "ci_low", "ci_high")}
        bad = [k for k, v in values.items() if not isinstance(v, (int, float)) or not math.isfinite(v)]
        if bad:
            problems.append(Problem(where, f"{at}.{bad[0]}", f"{values[bad[0]]!r} is not a finite number"))
            continue
        if "unit" not in m and not all(-1e-9 <= v <= 1 + 1e-9 for v in values.values()):
            problems.append(Problem(where, at, f"a share must lie in [0, 1]; got {values}"))
        if not values["ci_low"] - 1e-9 <= values["value"] <= values["ci_high"] + 1e-9:
            problems.append(Problem(where, at, f"the CI [{values['ci_low']}, {values['ci_high']}] does not contain "
                                               f"the value {values['value']}"))
    return problems


def check_card(path: Path, card: dict, model_config: dict | None, thorough: bool = True,
               allow_remote_code: bool = False) -> list[Problem]:
    """Every rule a published card follows. `thorough=False` (the leaderboard, on cards CI has validated) skips
    reading the samples file and type-checking the configs' values."""
    where = str(path)
    problems = _schema_problems(card, where)
    if problems:
        return problems
    registry = task_registry()
    task = card["task"]
    if task["name"] not in registry:
        return [Problem(where, "task.name", f"unknown task {task['name']!r}; tasks: {', '.join(sorted(registry))}")]
    known = registry[task["name"]]
    if task["version"] != known["version"]:
        problems.append(Problem(where, "task.version", f"{task['version']}: task {task['name']} is version "
                                                       f"{known['version']}"))
    if path.name != task["name"] + CARD_SUFFIX:
        problems.append(Problem(where, "task.name", f"a card for task {task['name']} must be named "
                                                    f"{task['name']}{CARD_SUFFIX}"))
    if path.parent.name != card["model"]["name"]:
        problems.append(Problem(where, "model.name", f"{card['model']['name']!r} is not the folder's name "
                                                     f"{path.parent.name!r}"))
    known_sha = (known.get("data") or {}).get("sha256")
    if known_sha and card["dataset"]["sha256"] != known_sha:
        problems.append(Problem(where, "dataset.sha256", f"{card['dataset']['sha256']} is not the hash of task "
                                                         f"{task['name']}'s data ({known_sha})"))
    if card["run"]["limit"] is not None:
        problems.append(Problem(where, "run.limit", f"{card['run']['limit']}: a published card covers the whole "
                                                    "split; run without limit="))
    problems += _metric_problems(card, where)
    if model_config is not None and not check_model_config(card["model"]["config"], where, True, "model.config.",
                                                           thorough):
        if _full(model_config) != _full(card["model"]["config"]):
            problems.append(Problem(where, "model.config", f"differs from the folder's {MODEL_FILE}"))
    configs = [("model.config.", card["model"]["config"])]
    configs += [(f"judges[{i}].config.", j["config"]) for i, j in enumerate(card.get("judges", [])) if "config" in j]
    if "attacker" in card and "config" in card["attacker"]:
        configs.append(("attacker.config.", card["attacker"]["config"]))
    for prefix, cfg in configs:
        problems += check_model_config(cfg, where, allow_remote_code, prefix, thorough)
    problems += [Problem(where, f, f"holds {what}; package runs with `python -m benchmark.submit`")
                 for f, what in private_values({k: v for k, v in card.items() if k != "verification"})]
    samples = card["samples"]
    if samples["file"] != task["name"] + SAMPLES_SUFFIX:
        problems.append(Problem(where, "samples.file", f"{samples['file']!r}: must be {task['name']}{SAMPLES_SUFFIX}"))
    elif not (path.parent / samples["file"]).is_file():
        problems.append(Problem(where, "samples.file", f"{samples['file']} is missing"))
    elif thorough:
        problems += _samples_problems(path.parent / samples["file"], card, where)
    if "verification" in card and card["verification"].get("card_sha256") != card_sha256(card):
        problems.append(Problem(where, "verification", "does not belong to this card (it changed after it was "
                                                       "verified); only `python -m benchmark.submit verify` writes it"))
    return problems


def _samples_problems(path: Path, card: dict, where: str) -> list[Problem]:
    from .scorecard import file_sha256

    if file_sha256(path) != card["samples"]["sha256"]:
        return [Problem(where, "samples.sha256", f"does not match {path.name}")]
    try:
        samples = read_samples(path)
    except (OSError, EOFError, json.JSONDecodeError) as e:
        return [Problem(str(path), "", f"unreadable: {e}")]
    problems = []
    if len(samples) != card["samples"]["n"] or len(samples) != card["dataset"]["n"]:
        problems.append(Problem(where, "samples.n", f"{path.name} has {len(samples)} samples; the card says "
                                                    f"{card['samples']['n']} (dataset.n {card['dataset']['n']})"))
    texts = sorted({k for s in samples for k in DATA_KEYS if k in s})
    if texts:
        problems.append(Problem(str(path), texts[0], "holds the data set's own text; submissions keep its hash "
                                                     "only (package with `python -m benchmark.submit`)"))
    return problems


def _read_card(path: Path) -> dict:
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchmarkError(f"{path}: not a readable JSON score card: {e}") from None
    if not isinstance(card, dict):
        raise BenchmarkError(f"{path}: a score card is a JSON object")
    return card


def load_model_folder(folder: Path, allow_remote_code: bool = False, thorough: bool = True
                      ) -> tuple[dict | None, list[Problem]]:
    path = folder / MODEL_FILE
    if not path.is_file():
        return None, [Problem(str(path), "", "missing: every model folder holds its model config")]
    try:
        data = read_yaml(path)
    except BenchmarkError as e:
        return None, [Problem(str(path), "", str(e).removeprefix(f"{path}: "))]
    problems = check_model_config(data, str(path), allow_remote_code, types=thorough)
    if not problems and data.get("name") != folder.name:
        problems.append(Problem(str(path), "name", f"{data.get('name')!r} is not the folder's name {folder.name!r}"))
    return (None if problems else data), problems


def load(root: Path = SUBMISSIONS_DIR, thorough: bool = False, allow_remote_code: bool = False) -> Loaded:
    """Every model folder under root: the cards that pass every rule, and the problems of those that do not."""
    out = Loaded()
    root = Path(root)
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    for folder in folders:
        config, problems = load_model_folder(folder, allow_remote_code, thorough)
        cards = sorted(folder.glob("*" + CARD_SUFFIX))
        if not cards:
            problems.append(Problem(str(folder), "", "holds no score card"))
        for path in cards:
            if config is None:
                out.rejected.append(Problem(str(path), "", f"its folder's {MODEL_FILE} was rejected"))
                continue
            try:
                card = _read_card(path)
            except BenchmarkError as e:
                out.rejected.append(Problem(str(path), "", str(e).removeprefix(f"{path}: ")))
                continue
            card_problems = check_card(path, card, config, thorough, allow_remote_code)
            if card_problems:
                out.rejected += card_problems
            else:
                out.cards.append(Card(path, card, config))
        out.rejected += problems
    return out
