"""Writing the suite's JSON files, whole or not at all, and the names a folder may have on every file system."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from . import BenchmarkError


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
    if not isinstance(name, str) or not name:
        raise BenchmarkError(f"{what}: {name!r} is not a file name inside {folder}")
    base = Path(folder).resolve()
    target = (base / name).resolve()
    if target == base or not target.is_relative_to(base):
        raise BenchmarkError(f"{what}: {name!r} leads outside {folder}; only files inside it are read")
    return target


MAX_NAME = 100  # characters of a model's name, which is its folder's (base.FOLDER, base.NAME)
FORBIDDEN = '<>:"/\\|?*'  # in a file name on Windows (and / everywhere)
RESERVED = frozenset({"con", "prn", "aux", "nul", "conin$", "conout$", "clock$",
                      *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))})


def unportable(name) -> str | None:
    """Why `name` cannot name a folder on every common file system (Windows' rules are the strictest), or None."""
    if not isinstance(name, str) or not name:
        return "an empty name cannot name a folder"
    if len(name) > MAX_NAME:
        return f"{len(name)} characters: a model's name, which names its folder, has at most {MAX_NAME}"
    control = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if control is not None:
        return f"holds the control character {control!r}: a folder's name holds printable characters only"
    forbidden = next((c for c in name if c in FORBIDDEN), None)
    if forbidden is not None:
        return f"holds {forbidden!r}: no folder's name on Windows holds any of < > : \" / \\ | ? *"
    if name[-1] in ". ":
        return (f"ends with a {'dot' if name[-1] == '.' else 'space'}: Windows drops a dot or a space at the end of a "
                "name, so the folder would be called otherwise there")
    if name[0] == " ":
        return "starts with a space: a folder's name does not, or it reads as another on a command line or a page"
    device = name.split(".", 1)[0].rstrip(" ").casefold()
    if device in RESERVED:
        return (f"{device.upper()} is a device name Windows reserves (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, "
                "CONOUT$, CLOCK$), in any case and with any extension: no folder can have that name there")
    return None
