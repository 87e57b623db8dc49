"""Inline Markdown to visible text, with exact offsets (bounded look-ahead: linear)."""

from __future__ import annotations

import bisect
import html
import re
import unicodedata

from kb.ingest.offsets import TextBuilder

__all__ = ["INLINE_WINDOW", "inline_markdown", "inline_markdown_lines"]

INLINE_WINDOW = 1000  # how far inline markup looks for its closing delimiter

_INLINE_SPECIAL = re.compile(r"[`\\*_~\[\]!<&{:]")
# a MyST role, "{doc}`the server <usage/server>`": the role name is markup, the text is read
_MYST_ROLE = re.compile(r"\{[A-Za-z][\w:+.-]{0,40}\}(?=`[^`])")
_LITERAL_ROLES = frozenset("code literal samp kbd math file command envvar regexp".split())
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,500})?/?>")
_AUTOLINK = re.compile(r"<((?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]{1,2000})|(?:[^\s<>@]{1,200}@[^\s<>@]{1,200}))>")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# an icon before its label, MkDocs Material's ":material-github: GitHub" or ":octicons-file-code-16:
# pyproject.toml": markup, like an image; a lone icon (a table's ":material-check:") is the value
_LABEL_ICON = re.compile(r":(?:material|fontawesome-(?:solid|regular|brands)|octicons|simple)-[a-z0-9-]+:[ \t]*(?=[^\s:])")
# Python-Markdown's attribute list after a link ("{ .md-button }", "{: #anchor target=_blank }")
_ATTR_LIST = re.compile(r"\{:[^{}\n]{1,200}\}|\{[ \t]*[.#][^{}\n]{0,200}\}")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]\s]{1,50}\](?!:)")
_DELIM_RUN = re.compile(r"\*+|_+")
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_ESCAPABLE = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def inline_markdown(out: TextBuilder, s: str, base: int) -> None:
    """Append the visible text of inline Markdown ``s`` (at document offset ``base``) to ``out``.

    Kept: text, link labels, code span contents (identifiers are checkable facts), autolink
    URLs. Dropped: emphasis markers, link destinations, images, icons before a label, HTML tags
    and comments.
    """
    # One pass over the inline spans on purpose: every kept character keeps its offset into the page.
    i = 0
    n = len(s)
    find = _INLINE_SPECIAL.search
    brackets: dict[int, int] | None = None  # computed on the first "["
    emphasis: set[int] | None = None  # computed on the first "*" or "_"
    while i < n:
        m = find(s, i)
        if m is None:
            out.add(s[i:], base + i)
            return
        j = m.start()
        if j > i:
            out.add(s[i:j], base + i)
        c = s[j]
        if c == "\\":
            if j + 1 < n and s[j + 1] in _ESCAPABLE:
                out.add(s[j + 1], base + j + 1)
                i = j + 2
            else:
                out.add(c, base + j)
                i = j + 1
        elif c == "`":
            k = j
            while k < n and s[k] == "`":
                k += 1
            ticks = s[j:k]
            close = s.find(ticks, k, k + INLINE_WINDOW)
            while close != -1 and close + len(ticks) < n and s[close + len(ticks)] == "`":
                close = s.find(ticks, close + len(ticks) + 1, k + INLINE_WINDOW)
            if close == -1:
                out.add(ticks, base + j)
                i = k
            else:
                content = s[k:close]
                cs = 1 if content.startswith(" ") and content.endswith(" ") and content.strip() else 0
                out.add(content[cs : len(content) - cs], base + k + cs)
                i = close + len(ticks)
        elif c in "*_~":
            k = j
            while k < n and s[k] == c:
                k += 1
            if c == "~":
                before = s[j - 1] if j > 0 else " "
                after = s[k] if k < n else " "
                # "~5 minutes"; a run of tildes is strikethrough
                is_text = k - j == 1 or (before.isspace() and after.isspace())
            else:
                if emphasis is None:
                    emphasis = _emphasis_runs(s)
                # no partner: text (snake_case, "layouts/_partials", "*args", "2 * 3")
                is_text = j not in emphasis
            if is_text:
                out.add(s[j:k], base + j)
            i = k
        elif c == "!" and j + 1 < n and s[j + 1] == "[":
            if brackets is None:
                brackets = _match_brackets(s)
            end = _link_end(s, j + 1, brackets)
            if end is None:
                out.add(c, base + j)
                i = j + 1
            else:
                i = end[1]  # images are not prose
        elif c == "[" and j + 1 < n and s[j + 1] == "^" and (fn := _FOOTNOTE_REF.match(s, j)):
            i = fn.end()  # footnote reference "[^1]"
        elif c == "[":
            if brackets is None:
                brackets = _match_brackets(s)
            end = _link_end(s, j, brackets)
            if end is None:
                out.add(c, base + j)
                i = j + 1
            else:
                label_end, after = end
                inline_markdown(out, s[j + 1 : label_end], base + j + 1)
                attrs = _ATTR_LIST.match(s, after)  # "[Install][install]{ .md-button }": styling, not text
                i = attrs.end() if attrs else after
        elif c == "]":
            out.add(c, base + j)
            i = j + 1
        elif c == "<":
            if s.startswith("<!--", j):
                close = s.find("-->", j + 4)
                i = n if close == -1 else close + 3
                continue
            m2 = _AUTOLINK.match(s, j)
            if m2:
                out.add(m2.group(1), base + j + 1)
                i = m2.end()
                continue
            m2 = _TAG.match(s, j)
            if m2:
                i = m2.end()
                if m2.group(0).lower().startswith(("<br", "</p", "<p")) and not out.ends_with_space():
                    out.add_synthetic(" ", base + j)
                continue
            out.add(c, base + j)
            i = j + 1
        elif c == "{":
            m2 = _MYST_ROLE.match(s, j)
            close = s.find("`", m2.end() + 1, m2.end() + INLINE_WINDOW) if m2 else -1
            if m2 is None or close == -1:
                out.add(c, base + j)
                i = j + 1
                continue
            content = s[m2.end() + 1 : close]
            target = content.rfind("<")
            # "text <target>" (Sphinx also takes "text<target>"): the target is a link; a code
            # role's "List<String>" is its text
            if target > 0 and content.endswith(">") and m2.group(0)[1:-1] not in _LITERAL_ROLES:
                content = content[:target].rstrip()
            out.add(content, base + m2.end() + 1)
            i = close + 1
        elif c == ":":
            m2 = _LABEL_ICON.match(s, j) if j == 0 or not s[j - 1].isalnum() else None
            if m2:
                i = m2.end()
            else:
                out.add(c, base + j)
                i = j + 1
        elif c == "&":
            m2 = _ENTITY.match(s, j)
            if m2:
                decoded = html.unescape(m2.group(0))
                if decoded == m2.group(0):
                    out.add(decoded, base + j)
                else:
                    out.add_synthetic(decoded.replace("\xa0", " "), base + j)
                i = m2.end()
            else:
                out.add(c, base + j)
                i = j + 1
        else:  # pragma: no cover - the pattern only matches the cases above
            out.add(c, base + j)
            i = j + 1


_BRACKETS = re.compile(r"\\.|[\[\]()]")


def _flanking(s: str, j: int, k: int) -> tuple[bool, bool, bool, bool]:
    """CommonMark's flanking of the delimiter run ``s[j:k]``: left-flanking, right-flanking, and
    whether the characters before and after it are punctuation."""
    before = s[j - 1] if j > 0 else " "
    after = s[k] if k < len(s) else " "
    p_before, p_after = _is_punctuation(before), _is_punctuation(after)
    left = not after.isspace() and (not p_after or before.isspace() or p_before)
    right = not before.isspace() and (not p_before or after.isspace() or p_after)
    return left, right, p_before, p_after


def _is_punctuation(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def _emphasis_runs(s: str) -> set[int]:
    """Where the runs of ``*`` and ``_`` that open or close emphasis start: CommonMark's flanking
    rules (an underscore opens or closes only at a word's edge), each closer taking the nearest
    opener of its character before it. Every other run is text."""
    code = [m.span() for m in _CODE_SPAN.finditer(s)]
    code_starts = [a for a, _ in code]
    matched: set[int] = set()
    openers: list[tuple[str, int]] = []
    for m in _DELIM_RUN.finditer(s):
        j, k = m.span()
        at = bisect.bisect_right(code_starts, j) - 1
        if (at >= 0 and j < code[at][1]) or (j > 0 and s[j - 1] == "\\"):
            continue  # inside a code span, or escaped
        c = s[j]
        left, right, p_before, p_after = _flanking(s, j, k)
        if right and (c == "*" or not left or p_after):
            nearest = next((n for n in range(len(openers) - 1, -1, -1) if openers[n][0] == c), None)
            if nearest is not None:
                matched.update((openers[nearest][1], j))
                del openers[nearest:]
                continue
        if left and (c == "*" or not right or p_before):
            openers.append((c, j))
    return matched


def _match_brackets(s: str) -> dict[int, int]:
    """Position of each "[" or "(" -> position of its closing "]" or ")" (one linear pass)."""
    match: dict[int, int] = {}
    squares: list[int] = []
    rounds: list[int] = []
    for m in _BRACKETS.finditer(s):
        ch = m.group(0)
        if ch == "[":
            squares.append(m.start())
        elif ch == "]":
            if squares:
                match[squares.pop()] = m.start()
        elif ch == "(":
            rounds.append(m.start())
        elif ch == ")" and rounds:
            match[rounds.pop()] = m.start()
    return match


def _link_end(s: str, j: int, match: dict[int, int]) -> tuple[int, int] | None:
    """For ``[label](dest)``, ``[label][ref]`` or ``[label]`` at ``s[j] == '['``: (label end, after).

    ``match`` comes from ``_match_brackets(s)``, so each call is O(1) and a paragraph of a
    hundred thousand "[" stays linear.
    """
    label_end = match.get(j)
    if label_end is None or label_end - j > INLINE_WINDOW:
        return None
    nxt = label_end + 1
    if nxt < len(s) and s[nxt] == "(":
        close = match.get(nxt)
        if close is None or close - nxt > INLINE_WINDOW:
            return None
        return label_end, close + 1
    if nxt < len(s) and s[nxt] == "[":
        close = s.find("]", nxt + 1, min(len(s), nxt + 200))
        if close != -1:
            return label_end, close + 1
    return label_end, nxt  # shortcut reference or plain brackets: keep the label


# ---------------------------------------------------------------------------------------------
# a paragraph's lines, read as one run of inline markup


class _JoinedLines:
    """A TextBuilder seen through a paragraph's lines joined by spaces: a position in the joined
    text is written at its line's document offset; a line break as a space at the newline's own
    offset (a synthetic one where the line's text does not follow a newline), and not at all
    where the text already ends in a space."""

    __slots__ = ("out", "starts", "offsets", "kinds")

    def __init__(self, out: TextBuilder):
        self.out = out
        self.starts: list[int] = []  # where each piece starts in the joined text
        self.offsets: list[int] = []  # its document offset
        self.kinds: list[str] = []  # "line", "newline" (a break at a newline), "synthetic" (any other break)

    def piece(self, start: int, offset: int, kind: str) -> None:
        self.starts.append(start)
        self.offsets.append(offset)
        self.kinds.append(kind)

    def add(self, s: str, pos: int) -> None:
        while s:
            k = bisect.bisect_right(self.starts, pos) - 1
            end = self.starts[k + 1] if k + 1 < len(self.starts) else pos + len(s)
            chunk, s = s[: end - pos], s[end - pos :]
            if self.kinds[k] == "line":
                self.out.add(chunk, self.offsets[k] + pos - self.starts[k])
            elif not self.out.ends_with_space():
                (self.out.add if self.kinds[k] == "newline" else self.out.add_synthetic)(" ", self.offsets[k])
            pos += len(chunk)

    def add_synthetic(self, s: str, pos: int) -> None:
        k = bisect.bisect_right(self.starts, pos) - 1
        self.out.add_synthetic(s, self.offsets[k] + (pos - self.starts[k] if self.kinds[k] == "line" else 0))

    def ends_with_space(self) -> bool:
        return self.out.ends_with_space()


def inline_markdown_lines(out: TextBuilder, lines: list[tuple[str, int]], text: str) -> None:
    """Append the visible text of a paragraph given as its lines (each with its document offset
    in ``text``), read as one run of inline Markdown: a link, a code span or an emphasis may go
    on over a line break ("the [CLI" / "Reference](/reference/cli)"), as CommonMark reads them,
    where read line by line their markup stayed in the text."""
    joined = _JoinedLines(out)
    parts: list[str] = []
    at = 0
    for idx, (s, off) in enumerate(lines):
        if idx:
            newline = off > 0 and text[off - 1] in " \t\n"
            joined.piece(at, off - 1 if newline else off, "newline" if newline else "synthetic")
            parts.append(" ")
            at += 1
        if idx < len(lines) - 1 and s.endswith("\\") and not s.endswith("\\\\"):
            s = s[:-1]  # a backslash hard line break
        joined.piece(at, off, "line")
        parts.append(s)
        at += len(s)
    inline_markdown(joined, "".join(parts), 0)  # type: ignore[arg-type]  # the TextBuilder calls only
