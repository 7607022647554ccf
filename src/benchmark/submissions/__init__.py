"""Published score cards: `submissions/<model>/` holds `model.yaml` and, per task, `<task>.json` (the score card) and
`<task>.samples.jsonl.gz` (its per-sample log without the data sets' own texts).

A submission is untrusted input, treated as data: no file is imported or instantiated, no file that is not a regular
file (a symlink, a device) is read, every read is bounded, every problem names the file and the field, and one bad
folder never affects another. The modules, by concern:

    base      the folder's layout, the limits, problems, the task registry
    configs   submitted model configs are data (configs.read_yaml, check_model_config)
    privacy   what never travels in a submission (scrub, scrub_card, private_values)
    samples   the per-sample log, written and read back (strip_sample, write_samples, read_samples)
    signing   verified cards (sign, verification_problems, keygen)
    rules     every rule a card follows, derived values recomputed (check_card)
    checked   results of earlier checks, kept by the content checked (CheckStore: the board's)

    card      a published card as read (Card, Loaded, read_card)
    loading   loading folders: `load` is what the leaderboard and `python -m benchmark.submit validate` call

    package   a finished run packaged into a folder (package), and submissions validated (validate)
    verify    a card's records re-run on the verifier's endpoints, compared, signed (verify)
    recall    a card's answers into this machine's response cache (recall)
    export    a run as an Inspect AI log or lm-eval's results, a folder pushed to a dataset repository

This module is their face: the names the leaderboard uses (it imports none of the last four, which run models or
import their tools).
"""

from .base import (CARD_SUFFIX, MODEL_FILE, SAMPLES_SUFFIX, SUBMISSIONS_DIR, TASKS_DIR, Problem, TaskEntry,
                   task_registry)
from .card import Card, Loaded, read_card
from .loading import RootState, load, load_folder, load_model_folder, load_runs
from .samples import read_samples

__all__ = ["CARD_SUFFIX", "MODEL_FILE", "SAMPLES_SUFFIX", "SUBMISSIONS_DIR", "TASKS_DIR", "Card", "Loaded", "Problem",
           "RootState", "TaskEntry", "load", "load_folder", "load_model_folder", "load_runs", "read_card",
           "read_samples", "task_registry"]
