"""Markdown (CommonMark/GFM subset, MkDocs, MyST, MDX) and plain text to prose blocks."""

from __future__ import annotations

import re

from kb.ingest.commands import command_lines, is_shell, language_of
from kb.ingest.common import IGNORE_END, IGNORE_START, last_sentence
from kb.ingest.config_blocks import DEFAULT_SETTINGS_HEADERS, announces_defaults, is_yaml, setting_rows
from kb.ingest.html_blocks import html_block
from kb.ingest.markdown_containers import FENCE, closes_fence, unwrap_containers
from kb.ingest.markdown_inline import inline_markdown, inline_markdown_lines
from kb.ingest.offsets import OffsetMap, TextBuilder, runs
from kb.records import Block

__all__ = ["MarkdownParser"]

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"[ \t]+#+[ \t]*$|^#+[ \t]*$")
# "[ poll_interval: <duration> | default = 1m ]", "[ - <scrape_config> ... ]" is not one
_REFERENCE_LINE = re.compile(r"[ \t]*(?:#\s*)?\[\s*([A-Za-z_][\w.-]*:\s*<[\w. -]+>(?:\s*\|\s*default\s*=\s*[^\]]*?)?)\s*\][ \t]*")
_HR = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_LIST = re.compile(r"( *)([-*+•]|\d{1,9}[.)])([ \t]+|$)")
_QUOTE = re.compile(r" {0,3}> ?")
_QUOTES = re.compile(r"(?: {0,3}> ?)*")
_TABLE_DELIM = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_COMMENT_LINE = re.compile(r"[ \t]*(?:<!--.*?-->|\{/\*.*?\*/\})[ \t]*$")  # HTML; MDX
# the block-level tags that open an HTML block in CommonMark (its type 6): the block's prose is
# read through kb.ingest.html_blocks, which skips what holds none (an <iframe> embed, a <nav>)
_HTML_BLOCK_OPEN = re.compile(
    r" {0,3}</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|"
    r"div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|"
    r"main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|"
    r"title|tr|track|ul)(?:[\s/>]|$)",
    re.I,
)
_RAW_HTML_OPEN = re.compile(r" {0,3}<(script|style|pre|textarea)(?:\s|>|$)", re.I)
_MDX_ESM = re.compile(r"(?:import|export)\s")
_JSX_OPEN = re.compile(r" {0,3}<[A-Z][A-Za-z0-9.]*(?=[\s/>]|$)")
MAX_JSX_TAG_LINES = 40


def jsx_tag_end(text: str, start: int, limit: int) -> int | None:
    """Where the JSX tag opened at ``start`` closes (the offset after its ``>``), reading its
    attributes' ``{...}`` expressions and quoted strings whole, or None when it does not close
    before ``limit``."""
    depth, quote, k = 0, "", start + 1
    while k < limit:
        ch = text[k]
        if quote:
            if ch == "\\":
                k += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ">" and depth == 0:
            return k + 1
        k += 1
    return None


_FOOTNOTE_DEF = re.compile(r" {0,3}\[\^[^\]\s]{1,50}\]:[ \t]*")
_LINK_DEF = re.compile(r" {0,3}\[[^\]^][^\]]{0,200}\]:[ \t]*\S+")
# "{#id}", "{: #id .class }" (Python-Markdown's attr_list), "\{#id}" (MDX's escaped form)
_HEADING_ATTRS = re.compile(r"[ \t]*\\?\{:?[ \t]*[#.][^{}]{0,200}\}[ \t]*$")


def _looks_like_title(line: str) -> bool:
    words = line.split()
    return 0 < len(words) <= 8 and line[:1].isupper() and line.rstrip()[-1:] not in ".!?:;," and "  " not in line


class MarkdownParser:
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
            out = TextBuilder()
            if self.plain:
                for idx, (s, off) in enumerate(pieces):
                    if idx and not out.ends_with_space():
                        out.add(" ", off - 1) if off > 0 and self.text[off - 1] in " \t\n" else out.add_synthetic(" ", off)
                    out.add(s, off)
            else:
                inline_markdown_lines(out, pieces, self.text)
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

    def _item_column(self, line: str) -> int:
        """The content column of the deepest open list item ``line`` is indented into (0: none)."""
        lead = len(line) - len(line.lstrip(" "))
        return next((ci for _, ci, _ in reversed(self.list_stack) if ci <= lead), 0)

    def _reference_line(self, s: int, e: int) -> None:
        """A configuration reference written as a code block states each option's type and default
        on a line of its own ("[ poll_interval: <duration> | default = 1m ]"): that line is a setting
        of the page, not an example, so it becomes a paragraph of its own (without the brackets).
        Every other line of a code block stays out."""
        m = _REFERENCE_LINE.match(self.text, s, e)
        if m is None or m.end() != e:
            return
        out = TextBuilder()
        out.add(m.group(1), m.start(1))
        self._emit("paragraph", [], text_map=out.build())

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
        out = TextBuilder()
        inline_markdown(out, cell, off)
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
        out = TextBuilder()
        for k, (c, o) in enumerate(cells):
            if k:
                out.add_synthetic(" | ", max(o - 1, 0))
            t, m = self._cell_text(c, o)
            if not t:
                out.add_synthetic("-", o)  # keep the column count: an empty cell
                continue
            for a, b in runs(m, len(t)):
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
            lines, self.titles = unwrap_containers(text, lines)
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
            if IGNORE_START.search(line):
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
        m = IGNORE_START.search(text, s, e)
        if m and IGNORE_END.search(text, m.end(), e):
            return i + 1  # both on one line
        i += 1
        while i < len(lines):
            s, e = lines[i]
            if IGNORE_END.search(text, s, e):
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
            self.list_lead = last_sentence(prev) if prev.rstrip().endswith(":") else ""
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
        # A line-by-line state machine of CommonMark's blocks: its states share the open block and the offsets.
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
                out = TextBuilder()
                inline_markdown(out, title, off)
                if out.n and not title.rstrip().endswith((":", ".", "?", "!")):
                    out.add_synthetic(":", off + len(title) - 1)
                block = self._emit("paragraph", [], text_map=out.build())
                if block is not None:
                    self.last_para_text = block.text
                i += 1
                continue
            # ignore passages and comments
            if "<!--" in line:
                if IGNORE_START.search(line):
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
            if _COMMENT_LINE.match(line):
                # a comment on a line of its own ends a paragraph: what follows it ("<!--links-->"
                # and link definitions) is not the paragraph's continuation
                self._flush()
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
            # fenced code: skip to the closing fence (or the end of the document); inside a list
            # item the fence is indented from the item's content ("1. Step:" then "    ```bash")
            fm = FENCE.match(line, self._item_column(line))
            if fm:
                self._flush()
                fence = fm.group(1)
                if fence[0] == "`" and "`" in line[fm.end() :]:
                    pass  # not a fence: an inline code span at line start
                else:
                    opened = len(line) - len(line.lstrip(" "))
                    info = line[fm.end() :]
                    shell = is_shell(info)
                    section = self._section()
                    lead = self.last_para_text if self.last_block_kind == "paragraph" else ""
                    defaults = is_yaml(language_of(info)) and announces_defaults(section[-1] if section else "", lead)
                    code: list[tuple[str, int]] = []
                    i += 1
                    while i < nlines:
                        ls, le = lines[i]
                        inner = text[ls:le]
                        qm = _QUOTES.match(inner) if in_quote else None
                        if closes_fence(inner[qm.end() :] if qm else inner, fence, opened):
                            break
                        self._reference_line(ls, le)
                        if shell is not False or defaults:
                            code.append((inner[qm.end() :], ls + qm.end()) if qm else (inner, ls))
                        i += 1
                    i += 1
                    if defaults:
                        for row in setting_rows(code):
                            self._emit("table_row", [], headers=DEFAULT_SETTINGS_HEADERS, text_map=row)
                        continue
                    for command in command_lines(code, language_of(info) if shell else ""):
                        self._emit("command", [], text_map=command)
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
            if not in_quote and _HTML_BLOCK_OPEN.match(line):
                # CommonMark's HTML block: from a block-level tag to the next blank line
                self._flush()
                self.list_stack.clear()
                j = i
                while j + 1 < nlines and text[lines[j + 1][0] : lines[j + 1][1]].strip():
                    j += 1
                for block in html_block(text, s, lines[j][1], self.section, self.mdx):
                    self.blocks.append(block)
                    self.last_block_kind = block.kind
                self.last_para_text = ""
                i = j + 1
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
            if not self.plain and not self.para and _JSX_OPEN.match(line):
                # a component's opening tag (MDX, Vue) is markup, also when its attributes run over
                # several lines ("<Tabs defaultValue="1"\n  values={[ {label: 'A', value: '1'} ]}>"),
                # where CommonMark sees no HTML and would read the attributes as prose
                last = min(nlines, i + MAX_JSX_TAG_LINES) - 1
                end = jsx_tag_end(text, s + line.index("<"), lines[last][1])
                if end is not None:
                    j = i
                    while lines[j][1] < end:
                        j += 1
                    if not text[end : lines[j][1]].strip():
                        self._flush()
                        i = j + 1
                        continue
            lead = len(line) - len(line.lstrip(" \t"))
            # indented code (not inside a list, not continuing a paragraph)
            if lead >= 4 and not self.para and not self.list_stack:
                i += 1
                continue
            hm = _ATX.match(line)
            if hm:
                content = line[hm.end() :]
                # attributes first ("## Title {#anchor}"): with them after a closing sequence
                # ("## 1.10.0 ## {: #v1.10.0 }", Python-Markdown's attr_list) the hashes close it
                am = _HEADING_ATTRS.search(content)
                if am:
                    content = content[: am.start()]
                cm = _ATX_CLOSE.search(content)
                if cm:
                    content = content[: cm.start()]
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
                fm = FENCE.match(line, lm.end())
                if fm and not (fm.group(1)[0] == "`" and "`" in line[fm.end() :]):
                    # "- ```": the item is a code block, to its own closing fence (and no further)
                    self.para = []
                    i += 1
                    while i < nlines and not closes_fence(text[lines[i][0] : lines[i][1]], fm.group(1), lm.end()):
                        i += 1
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
