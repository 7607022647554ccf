"""Writing the suite's JSON files: whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data) -> None:
    """Write beside the target and rename over it, so a crash never leaves half a file that the next run cannot
    read (the temporary name holds the process id: two processes never share one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
