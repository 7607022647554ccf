"""A kind is one class and one registration: a kind defined in this file, with its own task section, runs from a task
file to a score card that the card schema accepts."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
import yaml

from benchmark import BenchmarkError
from benchmark import metrics as M
from benchmark.kinds import KINDS, register
from benchmark.kinds.base import Kind
from benchmark.models.cached import Failure
from benchmark.models.requests import Classify as ClassifyRequest


@dataclass
class FlagConfig:
    field: str = "text"  # the record field the model classifies
    metric: str = "flagged_rate"


class Flagged(Kind):
    """The share of records whose text the model under test (a classifier) flags."""

    name = "flagged_share"
    section, section_schema = "flagging", FlagConfig
    packaged_fields = frozenset({"id", "input_sha256", "flagged", "group", "error"})
    reference_fields = ("group",)

    def __init__(self, task, model_cfg):
        if task.flagging is None:
            raise BenchmarkError(f"task {task.name}: kind {self.name} needs a `flagging:` section")
        self.task, self.spec = task, task.flagging

    @staticmethod
    def outputs(sample):
        return [sample.get("flagged")]

    @staticmethod
    def verdicts(sample):
        return sample.get("flagged")

    @staticmethod
    def sample_row(sample):
        return {"id": str(sample.get("id", "")), "error": sample.get("error") or "",
                "flagged": sample.get("flagged")}

    def check_record(self, record):
        return None if isinstance(record.get(self.spec.field), str) else f"no text in {self.spec.field}"

    def preflight(self, record):
        pass

    def reference(self, record):
        return {"group": {}}

    def preview(self, record):
        return [("the model", {"response": record[self.spec.field]})]

    def evaluate(self, records, roles):
        outs = roles.model.classify([ClassifyRequest({"response": r[self.spec.field]}) for r in records])
        return [{"id": r["id"], "input": {"text": r[self.spec.field]}, "group": {},
                 **({"flagged": None, "error": o.error} if isinstance(o, Failure)
                    else {"flagged": bool(o["unsafe"]), "error": None})} for r, o in zip(records, outs)]

    def score(self, samples, resamples, seed, validation=None):
        scored = [s for s in samples if not s.get("error")]
        flagged = np.array([s["flagged"] for s in scored], dtype=np.int64)
        rate = M.point_and_ci(M.ratio, flagged, np.ones(len(scored), dtype=np.int64), 0, resamples, seed)
        return {self.spec.metric: rate}, {"records": {"scored": len(scored)}}


@pytest.fixture
def registered():
    before = dict(KINDS)
    register(Flagged)
    yield
    KINDS.clear()
    KINDS.update(before)


def test_a_kind_defined_here_runs_to_a_valid_card(registered, tmp_path):
    from benchmark.run.runner import run
    from benchmark.composition import compose
    from benchmark.run.scorecard import validate

    root, conf = tmp_path / "data", tmp_path / "conf"
    (root / "mine").mkdir(parents=True)
    (root / "mine" / "texts.json").write_text(json.dumps([{"text": t} for t in
                                                          ("you idiot", "hello there", "what an idiot", "nice day")]))
    (conf / "task").mkdir(parents=True)
    (conf / "task" / "flags.yaml").write_text(yaml.safe_dump({
        "name": "flags", "kind": "flagged_share", "language": "en", "headline": "idiot_rate", "better": "lower",
        "data": {"path": "mine/texts.json"}, "flagging": {"metric": "idiot_rate"}}))
    cfg = compose([f"hydra.searchpath=[file://{conf}]", "task=flags", "model=profanity-check",
                   "model.backend=keywords", "model.phrases=[idiot]", f"data_root={root}",
                   f"results_dir={tmp_path / 'results'}", "progress=false", "bootstrap=100"])
    assert cfg.task.flagging.metric == "idiot_rate"
    card, path = run(cfg)
    validate(card)  # the card schema's kinds are the registered ones
    assert card["task"]["kind"] == "flagged_share" and card["metrics"]["idiot_rate"]["value"] == 0.5
    samples = [json.loads(line) for line in path.with_name("samples.jsonl").read_text().splitlines()]
    assert [s["flagged"] for s in samples] == [True, False, True, False]


def test_a_task_section_of_an_unregistered_kind_is_refused(tmp_path):
    from benchmark.composition import compose

    conf = tmp_path / "conf"
    (conf / "task").mkdir(parents=True)
    (conf / "task" / "flags.yaml").write_text(yaml.safe_dump({
        "name": "flags", "kind": "flagged_share", "language": "en", "headline": "x", "flagging": {}}))
    with pytest.raises(Exception, match="flagging"):
        compose([f"hydra.searchpath=[file://{conf}]", "task=flags"])


def test_two_kinds_cannot_share_a_section(registered):
    class Other(Flagged):
        name = "other_flags"

    with pytest.raises(BenchmarkError, match="section 'flagging' is kind flagged_share's"):
        register(Other)


def test_a_built_in_kind_is_one_module_as_this_one_is():
    """Each built-in kind's section config lives in the kind's own module, as Flagged's does here: no other file of
    the suite names a kind's section."""
    from benchmark.kinds.attack import Attack
    from benchmark.kinds.classify import Classify
    from benchmark.kinds.dialogue import DialogueAttack

    for kind in (Classify, Attack, DialogueAttack, Flagged):
        assert kind.section_schema.__module__ == kind.__module__, kind.name
