"""What is private to the machine a run was made on never travels in a submission: absolute paths, private host
names, credentials and queries in URLs, the values of secret-named environment variables, keys and tokens."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..paths import REPO_ROOT

SECRET_KEY = re.compile(r"(^|[_-])(api[_-]?key|key|token|secret|password|passwd|credentials?|bearer|authori[sz]ation"
                        r"|cookie)$", re.I)
SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
                          r"|AKIA[0-9A-Z]{16}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})")
ABSOLUTE_PATH = re.compile(r"^(/|~|[A-Za-z]:[\\/])")
EMBEDDED_PATH = re.compile(r"(?:(?<=[\s=,;:'\"(\[])|^)(?:~|/(?:home|Users|root|tmp|mnt|media|data|work|scratch|srv|opt|var"
                           r"|private|run|gpfs|lustre|nfs))/[^\s,;'\")\]]*")

def _private_host(host: str) -> bool:
    if not host or host == "<host>":  # empty, or already replaced by scrub
        return False
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
        return ip.is_private or ip.is_loopback or ip.is_link_local
    except ValueError:
        pass
    return host == "localhost" or "." not in host or host.endswith((".local", ".lan", ".internal", ".corp", ".home"))


def _scrub_url(s: str) -> str:
    try:
        parts = urlsplit(s)
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return "<malformed URL removed>"
    netloc = parts.netloc.rsplit("@", 1)[-1]  # user:password@ never travels
    if parts.hostname and _private_host(parts.hostname):
        netloc = "<host>" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc, query="<removed>" if parts.query else ""))


def _local(path: str, roots: list[tuple[Path, str]]) -> str:
    p = Path(os.path.expanduser(path))
    for root, label in roots:
        try:
            return label + p.resolve().relative_to(root).as_posix()
        except (ValueError, OSError):
            continue
    return "<local>/" + p.name


# a URL's scheme starts where a run of scheme characters does: tried at every letter of "a.a.a...", the scheme would
# rescan the rest of the run each time (quadratic); from the run's start only, the pattern is linear in the text
URL = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.I)


def _scrub_string(s: str, roots: list[tuple[Path, str]], secrets: list[tuple[str, str]]) -> str:
    if s.lower().startswith("file://"):
        s = "file://" + _local(s[7:], roots)
    elif ABSOLUTE_PATH.match(s):
        return _local(s, roots)
    else:
        s = URL.sub(lambda m: _scrub_url(m.group(0)) if not m.group(0).lower().startswith("file:") else
                    "file://" + _local(m.group(0)[7:], roots), s)
        s = EMBEDDED_PATH.sub(lambda m: _local(m.group(0), roots), s)
    for name, value in secrets:
        s = s.replace(value, f"<env:{name}>")
    return SECRET_VALUE.sub("<removed>", s)


def _secret_environment() -> list[tuple[str, str]]:
    """Values of environment variables named like secrets, and this machine's name: never in a submission."""
    found = [(k, v) for k, v in os.environ.items() if len(v) >= 6 and SECRET_KEY.search(k.lower())]
    host = socket.gethostname()
    if len(host) >= 4:
        found.append(("HOSTNAME", host))
    return sorted(found, key=lambda kv: -len(kv[1]))


def scrub(obj: Any, data_root: str | None = None) -> Any:
    """A copy without what is private to the machine it ran on: absolute paths (made relative to the repository or
    data_root, else reduced to their last part), private host names, credentials and queries in URLs, the values of
    secret-named environment variables, keys and tokens."""
    roots = [(REPO_ROOT.resolve(), "")]
    if data_root:
        roots.insert(0, (Path(data_root).expanduser().resolve(), "data_root:"))
    secrets = _secret_environment()

    def go(value):
        if isinstance(value, dict):
            return {k: ("<removed>" if SECRET_KEY.search(str(k)) and k != "api_key_env" and v else go(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [go(v) for v in value]
        if isinstance(value, str):
            return _scrub_string(value, roots, secrets)
        return value

    return go(obj)


def scrub_card(card: dict, data_root: str | None = None) -> dict:
    """A run's card as it may travel: scrubbed (above), all but its task's definition, which is the suite's own task
    file (validation holds the card to it, so it carries nothing of the machine) and which scrubbing would only break:
    a data join's `key: id` reads as a secret's name."""
    out = scrub({k: v for k, v in card.items() if k != "verification"}, data_root)
    task = card.get("task")
    if isinstance(task, dict) and "config" in task:
        out["task"]["config"] = task["config"]
    return out


def private_values(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """Fields that still hold a local path, a private host, credentials or a token (a hand-made card, or one not
    packaged by `submit`)."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += private_values(v, f"{path}{k}.")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += private_values(v, f"{path.rstrip('.')}[{i}].")
    elif isinstance(obj, str):
        where = path.rstrip(".")
        urls = []
        for u in URL.findall(obj):
            try:
                urls.append(urlsplit(u))
            except ValueError:
                found.append((where, "a malformed URL"))
        if ABSOLUTE_PATH.match(obj) or EMBEDDED_PATH.search(obj) or obj.lower().startswith("file:///"):
            found.append((where, "an absolute local path"))
        elif any(_private_host(u.hostname or "") or "@" in u.netloc for u in urls):
            found.append((where, "a private host name or credentials in a URL"))
        elif SECRET_VALUE.search(obj):
            found.append((where, "what looks like an API key or token"))
    return found
