"""Publishing score cards.

    python -m benchmark.submit RUN_DIR [--to submissions]     package a finished run into submissions/<model>/
    python -m benchmark.submit validate [PATH ...]            check submissions (default: the whole folder)
    python -m benchmark.submit verify CARD [--n 20]           re-run a seeded sample of a card's records
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import yaml

from . import BenchmarkError, __version__
from . import submissions as S
from .files import write_json


def package(run_dir: Path, to: Path = S.SUBMISSIONS_DIR, data_root: str | None = None) -> Path:
    """Copy a run's card, its model config and its samples (without the data's texts) into `to/<model>/`."""
    from .runner import read_samples
    from .scorecard import validate

    card_path = run_dir / "scorecard.json"
    if not card_path.is_file():
        raise BenchmarkError(f"{run_dir}: no scorecard.json; package a finished run's folder")
    card = json.loads(card_path.read_text(encoding="utf-8"))
    validate(card, str(card_path))
    if card["run"]["limit"] is not None:
        raise BenchmarkError(f"{card_path}: run.limit={card['run']['limit']}: a published card covers the whole split;"
                             " run again without limit=")
    name, task = card["model"]["name"], card["task"]["name"]
    if not S.NAME.match(name):
        raise BenchmarkError(f"{card_path}: model.name {name!r} cannot name a folder; use letters, digits, . _ -")
    samples = read_samples(run_dir / card["samples"]["file"])
    if len(samples) != card["samples"]["n"]:
        raise BenchmarkError(f"{run_dir / card['samples']['file']}: {len(samples)} samples; the card says "
                             f"{card['samples']['n']}")
    card = S.scrub({k: v for k, v in card.items() if k != "verification"}, data_root)
    config = card["model"]["config"]
    folder = Path(to) / name
    model_file = folder / S.MODEL_FILE
    if model_file.exists() and S.read_yaml(model_file) != config:
        raise BenchmarkError(f"{model_file} holds another config of model {name}; a folder holds one model "
                             "config: give this one another name (model.name=...)")
    # built beside the folder and moved in only once it validates: a failed packaging leaves nothing behind
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".package-") as tmp:
        staged = Path(tmp) / name
        staged.mkdir()
        samples_file = staged / (task + S.SAMPLES_SUFFIX)
        sha = S.write_samples([S.strip_sample(s) for s in samples.values()], samples_file)
        card["samples"] = {"file": samples_file.name, "sha256": sha, "n": len(samples)}
        (staged / S.MODEL_FILE).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")
        write_json(staged / (task + S.CARD_SUFFIX), card)
        problems = S.check_card(staged / (task + S.CARD_SUFFIX), card, config)
        if problems:
            raise BenchmarkError("the packaged card does not validate:\n  " + "\n  ".join(map(str, problems)))
        folder.mkdir(exist_ok=True)
        for f in staged.iterdir():
            os.replace(f, folder / f.name)
    return folder / (task + S.CARD_SUFFIX)


def validate(paths: list[Path], allow_remote_code: bool = False) -> tuple[int, list[S.Problem]]:
    """Number of valid cards and the problems, over submission roots, model folders or single cards."""
    valid, problems = 0, []
    for path in paths:
        if path.is_file():
            loaded = S.load_folder(path.parent, True, allow_remote_code, only=path)
        elif not path.is_dir():
            problems.append(S.Problem(str(path), "", "no such file or folder"))
            continue
        # a submissions folder holds model folders; a model folder holds only files
        elif not any(p.is_dir() for p in path.iterdir() if not p.name.startswith(".")):
            loaded = S.load_folder(path, True, allow_remote_code)
        else:
            loaded = S.load(path, thorough=True, allow_remote_code=allow_remote_code)
            if not loaded.cards and not loaded.rejected:
                problems.append(S.Problem(str(path), "", "holds no model folder"))
        valid += len(loaded.cards)
        problems += loaded.rejected
    return valid, problems


def _outputs(sample: dict):
    """What the model said."""
    if "responses" in sample:
        return [r.get("text") for r in sample["responses"]]
    if "turns" in sample:
        return [t.get("target") for t in sample["turns"]]
    return sample.get("output")


def _verdicts(sample: dict):
    """What the task concluded from it."""
    if "responses" in sample:
        return [r.get("verdict") for r in sample["responses"]]
    if "turns" in sample:
        return sample.get("activated_turn")
    return sample.get("prediction")


def verify(card_path: Path, n: int = 20, seed: int | None = None, data_root: str | None = None,
           min_agreement: float = 0.95, allow_remote_code: bool = False, key: Path | None = None) -> dict:
    """Re-run a random sample of a card's records with its model config (a fresh cache: the model really answers)
    and compare with the submitted samples. With a verifier's private key the result is signed and written into the
    card as `verification`; without one it is only returned."""
    from omegaconf import OmegaConf, open_dict

    from .runner import read_samples, run
    from .schema import JudgeConfig, compose

    loaded = S.load_folder(card_path.parent, True, allow_remote_code, only=card_path)
    if loaded.rejected:
        raise BenchmarkError("the card does not validate; fix it before verifying:\n  " +
                             "\n  ".join(map(str, loaded.rejected)))
    card, config = loaded.cards[0].card, loaded.cards[0].model_config
    if n < 1:
        raise BenchmarkError(f"--n {n}: re-run at least one record")
    # drawn now unless given: a submitter cannot know in advance which records will be checked
    seed = secrets.randbelow(2**31) if seed is None else seed
    submitted = {s["id"]: s for s in S.read_samples(card_path.parent / card["samples"]["file"])}
    ids = random.Random(seed).sample(sorted(submitted), min(n, len(submitted)))

    with tempfile.TemporaryDirectory(prefix="verify-") as tmp:
        cfg = compose([f"task={card['task']['name']}", f"output_dir={tmp}/run", f"cache_dir={tmp}/cache",
                       f"seed={card['run']['seed']}", "bootstrap=10", "progress=false",
                       f"allow_remote_code={allow_remote_code}"])
        with open_dict(cfg):
            cfg.data_root = data_root
            cfg.ids = ids
            cfg.model = S.model_config_node(config)
            if card.get("judges"):
                voters: dict[str, list[str]] = {}
                for j in card["judges"]:
                    voters.setdefault(j["step"], []).append(j["voter"])
                cfg.judge = OmegaConf.merge(OmegaConf.structured(JudgeConfig), {
                    "name": "as submitted", "voters": voters,
                    "models": {j["voter"]: OmegaConf.to_container(S.model_config_node(j["config"]))
                               for j in card["judges"]}})
            if card.get("attacker"):
                cfg.attacker = S.model_config_node(card["attacker"]["config"])
        _, rerun_path = run(cfg)
        rerun = read_samples(rerun_path.parent / "samples.jsonl")

    compared = [i for i in ids if not submitted[i].get("error") and not rerun[i].get("error")]
    same_output = sum(_outputs(submitted[i]) == _outputs(rerun[i]) for i in compared)
    same_verdict = sum(_verdicts(submitted[i]) == _verdicts(rerun[i]) for i in compared)
    agreement = same_verdict / len(compared) if compared else 0.0
    result = {
        "verified": bool(compared) and len(compared) == len(ids) and agreement >= min_agreement,
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "by": f"benchmark {__version__} (python -m benchmark.submit verify)",
        "seed": seed,
        "n": len(ids),
        "failed": len(ids) - len(compared),
        "verdict_agreement": round(agreement, 4),
        "output_agreement": round(same_output / len(compared), 4) if compared else 0.0,
        "min_agreement": min_agreement,
        "disagreeing_ids": [i for i in compared if _verdicts(submitted[i]) != _verdicts(rerun[i])][:20],
    }
    card = {k: v for k, v in card.items() if k != "verification"}
    result["card_sha256"] = S.card_sha256(card)
    if key is not None:
        card["verification"] = result = S.sign(card, result, key)
        write_json(card_path, card)
    return result


def keygen(path: Path) -> str:
    """A new verifier key pair: the private key (PEM) at `path`, the line to add to verifier_keys.json returned."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if path.exists():
        raise BenchmarkError(f"{path} exists; a key is never overwritten")
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return json.dumps({S.key_id(public): base64.b64encode(public).decode("ascii")})


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in ("package", "validate", "verify", "keygen") else "package"
    p = argparse.ArgumentParser(prog=f"python -m benchmark.submit {command}")
    if command == "package":
        p.add_argument("run_dir", type=Path, help="a finished run's folder (holds scorecard.json)")
        p.add_argument("--to", type=Path, default=S.SUBMISSIONS_DIR, help="the submissions folder")
        p.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT"))
    elif command == "validate":
        p.add_argument("paths", type=Path, nargs="*", default=[S.SUBMISSIONS_DIR])
        p.add_argument("--allow-remote-code", action="store_true",
                       help="accept trust_remote_code: true (after a maintainer reviewed that code)")
    elif command == "keygen":
        p.add_argument("path", type=Path, help="where the new private key goes (keep it out of the repository)")
    else:
        p.add_argument("card", type=Path)
        p.add_argument("--n", type=int, default=20, help="records to re-run")
        p.add_argument("--seed", type=int, default=None, help="which records (default: drawn at random)")
        p.add_argument("--min-agreement", type=float, default=0.95)
        p.add_argument("--data-root", default=os.environ.get("BENCHMARK_DATA_ROOT"))
        p.add_argument("--allow-remote-code", action="store_true")
        p.add_argument("--key", type=Path, default=os.environ.get("BENCHMARK_VERIFIER_KEY"),
                       help="a verifier's private key: sign the result into the card (default: "
                            "$BENCHMARK_VERIFIER_KEY; without one the result is only printed)")
    args = p.parse_args(argv)
    try:
        if command == "package":
            out = package(args.run_dir, args.to, args.data_root)
            print(f"packaged {out} (and {out.parent / S.MODEL_FILE}); it validates")
        elif command == "validate":
            valid, problems = validate(args.paths, args.allow_remote_code)
            for problem in problems:
                print(f"rejected: {problem}")
            print(f"{valid} valid score card(s), {len(problems)} problem(s)")
            return 1 if problems or not valid else 0
        elif command == "keygen":
            entry = keygen(args.path)
            print(f"private key written to {args.path}; add this public key to submissions/verifier_keys.json: "
                  f"{entry}")
        else:
            r = verify(args.card, args.n, args.seed, args.data_root, args.min_agreement, args.allow_remote_code,
                       args.key)
            state = "verified" if r["verified"] else "NOT verified"
            print(f"{args.card}: {state}: {r['n']} records re-run (seed {r['seed']}), verdicts agree on "
                  f"{100 * r['verdict_agreement']:.1f}%, outputs identical on {100 * r['output_agreement']:.1f}%, "
                  f"{r['failed']} failed" + ("; signed into the card" if args.key else
                                            "; not written (no --key)"))
            return 0 if r["verified"] else 1
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
