"""Which language a text is in: langid.py's model, choosing among the languages a judge or the suite reads."""

from __future__ import annotations

import functools
from pathlib import Path

# every language a task of the suite is in (MultiJail's ten hold the others'), as ISO 639-1 codes
SUITE_LANGUAGES = ("en", "zh", "ko", "it", "vi", "ar", "th", "bn", "sw", "jv")


@functools.lru_cache(maxsize=8)
def _identifier(languages: tuple[str, ...]):
    import py3langid.langid as langid

    identifier = langid.LanguageIdentifier.from_modelpath(Path(langid.__file__).parent / langid.MODEL_FILE)
    identifier.set_languages(list(languages))
    return identifier


def language_of(text: str, languages: tuple[str, ...] = SUITE_LANGUAGES) -> str:
    """The likeliest of `languages` for a text. Chosen among a known few: left to langid.py's 97 it calls "How do I
    kill a Python process?" Nigerian Pidgin; among the suite's ten it named every MultiJail prompt's language, every
    XSTest, PyRIT and GPTFuzz reply English but GPTFuzz's 46 in Chinese, and every XSTest and PyRIT request English.
    (A rule on common English words, before it, missed short requests: "Share a fun fact about human anatomy.")"""
    return _identifier(languages).classify(text)[0]
