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
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_type_hints
from urllib.parse import urlsplit, urlunsplit

import jsonschema

from . import BenchmarkError
from .hashing import sha256_json
from .paths import REPO_ROOT, TASKS_DIR

SUBMISSIONS_DIR = REPO_ROOT / "submissions"
MODEL_FILE = "model.yaml"
CARD_SUFFIX = ".json"
SAMPLES_SUFFIX = ".samples.jsonl.gz"
# a sample's copies of the data set's own texts; the data sets' licences differ, so submissions keep hashes only
DATA_KEYS = ("input", "prompt")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # what `submit` gives a new folder
FOLDER = re.compile(r"^[\x21-\x7e][\x20-\x7e]{0,99}$")  # what a published folder may be called: printable ASCII
KEY_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")  # judge steps and voters, sample ids
SECRET_KEY = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd|credentials?|bearer|authori[sz]ation"
                        r"|cookie)$", re.I)
SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
                          r"|AKIA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})")
ABSOLUTE_PATH = re.compile(r"^(/|~|[A-Za-z]:[\\/])")
EMBEDDED_PATH = re.compile(r"(?:(?<=[\s=,;:'\"(\[])|^)(?:~|/(?:home|Users|root|tmp|mnt|media|data|work|scratch|srv|opt|var"
                           r"|private|run|gpfs|lustre|nfs))/[^\s,;'\")\]]*")
# backend arguments a submitted config may pass through `args`: how the model is served, never what code runs
ALLOWED_ARGS = {"tensor_parallel_size", "data_parallel_size", "gpu_memory_utilization", "max_model_len",
                "max_num_seqs", "swap_space", "enforce_eager", "max_batch_size", "add_bos_token", "max_gen_toks",
                "tokenized_requests", "parallelize", "attn_implementation", "use_fast_tokenizer"}
MAX_CONFIG_BYTES = 64 * 1024
MAX_CARD_BYTES = 16 * 2**20
MAX_SAMPLE_LINE = 4 * 2**20  # one sample's JSON, decompressed
VERIFIER_KEYS = SUBMISSIONS_DIR / "verifier_keys.json"


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


def read_yaml(path: Path) -> Any:
    """A submitted model config: UTF-8, small, no tags, no repeated keys, no aliases (safe_yaml)."""
    from . import safe_yaml

    return safe_yaml.load(path, aliases=False, max_bytes=MAX_CONFIG_BYTES)


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
    bad_keys = _non_string_keys(data, prefix)
    if bad_keys:
        return [Problem(where, f, "keys must be strings") for f in bad_keys]
    blob = json.dumps(data, sort_keys=True, default=str)
    return [Problem(where, f, m) for f, m in _config_problems(blob, allow_remote_code, prefix, types)]


def _non_string_keys(value: Any, path: str) -> list[str]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += [f"{path}{k!r}"] if not isinstance(k, str) else _non_string_keys(v, f"{path}{k}.")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _non_string_keys(v, f"{path.rstrip('.')}[{i}].")
    return found


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
    args = data.get("args")
    if args is not None and not isinstance(args, dict):
        problems.append(Problem(where, f"{prefix}args", "must be a mapping of backend arguments"))
        args = {}
    for key in sorted(set(args or {}) - ALLOWED_ARGS - {"trust_remote_code"}):
        problems.append(Problem(where, f"{prefix}args.{key}", "not allowed in a submitted config; allowed: "
                                                              f"{', '.join(sorted(ALLOWED_ARGS))}"))
    remote = data.get("trust_remote_code") not in (None, False) or (args or {}).get("trust_remote_code") not in (
        None, False)
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


def _scrub_url(s: str) -> str:
    try:
        parts = urlsplit(s)
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return "<malformed URL removed>"
    netloc = parts.netloc.rsplit("@", 1)[-1]  # user:password@ never travels
    if parts.hostname and _private_host(parts.hostname):
        netloc = "<host>" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc, query="<removed>" if parts.query else ""))


def _local(path: str, roots: list[tuple[Path, str]]) -> str:
    p = Path(os.path.expanduser(path))
    for root, label in roots:
        try:
            return label + p.resolve().relative_to(root).as_posix()
        except (ValueError, OSError):
            continue
    return "<local>/" + p.name


URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.I)


def _scrub_string(s: str, roots: list[tuple[Path, str]], secrets: list[tuple[str, str]]) -> str:
    if s.lower().startswith("file://"):
        s = "file://" + _local(s[7:], roots)
    elif ABSOLUTE_PATH.match(s):
        return _local(s, roots)
    else:
        s = URL.sub(lambda m: _scrub_url(m.group(0)) if not m.group(0).lower().startswith("file:") else
                    "file://" + _local(m.group(0)[7:], roots), s)
        s = EMBEDDED_PATH.sub(lambda m: _local(m.group(0), roots), s)
    for name, value in secrets:
        s = s.replace(value, f"<env:{name}>")
    return SECRET_VALUE.sub("<removed>", s)


def _secret_environment() -> list[tuple[str, str]]:
    """Values of environment variables named like secrets, and this machine's name: never in a submission."""
    found = [(k, v) for k, v in os.environ.items() if len(v) >= 6 and SECRET_KEY.search(k.lower())]
    host = socket.gethostname()
    if len(host) >= 4:
        found.append(("HOSTNAME", host))
    return sorted(found, key=lambda kv: -len(kv[1]))


def scrub(obj: Any, data_root: str | None = None) -> Any:
    """A copy without what is private to the machine it ran on: absolute paths (made relative to the repository or
    data_root, else reduced to their last part), private host names, credentials and queries in URLs, the values of
    secret-named environment variables, keys and tokens."""
    roots = [(REPO_ROOT.resolve(), "")]
    if data_root:
        roots.insert(0, (Path(data_root).expanduser().resolve(), "data_root:"))
    secrets = _secret_environment()

    def go(value):
        if isinstance(value, dict):
            return {k: ("<removed>" if SECRET_KEY.search(str(k)) and k != "api_key_env" and v else go(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [go(v) for v in value]
        if isinstance(value, str):
            return _scrub_string(value, roots, secrets)
        return value

    return go(obj)


def private_values(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """Fields that still hold a local path, a private host, credentials or a token (a hand-made card, or one not
    packaged by `submit`)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += private_values(v, f"{path}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += private_values(v, f"{path.rstrip('.')}[{i}].")
    elif isinstance(obj, str):
        where = path.rstrip(".")
        urls = []
        for u in URL.findall(obj):
            try:
                urls.append(urlsplit(u))
            except ValueError:
                found.append((where, "a malformed URL"))
        if ABSOLUTE_PATH.match(obj) or EMBEDDED_PATH.search(obj) or obj.lower().startswith("file:///"):
            found.append((where, "an absolute local path"))
        elif any(_private_host(u.hostname or "") or "@" in u.netloc for u in urls):
            found.append((where, "a private host name or credentials in a URL"))
        elif SECRET_VALUE.search(obj):
            found.append((where, "what looks like an API key or token"))
    return found


# ----------------------------------------------------------------------------------------------------- samples


def _strings(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) and len(value) >= 8 else set()


def strip_sample(sample: dict) -> dict:
    """The data set's texts replaced by their hash, also where a sample repeats one (a dialogue's opening turn is
    the seed sentence); the model's outputs and the judgements kept; errors scrubbed of private values."""
    texts = set().union(*(_strings(sample.get(k)) for k in DATA_KEYS))

    def go(value):
        if isinstance(value, dict):
            return {k: go(v) for k, v in value.items()}
        if isinstance(value, list):
            return [go(v) for v in value]
        if isinstance(value, str) and value in texts:
            return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
        return value

    out = {}
    for k, v in sample.items():
        if k in DATA_KEYS:
            out[f"{k}_sha256"] = sha256_json(v)
        elif k == "error" and isinstance(v, str):
            out[k] = scrub(v)
        elif k in ("output", "responses", "turns"):  # what the models said (labels elsewhere stay as they are)
            out[k] = go(v)
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
    """Every sample of a submitted samples file; BenchmarkError naming the file and line when one is not a sample."""
    samples = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            while line := f.readline(MAX_SAMPLE_LINE):
                if not line.endswith("\n") and len(line) >= MAX_SAMPLE_LINE:
                    raise BenchmarkError(f"{path}: line {len(samples) + 1} is longer than "
                                         f"{MAX_SAMPLE_LINE // 2**20} MiB")
                if not line.strip():
                    continue
                sample = json.loads(line)
                if not isinstance(sample, dict) or not isinstance(sample.get("id"), str):
                    raise BenchmarkError(f"{path}: line {len(samples) + 1} is not a sample (an object with a string id)")
                samples.append(sample)
    except (OSError, EOFError, UnicodeDecodeError, ValueError, zlib.error) as e:  # gzip, text and JSON errors
        raise BenchmarkError(f"{path}: unreadable: {e}") from None
    return samples


# ------------------------------------------------------------------------------------------------- validation


def card_sha256(card: dict) -> str:
    """The hash a verification is bound to: the card without its verification block."""
    return sha256_json({k: v for k, v in card.items() if k != "verification"})


# ------------------------------------------------------------------------------------------- verifier signatures


def verifier_keys() -> dict[str, str]:
    """The public keys whose signatures mark a card verified, by key id (submissions/verifier_keys.json, or the file
    $BENCHMARK_VERIFIER_KEYS names). Changing this file is a maintainer's decision, reviewed like code."""
    path = Path(os.environ.get("BENCHMARK_VERIFIER_KEYS") or VERIFIER_KEYS)
    try:
        keys = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path}: unreadable: {e}") from None
    return keys if isinstance(keys, dict) else {}


def key_id(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:16]


def _signed_bytes(card: dict, verification: dict) -> bytes:
    unsigned = {k: v for k, v in verification.items() if k != "signature"}
    return sha256_json({"card_sha256": card_sha256(card), "verification": unsigned}).encode("ascii")


def sign(card: dict, verification: dict, private_key_path: Path) -> dict:
    """The verification block signed with a verifier's Ed25519 private key (PEM)."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(Path(private_key_path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as e:
        raise BenchmarkError(f"{private_key_path}: not a readable Ed25519 private key: {e}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BenchmarkError(f"{private_key_path}: not an Ed25519 private key")
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    signed = {**verification, "key_id": key_id(public)}
    signed["signature"] = base64.b64encode(key.sign(_signed_bytes(card, signed))).decode("ascii")
    return signed


def _verification_problems(card: dict, where: str) -> list[Problem]:
    import base64

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    v = card["verification"]
    if v.get("card_sha256") != card_sha256(card):
        return [Problem(where, "verification", "does not belong to this card (it changed after it was verified); "
                                               "only `python -m benchmark.submit verify` writes it")]
    public = verifier_keys().get(v.get("key_id"))
    if public is None:
        return [Problem(where, "verification.key_id", f"{v.get('key_id')!r} is not a verifier key listed in "
                                                      "submissions/verifier_keys.json; only a maintainer's "
                                                      "`python -m benchmark.submit verify --key ...` marks a card")]
    try:
        Ed25519PublicKey.from_public_bytes(base64.b64decode(public)).verify(
            base64.b64decode(v.get("signature") or ""), _signed_bytes(card, v))
    except (InvalidSignature, ValueError):
        return [Problem(where, "verification.signature", "does not match the card and its verification")]
    expected = v["n"] >= 1 and v.get("failed", 0) == 0 and v["verdict_agreement"] >= v["min_agreement"]
    if v["verified"] != expected:
        return [Problem(where, "verification.verified", f"{v['verified']} does not follow from its n, failed and "
                                                        "agreement")]
    return []


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
    if task["headline"] != known["headline"]:
        problems.append(Problem(where, "task.headline", f"{task['headline']!r}: task {task['name']}'s headline is "
                                                        f"{known['headline']!r}"))
    if path.name != task["name"] + CARD_SUFFIX:
        problems.append(Problem(where, "task.name", f"a card for task {task['name']} must be named "
                                                    f"{task['name']}{CARD_SUFFIX}"))
    if path.parent.name != card["model"]["name"]:
        problems.append(Problem(where, "model.name", f"{card['model']['name']!r} is not the folder's name "
                                                     f"{path.parent.name!r}"))
    known_sha = known_data_sha256(known)
    if known_sha is None:
        problems.append(Problem(where, "dataset.sha256", f"task {task['name']} has no pinned data hash yet, so no "
                                                         "card can be checked against its data; a maintainer pins it "
                                                         f"in tasks/{task['name']}.yaml from the released data"))
    elif card["dataset"]["sha256"] != known_sha:
        problems.append(Problem(where, "dataset.sha256", f"{card['dataset']['sha256']} is not the hash of task "
                                                         f"{task['name']}'s data ({known_sha})"))
    dataset = card["dataset"]
    if dataset["n"] != dataset["n_total"] - len(dataset["malformed"]):
        problems.append(Problem(where, "dataset.n", f"{dataset['n']} of {dataset['n_total']} records with "
                                                    f"{len(dataset['malformed'])} malformed: a published card covers "
                                                    "every usable record"))
    for i, judge in enumerate(card.get("judges", [])):
        for key in ("step", "voter"):
            if not KEY_NAME.match(str(judge.get(key, ""))):
                problems.append(Problem(where, f"judges[{i}].{key}", f"{judge.get(key)!r}: letters, digits, . _ : -"))
    if card["run"]["limit"] is not None:
        problems.append(Problem(where, "run.limit", f"{card['run']['limit']}: a published card covers the whole "
                                                    "split; run without limit="))
    problems += _metric_problems(card, where)
    if model_config is not None and not check_model_config(card["model"]["config"], where, True, "model.config.",
                                                           thorough):
        if _full(model_config) != _full(card["model"]["config"]):
            problems.append(Problem(where, "model.config", f"differs from the folder's {MODEL_FILE}"))
        elif _full({"metadata": card["model"]["metadata"]})["metadata"] != _full(model_config)["metadata"]:
            problems.append(Problem(where, "model.metadata", f"differs from the metadata in {MODEL_FILE}"))
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
    if "verification" in card:
        problems += _verification_problems(card, where)
    return problems


def known_data_sha256(task: dict) -> str | None:
    """The pinned hash of a task's records: its data file's, or a dialogue attack's seeds'."""
    return (task.get("data") or {}).get("sha256") or (task.get("dialogue") or {}).get("sha256")


@functools.lru_cache(maxsize=None)
def _composed_task(name: str):
    from .schema import compose

    return compose([f"task={name}"]).task


def recomputed_metrics(card: dict, samples: list[dict]) -> dict:
    """The card's metrics computed again from its samples by the task's own scoring (same resamples and seed)."""
    from .kinds import make_kind

    kind = make_kind(_composed_task(card["task"]["name"]), model_config_node(card["model"]["config"]))
    metrics, _ = kind.score(samples, card["run"]["bootstrap"], card["run"]["seed"])
    return metrics


def _samples_problems(path: Path, card: dict, where: str) -> list[Problem]:
    from .hashing import file_sha256

    if file_sha256(path) != card["samples"]["sha256"]:
        return [Problem(where, "samples.sha256", f"does not match {path.name}")]
    try:
        samples = read_samples(path)
    except BenchmarkError as e:
        return [Problem(str(path), "", str(e).removeprefix(f"{path}: "))]
    problems = []
    ids = [s["id"] for s in samples]
    if len(set(ids)) != len(ids):
        problems.append(Problem(str(path), "id", f"{len(ids) - len(set(ids))} repeated sample ids"))
    odd = [i for i in ids if not KEY_NAME.match(i)]
    if odd:
        problems.append(Problem(str(path), "id", f"{odd[0]!r}: sample ids are letters, digits, . _ : -"))
    if len(samples) != card["samples"]["n"] or len(samples) != card["dataset"]["n"]:
        problems.append(Problem(where, "samples.n", f"{path.name} has {len(samples)} samples; the card says "
                                                    f"{card['samples']['n']} (dataset.n {card['dataset']['n']})"))
    texts = sorted({k for s in samples for k in DATA_KEYS if k in s})
    if texts:
        problems.append(Problem(str(path), texts[0], "holds the data set's own text; submissions keep its hash "
                                                     "only (package with `python -m benchmark.submit`)"))
    problems += [Problem(str(path), f, f"holds {what}") for f, what in private_values(
        [s.get("error") for s in samples])]
    if problems:
        return problems
    try:
        metrics = recomputed_metrics(card, samples)
    except Exception as e:  # samples the task's scoring cannot read are not this task's samples
        return [Problem(str(path), "", f"the task's scoring cannot read these samples: {type(e).__name__}: {e}")]
    for name in sorted(set(metrics) | set(card["metrics"])):
        mine, theirs = metrics.get(name), card["metrics"].get(name)
        if mine is None or theirs is None:
            problems.append(Problem(where, f"metrics.{name}", "not a metric the task computes from these samples"
                                    if mine is None else "missing: the task computes it from these samples"))
        elif any(not _close(mine.get(k), theirs.get(k)) for k in ("value", "ci_low", "ci_high", "n", "unit")):
            problems.append(Problem(where, f"metrics.{name}", f"{theirs} is not what the samples give: {mine}"))
    return problems


def _close(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _read_card(path: Path) -> dict:
    try:
        if path.stat().st_size > MAX_CARD_BYTES:
            raise BenchmarkError(f"{path}: larger than {MAX_CARD_BYTES // 2**20} MiB; a score card is a summary")
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchmarkError(f"{path}: not a readable JSON score card: {e}") from None
    if not isinstance(card, dict):
        raise BenchmarkError(f"{path}: a score card is a JSON object")
    return card


def load_model_folder(folder: Path, allow_remote_code: bool = False, thorough: bool = True
                      ) -> tuple[dict | None, list[Problem]]:
    path = folder / MODEL_FILE
    if not FOLDER.match(folder.name):
        return None, [Problem(str(folder), "", "a model folder's name is printable ASCII, at most 100 characters")]
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
        one = load_folder(folder, thorough, allow_remote_code)
        out.cards += one.cards
        out.rejected += one.rejected
    return out


def load_folder(folder: Path, thorough: bool = False, allow_remote_code: bool = False,
                only: Path | None = None) -> Loaded:
    """One model folder (or, with `only`, one card of it): its accepted cards and the problems of the others."""
    out = Loaded()
    config, problems = load_model_folder(folder, allow_remote_code, thorough)
    cards = [only] if only is not None else sorted(folder.glob("*" + CARD_SUFFIX))
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
