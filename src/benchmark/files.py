"""Writing the suite's JSON files: whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json(path: Path, data) -> None:
    """Write beside the target, flush it to disk, and rename over it, so a crash never leaves half a file that the
    next run cannot read (the temporary name holds the process id: two processes never share one)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make a rename durable: the folder's entry, not only the file's bytes (a no-op where folders cannot be
    opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def inside(folder: Path, name, what: str) -> Path:
    """`name` (a file a card names) within `folder`, resolved: a path that leads outside it (absolute, with .., or
    through a symlink that points out) is refused, so a card never makes its reader open another file."""
    from . import BenchmarkError

    if not isinstance(name, str) or not name:
        raise BenchmarkError(f"{what}: {name!r} is not a file name inside {folder}")
    base = Path(folder).resolve()
    target = (base / name).resolve()
    if target == base or not target.is_relative_to(base):
        raise BenchmarkError(f"{what}: {name!r} leads outside {folder}; only files inside it are read")
    return target
