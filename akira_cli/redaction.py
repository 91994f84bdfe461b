"""Secrets never leave (docs/guarantees.md, "Secrets"): every value that config or the environment
marks as secret, and every token of a known shape (`secret_shapes`), is replaced by `***` in
everything akira writes, agent output, model replies, prompts and forge replies included.

The set of secrets is process-wide: one akira process works one task, and every writer (the
state store, the event log, reflections, reports, prompt files) goes through `redact_bytes`.
Values shorter than `MIN_SECRET` are not redacted: masking "x" would garble every word with an x.
Other parts feed it the values only they know (`register`): the LLM key, the fleet database's
password, the work tree's ignored `.env*` files, the forge's stored token.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping

from akira_cli.secret_shapes import MASK, mask_data, mask_text

MIN_SECRET = 8
SECRET_NAME_RE = re.compile(r".*_(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS)")
"""`*_KEY` (`*_API_KEY`, `AWS_SECRET_ACCESS_KEY`), `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*_CREDENTIALS`."""

_secrets: tuple[str, ...] = ()
_encoded: tuple[tuple[bytes, bytes], ...] = ()


def secret_values(environ: Mapping[str, str], extra: Iterable[str | None] = ()) -> list[str]:
    """The values that count as secret: those of secret-like names (`SECRET_NAME_RE`), the
    password of any variable that holds a URL with one (`DATABASE_URL`), and `extra`."""
    found = [value for name, value in environ.items() if SECRET_NAME_RE.fullmatch(name.upper())]
    found += url_passwords(environ)
    return [value for value in [*found, *extra] if value and value.strip()]


def register(values: Iterable[str]) -> list[str]:
    """Adds secrets to mask; returns the ones too short to mask (for a warning at start)."""
    global _secrets, _encoded
    short = [value for value in values if len(value) < MIN_SECRET]
    known = set(_secrets) | {value for value in values if len(value) >= MIN_SECRET}
    _secrets = tuple(sorted(known, key=len, reverse=True))  # longest first: no partial masks
    forms: dict[bytes, bytes] = {}
    for value in _secrets:
        forms[value.encode()] = MASK.encode()
        escaped = json.dumps(value)[1:-1]  # as it appears inside a JSON string
        forms[escaped.encode()] = MASK.encode()
    _encoded = tuple(forms.items())
    return short


def too_short(environ: Mapping[str, str], config_key: str | None) -> list[str]:
    """Names of secrets too short to mask, for the warning at start."""
    names = [
        name
        for name, value in environ.items()
        if SECRET_NAME_RE.fullmatch(name.upper()) and value.strip() and len(value) < MIN_SECRET
    ]
    if config_key and len(config_key) < MIN_SECRET:
        names.append("llm.api_key")
    return names


def register_environment(extra: Iterable[str | None] = ()) -> list[str]:
    return register(secret_values(os.environ, extra))


def clear() -> None:
    global _secrets, _encoded
    _secrets, _encoded = (), ()


def known() -> tuple[str, ...]:
    """The secrets known by value, longest first."""
    return _secrets


def redact(text: str) -> str:
    for value in _secrets:
        if value in text:
            text = text.replace(value, MASK)
    return mask_text(text)


def redact_bytes(data: bytes) -> bytes:
    for value, mask in _encoded:
        if value in data:
            data = data.replace(value, mask)
    return mask_data(data)


_URL_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*):(?P<password>[^@/]*)@")


def url_without_password(url: str) -> str:
    """A database URL as it may be shown: `postgresql://user:***@host/db`."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", url)


def url_password(url: str) -> str | None:
    """The password in a database URL, to register as a secret (masked in all akira writes)."""
    found = _URL_PASSWORD.match(url)
    return found["password"] if found and found["password"] else None


def url_passwords(environ: Mapping[str, str]) -> list[str]:
    """The passwords of the variables that hold a URL with one, as written and decoded
    (`p%40ss` is printed as `p@ss` by the program that reads it)."""
    from urllib.parse import unquote

    found = [password for value in environ.values() if "://" in value and (password := url_password(value))]
    return [*found, *(unquote(password) for password in found if unquote(password) != password)]
