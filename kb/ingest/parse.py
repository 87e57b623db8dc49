"""Parse KB documents (Markdown, HTML, plain text) into prose blocks with exact offsets.

Entry points (see ``docs/CONTRACTS.md``):

- ``parse_document(raw, doc_id, path) -> Document``
- ``read_front_matter(text) -> (meta, body_offset)``

Every block carries ``offsets``: for each character of the block's plain text, its offset in
``Document.text`` (the whole decoded file, front matter included). Offsets are stored as an
``OffsetMap``, a read-only sequence of ints that keeps runs instead of one int per character
(a 20 MB document would otherwise need gigabytes); it indexes, slices, iterates and compares
like a tuple.

Everything here is linear in the input size: line-based block parsing, bounded look-ahead for
inline markup, and no regular expression with nested quantifiers. Malformed input gives a
best-effort parse; only binary data, undecodable bytes and hostile or malformed front matter
raise ``ParseError``.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import PurePath
from typing import overload

import yaml

from kb.errors import ParseError
from kb.ingest.rst import rst_blocks
from kb.records import Block, Document, content_hash

__all__ = ["ParseError", "OffsetMap", "parse_document", "read_front_matter", "detect_format"]

FRONT_MATTER_MAX = 64 * 1024  # bytes of YAML we are willing to read
MARKDOWN_EXT = {".md", ".markdown", ".mdx", ".mkd", ".mdown"}
HTML_EXT = {".html", ".htm", ".xhtml"}
RST_EXT = {".rst", ".rest"}
_INLINE_WINDOW = 1000  # how far inline markup looks for its closing delimiter


# ---------------------------------------------------------------------------------------------
# offsets


class OffsetMap(Sequence[int]):
    """Maps each character of a block's text to its offset in the document, stored as runs.

    Run ``k`` says: text positions ``starts[k] ..`` map to document offsets ``docs[k] ..``,
    one for one, until the next run starts.
    """

    __slots__ = ("_starts", "_docs", "_len")

    def __init__(self, starts=(), docs=(), length: int = 0):
        self._starts = tuple(starts)
        self._docs = tuple(docs)
        self._len = length

    @classmethod
    def from_offsets(cls, offsets) -> OffsetMap:
        starts: list[int] = []
        docs: list[int] = []
        prev = None
        n = 0
        for i, off in enumerate(offsets):
            if prev is None or off != prev + 1:
                starts.append(i)
                docs.append(off)
            prev = off
            n = i + 1
        return cls(starts, docs, n)

    def __len__(self) -> int:
        return self._len

    def _at(self, i: int) -> int:
        k = bisect_right(self._starts, i) - 1
        return self._docs[k] + (i - self._starts[k])

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[int, ...]: ...
    def __getitem__(self, i: int | slice) -> int | tuple[int, ...]:
        if isinstance(i, slice):
            return tuple(self._at(j) for j in range(*i.indices(self._len)))
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("offset index out of range")
        return self._at(i)

    def __iter__(self):
        starts, docs, n = self._starts, self._docs, self._len
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else n
            yield from range(docs[k], docs[k] + (e - s))

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Document span ``[start, end)`` covering text characters ``i .. j-1``."""
        if j <= i:
            off = self[i] if i < self._len else (self[-1] + 1 if self._len else 0)
            return off, off
        return self[i], self[j - 1] + 1

    def __eq__(self, other):
        if isinstance(other, OffsetMap):
            return (self._len, self._starts, self._docs) == (other._len, other._starts, other._docs)
        if isinstance(other, (tuple, list)):
            return len(other) == self._len and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash((self._len, self._starts, self._docs))

    def __repr__(self):
        if self._len <= 12:
            return f"OffsetMap({tuple(self)})"
        return f"OffsetMap(len={self._len}, runs={len(self._starts)})"


class _Text:
    """Builds a block's plain text together with its offset runs."""

    __slots__ = ("parts", "starts", "docs", "n")

    def __init__(self):
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.docs: list[int] = []
        self.n = 0

    def add(self, s: str, off: int) -> None:
        """Append ``s``, whose first character sits at document offset ``off`` (contiguous)."""
        if not s:
            return
        if not self.starts or self.docs[-1] + (self.n - self.starts[-1]) != off:
            self.starts.append(self.n)
            self.docs.append(off)
        self.parts.append(s)
        self.n += len(s)

    def add_synthetic(self, s: str, off: int) -> None:
        """Append ``s`` (a replacement such as a decoded entity); every char maps to ``off``."""
        for ch in s:
            self.starts.append(self.n)
            self.docs.append(off)
            self.parts.append(ch)
            self.n += 1

    def ends_with_space(self) -> bool:
        return bool(self.parts) and self.parts[-1][-1:].isspace()

    def build(self) -> tuple[str, OffsetMap]:
        text = "".join(self.parts)
        # strip surrounding whitespace, keeping the map aligned
        lead = len(text) - len(text.lstrip())
        trail = len(text) - len(text.rstrip())
        full = OffsetMap(self.starts, self.docs, self.n)
        if lead or trail:
            end = len(text) - trail
            text = text[lead:end]
            full = _sub_map(full, lead, end)
        return text, full


def _sub_map(m: OffsetMap, i: int, j: int) -> OffsetMap:
    if j <= i:
        return OffsetMap((), (), 0)
    starts, docs = m._starts, m._docs
    k0 = bisect_right(starts, i) - 1
    k1 = bisect_right(starts, j - 1) - 1
    ns = [0]
    nd = [docs[k0] + (i - starts[k0])]
    for k in range(k0 + 1, k1 + 1):
        ns.append(starts[k] - i)
        nd.append(docs[k])
    return OffsetMap(ns, nd, j - i)


# ---------------------------------------------------------------------------------------------
# front matter

_FM_OPEN = re.compile(r"---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)


class _NoAliasSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases (alias bombs) outright."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise ParseError("front matter uses YAML aliases (refused: alias bombs)")
        if getattr(event, "anchor", None) is not None:
            raise ParseError("front matter uses YAML anchors (refused: alias bombs)")
        return super().compose_node(parent, index)


# libyaml's loader, ten times the pure-Python one's speed, for front matter that cannot hold an
# anchor, an alias or a tag (no & * !) nor nest in flow collections (no [ {), so that its
# recursion stays within what 64 KB of indentation allows. Anything else, and anything libyaml
# rejects, is read by _NoAliasSafeLoader, which refuses aliases and says what is wrong.
_C_SAFE_LOADER = getattr(yaml, "CSafeLoader", None)
_NEEDS_PYTHON_LOADER = re.compile(r"[&*!\[{]")


def _load_front_matter(yaml_text: str):
    if _C_SAFE_LOADER is not None and not _NEEDS_PYTHON_LOADER.search(yaml_text):
        try:
            return yaml.load(yaml_text, Loader=_C_SAFE_LOADER)  # noqa: S506 (libyaml's SafeLoader)
        except Exception:  # noqa: BLE001 (read again below, for the Python loader's message)
            pass
    return yaml.load(yaml_text, Loader=_NoAliasSafeLoader)  # noqa: S506 (safe subclass)


def read_front_matter(text: str) -> tuple[dict, int]:
    """Return ``(meta, body_offset)``; ``({}, 0)`` when the text has no front matter.

    Front matter is a YAML mapping between a first line ``---`` and a line ``---`` (or ``...``).
    It is read with a safe loader that also refuses anchors/aliases, and is bounded to 64 KB.
    Raises ``ParseError`` for unsafe tags, aliases, oversized or malformed YAML, or a non-mapping.
    """
    start = 1 if text.startswith("\ufeff") else 0
    m = _FM_OPEN.match(text, start)
    if not m:
        return {}, 0
    window = text[m.end() : m.end() + FRONT_MATTER_MAX + 8]
    close = _FM_CLOSE.search(window)
    if close is None:
        if len(text) - m.end() > FRONT_MATTER_MAX:
            # either huge front matter or a document that merely starts with a rule
            if _FM_CLOSE.search(text, m.end()) is not None:
                raise ParseError(f"front matter larger than {FRONT_MATTER_MAX // 1024} KB")
        return {}, 0  # an opening rule with no closing one: not front matter
    yaml_text = window[: close.start()]
    if len(yaml_text.encode("utf-8")) > FRONT_MATTER_MAX:
        raise ParseError(f"front matter larger than {FRONT_MATTER_MAX // 1024} KB")
    body = m.end() + close.end()
    if body < len(text) and text[body] == "\n":
        body += 1
    try:
        meta = _load_front_matter(yaml_text)
    except ParseError:
        raise
    except yaml.constructor.ConstructorError as exc:
        tag = getattr(exc, "problem", "") or str(exc)
        raise ParseError(f"front matter has an unsafe or unknown YAML tag: {_one_line(tag)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ParseError(f"malformed front matter{where}: {_one_line(problem)}") from None
    except RecursionError:
        raise ParseError("front matter nests too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp such as 2024-13-45
        raise ParseError(f"malformed front matter: {_one_line(exc)}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise ParseError(f"front matter is a {type(meta).__name__}, not a mapping")
    return meta, body


def _one_line(s: object, limit: int = 160) -> str:
    text = " ".join(str(s).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_date(value) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    s = str(value).strip()
    try:
        return date.fromisoformat(s[:10])
    except ValueError:
        pass
    for fmt in ("%Y/%m/%d", "%d %B %Y", "%B %d, %Y", "%d %b %Y", "%b %d, %Y"):
        try:
            return datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    return None


def _as_tags(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, (list, tuple, set)):
        return tuple(str(t).strip() for t in value if str(t).strip())
    return (str(value),)


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return value is True or value == 1


def _as_risk(value) -> str | None:
    if value is None:
        return None
    s = str(value).strip().lower()
    return s if s in ("low", "medium", "high") else None


# ---------------------------------------------------------------------------------------------
# entry point


def detect_format(path: str) -> str:
    suffix = PurePath(path).suffix.lower()
    if suffix in MARKDOWN_EXT:
        return "markdown"
    if suffix in HTML_EXT:
        return "html"
    if suffix in RST_EXT:
        return "rst"
    return "text"


def _decode(raw: bytes) -> str:
    if b"\x00" in raw:
        raise ParseError("binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def parse_document(raw: bytes, doc_id: str, path: str) -> Document:
    """Parse one document version. Raises ``ParseError`` (one line) for unusable input."""
    text = _decode(raw)
    fmt = detect_format(path or doc_id)
    meta: dict = {}
    body = 0
    if fmt in ("markdown", "text", "rst"):
        meta, body = read_front_matter(text)
    if fmt == "markdown":
        blocks, first_heading = _MarkdownParser(text, body, mdx=PurePath(path or doc_id).suffix.lower() == ".mdx").run()
    elif fmt == "html":
        blocks, first_heading = _parse_html(text)
    elif fmt == "rst":
        found, first_heading = rst_blocks(text, body)
        blocks = [Block(kind=k, start=o[0], end=o[-1] + 1, text=t, offsets=OffsetMap.from_offsets(o), section=sec, level=lv)
                  for k, t, o, sec, lv in found]  # fmt: skip
        if not blocks and text[body:].strip():
            blocks, first_heading = _MarkdownParser(text, body, plain=True).run()
    else:
        blocks, first_heading = _MarkdownParser(text, body, plain=True).run()

    kb_meta = meta.get("kbaudit") if isinstance(meta.get("kbaudit"), dict) else {}
    title = meta.get("title")
    title = _one_line(title, 300) if isinstance(title, (str, int, float)) and str(title).strip() else None
    title = title or first_heading or PurePath(path or doc_id).stem
    updated = None
    for key in ("updated", "last_updated", "last-updated", "lastmod", "modified", "date"):
        if key in meta:
            updated = _as_date(meta.get(key))
            if updated:
                break
    owner = meta.get("owner")
    return Document(
        doc_id=doc_id,
        version_id=content_hash(raw),
        path=path,
        format=fmt,
        text=text,
        title=title,
        updated=updated,
        owner=str(owner) if owner not in (None, "") else None,
        risk=_as_risk(meta.get("risk")),
        tags=_as_tags(meta.get("tags")),
        meta=meta,
        blocks=tuple(blocks),
        bytes=len(raw),
        ignore=_truthy(kb_meta.get("ignore")) if kb_meta else False,
    )


# ---------------------------------------------------------------------------------------------
# inline markdown

_INLINE_SPECIAL = re.compile(r"[`\\*_~\[\]!<&{]")
# a MyST role, "{doc}`the server <usage/server>`": the role name is markup, the text is read
_MYST_ROLE = re.compile(r"\{[A-Za-z][\w:+.-]{0,40}\}(?=`[^`])")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]{0,500})?/?>")
_AUTOLINK = re.compile(r"<((?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]{1,2000})|(?:[^\s<>@]{1,200}@[^\s<>@]{1,200}))>")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_FOOTNOTE_REF = re.compile(r"\[\^[^\]\s]{1,50}\](?!:)")
_ESCAPABLE = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _inline(out: _Text, s: str, base: int) -> None:
    """Append the visible text of inline Markdown ``s`` (at document offset ``base``) to ``out``.

    Kept: text, link labels, code span contents (identifiers are checkable facts), autolink
    URLs. Dropped: emphasis markers, link destinations, images, HTML tags and comments.
    """
    i = 0
    n = len(s)
    find = _INLINE_SPECIAL.search
    brackets: dict[int, int] | None = None  # computed on the first "["
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
            close = s.find(ticks, k, k + _INLINE_WINDOW)
            while close != -1 and close + len(ticks) < n and s[close + len(ticks)] == "`":
                close = s.find(ticks, close + len(ticks) + 1, k + _INLINE_WINDOW)
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
            before = s[j - 1] if j > 0 else " "
            after = s[k] if k < n else " "
            if c == "_" and before.isalnum() and after.isalnum():
                out.add(s[j:k], base + j)  # snake_case, not emphasis
            elif c == "~" and k - j == 1:
                out.add(c, base + j)  # "~5 minutes"
            elif before.isspace() and after.isspace():
                out.add(s[j:k], base + j)  # "2 * 3"
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
                _inline(out, s[j + 1 : label_end], base + j + 1)
                i = after
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
            close = s.find("`", m2.end() + 1, m2.end() + _INLINE_WINDOW) if m2 else -1
            if m2 is None or close == -1:
                out.add(c, base + j)
                i = j + 1
                continue
            content = s[m2.end() + 1 : close]
            target = content.rfind(" <")
            if target > 0 and content.endswith(">"):
                content = content[:target]  # "text <target>": the target is a link
            out.add(content, base + m2.end() + 1)
            i = close + 1
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
    if label_end is None or label_end - j > _INLINE_WINDOW:
        return None
    nxt = label_end + 1
    if nxt < len(s) and s[nxt] == "(":
        close = match.get(nxt)
        if close is None or close - nxt > _INLINE_WINDOW:
            return None
        return label_end, close + 1
    if nxt < len(s) and s[nxt] == "[":
        close = s.find("]", nxt + 1, min(len(s), nxt + 200))
        if close != -1:
            return label_end, close + 1
    return label_end, nxt  # shortcut reference or plain brackets: keep the label


# ---------------------------------------------------------------------------------------------
# block markdown (line based, single pass)

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"[ \t]+#+[ \t]*$|^#+[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# "[ poll_interval: <duration> | default = 1m ]", "[ - <scrape_config> ... ]" is not one
_REFERENCE_LINE = re.compile(r"[ \t]*(?:#\s*)?\[\s*([A-Za-z_][\w.-]*:\s*<[\w. -]+>(?:\s*\|\s*default\s*=\s*[^\]]*?)?)\s*\][ \t]*")
_HR = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_LIST = re.compile(r"( *)([-*+•]|\d{1,9}[.)])([ \t]+|$)")
_QUOTE = re.compile(r" {0,3}> ?")
_TABLE_DELIM = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_IGNORE_START = re.compile(r"<!--\s*kbaudit:\s*ignore\s*-->")
_IGNORE_END = re.compile(r"<!--\s*kbaudit:\s*end\s*-->")
_RAW_HTML_OPEN = re.compile(r" {0,3}<(script|style|pre|textarea)(?:\s|>|$)", re.I)
_MDX_ESM = re.compile(r"(?:import|export)\s")
_FOOTNOTE_DEF = re.compile(r" {0,3}\[\^[^\]\s]{1,50}\]:[ \t]*")
_LINK_DEF = re.compile(r" {0,3}\[[^\]^][^\]]{0,200}\]:[ \t]*\S+")
_HEADING_ATTRS = re.compile(r"[ \t]*\{[#.][^{}]{0,200}\}[ \t]*$")
_LAST_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


# Containers of the documentation generators (docs/sources.md, "Raw files"). Their prose is
# read as prose: the marker lines go, an indented body is read dedented, a title becomes a
# lead-in paragraph ("Title:"), and directives that hold code or generated output are skipped.
_ADMONITION = re.compile(r"( *)(?:!!!|\?\?\?\+?)[ \t]*(?:[A-Za-z][\w-]*)?(?:[ \t]+\"([^\"]*)\")?[ \t]*(?:[A-Za-z][\w -]*)?$")
# Python-Markdown reads an admonition's title up to the last quote of the line, so a title may
# hold quotes of its own (a link title: '!!! info "See [the API](api.md "API reference")"')
_ADMONITION_HEAD = re.compile(r"( *)(?:!!!|\?\?\?\+?)[ \t]*(?:[A-Za-z][\w-]*)?[ \t]+\"")
_ADMONITION_TAIL = re.compile(r"\"[ \t]*(?:[A-Za-z][\w -]*)?$")
_TAB = re.compile(r"( *)===\+?[ \t]+\"[^\"]*\"[ \t]*$")
_COLON_FENCE = re.compile(r" {0,3}(:{3,})[ \t]*(\{[A-Za-z][\w-]*\}|[A-Za-z][\w-]*)?[ \t]*(.*?)[ \t]*$")
_MYST_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*\{([A-Za-z][\w-]*)\}[ \t]*(.*?)[ \t]*$")
_DIRECTIVE_OPTION = re.compile(r"[ \t]*:[\w-]+:(?:[ \t].*)?$")
_INCLUDE_LINE = re.compile(r"[ \t]*(?:--8<--[ \t]+[\"'][^\"']*[\"']|\{!>?[^{}]*!\}|\{%[ \t]*include[ \t][^{}]*%\})[ \t]*$")
_SNIPPET_BLOCK = re.compile(r"[ \t]*--8<--[ \t]*$")
_SHORTCODE_LINE = re.compile(r"[ \t]*(?:\{\{[<%][^{}]*[%>]\}\}[ \t]*)+$")
_SHORTCODE_CODE = re.compile(r"[ \t]*\{\{[<%][ \t]*(highlight|code|mermaid)\b[^{}]*[%>]\}\}")
_ATTR_LIST_LINE = re.compile(r"[ \t]*\{:?[ \t]*[.#][^{}]*\}[ \t]*$|\([\w/.:-]+\)=[ \t]*$")  # attr list; MyST target
_MARKUP_LEADS = frozenset("!?=:`~{(-")
# directives whose body is prose (MyST / Sphinx admonitions); any other directive is skipped
PROSE_DIRECTIVES = frozenset({
    "note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error",
    "seealso", "admonition", "info", "details", "versionadded", "versionchanged", "deprecated",
    "topic", "sidebar", "dropdown", "tab-item", "tab-set", "card", "grid-item-card",
})  # fmt: skip


def _unwrap_containers(text: str, lines: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], dict[int, tuple[str, int]]]:
    """Lines with container markup blanked and container bodies dedented (spans stay exact);
    returns them and {line index: (title, offset)} for container titles."""
    out: list[tuple[int, int]] = []
    titles: dict[int, tuple[str, int]] = {}
    indents: list[int] = []  # body indent of each open indented container (admonition, tab)
    closers: list[str] = []  # the fence that closes each open MyST backtick directive
    fence: str | None = None  # inside a code fence: nothing is markup
    skip_until: re.Pattern | None = None
    skip_fence: str | None = None  # a directive that is not prose: skipped to its closing fence
    snippet = False
    options = False
    for s, e in lines:
        line = text[s:e]
        stripped = line.strip()
        if not stripped:
            out.append((s, e))
            continue
        indent = len(line) - len(line.lstrip(" "))
        while indents and indent < indents[-1]:
            indents.pop()
        cut = min(indents[-1], indent) if indents else 0
        body = line[cut:]
        if fence is not None:
            out.append((s + cut, e))
            if body.lstrip().startswith(fence) and not body.strip().strip(fence[0]):
                fence = None
            continue
        if skip_fence is not None:
            out.append((s, s))
            if body.lstrip().startswith(skip_fence) and not body.strip().strip(skip_fence[0]):
                skip_fence = None
            continue
        if skip_until is not None:
            out.append((s, s))
            if skip_until.match(line):
                skip_until = None
            continue
        if snippet:
            out.append((s, s))
            snippet = not _SNIPPET_BLOCK.match(line)
            continue
        if options and _DIRECTIVE_OPTION.match(body):
            out.append((s, s))
            continue
        options = False
        lead = body.lstrip()[:1]
        if lead not in _MARKUP_LEADS:  # most lines: nothing here can be markup
            out.append((s + cut, e))
            continue
        m = _admonition(body) if body.lstrip()[:3] in ("!!!", "???") else None
        if m:
            marker_indent, title, at = m
            out.append((s, s))
            if title and title.strip():
                t0 = s + cut + at + (len(title) - len(title.lstrip()))
                titles[len(out) - 1] = (title.strip(), t0)
            indents.append(cut + marker_indent + 4)
            continue
        m = _TAB.match(body)
        if m:
            out.append((s, s))  # a tab's label names a variant ("File (YAML)"), it states nothing
            indents.append(cut + len(m.group(1)) + 4)
            continue
        m = _MYST_FENCE.match(body)
        if m:
            out.append((s, s))
            if m.group(2).lower() in PROSE_DIRECTIVES:
                closers.append(m.group(1))
                options = True
                if m.group(3):
                    titles[len(out) - 1] = (m.group(3), s + cut + m.start(3))
            else:
                skip_fence = m.group(1)
            continue
        if closers and body.strip() == closers[-1]:
            closers.pop()
            out.append((s, s))
            continue
        m = _FENCE.match(body)
        if m and not (m.group(1)[0] == "`" and "`" in body[m.end() :]):
            fence = m.group(1)
            out.append((s + cut, e))
            continue
        m = _COLON_FENCE.match(body)
        if m:
            out.append((s, s))
            kind = (m.group(2) or "").strip("{}").lower()
            if m.group(2) and m.group(2).startswith("{") and kind not in PROSE_DIRECTIVES:
                skip_until = re.compile(r" {0,3}" + m.group(1) + r"[ \t]*$")
                continue
            if m.group(3) and kind != "code-group":
                titles[len(out) - 1] = (m.group(3), s + cut + m.start(3))
            options = bool(m.group(2)) and m.group(2).startswith("{")
            continue
        if _INCLUDE_LINE.match(line) or _SHORTCODE_LINE.match(line) or _ATTR_LIST_LINE.match(line):
            out.append((s, s))
            cm = _SHORTCODE_CODE.match(line)
            if cm:
                skip_until = re.compile(r"[ \t]*\{\{[<%][ \t]*/" + cm.group(1) + r"\b")
            continue
        if _SNIPPET_BLOCK.match(line):
            out.append((s, s))
            snippet = True
            continue
        out.append((s + cut, e))
    return out, titles


def _admonition(body: str) -> tuple[int, str, int] | None:
    """(marker indent, title, title offset in ``body``) of an admonition line, else None."""
    head = _ADMONITION_HEAD.match(body)
    if head is not None:
        close = body.rfind('"')
        if close >= head.end() and _ADMONITION_TAIL.match(body, close):
            return len(head.group(1)), body[head.end() : close], head.end()
    m = _ADMONITION.match(body)
    if m is None:
        return None
    return len(m.group(1)), m.group(2) or "", m.start(2) if m.group(2) is not None else 0


def _looks_like_title(line: str) -> bool:
    words = line.split()
    return 0 < len(words) <= 8 and line[:1].isupper() and line.rstrip()[-1:] not in ".!?:;," and "  " not in line


def _last_sentence(text: str) -> str:
    parts = _LAST_SENTENCE.split(text)
    return parts[-1].strip() if parts else text


def _reference_paragraph(parser, s: int, e: int) -> None:
    """A configuration reference written as a code block states each option's type and default
    on a line of its own ("[ poll_interval: <duration> | default = 1m ]"): that line is a setting
    of the page, not an example, so it becomes a paragraph of its own (without the brackets).
    Every other line of a code block stays out. Shared by the Markdown and HTML block readers."""
    m = _REFERENCE_LINE.match(parser.text, s, e)
    if m is None or m.end() != e:
        return
    out = _Text()
    out.add(m.group(1), m.start(1))
    parser._emit("paragraph", [], text_map=out.build())


class _MarkdownParser:
    """A forgiving, single-pass Markdown block parser (CommonMark/GFM subset).

    ``plain=True`` parses plain text: paragraphs, list items and underlined headings only.
    """

    def __init__(self, text: str, body: int, plain: bool = False, mdx: bool = False):
        self.text = text
        self.body = body
        self.plain = plain
        self.mdx = mdx
        self.blocks: list[Block] = []
        self.section: list[tuple[int, str]] = []  # (level, title)
        self.first_heading: str | None = None
        self.first_h1: str | None = None
        # paragraph in progress: list of (content, offset)
        self.para: list[tuple[str, int]] = []
        self.para_kind = "paragraph"
        self.para_level = 0
        self.para_lead = ""
        self.list_stack: list[tuple[int, int, str]] = []  # (marker indent, content indent, text)
        self.list_lead = ""  # lead-in for the current top-level list
        self.last_block_kind = ""
        self.last_para_text = ""
        self.titles: dict[int, tuple[str, int]] = {}  # line index -> container title

    # -- helpers
    def _section(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.section)

    def _emit(
        self,
        kind: str,
        pieces: list[tuple[str, int]],
        level: int = 0,
        lead_in: str = "",
        headers: tuple[str, ...] = (),
        text_map: tuple[str, OffsetMap] | None = None,
    ) -> Block | None:
        if text_map is None:
            out = _Text()
            for idx, (s, off) in enumerate(pieces):
                if idx and not out.ends_with_space():
                    out.add(" ", off - 1) if off > 0 and self.text[off - 1] in " \t\n" else out.add_synthetic(" ", off)
                if self.plain:
                    out.add(s, off)
                else:
                    if s.endswith("\\") and not s.endswith("\\\\") and idx < len(pieces) - 1:
                        s = s[:-1]  # a backslash hard line break
                    _inline(out, s, off)
            text, omap = out.build()
        else:
            text, omap = text_map
        if not text:
            return None
        start, end = omap.span(0, len(text))
        block = Block(
            kind=kind, start=start, end=end, text=text, offsets=omap, section=self._section(), level=level, lead_in=lead_in, headers=headers
        )
        self.blocks.append(block)
        self.last_block_kind = kind
        return block

    _reference_line = _reference_paragraph

    def _flush(self) -> None:
        if not self.para:
            return
        block = self._emit(self.para_kind, self.para, level=self.para_level, lead_in=self.para_lead)
        if block is not None:
            if self.para_kind == "list_item":
                if self.list_stack:
                    mi, ci, _ = self.list_stack[-1]
                    self.list_stack[-1] = (mi, ci, block.text)
            else:
                self.last_para_text = block.text
        self.para = []
        self.para_kind = "paragraph"
        self.para_level = 0
        self.para_lead = ""

    def _heading(self, level: int, pieces: list[tuple[str, int]]) -> None:
        self._flush()
        self.list_stack.clear()
        while self.section and self.section[-1][0] >= level:
            self.section.pop()
        block = self._emit("heading", pieces, level=level)
        if block is not None:
            if self.first_heading is None:
                self.first_heading = block.text
            if level == 1 and self.first_h1 is None:
                self.first_h1 = block.text
            self.section.append((level, block.text))
        self.last_para_text = ""

    def _table_row_cells(self, line: str, off: int) -> list[tuple[str, int]]:
        """Split a table row into (cell text, offset) on unescaped pipes outside code spans."""
        cells: list[tuple[str, int]] = []
        s = line
        i = 0
        n = len(s)
        # strip leading/trailing pipe
        lead = len(s) - len(s.lstrip())
        i = lead
        if i < n and s[i] == "|":
            i += 1
        end = len(s.rstrip())
        if end > i and s[end - 1] == "|" and (end < 2 or s[end - 2] != "\\"):
            end -= 1
        cell_start = i
        in_code = False
        while i < end:
            ch = s[i]
            if ch == "\\":
                i += 2
                continue
            if ch == "`":
                in_code = not in_code
            elif ch == "|" and not in_code:
                cells.append((s[cell_start:i], off + cell_start))
                cell_start = i + 1
            i += 1
        cells.append((s[cell_start:end], off + cell_start))
        return [(c.strip(), o + (len(c) - len(c.lstrip()))) for c, o in cells]

    def _cell_text(self, cell: str, off: int) -> tuple[str, OffsetMap]:
        out = _Text()
        _inline(out, cell, off)
        return out.build()

    def _table(self, lines, idx: int) -> int:
        """Parse a GFM table whose header is lines[idx]; returns the index after the table."""
        text = self.text
        hs, he = lines[idx]
        header_cells = self._table_row_cells(text[hs:he], hs)
        headers = tuple(self._cell_text(c, o)[0] for c, o in header_cells)
        i = idx + 2
        while i < len(lines):
            s, e = lines[i]
            line = text[s:e]
            if not line.strip() or "|" not in line:
                break
            cells = self._table_row_cells(line, s)
            self._emit("table_row", [], headers=headers, text_map=self._join_cells(cells))
            i += 1
        return i

    def _join_cells(self, cells: list[tuple[str, int]]) -> tuple[str, OffsetMap]:
        out = _Text()
        for k, (c, o) in enumerate(cells):
            if k:
                out.add_synthetic(" | ", max(o - 1, 0))
            t, m = self._cell_text(c, o)
            if not t:
                out.add_synthetic("-", o)  # keep the column count: an empty cell
                continue
            for a, b in _runs(m, len(t)):
                out.add(t[a:b], m[a])
        text = "".join(out.parts)
        return text, OffsetMap(out.starts, out.docs, out.n)

    # -- main loop
    def run(self) -> tuple[list[Block], str | None]:
        text = self.text
        lines: list[tuple[int, int]] = []
        pos = self.body
        n = len(text)
        while pos < n:
            nl = text.find("\n", pos)
            if nl == -1:
                nl = n
            end = nl - 1 if nl > pos and text[nl - 1] == "\r" else nl
            lines.append((pos, end))
            pos = nl + 1
        if self.plain:
            self._run_plain(lines)
        else:
            lines, self.titles = _unwrap_containers(text, lines)
            self._run_markdown(lines)
        self._flush()
        return self.blocks, self.first_h1 or self.first_heading

    def _run_plain(self, lines) -> None:
        text = self.text
        i = 0
        while i < len(lines):
            s, e = lines[i]
            line = text[s:e]
            stripped = line.strip()
            if not stripped:
                if self.para and self.para_kind == "paragraph" and len(self.para) == 1 and _looks_like_title(self.para[0][0]):
                    content, off = self.para[0]
                    self.para = []
                    self._heading(1 if self.first_heading is None else 2, [(content, off)])
                self._flush()
                self.list_stack.clear()
                i += 1
                continue
            if _IGNORE_START.search(line):
                self._flush()
                i = self._skip_ignored(lines, i)
                continue
            # underlined heading
            if self.para and self.para_kind == "paragraph" and len(self.para) == 1 and _SETEXT.match(line) and len(stripped) >= 3:
                content, off = self.para[0]
                self.para = []
                self._heading(1 if stripped[0] == "=" else 2, [(content, off)])
                i += 1
                continue
            lead = len(line) - len(line.lstrip())
            m = _LIST.match(line)
            if m and m.end() < len(line):
                self._list_item(m, line, s)
            elif self.para:
                self.para.append((stripped, s + lead))
            else:
                self.para = [(stripped, s + lead)]
                self.para_kind = "paragraph"
            i += 1

    def _skip_ignored(self, lines, i: int) -> int:
        """Skip from the line holding an ignore marker to the line holding the end marker."""
        text = self.text
        s, e = lines[i]
        m = _IGNORE_START.search(text, s, e)
        if m and _IGNORE_END.search(text, m.end(), e):
            return i + 1  # both on one line
        i += 1
        while i < len(lines):
            s, e = lines[i]
            if _IGNORE_END.search(text, s, e):
                return i + 1
            i += 1
        return i

    def _list_item(self, m, line: str, s: int) -> None:
        self._flush()
        indent = len(m.group(1))
        content_start = m.end()
        content_indent = content_start if m.group(3) else content_start + 1
        stack = self.list_stack  # (marker indent, content indent, item text)
        while stack and stack[-1][0] > indent:
            stack.pop()
        sibling = False
        if stack and (indent < stack[-1][1] or indent >= stack[-1][1] + 4):
            stack.pop()  # a sibling of the top item (or over-indented: best effort)
            sibling = True
        if not stack and sibling:
            lead_in = self.list_lead
        elif not stack:
            prev = self.last_para_text if self.last_block_kind in ("paragraph", "quote") else ""
            self.list_lead = _last_sentence(prev) if prev.rstrip().endswith(":") else ""
            lead_in = self.list_lead
        else:
            lead_in = stack[-1][2]  # a nested item is read in the context of its parent
        level = len(stack)
        stack.append((indent, content_indent, ""))
        content = line[content_start:]
        if content.startswith(("[ ] ", "[x] ", "[X] ")):  # task list checkbox
            content = content[4:]
            content_start += 4
        self.para = [(content.rstrip(), s + content_start)]
        self.para_kind = "list_item"
        self.para_level = level
        self.para_lead = lead_in

    def _run_markdown(self, lines) -> None:
        text = self.text
        i = 0
        nlines = len(lines)
        in_quote_prev = False
        while i < nlines:
            s, e = lines[i]
            line = text[s:e]
            if i in self.titles:  # a container's title: a lead-in paragraph of its own
                self._flush()
                self.list_stack.clear()
                title, off = self.titles[i]
                out = _Text()
                _inline(out, title, off)
                if out.n and not title.rstrip().endswith((":", ".", "?", "!")):
                    out.add_synthetic(":", off + len(title) - 1)
                block = self._emit("paragraph", [], text_map=out.build())
                if block is not None:
                    self.last_para_text = block.text
                i += 1
                continue
            # ignore passages and comments
            if "<!--" in line:
                if _IGNORE_START.search(line):
                    self._flush()
                    i = self._skip_ignored(lines, i)
                    continue
                if line.lstrip().startswith("<!--") and "-->" not in line:
                    self._flush()
                    i += 1
                    while i < nlines and "-->" not in text[lines[i][0] : lines[i][1]]:
                        i += 1
                    i += 1
                    continue
            # block quotes: strip markers, remember we are inside one
            base = s
            depth = 0
            while True:
                qm = _QUOTE.match(text, base, e)
                if not qm:
                    break
                base = qm.end()
                depth += 1
            in_quote = depth > 0
            if in_quote != in_quote_prev:
                self._flush()
                self.list_stack.clear()
                in_quote_prev = in_quote
            line = text[base:e]
            stripped = line.strip()
            if not stripped:
                self._flush()
                i += 1
                continue
            # fenced code: skip to the closing fence (or the end of the document)
            fm = _FENCE.match(line)
            if fm:
                self._flush()
                fence = fm.group(1)
                if fence[0] == "`" and "`" in line[fm.end() :]:
                    pass  # not a fence: an inline code span at line start
                else:
                    i += 1
                    while i < nlines:
                        ls, le = lines[i]
                        l2 = text[ls:le].lstrip(" >")
                        if l2.startswith(fence[0] * len(fence)) and not l2.strip(fence[0]).strip():
                            break
                        self._reference_line(ls, le)
                        i += 1
                    i += 1
                    continue
            # raw html blocks whose content is not prose
            rm = _RAW_HTML_OPEN.match(line)
            if rm:
                self._flush()
                closer = f"</{rm.group(1).lower()}"
                while i < nlines and closer not in text[lines[i][0] : lines[i][1]].lower():
                    i += 1
                i += 1
                continue
            fd = _FOOTNOTE_DEF.match(line)
            if fd:  # "[^1]: text": the text is prose, the marker is not
                self._flush()
                base += fd.end()
                line = line[fd.end() :]
            if not self.para and _LINK_DEF.match(line):
                i += 1  # "[id]: https://..." link reference definitions are not prose
                continue
            if self.mdx and not self.para and _MDX_ESM.match(line):
                self._flush()
                i += 1
                continue
            lead = len(line) - len(line.lstrip(" \t"))
            # indented code (not inside a list, not continuing a paragraph)
            if lead >= 4 and not self.para and not self.list_stack:
                i += 1
                continue
            hm = _ATX.match(line)
            if hm:
                content = line[hm.end() :]
                cm = _ATX_CLOSE.search(content)
                if cm:
                    content = content[: cm.start()]
                am = _HEADING_ATTRS.search(content)
                if am:
                    content = content[: am.start()]  # "## Title {#anchor}"
                self._heading(len(hm.group(1)), [(content.strip(), base + hm.end() + len(content) - len(content.lstrip()))])
                i += 1
                continue
            # setext heading underline
            if self.para and self.para_kind in ("paragraph",) and not in_quote and _SETEXT.match(line):
                pieces = self.para
                self.para = []
                self._heading(1 if stripped[0] == "=" else 2, pieces)
                i += 1
                continue
            if _HR.match(line):
                self._flush()
                self.list_stack.clear()
                i += 1
                continue
            # tables
            if "|" in line and i + 1 < nlines:
                ns, ne = lines[i + 1]
                nxt = text[ns:ne]
                if in_quote:
                    nxt = nxt.lstrip(" >")
                if "-" in nxt and _TABLE_DELIM.match(nxt) and ("|" in nxt or nxt.count("-") >= 3 and "|" in line):
                    self._flush()
                    self.list_stack.clear()
                    i = self._table(lines, i)
                    continue
            lm = _LIST.match(line)
            if (
                lm
                and (lm.end() < len(line))
                and not (self.para and self.para_kind != "list_item" and lm.group(2)[0].isdigit() and not lm.group(2).startswith("1"))
            ):
                self._list_item(lm, line, base)
                i += 1
                continue
            content = line.strip()
            off = base + lead
            if self.para:
                self.para.append((content, off))
            else:
                if self.list_stack and lead >= self.list_stack[-1][1]:
                    # a further paragraph inside a list item
                    self.para = [(content, off)]
                    self.para_kind = "list_item"
                    self.para_level = max(len(self.list_stack) - 1, 0)
                    self.para_lead = ""
                else:
                    self.list_stack.clear()
                    self.para = [(content, off)]
                    self.para_kind = "quote" if in_quote else "paragraph"
            i += 1


def _runs(m: OffsetMap, n: int):
    """Yield (a, b) ranges of text positions whose offsets are contiguous."""
    starts = m._starts
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else n
        if b > a:
            yield a, b


# ---------------------------------------------------------------------------------------------
# HTML

_HTML_SKIP = {
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "math",
    "head",
    "iframe",
    "object",
    "canvas",
    "pre",
    "nav",
    "button",
    "select",
}
_HTML_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "header",
    "footer",
    "nav",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "td",
    "th",
    "caption",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "details",
    "summary",
    "hr",
    "body",
    "html",
}
_HTML_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "param", "source", "track", "wbr"}


_TAG_OPEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,64})(?=[\s/>])")
_CONSTRUCT = re.compile(r"<[A-Za-z/!?]")  # where a tag, comment or declaration may start
_MAX_TAG = 4096  # a start tag longer than this (attributes included) is read as text
_RAW_TEXT = {"script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "plaintext"}
_RAW_CLOSE: dict[str, re.Pattern] = {t: re.compile(rf"</{t}\s*>", re.I) for t in _RAW_TEXT}
_ENTITY_ANY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")


class _HTMLBlocks:
    """Collects prose blocks from HTML. Fed by ``_tokenize_html``, a linear tokenizer.

    (The standard library's HTMLParser is quadratic on inputs such as ``"<a " * 300_000``, so it
    is not used: a hostile page must not hang a nightly run.)
    """

    def __init__(self, text: str):
        self.src = text
        self.at = 0  # document offset of the token being handled
        self.blocks: list[Block] = []
        self.section: list[tuple[int, str]] = []
        self.first_heading: str | None = None
        self.first_h1: str | None = None
        self.title: str | None = None
        self.skip: list[str] = []
        self.cur = _Text()
        self.kind = "paragraph"
        self.level = 0
        self.list_depth = 0
        self.quote_depth = 0
        self.in_title = False
        self.title_buf: list[str] = []
        self.ignoring = False
        self.lead_in = ""
        self.last_para = ""
        self.list_lead: list[str] = []
        self.block_tag = ""  # the block element that opened the current block
        self.last_dt = ""
        # tables
        self.in_row = False
        self.row_cells: list[tuple[str, OffsetMap]] = []
        self.row_is_header = False
        self.headers: tuple[str, ...] = ()
        self.cell: _Text | None = None

    def _pos(self) -> int:
        return self.at

    def _section(self):
        return tuple(t for _, t in self.section)

    _reference_line = _reference_paragraph

    def _flush(self) -> None:
        text, omap = self.cur.build()
        self.cur = _Text()
        if not text:
            return
        text, omap = _collapse_ws(text, omap)
        kind = self.kind
        if kind == "paragraph" and self.list_depth:
            kind = "list_item"
        if kind == "paragraph" and self.quote_depth:
            kind = "quote"
        lead = ""
        if kind == "list_item":
            lead = self.list_lead[-1] if self.list_lead else ""
            if self.block_tag == "dt":
                self.last_dt = text
            elif self.block_tag == "dd" and self.last_dt:
                lead = self.last_dt  # a definition is read in the context of its term
        start, end = omap.span(0, len(text))
        level = self.level if kind == "heading" else max(self.list_depth - 1, 0)
        self.blocks.append(
            Block(kind=kind, start=start, end=end, text=text, offsets=omap, section=self._section(), level=level, lead_in=lead)
        )
        if kind == "heading":
            while self.section and self.section[-1][0] >= self.level:
                self.section.pop()
            self.section.append((self.level, text))
            if self.first_heading is None:
                self.first_heading = text
            if self.level == 1 and self.first_h1 is None:
                self.first_h1 = text
            self.last_para = ""
        elif kind in ("paragraph", "quote"):
            self.last_para = text
        self.kind = "paragraph"

    def handle_starttag(self, tag, attrs):
        tag = tag.lower()
        if self.ignoring:
            return
        if self.skip:
            if tag == self.skip[-1] and tag not in _HTML_VOID:
                self.skip.append(tag)
            return
        if tag in _HTML_SKIP:
            if tag == "head":
                return  # only <title> matters inside <head>; the rest is not visible text
            self._flush()
            self.skip.append(tag)
            return
        if tag == "title":
            self.in_title = True
            return
        if tag in _HTML_BLOCK:
            if self.cell is not None and tag not in ("td", "th", "tr", "table"):
                return
            self._flush()
            self.block_tag = tag
            if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
                self.kind = "heading"
                self.level = int(tag[1])
            elif tag in ("ul", "ol", "dl"):
                prev = self.last_para
                self.list_lead.append(_last_sentence(prev) if prev.rstrip().endswith(":") else "")
                self.list_depth += 1
                self.last_para = ""
            elif tag == "blockquote":
                self.quote_depth += 1
            elif tag == "tr":
                self.in_row = True
                self.row_cells = []
                self.row_is_header = True
            elif tag in ("td", "th"):
                if not self.in_row:
                    self.in_row = True
                    self.row_cells = []
                    self.row_is_header = True
                self.cell = _Text()
                if tag == "td":
                    self.row_is_header = False
            elif tag == "table":
                self.headers = ()
            return
        if tag == "br":
            target = self.cell if self.cell is not None else self.cur
            target.add_synthetic(" ", self._pos())

    def handle_endtag(self, tag):
        tag = tag.lower()
        if self.ignoring:
            return
        if self.skip:
            if tag == self.skip[-1]:
                self.skip.pop()
            return
        if tag == "title":
            self.in_title = False
            self.title = _one_line("".join(self.title_buf)) or None
            return
        if tag in ("td", "th") and self.cell is not None:
            text, omap = self.cell.build()
            text, omap = _collapse_ws(text, omap)
            self.row_cells.append((text, omap))
            self.cell = None
            return
        if tag == "tr":
            self._end_row()
            return
        if tag == "table":
            self._end_row()
            self.headers = ()
            return
        if tag in _HTML_BLOCK:
            if self.cell is not None:
                return
            self._flush()
            if tag in ("ul", "ol", "dl"):
                self.list_depth = max(self.list_depth - 1, 0)
                if self.list_lead:
                    self.list_lead.pop()
            elif tag == "blockquote":
                self.quote_depth = max(self.quote_depth - 1, 0)

    def _end_row(self):
        if self.cell is not None:
            self.handle_endtag("td")
        if not self.in_row:
            return
        self.in_row = False
        cells = self.row_cells
        self.row_cells = []
        if not cells:
            return
        if self.row_is_header and not self.headers:
            self.headers = tuple(t for t, _ in cells)
            return
        out = _Text()
        for k, (t, m) in enumerate(cells):
            if k:
                out.add_synthetic(" | ", m[0] if len(m) else 0)
            if not t:
                out.add_synthetic("-", 0 if not self.blocks else self.blocks[-1].end)
                continue
            for a, b in _runs(m, len(t)):
                out.add(t[a:b], m[a])
        text = "".join(out.parts)
        omap = OffsetMap(out.starts, out.docs, out.n)
        if not text.strip(" |-"):
            return
        start, end = omap.span(0, len(text))
        self.blocks.append(
            Block(kind="table_row", start=start, end=end, text=text, offsets=omap, section=self._section(), headers=self.headers)
        )

    def _data(self, data: str, off: int, synthetic: bool = False):
        if self.in_title:
            self.title_buf.append(data)
            return
        if self.skip or self.ignoring:
            return
        target = self.cell if self.cell is not None else self.cur
        if synthetic:
            target.add_synthetic(data, off)
        else:
            target.add(data, off)

    def handle_data(self, data):
        self._data(data, self._pos())

    def handle_comment(self, data):
        if _IGNORE_START.fullmatch(f"<!--{data}-->"):
            self._flush()
            self.ignoring = True
        elif _IGNORE_END.fullmatch(f"<!--{data}-->"):
            self.ignoring = False


_WS = re.compile(r"\s+")


def _collapse_ws(text: str, omap: OffsetMap) -> tuple[str, OffsetMap]:
    """Collapse whitespace runs to one space (HTML rendering), keeping offsets aligned."""
    if "  " not in text and "\n" not in text and "\t" not in text and "\r" not in text:
        return text, omap
    out = _Text()
    pos = 0
    for m in _WS.finditer(text):
        if m.start() > pos:
            _copy(out, text, omap, pos, m.start())
        out.add_synthetic(" ", omap[m.start()]) if text[m.start()] != " " else out.add(" ", omap[m.start()])
        pos = m.end()
    if pos < len(text):
        _copy(out, text, omap, pos, len(text))
    return out.build()


def _copy(out: _Text, text: str, omap: OffsetMap, a: int, b: int) -> None:
    """Copy text[a:b] into ``out`` with its offsets, run by run."""
    starts = omap._starts
    k = bisect_right(starts, a) - 1
    i = a
    while i < b:
        run_end = starts[k + 1] if k + 1 < len(starts) else len(omap)
        j = min(b, run_end)
        out.add(text[i:j], omap[i])
        i = j
        k += 1


def _html_data(p: _HTMLBlocks, text: str, a: int, b: int) -> None:
    """Hand text[a:b] to the collector, decoding character references."""
    if "&" not in text[a:b]:
        p.at = a
        p.handle_data(text[a:b])
        return
    pos = a
    for m in _ENTITY_ANY.finditer(text, a, b):
        if m.start() > pos:
            p.at = pos
            p.handle_data(text[pos : m.start()])
        decoded = html.unescape(m.group(0))
        p.at = m.start()
        if decoded == m.group(0):
            p.handle_data(decoded)
        else:
            p._data(decoded.replace("\xa0", " "), m.start(), synthetic=True)
        pos = m.end()
    if pos < b:
        p.at = pos
        p.handle_data(text[pos:b])


def _tokenize_html(p: _HTMLBlocks, text: str) -> None:
    """A forgiving, linear HTML tokenizer: tags, comments, raw-text elements, data."""
    i = 0  # scan position
    ds = 0  # start of the pending data run (stray "<" characters stay inside it)
    n = len(text)
    find = _CONSTRUCT.search
    while i < n:
        c = find(text, i)
        if c is None:
            break
        j = c.start()
        if text.startswith("<!--", j):
            if j > ds:
                _html_data(p, text, ds, j)
            k = text.find("-->", j + 4)
            p.at = j
            p.handle_comment(text[j + 4 : k if k != -1 else n])
            i = ds = n if k == -1 else k + 3
            continue
        m = _TAG_OPEN.match(text, j)
        if m:
            k = text.find(">", m.end(), m.end() + _MAX_TAG)
            if k == -1:
                i = j + 1  # a stray "<": part of the text
                continue
            if j > ds:
                _html_data(p, text, ds, j)
            tag = m.group(2).lower()
            p.at = j
            i = ds = k + 1
            if m.group(1):
                p.handle_endtag(tag)
                continue
            p.handle_starttag(tag, [])
            if text[k - 1] == "/" and tag not in _HTML_VOID:
                p.handle_endtag(tag)
            elif tag in _RAW_TEXT:
                close = _RAW_CLOSE[tag].search(text, i)
                stop = close.start() if close else n
                if tag == "title" and p.in_title:
                    p.title_buf.append(html.unescape(text[i:stop]))
                i = ds = close.end() if close else n
                p.at = stop
                p.handle_endtag(tag)
            continue
        if text.startswith(("<!", "<?", "</"), j):
            if j > ds:
                _html_data(p, text, ds, j)
            k = text.find(">", j + 2)  # doctype, CDATA, processing instruction, bogus end tag
            i = ds = n if k == -1 else k + 1
            continue
        i = j + 1  # a stray "<"
    if ds < n:
        _html_data(p, text, ds, n)


def _parse_html(text: str) -> tuple[list[Block], str | None]:
    p = _HTMLBlocks(text)
    _tokenize_html(p, text)
    p._end_row()
    p._flush()
    return p.blocks, p.title or p.first_h1 or p.first_heading
