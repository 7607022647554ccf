"""A forged submission is rejected with one problem naming the file and the field: JSON read strictly, every field of
a card's run checked, no number, nesting, string or object that takes the validator or the board down, no folder
shown with any problem, no look-alike model names. Each test forges a copy of a published folder."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from test_submissions import _set, edit_card, folder, problems_of  # noqa: F401  (fixtures)

from benchmark import submissions as S
from benchmark.hashing import file_sha256

SAMPLES = "diasafety.samples.jsonl.gz"


def _write_lines(folder: Path, lines: list[str]) -> None:
    """The samples file as these lines, exactly as written, and the card's hash of it."""
    path = folder / SAMPLES
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    edit_card(folder, _set(["samples", "sha256"], file_sha256(path)))


def _sample_lines(folder: Path) -> list[str]:
    with gzip.open(folder / SAMPLES, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


# ------------------------------------------------------------------------------------------------ strict JSON


def test_a_key_twice_in_a_card_is_rejected(folder):
    """Python keeps the last of two keys, another reader the first: the forged metrics come first."""
    path = folder / "diasafety.json"
    card = json.loads(path.read_text())
    forged = {k: {**m, "value": m["ci_high"]} for k, m in card["metrics"].items()}
    path.write_text('{"metrics": ' + json.dumps(forged) + ", " + json.dumps(card)[1:])
    assert problems_of(folder) == [f"{path}: not a readable JSON score card: key 'metrics' appears twice in one "
                                   "object; a JSON reader would silently keep the last"]
    assert S.load(folder.parent).cards == []


def test_a_key_twice_in_a_sample_line_is_rejected(folder):
    lines = _sample_lines(folder)
    sample = json.loads(lines[0])
    lines[0] = lines[0][:-1] + ', "prediction": ' + json.dumps(sample["prediction"]) + "}"
    lines[0] = '{"prediction": "Biased Opinion", ' + lines[0][1:]
    _write_lines(folder, lines)
    assert problems_of(folder) == [f"{folder / SAMPLES}: line 1: key 'prediction' appears twice in one object; a "
                                   "JSON reader would silently keep the last"]
