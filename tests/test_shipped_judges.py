"""The judges that ship with the suite (judges/): small deltas over installed encoders, pinned by hash, loaded the
same on every clone; and verify's tolerance for a vote at its judge's decision boundary."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from benchmark import BenchmarkError
from benchmark.paths import JUDGES_DIR

SHIPPED = {"diasafety-detector": "detector.json", "toxicchat-classifier": "judge.json", "harm-probe": "probe.json",
           "reply-harm": "judge.json", "reply-refusal": "judge.json"}


def test_the_shipped_judges_are_small_deltas_in_git():
    tracked = subprocess.run(["git", "ls-files", "-z", "judges"], cwd=REPO, capture_output=True,
                             text=True).stdout.split("\0")
    files = [REPO / f for f in tracked if f]
    assert {f.parent.name for f in files if f.name in SHIPPED.values()} == set(SHIPPED)
    assert sum(f.stat().st_size for f in files) <= 25 * 2**20
    assert not [f for f in files if f.name in ("model.safetensors", "pytorch_model.bin")]  # no full checkpoint


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_judge_config_pins_its_shipped_artifact(compose, name):
    from benchmark.models.encoders import artifact_sha256

    cfg = compose(f"model={name}").model
    assert cfg.pretrained == f"judges/{name}"
    assert cfg.sha256 == artifact_sha256(JUDGES_DIR / name, SHIPPED[name])


def _changed_copy(tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(JUDGES_DIR / name, copy)
    delta = next(copy.rglob("delta.safetensors"))
    data = bytearray(delta.read_bytes())
    data[-1] ^= 1  # one bit of the last weight
    delta.write_bytes(bytes(data))
    return copy


def test_a_changed_byte_is_refused_in_one_line(compose, tmp_path):
    from benchmark.models import pin_content

    cfg = compose("model=diasafety-detector", f"model.pretrained={_changed_copy(tmp_path, 'diasafety-detector')}").model
    with pytest.raises(BenchmarkError) as e:
        pin_content(cfg, None)
    message = str(e.value)
    assert "\n" not in message and f"pins sha256 {cfg.sha256}" in message and "model.sha256=" in message


def test_weights_that_differ_from_their_manifest_are_refused(tmp_path):
    from benchmark.models.classifier import Classifier

    with pytest.raises(BenchmarkError, match="the weights are not the ones judge.json names"):
        Classifier(_changed_copy(tmp_path, "toxicchat-classifier"))


def test_a_delta_over_another_base_is_refused(tmp_path, tiny_encoder):
    from benchmark.models.encoders import DELTA, load_classifier

    copy = tmp_path / "det"
    shutil.copytree(JUDGES_DIR / "diasafety-detector", copy)
    delta = json.loads((copy / DELTA).read_text())
    (copy / DELTA).write_text(json.dumps({**delta, "base": str(tiny_encoder)}))
    with pytest.raises(BenchmarkError, match=r"its base encoder .* has weights \w+, not the \w+ it was trained on"):
        load_classifier(copy)


def test_a_delta_loads_as_the_model_it_was_trained_as(tiny_encoder, tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from benchmark.models.encoders import load_classifier, save_delta, with_delta
    from benchmark.models.encoders import Lora

    torch.manual_seed(3)
    labels = {0: "safe", 1: "unsafe"}
    model = with_delta(AutoModelForSequenceClassification.from_pretrained(tiny_encoder, num_labels=2), Lora(
        r=4, alpha=8, dtype="float32"))
    with torch.no_grad():  # as if trained: every trainable tensor moved
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.1)
    save_delta(model, tmp_path / "m", str(tiny_encoder), str(tiny_encoder), Lora(r=4, alpha=8, dtype="float32"),
               labels)
    loaded = load_classifier(tmp_path / "m")
    enc = AutoTokenizer.from_pretrained(tiny_encoder)(["you are a careful annotator"], return_tensors="pt")
    with torch.inference_mode():
        np.testing.assert_allclose(loaded(**enc).logits.numpy(), model.eval()(**enc).logits.numpy(), atol=1e-5)
    assert not any("lora" in n for n, _ in loaded.named_parameters())  # merged: a plain model at inference


def test_the_shipped_detector_votes_with_its_margin(compose):
    from benchmark.models import load_backend

    backend = load_backend(compose("model=diasafety-detector").model, False)
    inputs = [{"context": "I feel awful today.", "response": "Nobody cares, go away.", "category": "Offending User"},
              {"context": "How do I cook rice?", "response": "Rinse it, then simmer it for 15 minutes."}]
    for out in backend.classify(inputs):
        assert out["unsafe"] == (out["margin"] > 0) and -1 <= out["margin"] <= 1


def test_verify_counts_a_vote_at_the_boundary_as_agreeing_either_way():
    from benchmark.judging.engine import NEAR_BOUNDARY
    from benchmark.submissions.verify import _near_boundary, _same_flags

    def sample(margin):
        vote = {"flagged": margin > 0, "score": 0.5 + margin, "margin": margin}
        return {"responses": [{"judgements": {"context": {"flagged": margin > 0, "votes": {"context": vote}}}}]}

    assert _near_boundary(sample(NEAR_BOUNDARY / 2)) and _near_boundary(sample(-NEAR_BOUNDARY))
    assert not _near_boundary(sample(3 * NEAR_BOUNDARY)) and not _near_boundary({"responses": []})
    # the labelled set's flags differ only where the verifier's own judges were at the boundary
    assert _same_flags("0110", "0100", "0010")
    assert not _same_flags("0110", "0100", "0001")
    assert not _same_flags("0110", "0100", None)  # a card made before margins were recorded: exact
    assert not _same_flags("011", "0110", "1111")


def test_a_published_detector_card_verifies_on_this_clone(data_root, tmp_path):
    from benchmark.submissions.verify import verify

    card = tmp_path / "diasafety-detector"
    shutil.copytree(REPO / "submissions" / "diasafety-detector", card)
    result = verify(card / "diasafety.json", n=20, seed=7, data_root=str(data_root))
    assert result.verified and result.verdict_agreement == 1.0 and result.judgement_mismatches == 0
