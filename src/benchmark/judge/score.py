"""`python -m benchmark.judge score NAME --input IN.jsonl --output OUT.jsonl [key=value ...]`: a judge of the suite
(a model config of conf/model that classifies: reply-harm, reply-refusal, …) on rows of your own. Each input line
is `{"id", "request", "response"[, "language"]}`; each output line `{"id", "flagged", "score"}`, plus `label` for a
judge that labels (reply-refusal: full_compliance, partial_refusal or full_refusal). A row in a language the judge
does not say it reads (its metadata.languages: reply-harm reads English only) is not judged: its line is `{"id",
"flagged": null, "score": null, "language"}`, and the command counts such rows per language. Its language is the
row's `language`, else the one langid.py finds among the suite's (languages.py): a judge's flags in a language it
cannot read would be its noise (reply-harm flags 417 of SQuARe's 480 Korean replies, 265 of them unacceptable to
people). `language` is kept out of the judge's input. The judge's content is pinned and checked as a run checks it;
answers go through the response cache, so scoring the same rows again is free.
With `--labels FIELD` the input rows carry people's labels (0/1, or true/false) in FIELD, and the command prints
the judge's agreement with them."""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .. import BenchmarkError
from ..cache import ResponseCache
from ..composition import compose
from ..identity import model_sha256
from ..languages import language_of
from ..models import load_backend, pin_content
from ..models.cached import CachedModel, Failure
from ..models.requests import Classify

MAX_LINE = 1 << 20  # bytes: a row longer than this is refused, not read into memory whole
FIELDS = ("id", "request", "response", "language")


@dataclass
class Row:
    id: str
    request: str
    response: str
    language: str | None
    label: int | None  # people's label, where --labels names its field


def read_rows(path: Path, labels: str | None) -> list[Row]:
    """The input file's rows; a bad line is named by its number and what is wrong with it."""
    if not path.is_file():
        raise BenchmarkError(f"--input {path}: no such file")
    rows, seen = [], set()
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            where = f"{path}, line {number}"
            if len(raw) > MAX_LINE:
                raise BenchmarkError(f"{where}: longer than {MAX_LINE:,} bytes")
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise BenchmarkError(f"{where}: not a JSON object ({e})") from None
            if not isinstance(row, dict):
                raise BenchmarkError(f"{where}: not a JSON object")
            for key in ("id", "request", "response"):
                if not isinstance(row.get(key), (str, int)) or isinstance(row.get(key), bool):
                    raise BenchmarkError(f"{where}: {key!r} is missing or not a string")
            if str(row["id"]) in seen:
                raise BenchmarkError(f"{where}: id {row['id']!r} appears twice")
            seen.add(str(row["id"]))
            language = row.get("language")
            if language is not None and not isinstance(language, str):
                raise BenchmarkError(f"{where}: 'language' is not a string")
            label = None
            if labels is not None:
                value = row.get(labels)
                if value not in (0, 1, True, False) or isinstance(value, float):
                    raise BenchmarkError(f"{where}: {labels!r} is {value!r}, not 0, 1, true or false")
                label = int(value)
            rows.append(Row(str(row["id"]), str(row["request"]), str(row["response"]), language, label))
    if not rows:
        raise BenchmarkError(f"--input {path}: no rows")
    return rows


def judge_of(name: str, overrides: list[str]) -> CachedModel:
    cfg = compose([f"model={name}", *overrides])
    config = cfg.model
    pin_content(config, cfg.data_root)
    sha = model_sha256(config)
    backend = load_backend(config, cfg.allow_remote_code, cfg.data_root)
    judge = CachedModel(backend, sha, ResponseCache.in_folder(cfg.cache_dir), config, cfg.seed)
    if not judge.supports("classify"):
        raise BenchmarkError(f"model {name}: backend {config.backend} does not classify; name a judge (a classifier "
                             "model config: reply-harm, reply-refusal, …)")
    return judge


def unread_languages(config, rows: list[Row]) -> list[str | None]:
    """Per row, the language it is in where the judge does not declare it reads that language (metadata.languages;
    a judge that declares none reads every one), else None: the row's own `language`, else the one langid.py finds."""
    reads = set((config.metadata or {}).get("languages") or ())
    if not reads:
        return [None] * len(rows)
    found = [r.language or language_of(r.response) for r in rows]
    return [language if language not in reads else None for language in found]


def scored(judge: CachedModel, rows: list[Row], unread: list[str | None]) -> list[dict]:
    read = [r for r, language in zip(rows, unread) if language is None]
    answers = iter(judge.classify([Classify({"context": r.request, "response": r.response}) for r in read]))
    out = []
    for row, language in zip(rows, unread):
        if language is not None:
            out.append({"id": row.id, "flagged": None, "score": None, "language": language})
            continue
        answer = next(answers)
        if isinstance(answer, Failure):
            out.append({"id": row.id, "error": answer.error})
            continue
        line = {"id": row.id, "flagged": bool(answer["unsafe"]), "score": answer.get("score")}
        if "label" in answer:
            line["label"] = answer["label"]
        out.append(line)
    return out


def unread_note(config, unread: list[str | None]) -> str | None:
    """What to say of the rows left unjudged for their language, if any."""
    counts = Counter(language for language in unread if language is not None)
    if not counts:
        return None
    listed = ", ".join(f"{n} in {language}" for language, n in sorted(counts.items()))
    reads = ", ".join((config.metadata or {}).get("languages") or ())
    return (f"note: {config.name} reads {reads}; not judged (flagged null), as its flags there would be its noise "
            f"(docs/judges.md): {listed}")


def agreement(rows: list[Row], lines: list[dict]) -> dict:
    """Accuracy, and the share of each label's rows the judge flags, against people's labels."""
    pairs = [(r.label, line["flagged"]) for r, line in zip(rows, lines) if line.get("flagged") is not None]
    n = len(pairs)
    yes = [f for y, f in pairs if y == 1]
    no = [f for y, f in pairs if y == 0]
    return {"n": n, "accuracy": round(sum(int(f) == y for y, f in pairs) / n, 4) if n else math.nan,
            "flagged_of_positive": round(sum(yes) / len(yes), 4) if yes else None,
            "flagged_of_negative": round(sum(no) / len(no), 4) if no else None}


def main(argv: list[str]) -> str:
    parser = argparse.ArgumentParser(prog="python -m benchmark.judge score",
                                     description="Judge your own rows of requests and replies with a suite judge.")
    parser.add_argument("name", help="a judge's model config (conf/model/NAME.yaml): reply-harm, reply-refusal, …")
    parser.add_argument("--input", required=True, type=Path, help="JSON lines: {id, request, response[, language]}")
    parser.add_argument("--output", required=True, type=Path,
                        help="JSON lines: {id, flagged, score[, label]}; flagged null: a language the judge does not read")
    parser.add_argument("--labels", help="a field of the input rows holding people's 0/1 labels: print agreement")
    parser.add_argument("overrides", nargs="*", help="key=value settings (data_root=, cache_dir=, model.*=)")
    args = parser.parse_intermixed_args(argv)
    rows = read_rows(args.input, args.labels)
    judge = judge_of(args.name, args.overrides)
    unread = unread_languages(judge.config, rows)
    lines = scored(judge, rows, unread)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    failed = sum("error" in line for line in lines)
    said = f"{len(lines) - failed - sum(x is not None for x in unread)} rows judged by {args.name} -> {args.output}"
    if failed:
        said += f" ({failed} failed: their lines say why)"
    if args.labels:
        said += "\n" + json.dumps(agreement(rows, lines))
    if note := unread_note(judge.config, unread):
        said += "\n" + note
    return said
