"""Publishing score cards.

    python -m benchmark.submit RUN_DIR [--to submissions] [--replace]   package a finished run into submissions/<model>/
    python -m benchmark.submit validate [PATH ...] [--data-root DIR]    check submissions (default: the whole folder)
    python -m benchmark.submit verify CARD [--n 20] [--judge-sample 200] [--endpoint ROLE=URL] [--key-env ROLE=VAR]
                                   [--key PEM]                           re-run a random sample of a card's records
    python -m benchmark.submit recall CARD [--cache-dir DIR]             a card's answers into this machine's cache
    python -m benchmark.submit pin TASK [--data-root DIR]                derive a task's `pinned:` values from its data
    python -m benchmark.submit keygen PATH                               a verifier's key pair
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import yaml

from .. import __version__, BenchmarkError, submissions as S
from ..composition import compose
from ..config import JudgeConfig
from ..files import inside, unportable, write_json
from ..identity import card_sha256, model_sha256, sha256_json
from ..kinds import make_kind
from ..kinds.judging import NEAR_BOUNDARY
from ..models.base import Backend, Reach
from ..models.cached import Failure
from ..models.registry import backend_class
from ..run import scorecard
from ..run.card_record import JudgingValidation, ScoreCard, Verification, VerificationResult
from ..run.folder import read_samples
from ..run.recheck import recheck
from ..run.runner import POOL, pins, plan, run
from ..submissions.base import NAME, capped
from ..submissions.checked import CheckStore
from ..submissions.configs import full_config, model_config_node, read_yaml
from ..submissions.privacy import scrub_card
from ..submissions.rules import check_card
from ..submissions.samples import strip_sample, task_strings, write_samples
from ..submissions.signing import keygen, sign, verified_from


def package(run_dir: Path, to: Path = S.SUBMISSIONS_DIR, data_root: str | None = None,
            replace: bool = False) -> tuple[Path, Path | None]:
    """Copy a run's card, its model config and its samples (without the data's texts) into `to/<model>/`. Returns
    the card's path and the card it replaced, if any; a signed card is replaced only with `replace`."""
    card_path = run_dir / "scorecard.json"
    if not card_path.is_file():
        raise BenchmarkError(f"{run_dir}: no scorecard.json; package a finished run's folder")
    card = S.read_card(card_path)
    scorecard.validate(card, str(card_path))
    record = ScoreCard.model_validate(card)
    if record.run.limit is not None:
        raise BenchmarkError(f"{card_path}: run.limit={record.run.limit}: a published card covers the whole split;"
                             " run again without limit=")
    name, task = record.model.name, record.task.name
    if not NAME.match(name):
        raise BenchmarkError(f"{card_path}: model.name {name!r} cannot name a folder; use letters, digits, . _ -")
    if why := unportable(name):
        raise BenchmarkError(f"{card_path}: model.name {name!r} cannot name a folder on every file system: {why}")
    samples_path = inside(run_dir, record.samples.file, f"{card_path}: samples.file")
    samples = read_samples(samples_path)
    if len(samples) != record.samples.n:
        raise BenchmarkError(f"{samples_path}: {len(samples)} samples; the card says {record.samples.n}")
    card = scrub_card(card, data_root)  # the card as published: its JSON is written below
    for entry in (card["model"], *card.get("judges", []), *([card["attacker"]] if "attacker" in card else [])):
        entry["config_sha256"] = model_sha256(model_config_node(entry["config"]))  # of the config as published
    config = card["model"]["config"]
    folder = Path(to) / name
    model_file = folder / S.MODEL_FILE
    # the same config up to defaults: a field added to the schema since the folder was made reads as its default
    if model_file.exists() and full_config(read_yaml(model_file)) != full_config(config):
        raise BenchmarkError(f"{model_file} holds another config of model {name}; a folder holds one model "
                             "config: give this one another name (model.name=...)")
    target = folder / (task + S.CARD_SUFFIX)
    replaced = target if target.exists() else None
    if replaced is not None and not replace and "verification" in S.read_card(target):
        raise BenchmarkError(f"{target} is a verified (signed) card; packaging would replace it with an unsigned one. "
                             "Pass --replace to replace it (then verify the new card)")
    # built beside the folder and moved in only once it validates: a failed packaging leaves nothing behind
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".package-") as tmp:
        staged = Path(tmp) / name
        staged.mkdir()
        samples_file = staged / (task + S.SAMPLES_SUFFIX)
        own = task_strings(record.task.config)
        sha = write_samples([strip_sample(s, own) for s in samples.values()], samples_file)
        card["samples"] = {"file": samples_file.name, "sha256": sha, "n": len(samples)}
        (staged / S.MODEL_FILE).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
                                           encoding="utf-8")
        write_json(staged / target.name, card)
        problems = check_card(staged / target.name, card, config, data_root=data_root)
        if problems:
            raise BenchmarkError("the packaged card does not validate:\n  " + "\n  ".join(map(str, capped(problems))))
        folder.mkdir(exist_ok=True)
        for f in staged.iterdir():
            os.replace(f, folder / f.name)
    return target, replaced


def validate(paths: list[Path], allow_remote_code: bool = False,
             data_root: str | None = None) -> tuple[int, list[S.Problem]]:
    """Number of valid cards and the problems, over submission roots, model folders or single cards."""
    valid, problems = 0, []
    for path in paths:
        if path.is_file():
            loaded = S.load_folder(path.parent, True, allow_remote_code, only=path, data_root=data_root)
        elif not path.is_dir():
            problems.append(S.Problem(str(path), "", "no such file or folder"))
            continue
        # a model folder holds its model config (and never a folder); a submissions folder holds model folders
        elif (path / S.MODEL_FILE).exists() or not any(p.is_dir() for p in path.iterdir()
                                                        if not p.name.startswith(".")):
            loaded = S.load_folder(path, True, allow_remote_code, data_root=data_root)
        else:
            # checked afresh; the results are kept for the board, which then opens without checking again
            store = CheckStore(fresh=True)
            try:
                loaded = S.load(path, thorough=True, allow_remote_code=allow_remote_code, data_root=data_root,
                                store=store, progress=sys.stderr.isatty())
            finally:
                store.close()
            if not loaded.cards and not loaded.rejected:
                problems.append(S.Problem(str(path), "", "holds no model folder"))
        valid += len(loaded.cards)
        problems += loaded.rejected
    return valid, problems


def judge_role(voter: str) -> str:
    """A judge's role on the command line (--endpoint judge:VOTER=URL): keyed by what it is, so no voter a card
    names can stand in for the model or the attacker."""
    return f"judge:{voter}"


def _roles(card: ScoreCard) -> dict[str, dict]:
    """Every model config on a card by its role: model, attacker, judge:VOTER for each judge."""
    roles = {"model": card.model.config}
    roles.update({judge_role(j.voter): j.config for j in card.judges or []})
    if card.attacker is not None:
        roles["attacker"] = card.attacker.config
    return roles


def _maintainers_endpoints(card: ScoreCard, endpoints: dict[str, str], key_envs: dict[str, str]) -> dict[str, dict]:
    """The card's configs with every endpoint and key the verifier's own: each backend declares where its requests
    go (Backend.reach); one that calls out gets the verifier's --endpoint and --key-env in place of the card's
    base_url and api_key_env, and one that would call out where it decides is not run. So no submission chooses
    where a maintainer's credentials go."""
    roles = _roles(card)
    unknown = sorted((set(endpoints) | set(key_envs)) - set(roles))
    if unknown:
        raise BenchmarkError(f"--endpoint/--key-env for {unknown}: this card's roles are {sorted(roles)}")
    out = {}
    for role, config in roles.items():
        node = model_config_node(config)
        reach = backend_class(node).reach(node)
        what = f"the card's {role} ({config.get('name')}, backend {config.get('backend')})"
        if reach is Reach.ANYWHERE:
            raise BenchmarkError(f"{what} may call out over the network wherever its backend decides, with keys it "
                                 "finds itself; verify runs a card only against endpoints and keys you name, so it "
                                 "cannot re-run this one")
        if reach is Reach.ENDPOINT:
            if role not in endpoints:
                raise BenchmarkError(f"{what} calls out over the network; give the endpoint to verify it with: "
                                     f"--endpoint {role}=URL, and --key-env {role}=VARIABLE if it needs a key (the "
                                     "card's own base_url and api_key_env are never used)")
            config = {**config, "base_url": endpoints[role], "api_key_env": key_envs.get(role)}
        elif role in endpoints or role in key_envs:
            raise BenchmarkError(f"{what} runs on this machine; it takes no --endpoint or --key-env")
        out[role] = config
    return out


def verify(card_path: Path, n: int = 20, seed: int | None = None, data_root: str | None = None,
           min_agreement: float = 0.95, allow_remote_code: bool = False, key: Path | None = None,
           endpoints: dict[str, str] | None = None, key_envs: dict[str, str] | None = None,
           judge_sample: int = 200) -> VerificationResult:
    """Validate the card (every derived value recomputed), then re-run a random sample of its records with its
    configs (a fresh cache: the models really answer; endpoints and keys the verifier's own) and compare outputs,
    verdicts, gold labels and groups with the submitted samples; and re-ask its judges `judge_sample` rows of each
    labelled set the shipped validity record answered for them (0: every row), against the record. With a verifier's
    private key the verdict is signed and written into the card as `verification` (and returned as one); without
    one it is only returned."""
    loaded = S.load_folder(card_path.parent, True, allow_remote_code, only=card_path, data_root=data_root)
    if loaded.rejected:
        raise BenchmarkError("the card does not validate; fix it before verifying:\n  " +
                             "\n  ".join(map(str, loaded.rejected)))
    card, record = loaded.cards[0].card, loaded.cards[0].record
    if n < 1:
        raise BenchmarkError(f"--n {n}: re-run at least one record")
    configs = _maintainers_endpoints(record, endpoints or {}, key_envs or {})
    # drawn now unless given: a submitter cannot know in advance which records will be checked
    seed = secrets.randbelow(2**31) if seed is None else seed
    submitted = {s["id"]: s for s in S.read_samples(card_path.parent / record.samples.file)}
    ids = random.Random(seed).sample(sorted(submitted), min(n, len(submitted)))

    with tempfile.TemporaryDirectory(prefix="verify-") as tmp:
        cfg = _rerun_config(record, configs, ids, Path(tmp), data_root, allow_remote_code)
        rerun_card, rerun_path = run(cfg)
        rerun_plan = plan(cfg)
        backends = {k: POOL.get(POOL.key(c, allow_remote_code, data_root), c, allow_remote_code, data_root)
                    for k, c in rerun_plan.judge_cfgs.items()}
        records = recheck(rerun_plan, backends, Path(tmp) / "recheck.sqlite", judge_sample, seed)
        kind = make_kind(cfg.task, cfg.model)
        # compared as submitted: the data set's texts hashed
        own = task_strings(record.task.config)
        rerun = {i: strip_sample(s, own) for i, s in read_samples(rerun_path.parent / "samples.jsonl").items()}

    result = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "by": f"benchmark {__version__} (python -m benchmark.submit verify)", "seed": seed,
              **_compared(kind, ids, submitted, rerun, record, ScoreCard.model_validate(rerun_card)),
              "min_agreement": min_agreement,
              **({**records, "judge_sample": judge_sample} if records else {})}
    card = {k: v for k, v in card.items() if k != "verification"}
    result = {"verified": False, **result, "card_sha256": card_sha256(card)}
    result = {**result, "verified": verified_from(VerificationResult.model_validate(result))}
    if key is None:
        return VerificationResult.model_validate(result)
    signed = sign(card, result, key)
    write_json(card_path, {**card, "verification": signed})
    return Verification.model_validate(signed)


def _rerun_config(card: ScoreCard, configs: dict, ids: list[str], tmp: Path, data_root: str | None,
                  allow_remote_code: bool):
    """The run that re-asks the card's models for the chosen records: the card's task, seed and configs (with the
    verifier's endpoints), a fresh cache."""
    from omegaconf import OmegaConf, open_dict

    cfg = compose([f"task={card.task.name}", f"output_dir={tmp}/run", f"cache_dir={tmp}/cache",
                   f"seed={card.run.seed}", "bootstrap=10", f"progress={sys.stderr.isatty()}",
                   f"judge_validity={str(card.judging_validation is not None).lower()}",
                   f"allow_remote_code={allow_remote_code}"], keep=False)
    with open_dict(cfg):
        cfg.data_root = data_root
        cfg.ids = ids
        cfg.model = model_config_node(configs["model"])
        if card.judges:
            voters: dict[str, list[str]] = {}
            for j in card.judges:
                voters.setdefault(j.step, []).append(j.voter)
            cfg.judge = OmegaConf.merge(OmegaConf.structured(JudgeConfig), {
                "name": "as submitted", "voters": voters,
                "models": {j.voter: OmegaConf.to_container(model_config_node(configs[judge_role(j.voter)]))
                           for j in card.judges}})
        if card.attacker is not None:
            cfg.attacker = model_config_node(configs["attacker"])
    return cfg


def _compared(kind, ids: list[str], submitted: dict, rerun: dict, card: ScoreCard, rerun_card: ScoreCard) -> dict:
    """How the re-run agrees with the submitted samples: verdicts, outputs, gold labels and groups, the judges' votes
    on the same outputs and on their labelled set."""
    compared = [i for i in ids if not submitted[i].get("error") and not rerun[i].get("error")]
    same_output = sum(kind.outputs(submitted[i]) == kind.outputs(rerun[i]) for i in compared)
    # a record the verifier's own judges found at their decision boundary may differ by float rounding alone
    near = {i for i in compared if _near_boundary(rerun[i])}
    disagreeing = [i for i in compared if kind.verdicts(submitted[i]) != kind.verdicts(rerun[i]) and i not in near]
    # the judges are deterministic: on the outputs both runs gave, they must have voted the same
    misjudged = [i for i in compared if kind.outputs(submitted[i]) == kind.outputs(rerun[i])
                 and kind.judgements(submitted[i]) != kind.judgements(rerun[i]) and i not in near]
    # a replay's record matched or not is the recorded file's to say, as gold labels are the data's
    other_reference = [i for i in ids if any(submitted[i].get(f) != rerun[i].get(f)
                                             for f in (*kind.reference_fields, "unmatched"))]
    # the judges' flags on their labelled set decide the corrected rate: the verifier's judges must give the same
    claimed, measured = card.judging_validation, rerun_card.judging_validation
    judges_agree = claimed is None or (isinstance(claimed, JudgingValidation) and isinstance(measured, JudgingValidation)
                                       and _same_flags(claimed.flagged, measured.flagged, measured.near))
    return {
        "n": len(ids),
        "failed": len(ids) - len(compared),
        "near_boundary": len(near),
        "verdict_agreement": round((len(compared) - len(disagreeing)) / len(compared), 4) if compared else 0.0,
        "output_agreement": round(same_output / len(compared), 4) if compared else 0.0,
        "reference_mismatches": len(other_reference),
        "judgement_mismatches": len(misjudged),
        **({"judging_validation_agrees": judges_agree} if claimed is not None else {}),
        "disagreeing_ids": disagreeing[:20],
        **({"misjudged_ids": misjudged[:20]} if misjudged else {}),
    }


def _near_boundary(sample: dict) -> bool:
    """Whether any vote in the verifier's own sample came within NEAR_BOUNDARY of its judge's decision boundary (the
    submitted sample's margins are not read: a submitter could claim any)."""
    def votes(node):
        if isinstance(node, dict):
            if isinstance(node.get("votes"), dict):
                yield from (v for v in node["votes"].values() if isinstance(v, dict))
            for value in node.values():
                yield from votes(value)
        elif isinstance(node, list):
            for value in node:
                yield from votes(value)

    return any(isinstance(v.get("margin"), (int, float)) and abs(v["margin"]) <= NEAR_BOUNDARY for v in votes(sample))


def _same_flags(claimed: str, flagged: str, near: str | None) -> bool:
    """The submitted flags on the labelled set are the verifier's (`flagged`), but where its judges were at the
    boundary (`near`)."""
    near = near or "0" * len(flagged)
    return len(claimed) == len(flagged) and all(a == b or n == "1" for a, b, n in zip(claimed, flagged, near))


class _Recalled(Backend):
    """A model whose answers are a card's recorded responses: (prompt hash, sample number) -> text."""

    operations = frozenset({"generate"})
    requests_go = Reach.LOCAL

    def __init__(self, answers: dict, seed: int, shape: str):
        self.answers, self.seed, self.answer_shape = answers, seed, shape

    def generate(self, conversations, generation, seeds=None):
        out = []
        for i, messages in enumerate(conversations):
            sample = seeds[i] - self.seed if seeds else 0  # the run's seed plus the sample's number
            text = self.answers.get((sha256_json(messages), sample))
            out.append(text if isinstance(text, str) else Failure("not on the card"))
        return out

    def usage(self, requests, answers):
        return [None] * len(requests)  # counted by the model's own tokenizer when a run reads them back


class _Unjudged(Backend):
    """A judge that flags nothing (an empty answer parses as no label): a recall only fills the cache, so that every
    recorded turn is played whatever today's judges would say of it."""

    operations = frozenset({"generate", "classify"})
    requests_go = Reach.LOCAL
    answer_shape = "verdict-2"

    def generate(self, conversations, generation, seeds=None):
        return [""] * len(conversations)

    def classify(self, inputs):
        return [{"unsafe": False, "score": 0.0} for _ in inputs]

    def usage(self, requests, answers):
        return [None] * len(requests)


def recall(card_path: Path, data_root: str | None, cache_dir: Path) -> int:
    """A published card's answers put into this machine's response cache, keyed as its model config asks them: a
    rebuild of the card (submissions/reproduce.sh) then asks its models only what the card does not hold, and judges
    every answer with today's judges. The answers are as trustworthy as the card; verify re-runs a random sample of
    records live. Run it with the task as the card ran it (its version): the recalled run asks what the card's run
    asked. Returns the answers cached."""
    loaded = S.load_folder(card_path.parent, True, False, only=card_path, data_root=data_root)
    # figures that today's scoring computes otherwise are what a rebuild is for; any other problem stops the recall
    blocking = [p for p in loaded.rejected if not p.field.startswith(("metrics.", "breakdown."))]
    if blocking:
        raise BenchmarkError("the card does not validate; fix it before recalling its answers:\n  " +
                             "\n  ".join(map(str, blocking)))
    card = loaded.cards[0].record if loaded.cards else _typed(card_path)
    samples = S.read_samples(card_path.parent / card.samples.file)
    # the rebuild judges the answers; this run only puts them in the cache
    skipped = {"name": "recall-unjudged", "backend": "keywords", "phrases": ["\u0000"]}
    configs = {"model": card.model.config, **{judge_role(j.voter): skipped for j in card.judges or []},
               **({"attacker": card.attacker.config} if card.attacker is not None else {})}
    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        cfg = _rerun_config(card, configs, sorted(s["id"] for s in samples), Path(tmp), data_root, False)
        from omegaconf import open_dict

        with open_dict(cfg):
            cfg.cache_dir, cfg.judge_validity = str(cache_dir), False
        planned = plan(cfg, pin=False)
        answers = planned.kind.recorded_answers(planned.items, samples)
        recalled = _Recalled(answers, card.run.seed, backend_class(cfg.model).answer_shape)
        names = {cfg.model.name, *([cfg.attacker.name] if card.attacker is not None else [])}
        real_get = POOL.get
        POOL.get = lambda key, config, *a: (recalled if config.name in names else _Unjudged()
                                            if config.name == skipped["name"] else real_get(key, config, *a))
        try:
            run(cfg)
        finally:
            POOL.get, POOL.kept = real_get, {}
    return sum(isinstance(t, str) for t in answers.values())


def _typed(card_path: Path) -> ScoreCard:
    """A card read as its record (BenchmarkError naming the first field the record refuses)."""
    card = S.read_card(card_path)
    scorecard.validate(card, str(card_path))
    return ScoreCard.model_validate(card)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values or []:
        role, sep, value = v.partition("=")
        if not sep or not role or not value:
            raise BenchmarkError(f"{flag} {v!r}: give ROLE=VALUE (ROLE: model, attacker or judge:VOTER)")
        out[role] = value
    return out


COMMANDS = ("package", "validate", "verify", "recall", "pin", "keygen")


def _parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m benchmark.submit {command}")
    data_root = os.environ.get("BENCHMARK_DATA_ROOT")
    if command == "package":
        p.add_argument("run_dir", type=Path, help="a finished run's folder (holds scorecard.json)")
        p.add_argument("--to", type=Path, default=S.SUBMISSIONS_DIR, help="the submissions folder")
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--replace", action="store_true", help="replace a verified (signed) card of the same task")
    elif command == "validate":
        p.add_argument("paths", type=Path, nargs="*", default=[S.SUBMISSIONS_DIR])
        p.add_argument("--data-root", default=data_root,
                       help="the data sets: names the records whose gold labels or groups differ from the data's")
        p.add_argument("--allow-remote-code", action="store_true",
                       help="accept trust_remote_code: true (after a maintainer reviewed that code)")
    elif command == "pin":
        p.add_argument("task", help="a task's name")
        p.add_argument("--data-root", default=data_root)
    elif command == "keygen":
        p.add_argument("path", type=Path, help="where the new private key goes (keep it out of the repository)")
    elif command == "recall":
        p.add_argument("card", type=Path)
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--cache-dir", type=Path, default=Path("results/.cache"),
                       help="the response cache a rebuild reads (a run's cache_dir; default results/.cache)")
    else:
        p.add_argument("card", type=Path)
        p.add_argument("--n", type=int, default=20, help="records to re-run")
        p.add_argument("--judge-sample", type=int, default=200,
                       help="rows of each labelled set re-asked of the judges, against the shipped validity record "
                            "their figures came from (0: every row)")
        p.add_argument("--seed", type=int, default=None, help="which records (default: drawn at random)")
        p.add_argument("--min-agreement", type=float, default=0.95)
        p.add_argument("--data-root", default=data_root)
        p.add_argument("--allow-remote-code", action="store_true")
        p.add_argument("--endpoint", action="append", metavar="ROLE=URL",
                       help="the chat completions URL of a role called over HTTP (model, attacker, judge:VOTER)")
        p.add_argument("--key-env", action="append", metavar="ROLE=VARIABLE",
                       help="the environment variable holding that endpoint's key")
        p.add_argument("--key", type=Path, default=os.environ.get("BENCHMARK_VERIFIER_KEY"),
                       help="a verifier's private key: sign the result into the card (default: "
                            "$BENCHMARK_VERIFIER_KEY; without one the result is only printed)")
    return p


def _command(command: str, args) -> int:
    if command == "package":
        out, replaced = package(args.run_dir, args.to, args.data_root, args.replace)
        if replaced is not None:
            print(f"replaced the card {replaced} (and its samples)")
        print(f"packaged {out} (and {out.parent / S.MODEL_FILE}); it validates")
    elif command == "validate":
        valid, problems = validate(args.paths, args.allow_remote_code, args.data_root)
        for problem in problems:
            print(f"rejected: {problem}")
        print(f"{valid} valid score card(s), {len(problems)} problem(s)")
        return 1 if problems or not valid else 0
    elif command == "pin":
        block = {"pinned": pins(args.task, args.data_root)}
        print(yaml.safe_dump(block, sort_keys=False, default_flow_style=None), end="")
    elif command == "recall":
        n = recall(args.card, args.data_root, args.cache_dir)
        print(f"{args.card}: {n} recorded answers in the response cache {args.cache_dir}; a run of its model and task "
              "now asks the model only for the rest")
    elif command == "keygen":
        entry = keygen(args.path)
        print(f"private key written to {args.path}; add this public key to submissions/verifier_keys.json: "
              f"{entry}")
    else:
        r = verify(args.card, args.n, args.seed, args.data_root, args.min_agreement, args.allow_remote_code,
                   args.key, _pairs(args.endpoint, "--endpoint"), _pairs(args.key_env, "--key-env"), args.judge_sample)
        state = "verified" if r.verified else "NOT verified"
        print(f"{args.card}: {state}: {r.n} records re-run (seed {r.seed}), verdicts agree on "
              f"{100 * r.verdict_agreement:.1f}%, outputs identical on {100 * r.output_agreement:.1f}%, "
              f"{r.failed} failed, {r.reference_mismatches} with other gold labels, groups or matching, "
              f"{r.judgement_mismatches} judged otherwise on the same outputs"
              + (f", the shipped judge record {'agrees' if r.judge_records_agree else 'DIFFERS'} on "
                 f"{sum(v.n for v in r.judge_records.values() if not isinstance(v, str))} re-asked rows"
                 if r.judge_records is not None else "")
              + ("; signed into the card" if args.key else "; not written (no --key)"))
        return 0 if r.verified else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv.pop(0) if argv and argv[0] in COMMANDS else "package"
    args = _parser(command).parse_args(argv)
    try:
        return _command(command, args)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
