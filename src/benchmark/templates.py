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


_BARE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@lru_cache(maxsize=256)
def _compile(source: str):
    """The template, and the variable it is made of alone (`{{ response }}`: it renders as str() of its value)."""
    bare = _BARE.fullmatch(source)
    return _ENV.from_string(source), bare[1] if bare else None


def render(source: str, variables: dict, where: str) -> str:
    """Render `source` with `variables`; `where` names the template in error messages (e.g. task.messages[0])."""
    try:
        template, name = _compile(source)
        if name is not None and isinstance(variables.get(name), str):  # Jinja's own answer, without its context
            return variables[name]
        return template.render(**variables)
    except TemplateError as e:
        raise BenchmarkError(f"{where}: template error: {e}") from None
