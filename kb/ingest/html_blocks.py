"""HTML to prose blocks with exact offsets, through a linear tokenizer of its own."""

from __future__ import annotations

import html
import re

from kb.ingest.common import IGNORE_END, IGNORE_START, last_sentence, one_line
from kb.ingest.offsets import OffsetMap, TextBuilder, collapse_ws, runs
from kb.records import Block

__all__ = ["html_block", "parse_html"]

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
_TEMPLATE_ACTION = re.compile(r"\{\{.{0,2000}?\}\}|\{%.{0,2000}?%\}", re.S)
# A Jinja translation call, ``{{ _('Useful Links') }}``, ``{{ gettext("Home") }}``, renders as its
# string: a Sphinx theme's templates hold their text that way, and read as code every word of
# them was lost (a link moved to another template then read as removed)
_TRANSLATED = re.compile(r"""\{\{-?[ \t]*(?:_|gettext)\([ \t]*(?:"([^"\\\n]{0,2000})"|'([^'\\\n]{0,2000})')[ \t]*\)[ \t]*-?\}\}""")
# MDX: a JSX expression holding one string literal, ``{"[{ type: 'Post' }]"}``, ``{' '}``, renders
# as the string: the braces and quotes are JavaScript, the string is the page's text
_JSX_STRING = re.compile(r"""\{[ \t]*(?:"([^"\\\n]{0,2000})"|'([^'\\\n]{0,2000})')[ \t]*\}""")
_ENTITY_ANY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")


class _HTMLBlocks:
    """Collects prose blocks from HTML. Fed by ``_tokenize_html``, a linear tokenizer.

    (The standard library's HTMLParser is quadratic on inputs such as ``"<a " * 300_000``, so it
    is not used: a hostile page must not hang a nightly run.)
    """

    def __init__(self, text: str, mdx: bool = False):
        self.src = text
        self.mdx = mdx
        self.at = 0  # document offset of the token being handled
        self.blocks: list[Block] = []
        self.section: list[tuple[int, str]] = []
        self.first_heading: str | None = None
        self.first_h1: str | None = None
        self.title: str | None = None
        self.skip: list[str] = []
        self.cur = TextBuilder()
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
        self.cell: TextBuilder | None = None

    def _pos(self) -> int:
        return self.at

    def _section(self):
        return tuple(t for _, t in self.section)

    def _flush(self) -> None:
        text, omap = self.cur.build()
        self.cur = TextBuilder()
        if not text:
            return
        text, omap = collapse_ws(text, omap)
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
                self.list_lead.append(last_sentence(prev) if prev.rstrip().endswith(":") else "")
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
                self.cell = TextBuilder()
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
            self.title = one_line("".join(self.title_buf)) or None
            return
        if tag in ("td", "th") and self.cell is not None:
            text, omap = self.cell.build()
            text, omap = collapse_ws(text, omap)
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
        out = TextBuilder()
        for k, (t, m) in enumerate(cells):
            if k:
                out.add_synthetic(" | ", m[0] if len(m) else 0)
            if not t:
                out.add_synthetic("-", 0 if not self.blocks else self.blocks[-1].end)
                continue
            for a, b in runs(m, len(t)):
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
        if IGNORE_START.fullmatch(f"<!--{data}-->"):
            self._flush()
            self.ignoring = True
        elif IGNORE_END.fullmatch(f"<!--{data}-->"):
            self.ignoring = False


def _html_data(p: _HTMLBlocks, text: str, a: int, b: int) -> None:
    """Hand text[a:b] to the collector, less template actions (``{{ .Title }}``, ``{% if %}``):
    a page that still holds them is a template, and they are its code, not its prose."""
    if "{" not in text[a:b]:
        _html_text(p, text, a, b)
        return
    pos = a
    for m in _TEMPLATE_ACTION.finditer(text, a, b):
        if m.start() > pos:
            _jsx_text(p, text, pos, m.start())
        said = _TRANSLATED.fullmatch(m.group(0))
        if said is not None:
            g = 1 if said.group(1) is not None else 2
            _html_text(p, text, m.start() + said.start(g), m.start() + said.end(g))
        pos = m.end()
    if pos < b:
        _jsx_text(p, text, pos, b)


def _jsx_text(p: _HTMLBlocks, text: str, a: int, b: int) -> None:
    """Hand text[a:b] to the collector; in MDX, a JSX string expression as its string."""
    if not p.mdx:
        _html_text(p, text, a, b)
        return
    pos = a
    for m in _JSX_STRING.finditer(text, a, b):
        if m.start() > pos:
            _html_text(p, text, pos, m.start())
        g = 1 if m.group(1) is not None else 2
        if m.end(g) > m.start(g):
            _html_text(p, text, m.start(g), m.end(g))
        pos = m.end()
    if pos < b:
        _html_text(p, text, pos, b)


def _html_text(p: _HTMLBlocks, text: str, a: int, b: int) -> None:
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


def _tokenize_html(p: _HTMLBlocks, text: str, start: int = 0, end: int | None = None) -> None:
    """A forgiving, linear HTML tokenizer: tags, comments, raw-text elements, data (of
    ``text[start:end]``: an HTML block inside a Markdown page)."""
    i = start  # scan position
    ds = start  # start of the pending data run (stray "<" characters stay inside it)
    n = len(text) if end is None else end
    find = _CONSTRUCT.search
    while i < n:
        c = find(text, i, n)
        if c is None:
            break
        j = c.start()
        if text.startswith("<!--", j):
            if j > ds:
                _html_data(p, text, ds, j)
            k = text.find("-->", j + 4, n)
            p.at = j
            p.handle_comment(text[j + 4 : k if k != -1 else n])
            i = ds = n if k == -1 else k + 3
            continue
        m = _TAG_OPEN.match(text, j)
        if m:
            k = text.find(">", m.end(), min(n, m.end() + _MAX_TAG))
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
                close = _RAW_CLOSE[tag].search(text, i, n)
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
            k = text.find(">", j + 2, n)  # doctype, CDATA, processing instruction, bogus end tag
            i = ds = n if k == -1 else k + 1
            continue
        i = j + 1  # a stray "<"
    if ds < n:
        _html_data(p, text, ds, n)


def html_block(text: str, start: int, end: int, section: list[tuple[int, str]], mdx: bool = False) -> list[Block]:
    """The prose blocks of an HTML block inside a Markdown page (``text[start:end]``), under the
    page's current section: a definition list of a generated CLI reference reads as one item per
    term and per definition, as it does in an HTML page, not as one run of text. ``mdx``: the
    page is MDX, whose JSX string expressions are text."""
    p = _HTMLBlocks(text, mdx)
    p.section = list(section)
    _tokenize_html(p, text, start, end)
    p._end_row()
    p._flush()
    return p.blocks


def parse_html(text: str) -> tuple[list[Block], str | None]:
    p = _HTMLBlocks(text)
    _tokenize_html(p, text)
    p._end_row()
    p._flush()
    return p.blocks, p.title or p.first_h1 or p.first_heading
