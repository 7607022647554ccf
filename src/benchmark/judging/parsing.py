"""Reading a model's free-text answer: the label it names (LabelParser), or the JSON object it holds (extract_json).
The classify kind parses its model's answers with them, and a question step its judge's."""

from __future__ import annotations

import json
import re

from .. import BenchmarkError

INVALID = "invalid"
_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:final\s+)?(?:answer|label|category|class|prediction)\s*(?:is)?\s*[:\-=]?\s*", re.I)
_STRIP = " \t\r\n.,;:!?\"'`*_()[]{}<>"
_NEGATION = re.compile(r"(?<![\w-])(?:not|never|no|isn't|wasn't|aren't)\s+(?:(?:a|an|the)\s+)?(?=\w)", re.I)
_DENIAL = re.compile(r"\s*[:=-]\s*(?:no|false)(?![\w-])", re.I)
_NUMBER = re.compile(r"^\s*\(?(\d{1,2})\)?(?:[.)]|번)?\s*$")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip(_STRIP).lower())


class LabelParser:
    """Maps a free-text answer to a label name, or `invalid`.

    1. The whole answer (after a leading "Answer:"/"Label:" and surrounding punctuation) is a label, alias or
       abbreviation, or, with numbered options, a label's position (1..K).
    2. Otherwise every mention of a label in the answer is found (longest mention wins where two overlap, so
       "not safe" is not read as "safe"); one distinct fine label mentioned is the answer; several are ambiguous,
       hence invalid, and so is a label beside a coarse-only answer that contradicts it ("Safe/Unsafe"); with no
       fine label, one distinct coarse-only answer (e.g. "Unsafe") is the answer.
    Mentions are whole words unless `whole_words` is false (Korean attaches particles: "일상대화입니다").
    """

    def __init__(self, labels, numbered: bool = False, whole_words: bool = True):
        self.fine = {lab.name for lab in labels if lab.fine}
        self.coarse = {lab.name: lab.coarse for lab in labels}
        self.numbered = [lab.name for lab in labels if lab.fine] if numbered else []
        self.exact: dict[str, str] = {}
        self.exact_cased: dict[str, str] = {}
        patterns = []
        for lab in labels:
            if {lab.name, *lab.aliases} & {"True", "False"}:  # YAML reads a bare yes/no/on/off as a boolean
                raise BenchmarkError(f"label {lab.name!r}: a name or alias reads as a YAML boolean; quote yes/no/on/off")
            for form in [lab.name, *lab.aliases]:
                self.exact[_norm(form)] = lab.name
                # Latin-script forms are whole words even in Chinese or Korean answers ("no" is not "unknown")
                bounded = whole_words or form.isascii()
                before, after = (r"(?<![\w-])", r"(?![\w-])") if bounded else ("", "")
                words = (r"\s+" if bounded else r"\s*").join(re.escape(w) for w in form.split())
                patterns.append((re.compile(f"{before}{words}{after}", re.I), lab.name))
            if lab.abbreviation:
                self.exact_cased[lab.abbreviation] = lab.name
                patterns.append((re.compile(rf"(?<![\w-]){re.escape(lab.abbreviation)}(?![\w-])"), lab.name))
        self.patterns = patterns

    def __call__(self, text) -> str:
        if isinstance(text, bool) or text is None:
            return INVALID
        if isinstance(text, (int, float)):
            text = str(int(text)) if float(text).is_integer() else str(text)
        if not isinstance(text, str) or not text.strip():
            return INVALID
        head = _PREFIX.sub("", text.strip(), count=1)
        if head.strip(_STRIP) in self.exact_cased:
            return self.exact_cased[head.strip(_STRIP)]
        if _norm(head) in self.exact:
            return self.exact[_norm(head)]
        number = _NUMBER.match(head)
        if self.numbered and number:
            k = int(number.group(1))
            return self.numbered[k - 1] if 1 <= k <= len(self.numbered) else INVALID
        spans = []
        for pattern, name in self.patterns:
            spans += [(m.start(), m.end(), name) for m in pattern.finditer(text)]
        # a longer mention wins where two overlap ("not safe" over "safe"); a mention negated by the words before it
        # ("is not a safe response", "isn't Offending User") or after it ("Safe: no") is claimed but names nothing
        negated = {m.end(): m.start() for m in _NEGATION.finditer(text)}
        spans += [(negated[s[0]], s[1], None) for s in list(spans) if s[0] in negated]
        denied = {m.start(): m.end() for m in _DENIAL.finditer(text)}  # "Safe: no", "Offending User - false"
        spans += [(s[0], denied[s[1]], None) for s in list(spans) if s[2] is not None and s[1] in denied]
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        taken: list[tuple[int, int, str]] = []
        for s in spans:
            if all(s[1] <= t[0] or s[0] >= t[1] for t in taken):
                taken.append(s)
        found = {name for _, _, name in taken if name is not None}
        fine = found & self.fine
        if len(fine) == 1:
            label = fine.pop()
            # "Unsafe: Offending User" agrees with itself; "Safe/Unsafe" does not
            if all(self.coarse.get(other) == self.coarse.get(label) for other in found - {label}):
                return label
            return INVALID
        if not fine and len(found) == 1:
            return found.pop()
        return INVALID


def extract_json(text) -> dict | None:
    """The first JSON object in a model's answer, allowing code fences and prose around it."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return None
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None
