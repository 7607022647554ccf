"""The score card as a typed record (run/card_record.py): every published card is one, the JSON Schema shipped with
the package is the one the record generates, and a card whose fields are not what the record types them as is
refused, naming the field, before any rule reads it."""

from __future__ import annotations

import json

import pytest
from test_derived_fields import problems, published

from benchmark.paths import SCHEMA_FILE
from benchmark.run.card_record import schema
from benchmark.submissions import SUBMISSIONS_DIR


def test_the_shipped_schema_is_generated_from_the_record():
    assert json.loads(SCHEMA_FILE.read_text()) == schema(), \
        "regenerate it: python -m benchmark.run.card_record > src/benchmark/scorecard.schema.json"


def test_every_published_card_is_a_score_card_record():
    from benchmark.run.card_record import problems as record_problems

    cards = [p for p in SUBMISSIONS_DIR.glob("*/*.json") if p.name != "verifier_keys.json"]
    assert len(cards) >= 40
    assert {str(p): record_problems(json.loads(p.read_text())) for p in cards} == {str(p): [] for p in cards}


def _set(path: str, value):
    def edit(card):
        *parents, last = path.split(".")
        node = card
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return edit


@pytest.mark.parametrize("edit, field, why", [
    (_set("run.model_calls", "1200"), "run.model_calls", "valid integer"),         # a count as text
    (_set("run.failed", True), "run.failed", "valid integer"),                     # a flag as a count
    (_set("dataset.n", 3.5), "dataset.n", "valid integer"),
    (_set("metrics.over_refusal.n", -1), "metrics.over_refusal.n", "greater than or equal to 0"),
    (_set("metrics.over_refusal.unit", None), "metrics.over_refusal.unit", "valid string"),  # null is no unit
    (_set("judges.0.measured.xstest.n", None), "judges.0.measured.xstest.n", "valid integer"),
    (_set("judges.0.agrees_with_people", 0.99), "judges.0.agrees_with_people", "not a field"),  # an asserted field
    (_set("judges.0.with_context", "yes"), "judges.0.with_context", "valid boolean"),
    (_set("dataset.sha256_matches_task", 1), "dataset.sha256_matches_task", "valid boolean"),
    (_set("model.metadata.open_weights", "true"), "model.metadata.open_weights", "valid boolean"),
    (_set("task.kind", "attack_v2"), "task.kind", "not a task kind of the suite"),
    (_set("run.tokens.model.counted_by", ["tokenizer", "tokenizer"]), "run.tokens.model.counted_by", "twice"),
    (_set("samples.sha256", "ABC"), "samples.sha256", "pattern"),
])
def test_a_field_that_is_not_its_type_is_refused_by_name(tmp_path, edit, field, why):
    folder = published(tmp_path, "gpt-4-xstest", "xstest")
    path = folder / "xstest.json"
    card = json.loads(path.read_text())
    edit(card)
    path.write_text(json.dumps(card))
    found = [p for p in problems(folder) if f": {field}: " in p or p.split(": ")[1:2] == [field]]
    assert found and why in found[0], problems(folder)
