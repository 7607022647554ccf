"""The human-labelled sets judges are measured on, as conf/judge_validation.yaml declares them (read once per
process): below the kinds, which name a set's language on a card, and validity.py, which measures judges on them."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def validation_sets() -> tuple:
    from omegaconf import OmegaConf

    from .paths import CONF_DIR
    from .schema import ValidationConfig

    config = OmegaConf.merge(OmegaConf.structured(ValidationConfig), OmegaConf.load(CONF_DIR / "judge_validation.yaml"))
    return tuple(OmegaConf.to_object(config).sets)


def measured_in(languages: list[str]) -> dict:
    """For each language of a task's records, the labelled sets in that language its classifier judges are measured
    on, or that none is."""
    return {lang: [vs.name for vs in validation_sets() if vs.language == lang] or "not measured: no labelled set in "
            "this language" for lang in languages}
