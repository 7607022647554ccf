"""Verifying a card (`python -m benchmark.submit verify`): a random sample of its records re-run with its configs, on
the verifier's own endpoints and keys, compared with the submitted samples; signed with a verifier's key."""

from __future__ import annotations

import random
import secrets
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__, BenchmarkError
from ..composition import compose
from ..config import JudgeConfig
from ..files import write_json
from ..identity import card_sha256
from ..judging.engine import NEAR_BOUNDARY
from ..judging.recheck import recheck
from ..kinds import make_kind
from ..models.base import Reach
from ..models.registry import backend_class
from ..run import folder as run_folder
from ..run.card_record import JudgingValidation, ScoreCard, Verification, VerificationResult
from ..run.runner import POOL, plan, run
from .configs import model_config_node
from .loading import load_folder
from .samples import read_samples, strip_sample, task_strings
from .signing import sign, verified_from


def judge_role(voter: str) -> str:
    """A judge's role on the command line (--endpoint judge:VOTER=URL): keyed by what it is, so no voter a card
    names can stand in for the model or the attacker."""
    return f"judge:{voter}"


def roles(card: ScoreCard) -> dict[str, dict]:
    """Every model config on a card by its role: model, attacker, judge:VOTER for each judge."""
    out = {"model": card.model.config}
    out.update({judge_role(j.voter): j.config for j in card.judges or []})
    if card.attacker is not None:
        out["attacker"] = card.attacker.config
    return out


def _maintainers_endpoints(card: ScoreCard, endpoints: dict[str, str], key_envs: dict[str, str]) -> dict[str, dict]:
    """The card's configs with every endpoint and key the verifier's own: each backend declares where its requests
    go (Backend.reach); one that calls out gets the verifier's --endpoint and --key-env in place of the card's
    base_url and api_key_env, and one that would call out where it decides is not run. So no submission chooses
    where a maintainer's credentials go."""
    configs = roles(card)
    unknown = sorted((set(endpoints) | set(key_envs)) - set(configs))
    if unknown:
        raise BenchmarkError(f"--endpoint/--key-env for {unknown}: this card's roles are {sorted(configs)}")
    out = {}
    for role, config in configs.items():
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
    loaded = load_folder(card_path.parent, True, allow_remote_code, only=card_path, data_root=data_root)
    if loaded.rejected:
        raise BenchmarkError("the card does not validate; fix it before verifying:\n  " +
                             "\n  ".join(map(str, loaded.rejected)))
    card, record = loaded.cards[0].card, loaded.cards[0].record
    if n < 1:
        raise BenchmarkError(f"--n {n}: re-run at least one record")
    configs = _maintainers_endpoints(record, endpoints or {}, key_envs or {})
    # drawn now unless given: a submitter cannot know in advance which records will be checked
    seed = secrets.randbelow(2**31) if seed is None else seed
    submitted = {s["id"]: s for s in read_samples(card_path.parent / record.samples.file)}
    ids = random.Random(seed).sample(sorted(submitted), min(n, len(submitted)))

    with tempfile.TemporaryDirectory(prefix="verify-") as tmp:
        cfg = rerun_config(record, configs, ids, Path(tmp), data_root, allow_remote_code)
        rerun_card, rerun_path = run(cfg)
        rerun_plan = plan(cfg)
        records = recheck(rerun_plan, lambda c: POOL.get(POOL.key(c, allow_remote_code, data_root), c,
                                                          allow_remote_code, data_root), Path(tmp) / "recheck.sqlite", judge_sample, seed)
        kind = make_kind(cfg.task, cfg.model)
        # compared as submitted: the data set's texts hashed
        own = task_strings(record.task.config)
        rerun = {i: strip_sample(s, own) for i, s in run_folder.read_samples(rerun_path.parent / "samples.jsonl").items()}

    result = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "by": f"benchmark {__version__} (python -m benchmark.submit verify)", "seed": seed,
              **_compared(kind, ids, submitted, rerun, record, ScoreCard.model_validate(rerun_card)),
              "min_agreement": min_agreement,
              **({**records, "judge_sample": judge_sample} if records else {})}
    card = {k: v for k, v in card.items() if k != "verification"}
    found = VerificationResult.model_validate({"verified": False, **result, "card_sha256": card_sha256(card)})
    found = found.model_copy(update={"verified": verified_from(found)})
    if key is None:
        return found
    signed = sign(card, found.model_dump(exclude_unset=True), key)
    write_json(card_path, {**card, "verification": signed})
    return Verification.model_validate(signed)


def rerun_config(card: ScoreCard, configs: dict, ids: list[str], tmp: Path, data_root: str | None,
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
        cfg.model = model_config_node(configs["model"], writable=True)
        if card.judges:
            voters: dict[str, list[str]] = {}
            for j in card.judges:
                voters.setdefault(j.step, []).append(j.voter)
            cfg.judge = OmegaConf.merge(OmegaConf.structured(JudgeConfig), {
                "name": "as submitted", "voters": voters,
                "models": {j.voter: OmegaConf.to_container(model_config_node(configs[judge_role(j.voter)]))
                           for j in card.judges}})
        if card.attacker is not None:
            cfg.attacker = model_config_node(configs["attacker"], writable=True)
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
