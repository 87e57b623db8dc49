"""A claim as written (Markdown, reStructuredText or an HTML fragment) shown as plain text.

An edit's old and new text are spans of the page's source, so they carry its markup: backticks,
``<code>`` tags, links, emphasis, entities, even half a tag where the span starts inside one
(``subprocess</code>: Use the <code>keyring</code> ...``). Reviewers read the text, not the
markup: ``segments`` turns such a span into runs of plain text and of inline code, ``rich``
renders them as escaped HTML with ``<code>`` around the code, and ``text_diff`` is the word diff of
two spans' plain text, code kept as code. Nothing from the span reaches the HTML unescaped.
"""

from __future__ import annotations

import difflib
import html
import itertools
import re

__all__ = ["diff_runs", "plain", "rich", "segments", "text_diff"]

_CODE_TAGS = "code|tt|kbd|samp|var"
_TOKEN = re.compile(
    r"(?P<ticks>`+)(?P<tcode>[^`].*?)(?P=ticks)(?!`)"  # Markdown `code`, reST ``code``
    rf"|<(?P<open>{_CODE_TAGS})\b[^<>]{{0,500}}>(?P<hcode>.*?)</(?P=open)\s*>"  # <code>...</code>
    rf"|</(?P<close>{_CODE_TAGS})\s*>"  # a span that starts inside <code>
    rf"|<(?P<lone>{_CODE_TAGS})\b[^<>]{{0,500}}>"  # a span that ends inside <code>
    r"|!?\[(?P<label>[^\]\n]{0,500})\]\([^()\s]{0,2000}(?:\s+\"[^\"\n]{0,300}\")?\)"  # [label](url)
    r"|<!--.*?(?:-->|$)"
    r"|</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,500})?/?>"  # any other tag: dropped
    r"|^(?P<tagrest>[\w:-]+(?:=(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>\"']+))?(?:\s+[\w:-]+(?:=(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s<>\"']+))?){0,19}\s*/?>)"  # starts inside a tag: its rest
    r"|\*\*|__"
    r"|(?<![\w*\\])\*(?P<em>[^*\s](?:[^*\n]{0,300}[^*\s])?)\*(?![\w*])"
    r"|\\(?P<esc>[!-/:-@\[-`{-~])",
    re.S | re.I,
)
_WORD = re.compile(r"\s+|\w+|[^\w\s]")


def _add(out: list[tuple[str, bool]], text: str, code: bool) -> None:
    if not text:
        return
    if out and out[-1][1] == code:
        out[-1] = (out[-1][0] + text, code)
    else:
        out.append((text, code))


def segments(raw: str) -> list[tuple[str, bool]]:
    """``raw`` as runs of ``(text, is_code)``: markup dropped, entities decoded, code kept."""
    out: list[tuple[str, bool]] = []
    in_code = False  # after an unclosed <code>
    seen_code = False
    i = 0
    for m in _TOKEN.finditer(raw):
        if m.group("tagrest") is not None and "=" not in m.group("tagrest"):
            continue  # "a > b": text, not the end of a tag
        if m.start() > i:
            _add(out, html.unescape(raw[i : m.start()]), in_code)
        i = m.end()
        if m.group("tcode") is not None:
            code = m.group("tcode")
            _add(out, code.strip() if code.strip() else code, True)
            seen_code = True
        elif m.group("hcode") is not None:
            _add(out, html.unescape(re.sub(r"<[^<>]*>", "", m.group("hcode"))), True)
            seen_code = True
        elif m.group("close"):
            if not seen_code and not in_code:  # everything so far was inside the <code>
                out = [(text, True) for text, _ in out]
                out = [("".join(t for t, _ in out), True)] if out else []
            in_code, seen_code = False, True
        elif m.group("lone"):
            in_code, seen_code = True, True
        elif m.group("label") is not None:
            for text, code in segments(m.group("label")):
                _add(out, text, code or in_code)
        elif m.group("em") is not None:
            for text, code in segments(m.group("em")):
                _add(out, text, code or in_code)
        elif m.group("esc") is not None:
            _add(out, m.group("esc"), in_code)
    if i < len(raw):
        _add(out, html.unescape(raw[i:]), in_code)
    return out


def plain(raw: str) -> str:
    """The span's text without markup."""
    return "".join(text for text, _ in segments(raw))


def _html(tokens: list[tuple[str, bool]]) -> str:
    parts = []
    for code, run in itertools.groupby(tokens, key=lambda t: t[1]):
        body = html.escape("".join(text for text, _ in run), quote=False)
        parts.append(f"<code>{body}</code>" if code else body)
    return "".join(parts)


def rich(raw: str) -> str:
    """The span as escaped HTML: plain text, with inline code in ``<code>``."""
    return _html(list(segments(raw)))


def _tokens(raw: str) -> list[tuple[str, bool]]:
    return [(word, code) for text, code in segments(raw) for word in _WORD.findall(text)]


def diff_runs(old: str, new: str) -> list[tuple[str, str, bool]]:
    """old -> new as runs of ``(op, text, is_code)``: op ``=`` kept, ``-`` deleted, ``+`` inserted."""
    a, b = _tokens(old), _tokens(new)
    out: list[tuple[str, str, bool]] = []

    def add(op: str, tokens: list[tuple[str, bool]]) -> None:
        for code, run in itertools.groupby(tokens, key=lambda t: t[1]):
            out.append((op, "".join(text for text, _ in run), code))

    head = 0  # the words both share at the start and the end are kept without a search
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    add("=", a[:head])
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=False).get_opcodes():
        if op == "equal":
            add("=", middle_a[i1:i2])
            continue
        add("-", middle_a[i1:i2])
        add("+", middle_b[j1:j2])
    add("=", a[len(a) - tail :])
    return out


def text_diff(old: str, new: str) -> str:
    """old -> new as plain text with ``<del>``/``<ins>`` around the changed words (escaped)."""
    out = []
    for op, group in itertools.groupby(diff_runs(old, new), key=lambda r: r[0]):
        body = _html([(text, code) for _, text, code in group])
        out.append(body if op == "=" else f"<del>{body}</del>" if op == "-" else f"<ins>{body}</ins>")
    return "".join(out)
