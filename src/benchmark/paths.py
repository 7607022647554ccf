"""Where the suite's config folders, shipped judges, bundled data and leaderboard app are: inside the installed package
(`pip install .` ships conf/, tasks/, judges/, bundled/ and leaderboard/ as benchmark/conf, benchmark/tasks, …), or
beside src/ in a source checkout (an editable install)."""

import os
import re
from pathlib import Path

from . import BenchmarkError

PACKAGE_DIR = Path(__file__).resolve().parent
if (PACKAGE_DIR / "conf" / "config.yaml").is_file():  # installed: the configs travel with the code
    CONF_DIR, TASKS_DIR, CHECKOUT = PACKAGE_DIR / "conf", PACKAGE_DIR / "tasks", None
    JUDGES_DIR, BUNDLED_DIR = PACKAGE_DIR / "judges", PACKAGE_DIR / "bundled"
    LEADERBOARD_APP = PACKAGE_DIR / "leaderboard" / "app.py"
else:  # a source checkout: src/benchmark beside conf/, tasks/ and leaderboard/
    CHECKOUT = PACKAGE_DIR.parents[1]
    CONF_DIR, TASKS_DIR, JUDGES_DIR = CHECKOUT / "conf", CHECKOUT / "tasks", CHECKOUT / "judges"
    BUNDLED_DIR = CHECKOUT / "bundled"
    LEADERBOARD_APP = CHECKOUT / "leaderboard" / "app.py"
# the repository a run's paths are made relative to and its git commit read from; installed: where it runs
REPO_ROOT = CHECKOUT or Path.cwd()
SCHEMA_FILE = PACKAGE_DIR / "scorecard.schema.json"


SHIPPED = "judges/"  # a model config's `pretrained: judges/NAME` is the judge that ships with the suite


def shipped_name(name: str) -> bool:
    """A shipped judge's folder name: one plain component, so `judges/NAME` never leads elsewhere."""
    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) is not None and ".." not in name


def judge_folder(pretrained: str) -> Path:
    """A trained judge's folder: `judges/NAME` is the suite's shipped judge wherever the suite runs from (a checkout
    or an installed package); any other path is the user's own, relative to where the command runs."""
    if pretrained.startswith(SHIPPED):
        name = pretrained[len(SHIPPED):]
        if not shipped_name(name):
            raise BenchmarkError(f"{pretrained!r}: judges/NAME names a shipped judge (one folder name)")
        return JUDGES_DIR / name
    return Path(pretrained).expanduser()


def cache_root() -> Path:
    """The suite's own cache folder (weights made loadable, file hashes, data rows, the board's check results):
    $BENCHMARK_CACHE, or ~/.cache/benchmark."""
    return Path(os.environ.get("BENCHMARK_CACHE") or Path.home() / ".cache" / "benchmark").expanduser()


def other_checkout(folder: Path) -> Path | None:
    """A source checkout of the suite that holds `folder` but is not the one this suite runs from: its configs and
    tasks are not the ones a run reads."""
    for candidate in (folder, *folder.parents):
        if (candidate / "conf" / "config.yaml").is_file() and (candidate / "src" / "benchmark").is_dir():
            return None if CHECKOUT is not None and candidate.resolve() == CHECKOUT.resolve() else candidate
    return None
