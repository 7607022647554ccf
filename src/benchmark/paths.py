"""Where the repository's config folders are, wherever the command runs from."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = REPO_ROOT / "conf"
TASKS_DIR = REPO_ROOT / "tasks"
SCHEMA_FILE = Path(__file__).resolve().parent / "scorecard.schema.json"
