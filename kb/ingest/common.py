"""What the Markdown, plain-text and HTML block readers share."""

from __future__ import annotations

import re

IGNORE_START = re.compile(r"<!--\s*kbaudit:\s*ignore\s*-->")
IGNORE_END = re.compile(r"<!--\s*kbaudit:\s*end\s*-->")
_LAST_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def one_line(s: object, limit: int = 160) -> str:
    text = " ".join(str(s).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def last_sentence(text: str) -> str:
    parts = _LAST_SENTENCE.split(text)
    return parts[-1].strip() if parts else text
