"""Jinja templates from task files, rendered in a sandbox so a task file can never run code."""

import json
import re
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


_BARE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@lru_cache(maxsize=256)
def _bare_name(source: str) -> str | None:
    """The variable a template is made of alone (`{{ response }}`), which renders as str() of its value."""
    found = _BARE.fullmatch(source)
    return found[1] if found else None


def render(source: str, variables: dict, where: str) -> str:
    """Render `source` with `variables`; `where` names the template in error messages (e.g. task.messages[0])."""
    name = _bare_name(source)
    if name is not None and isinstance(variables.get(name), str):  # Jinja's own answer, without its context
        return variables[name]
    try:
        return _compile(source).render(**variables)
    except TemplateError as e:
        raise BenchmarkError(f"{where}: template error: {e}") from None
