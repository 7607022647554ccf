"""Verified cards: a maintainer's `python -m benchmark.submit verify --key` signs the result of re-running a sample
of a card's records (Ed25519) into the card; validation accepts that block only when a key listed in
submissions/verifier_keys.json signed it over the card as it is."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import BenchmarkError
from ..identity import card_sha256, sha256_json
from ..run.card_record import Verification, VerificationResult
from .base import VERIFIER_KEYS, Problem


def verifier_keys() -> dict[str, str]:
    """The public keys whose signatures mark a card verified, by key id (submissions/verifier_keys.json, or the file
    $BENCHMARK_VERIFIER_KEYS names). Changing this file is a maintainer's decision, reviewed like code."""
    path = Path(os.environ.get("BENCHMARK_VERIFIER_KEYS") or VERIFIER_KEYS)
    try:
        keys = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as e:
        raise BenchmarkError(f"{path}: unreadable: {e}") from None
    return keys if isinstance(keys, dict) else {}


def key_id(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:16]


def _signed_bytes(card: dict, verification: dict) -> bytes:
    unsigned = {k: v for k, v in verification.items() if k != "signature"}
    return sha256_json({"card_sha256": card_sha256(card), "verification": unsigned}).encode("ascii")


def sign(card: dict, verification: dict, private_key_path: Path) -> dict:
    """The verification block (a VerificationResult's JSON) signed with a verifier's Ed25519 private key (PEM)."""
    import base64

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(Path(private_key_path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as e:
        raise BenchmarkError(f"{private_key_path}: not a readable Ed25519 private key: {e}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise BenchmarkError(f"{private_key_path}: not an Ed25519 private key")
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    signed = {**verification, "key_id": key_id(public)}
    signed["signature"] = base64.b64encode(key.sign(_signed_bytes(card, signed))).decode("ascii")
    return signed


def verification_problems(card: dict, v: Verification, where: str) -> list[Problem]:
    """Whether the card's verification block `v` was signed by a listed key over `card` and this block, and says
    what its figures give (the signature is over the values as the card's JSON holds them: `card`, not `v`)."""
    import base64

    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if v.card_sha256 != card_sha256(card):
        return [Problem(where, "verification", "does not belong to this card (it changed after it was verified); "
                                               "only `python -m benchmark.submit verify` writes it")]
    public = verifier_keys().get(v.key_id)
    if public is None:
        return [Problem(where, "verification.key_id", f"{v.key_id!r} is not a verifier key listed in "
                                                      "submissions/verifier_keys.json; only a maintainer's "
                                                      "`python -m benchmark.submit verify --key ...` marks a card")]
    try:
        Ed25519PublicKey.from_public_bytes(base64.b64decode(public)).verify(
            base64.b64decode(v.signature), _signed_bytes(card, card["verification"]))
    except (InvalidSignature, ValueError):
        return [Problem(where, "verification.signature", "does not match the card and its verification")]
    if v.verified != verified_from(v):
        return [Problem(where, "verification.verified", f"{v.verified} does not follow from its n, failed and "
                                                        "agreement")]
    return []


def verified_from(v: VerificationResult) -> bool:
    """Whether a verification's figures make the card verified: records re-run, none failed, every gold label and
    group the same, every judgement of an output both runs gave the same, the judges' flags on their labelled set the
    same, the shipped record of their validity the verifier's judges' own on the rows it re-asked, and enough verdicts
    the same (a figure it does not hold: none counted)."""
    return (v.n >= 1 and not v.failed and not v.reference_mismatches and not v.judgement_mismatches
            and v.judge_records_agree is not False and v.judging_validation_agrees is not False
            and v.verdict_agreement >= v.min_agreement)


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
    return json.dumps({key_id(public): base64.b64encode(public).decode("ascii")})
