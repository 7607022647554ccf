"""One canonical hash for configs and requests: sha256 of sorted-key JSON."""

import hashlib
import json


def sha256_json(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
