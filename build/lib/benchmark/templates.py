"""Jinja templates from task files, rendered in a sandbox so a task file can never run code."""

import json
from functools import lru_cache

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from . import BenchmarkError

_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False)
# JSON that keeps non-ASCII text readable (Jinja's own tojson escapes it for HTML)
_ENV.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)


@lru_cache(maxsize=256)
def _compile(source: str):
    return _ENV.from_string(source)


def render(source: str, variables: dict, where: str) -> str:
    """Render `source` with `variables`; `where` names the template in error messages (e.g. task.messages[0])."""
    try:
        return _compile(source).render(**variables)
    except TemplateError as e:
        raise BenchmarkError(f"{where}: template error: {e}") from None
