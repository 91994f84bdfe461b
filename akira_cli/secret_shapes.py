"""Secrets known by their shape (docs/guarantees.md, "Secrets"): tokens masked even when akira
never saw the variable that held them, in everything it writes and in what a step commits.

The patterns follow gitleaks' rules of the same names (github-pat, github-oauth,
github-app-token, github-refresh-token, github-fine-grained-pat, gitlab-pat and its siblings,
aws-access-token, slack-*-token, openai-api-key, anthropic-api-key, gcp-api-key, private-key),
loosened where gitleaks pins a length that the provider does not promise, plus two of akira's
own: a password inside a URL, and a value assigned to a secret-like variable name
(`AWS_SECRET_ACCESS_KEY=...`, what `env` prints). Each shape keeps a harmless head (`ghp_`,
`://user:`) and masks the rest, so that a log still says what kind of secret was there.

Each shape has literal needles: a text holding none of them is not scanned by its pattern (a
state file is masked at every save; a substring test costs far less than a regex scan).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import AnyStr

MASK = "***"


class Shape:
    """One kind of secret: its pattern (group `keep` stays, group `secret` is masked) as text
    and as bytes, and the literal needles without which it is not looked for."""

    __slots__ = (
        "_data",
        "_text",
        "after_name",
        "anywhere",
        "bneedles",
        "kind",
        "needles",
        "scanned",
        "source",
    )

    def __init__(
        self,
        kind: str,
        source: str,
        needles: tuple[str, ...],
        *,
        anywhere: bool = False,
        after_name: bool = False,
        scanned: bool = True,
    ) -> None:
        self.kind = kind
        """What a person reads: `a GitHub token`."""
        self.anywhere = anywhere
        """Masked wherever it starts (its head is not a word: `://`, `-----BEGIN`)."""
        self.after_name = after_name
        """Its head ends a variable's name (`..._KEY=`): may follow `_`, never a letter."""
        self.scanned = scanned
        """Looked for in a step's commit too (`shapes_in`); a shape that also hits ordinary code is
        masked in what akira writes but never refuses a commit."""
        self.source = source
        self._text: re.Pattern[str] | None = None
        self._data: re.Pattern[bytes] | None = None
        self.needles = needles
        self.bneedles = tuple(needle.encode() for needle in needles)

    @property
    def text(self) -> re.Pattern[str]:
        """The pattern, compiled at its first use: most runs' text holds no needle of most
        shapes, and `akira loop status` masks nothing, so none is compiled at start."""
        if self._text is None:
            self._text = re.compile(self.source)
        return self._text

    @property
    def data(self) -> re.Pattern[bytes]:
        if self._data is None:
            self._data = re.compile(self.source.encode())
        return self._data

    def free(self, text: str | bytes, at: int) -> bool:
        return self.anywhere or starts_free(text, at, self.after_name)

    def masked(self, found: re.Match[AnyStr]) -> AnyStr:
        """The match with its secret part masked; left as it is inside a word."""
        whole = found.group(0)
        if not self.free(found.string, found.start()):
            return whole
        start, end = found.start("secret") - found.start(), found.end("secret") - found.start()
        mask = MASK if isinstance(whole, str) else MASK.encode()
        return whole[:start] + mask + whole[end:]


SHAPES = (
    Shape(
        "a GitHub token",
        r"(?P<keep>gh[pousr]_)(?P<secret>[A-Za-z0-9]{30,255})\b",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    Shape("a GitHub token", r"(?P<keep>github_pat_)(?P<secret>[A-Za-z0-9_]{22,255})", ("github_pat_",)),
    Shape(
        "a GitLab token",
        r"(?P<keep>gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat|agent)-)(?P<secret>[A-Za-z0-9_-]{20,255})",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glimt-", "gloas-", "glsoat-", "glagent-"),
    ),
    Shape(
        "an AWS access key id",
        r"(?P<keep>A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?P<secret>[A-Z2-7]{16})\b",
        ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    Shape("a Slack token", r"(?P<keep>xox[abeoprs]-)(?P<secret>[0-9A-Za-z][0-9A-Za-z-]{9,})", ("xox",)),
    Shape("a Slack token", r"(?P<keep>xapp-)(?P<secret>\d-[0-9A-Za-z-]{10,})", ("xapp-",)),
    Shape(
        "an OpenAI or Anthropic key",
        r"(?P<keep>sk-(?:ant-|proj-|svcacct-|admin-)?)(?P<secret>(?=[A-Za-z_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{19,})",
        ("sk-",),
    ),
    Shape("a Google API key", r"(?P<keep>AIza)(?P<secret>[0-9A-Za-z_-]{35})", ("AIza",)),
    Shape(
        "a private key",
        r"(?P<keep>-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"
        r"(?P<secret>[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
        ("PRIVATE KEY",),
        anywhere=True,
    ),
    Shape(
        "a password in a URL",
        r"(?P<keep>://[^\s/:@'\"`<>]{0,200}:)(?P<secret>[^\s@/'\"`<>]{1,200})@",
        ("://",),
        anywhere=True,
    ),
    Shape(
        "a secret assigned to a variable",
        r"(?P<keep>(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS)\b['\"]?\s{0,3}(?:=|:\s)\s{0,3}['\"]?)"
        r"(?P<secret>(?=[^\s'\"`]*\d)[A-Za-z0-9_+/=.~-]{8,})(?![^\s'\"`,;\\])",
        ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS"),
        after_name=True,
        scanned=False,
    ),
)


def starts_free(text: str | bytes, at: int, after_name: bool) -> bool:
    """Whether a match at `at` begins a token rather than sitting inside a word: the character
    before is not a letter or digit (nor `_`, but for a variable name's last part), or it is the
    `n`, `r` or `t` of a JSON string's escape (a state file holds output with its line breaks
    escaped). Checked here rather than by a lookbehind, which would keep the regex engine from
    jumping to each pattern's literal head."""
    if at == 0:
        return True
    before = text[at - 1 : at]
    if not before.isalnum() and (after_name or before not in ("_", b"_")):
        return True
    return at >= 2 and text[at - 2 : at - 1] in ("\\", b"\\") and before in ("n", "r", "t", b"n", b"r", b"t")


@functools.cache
def any_needle() -> re.Pattern[str]:
    """Every shape's needles in one search: the text akira writes most often (a state save, an
    event) holds none, and is then passed over in one scan instead of one per needle. Compiled
    at the first mask, not at start."""
    return re.compile("|".join(re.escape(needle) for shape in SHAPES for needle in shape.needles))


@functools.cache
def any_bneedle() -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(needle) for shape in SHAPES for needle in shape.bneedles))


def mask_text(text: str) -> str:
    if any_needle().search(text) is None:
        return text
    for shape in SHAPES:
        if any(needle in text for needle in shape.needles):
            text = shape.text.sub(shape.masked, text)
    return text


def mask_data(data: bytes) -> bytes:
    if any_bneedle().search(data) is None:
        return data
    for shape in SHAPES:
        if any(needle in data for needle in shape.bneedles):
            data = shape.data.sub(shape.masked, data)
    return data


@dataclass(frozen=True)
class Found:
    kind: str
    masked: str
    """What may be shown of it: its harmless head and `***`."""


def shapes_in(text: str) -> list[Found]:
    """The secrets of known shape in `text` that a commit may not add, in the order they appear."""
    found: list[tuple[int, Found]] = []
    for shape in SHAPES:
        if shape.scanned and any(needle in text for needle in shape.needles):
            found += [
                (m.start(), Found(shape.kind, m["keep"][-40:] + MASK))
                for m in shape.text.finditer(text)
                if shape.free(text, m.start())
            ]
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]
