"""reStructuredText to prose blocks with exact offsets, through docutils' own parser.

docutils builds the document tree; each prose element (section title, paragraph, list-item or
block-quote paragraph, admonition body) becomes a Block whose characters are located back in
the source text word by word (docutils keeps line numbers, not character offsets); a table's
body row (simple, grid, ``list-table`` or ``csv-table``) becomes a ``table_row`` block, its cells
joined by " | " and its header row's cells as the block's headers, as a Markdown table's rows
are. Sphinx's description directives (``envvar``, ``confval``, ``option``, ``function``...) read as
their name (a term, or with options a one-row table: "name timeout: default is 5") and their
body; its version, tab, see-also and autodoc directives as their body (an autodoc directive's
docstrings are not in the docs tree; what the page writes inside it is). Literal blocks,
comments, raw blocks, substitution definitions, field lists and other directives docutils does
not know (``program-output``, an extension's own...) never become prose.
Sphinx roles (``:ref:``, ``:func:``...) and the roles of Sphinx extensions (``:pypi:``, ``:issue:``...)
read as their text. Nothing is included or executed.
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.languages import en as _rst_en

from kb.ingest.commands import command_lines, is_shell

_SPHINX_ROLES = ("ref", "doc", "class", "func", "meth", "mod", "attr", "obj", "data", "exc", "option",
                 "envvar", "program", "file", "command", "term", "kbd", "samp", "py:class", "py:func",
                 "py:meth", "py:mod", "py:attr", "confval", "any", "abbr", "guilabel", "menuselection")  # fmt: skip


def _xref_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """A Sphinx cross-reference reads as its title: ":ref:`the configuration <config>`"."""
    m = re.match(r"(.*?)\s*<([^<>]*)>$", text, re.S)
    shown = m.group(1) if m and m.group(1) else text
    return [nodes.literal(rawtext, shown.lstrip("~!"))], []


for _name in _SPHINX_ROLES:
    # docutils' stubs type a role's nodes as references; any inline node is valid at run time
    roles.register_local_role(_name, _xref_role)  # pyright: ignore[reportArgumentType]


class _AnyOption(dict):
    """Every option a Sphinx directive may take (":type:", ":default:", ":noindex:"), as text."""

    def __getitem__(self, key):
        return directives.unchanged

    def __contains__(self, key):
        return True

    def __bool__(self):  # docutils reads options only for a directive whose spec is not empty
        return True


class _EntryDirective(Directive):
    """A Sphinx description (``.. envvar:: PYTEST_DEBUG``, ``.. confval:: timeout``, ``..
    function:: fetch(url)``): its name reads as a term and its body as prose. Unknown to
    docutils, such an entry was dropped whole, and with it a reference page's every setting.
    Its options with a value (":type: int", ":default: 5") read as one table row of the entry,
    the name first: "name timeout: default is 5" names its entry, as a bare "default: 5" line,
    alike under every entry of a page, would not."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOption()

    def run(self):
        node = nodes.container()
        fields = [(name, value) for name, value in self.options.items() if value and name not in _NO_VALUE_OPTIONS]
        if self.arguments and fields:
            node += self._row(self.arguments[0], fields)
        elif self.arguments:
            term = nodes.term(self.arguments[0], self.arguments[0])
            term.line = self.lineno
            node += term
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]

    def _row(self, name: str, fields: list[tuple[str, str]]):
        """A one-row table: "name" and each option's name as headers, the entry's name and the
        options' values (inline markup read) as cells."""

        def cell(*children):
            entry = nodes.entry()
            entry += nodes.paragraph("", "", *children)
            entry.line = self.lineno
            return entry

        head, body = nodes.row(), nodes.row()
        head += cell(nodes.Text("name"))
        body += cell(nodes.Text(name))
        for option, value in fields:
            shown, _ = self.state.inline_text(value, self.lineno)
            head += cell(nodes.Text(option))
            body += cell(*shown)
        group = nodes.tgroup(cols=len(fields) + 1)
        group += nodes.thead("", head)
        group += nodes.tbody("", body)
        return nodes.table("", group)


# options that tune how Sphinx shows or indexes an entry: no fact of it
_NO_VALUE_OPTIONS = frozenset("noindex no-index noindexentry no-index-entry nocontentsentry no-contents-entry module "
                              "annotation canonical".split())  # fmt: skip


class _BodyDirective(_EntryDirective):
    """A Sphinx container whose body is prose (``.. versionchanged:: 9.0``, ``.. tab:: toml``,
    ``.. seealso::``): the body only; its argument is a version or a label, not a statement."""

    def run(self):
        node = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


_ENTRY_DIRECTIVES = ("envvar", "confval", "option", "cmdoption", "describe", "object", "function", "class", "method",
                     "attribute", "data", "exception", "decorator", "py:function", "py:class", "py:method",
                     "py:attribute", "py:data", "py:exception", "py:decorator", "py:property", "std:confval")  # fmt: skip
_BODY_DIRECTIVES = ("versionadded", "versionchanged", "deprecated", "versionremoved", "seealso", "tab", "tab-set",
                    "tab-item", "tabs", "group-tab", "dropdown", "card", "grid", "grid-item", "grid-item-card", "only",
                    "hlist", "glossary", "centered",
                    # autodoc: the docstrings are not in the docs tree, but what the page writes
                    # inside the directive (a method described by hand) is
                    "autoclass", "autofunction", "automethod", "autoattribute", "automodule", "autoexception",
                    "autodata")  # fmt: skip


class _CodeDirective(Directive):
    """Sphinx's ``code-block`` with any of its options (``:caption:``, ``:linenos:``,
    ``:emphasize-lines:``): docutils' own ``code`` knows three, and drops a block with another
    whole, and with it the block's commands. The block's language is its class, as docutils'."""

    optional_arguments = 1
    has_content = True
    option_spec = _AnyOption()

    def run(self):
        text = "\n".join(self.content)
        return [nodes.literal_block(text, text, classes=["code", *self.arguments[:1]])]


for _name in ("code-block", "sourcecode"):
    directives.register_directive(_name, _CodeDirective)
for _name in _ENTRY_DIRECTIVES:
    directives.register_directive(_name, _EntryDirective)
for _name in _BODY_DIRECTIVES:
    directives.register_directive(_name, _BodyDirective)

_KNOWN_ROLES = set(_SPHINX_ROLES) | set(_rst_en.roles) | set(_rst_en.roles.values())
# a role in use, ":pypi:`pipx`", ":issue:`3327`", ":gh:`Actions <features/actions>`"
_ROLE_USE = re.compile(r"(?<![\w`:]):((?:[A-Za-z][\w+.-]*:)?[A-Za-z][\w+.-]*):`")


def _read_unknown_roles_as_text(source: str) -> None:
    """Register every role the source uses that neither docutils nor the Sphinx list above knows
    (an extension's ``:pypi:``, ``:issue:``, ``:user:``, ``:pull:``...) as text. Unregistered,
    docutils leaves the role's markup in the sentence, so ":pull:`3325`" and ":pr:`3325`" read
    as two different identifiers although both show the same pull request."""
    for name in set(_ROLE_USE.findall(source)):
        low = name.lower()
        if low in _KNOWN_ROLES:
            continue
        roles.register_local_role(low, _xref_role)  # pyright: ignore[reportArgumentType]
        _KNOWN_ROLES.add(low)


_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": False, "file_insertion_enabled": False,
    "raw_enabled": False, "input_encoding": "unicode", "_disable_config": True, "embed_stylesheet": False,
    "syntax_highlight": "none", "doctitle_xform": False, "sectsubtitle_xform": False,
}  # fmt: skip
_SKIP = (nodes.literal_block, nodes.comment, nodes.raw, nodes.substitution_definition, nodes.system_message,
         nodes.field_list, nodes.docinfo, nodes.target, nodes.doctest_block, nodes.problematic,
         nodes.math_block, nodes.pending)  # fmt: skip
_WORD = re.compile(r"\S+")
_PIECE = re.compile(r"\w+|\W")
_WORDCHAR = re.compile(r"\w")
_FIRST_PIECE = re.compile(r"\w+")
_REFERENCE_END = re.compile(r"__?(?!\w)")  # the underscores that end a reference name: "pipx_"
_NEWLINE = re.compile(r"\n")
_OPENING = {")": "(", "]": "["}
_NEAR = 40  # markup between two words (a role's name, backquotes, a line break) is rarely longer
_GAP = 400  # ... and never this long: an embedded link target, a skipped inline substitution


class _Locator:
    """Finds the visible words of successive blocks in the source, left to right."""

    def __init__(self, text: str):
        self.text = text
        self.cursor = 0
        self._lines: list[int] | None = None  # where each line starts, found on first use

    def _line_offset(self, line: int) -> int:
        if self._lines is None:
            self._lines = [0, *(m.end() for m in _NEWLINE.finditer(self.text))]
        return self._lines[line - 1] if line - 1 < len(self._lines) else len(self.text)

    def locate(self, visible: str, line: int | None) -> tuple[str, tuple[int, ...]] | None:
        if line:  # not before the element's line (a paragraph's first line; a title's underline)
            self.cursor = max(self.cursor, self._line_offset(max(line - 2, 1)))
        out_text: list[str] = []
        offsets: list[int] = []
        pos = self.cursor
        found = list(_WORD.finditer(visible))
        for i, m in enumerate(found):
            word = m.group()
            # the first word may sit after skipped code; each next one follows the word before it
            # closely, so that a word the source does not hold there (a substitution's text) is
            # never taken from another sentence further on, with the rest of the block after it
            at = self._find(word, pos, pos + (2000 if not offsets else _GAP) + len(word))
            if at < 0 or (offsets and self.text[pos:at].strip()) or at - pos > _NEAR:
                # markup inside the word ("``black``.", ":mod:`logging`."): its pieces one by one,
                # close together; they win over the whole word found further on, even a few
                # characters on ("``hello``." is not the "hello." of "hello.web" on the next line)
                pieces, words_found = self._pieces(word, pos, _GAP if not offsets else _NEAR)
                if at >= 0 and not (words_found and pieces[0][1] < at):
                    nxt = _FIRST_PIECE.search(found[i + 1].group()) if offsets and i + 1 < len(found) else None
                    if nxt and self._here(nxt.group(), pos, min(at, pos + _NEAR)):
                        continue  # the next word is right here: this one is generated (a substitution's text, "PEP")
                    pieces = [(word, at)]
                elif not pieces:
                    continue  # generated text (a substitution, a role's target): not in the source
            else:
                pieces = [(word, at)]
            if out_text:
                out_text.append(" ")
                offsets.append(offsets[-1] + 1 if self.text[offsets[-1] + 1 : offsets[-1] + 2].isspace() else offsets[-1])
            for piece, q in pieces:
                out_text.append(piece)
                offsets.extend(range(q, q + len(piece)))
                pos = q + len(piece)
        if not offsets:
            return None
        self.cursor = pos
        return "".join(out_text), tuple(offsets)

    def _here(self, word: str, lo: int, hi: int) -> bool:
        """``word`` stands between ``lo`` and ``hi`` as text, not as a role's name: in ":option:`-r`
        option" the role's "option" before "-r" is markup, and "-r" is no generated text."""
        at = self._find(word, lo, hi)
        while at >= 0 and self.text[at - 1 : at] == ":" and self.text[at + len(word) : at + len(word) + 1] == ":":
            at = self._find(word, at + 1, hi)
        return at >= 0

    def _find(self, s: str, lo: int, hi: int) -> int:
        """Where ``s`` stands in the source between ``lo`` and ``hi`` as a word of its own, not
        inside a longer one: ``string`` is not the start of ``bytestring`` beside it, and a word
        that ends a sentence ("hello.") is not the start of ``hello.web``. A reference name's
        closing underscores (``pipx_``, ``guide__``) are markup, not part of the word."""
        text = self.text
        at = text.find(s, lo, hi)
        while at >= 0 and (
            (_WORDCHAR.match(s[0]) and at > 0 and _WORDCHAR.match(text[at - 1]))
            or (
                (_WORDCHAR.match(s[-1]) or (s[-1] in ".,;:" and _WORDCHAR.match(s[-2:])))
                and _WORDCHAR.match(text, at + len(s))
                and not (s[-1] != "_" and _REFERENCE_END.match(text, at + len(s)))
            )
        ):
            at = text.find(s, at + 1, hi)
        return at

    def _pieces(self, word: str, pos: int, reach: int) -> tuple[list[tuple[str, int]], bool]:
        """The pieces of ``word`` found one after another, the first within ``reach`` of ``pos``
        (a block's first word may sit a line or two after where its line number points), and
        whether each of its word characters was (punctuation may be generated: ``fetch()``)."""
        pieces = []
        p = pos
        words_found = True
        for piece in _PIECE.findall(word):
            # a closing bracket whose opening one is here may follow a link target: "(`#2588 <url>`_)"
            far = not pieces or (piece in ")]" and any(o == _OPENING[piece] for o, _ in pieces))
            q = self._find(piece, p, p + (reach if not pieces else _GAP if far else _NEAR) + len(piece))
            if q >= 0:
                pieces.append((piece, q))
                p = q + len(piece)
            elif piece[0].isalnum() or piece[0] == "_":
                words_found = False
        return pieces, words_found and bool(pieces)


def _line_start(text: str, line: str, lo: int, hi: int) -> int:
    """Where ``line`` stands in ``text`` between ``lo`` and ``hi`` as the start of a line (after
    its indentation), -1 if nowhere: a comment or a YAML step that mentions the same command
    earlier on is not that command's line."""
    at = text.find(line, lo, hi)
    while at >= 0 and text[text.rfind("\n", 0, at) + 1 : at].strip():
        at = text.find(line, at + 1, hi)
    return at


_GRID_BORDER = re.compile(r"[ \t]*\+(?:[-=]+\+)+[ \t]*$")


def _grid_rows(text: str, start: int) -> tuple[list[tuple[list[int], list[tuple[str, int]]]], int] | None:
    """The rows of the grid table whose top border starts at ``start``: for each, the column
    boundaries of the border above it (positions of its ``+``) and its lines with their
    offsets; and where the table ends. None if no grid table starts there."""
    rows: list[tuple[list[int], list[tuple[str, int]]]] = []
    pos = start
    border: list[int] | None = None
    lines: list[tuple[str, int]] = []
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        if _GRID_BORDER.match(line):
            if border is not None and lines:
                rows.append((border, lines))
            border, lines = [i for i, c in enumerate(line) if c == "+"], []
        elif border is not None and line.lstrip().startswith(("|", "+")):
            lines.append((line, pos))
        else:
            break
        pos = end + 1
    if border is None or lines or not rows:
        return None  # no border there, or a row spanning rows left a partial border: not read by columns
    return rows, min(pos, len(text))


def _grid_cells(row, source_row: tuple[list[int], list[tuple[str, int]]]) -> list[tuple[str, list[int]]] | None:
    """Each cell of a grid table's row as its column's text, line under line, with the source
    offset of each character; None when the cells do not fill the border's columns (a cell
    spanning rows)."""
    bounds, lines = source_row
    entries = _cells(row)
    if sum(1 + int(e.get("morecols", 0)) for e in entries) != len(bounds) - 1:
        return None
    cells: list[tuple[str, list[int]]] = []
    column = 0
    for entry in entries:
        span = 1 + int(entry.get("morecols", 0))
        left, right = bounds[column] + 1, bounds[column + span]
        column += span
        chars: list[str] = []
        where: list[int] = []
        for line, at in lines:
            piece = line[left:right]
            chars.append(piece + "\n")
            where.extend(range(at + left, at + left + len(piece) + 1))
        cells.append(("".join(chars), [*where, where[-1] if where else 0]))
    return cells


def _generated(node) -> bool:
    """A table of contents (``.. contents::``) repeats the section titles that follow it: read
    as prose, it would also take their words from the source, and the sections' own text after."""
    return isinstance(node, nodes.topic) and "contents" in node.get("classes", ())


def _cells(row) -> list:
    return [entry for entry in row.children if isinstance(entry, nodes.entry)]


def rst_blocks(text: str, body: int = 0) -> tuple[list[tuple] | None, str | None]:
    """Prose of a reStructuredText document as ``(kind, text, offsets, section, level, headers)``
    tuples in document order, and its title (``body``: where the text after front matter starts).
    None instead of the tuples when docutils cannot read the text; a page of directives alone
    (an ``include`` of a file outside the docs, a ``toctree``) has no prose, []."""
    source = text[body:]
    _read_unknown_roles_as_text(source)
    try:
        tree = publish_doctree(source, settings_overrides=_SETTINGS)
    except Exception:  # noqa: BLE001 - docutils gave up: the caller reads the text as plain text
        return None, None
    # docutils files some notes inside the element they concern, whatever the report level
    # ('Duplicate name "parsed" for external target' in a table cell): as text, they would be
    # looked for in the source and take its words from the sentences after
    for message in list(tree.findall(nodes.system_message)):
        message.parent.remove(message)
    locator = _Locator(text)
    locator.cursor = body
    blocks: list[tuple] = []
    first_title: list[str] = []

    def emit(kind: str, node, section: tuple[str, ...], level: int = 0) -> str | None:
        visible = " ".join(node.astext().split())
        line = node.line + body_lines if node.line else None
        found = locator.locate(visible, line)
        if found is None:
            return None
        t, offs = found
        blocks.append((kind, t, offs, section, level, ()))
        return t

    def emit_table(table, section: tuple[str, ...]) -> None:
        """Each body row as one ``table_row`` block: its cells located in the source one after
        another and joined by " | " (an empty or unlocatable cell reads "-", so the columns
        stay in place), with the header row's cells as headers."""
        head = table.next_node(nodes.thead)
        header_row = head.next_node(nodes.row) if head is not None else None
        headers = tuple(" ".join(e.astext().split()) for e in _cells(header_row)) if header_row is not None else ()
        grid = _grid_rows(text, locator._line_offset(table.line + body_lines)) if table.line else None
        all_rows = list(table.findall(nodes.row))
        if grid is not None and len(grid[0]) != len(all_rows):
            grid = None
        source_rows = dict(zip(map(id, all_rows), grid[0], strict=True)) if grid is not None else {}
        for tbody in table.findall(nodes.tbody):
            for row in tbody.children:
                if not isinstance(row, nodes.row):
                    continue
                cells = _grid_cells(row, source_rows[id(row)]) if source_rows else None
                parts: list[str] = []
                offsets: list[int] = []
                for k, entry in enumerate(_cells(row)):
                    visible = " ".join(entry.astext().split())
                    if cells is not None:  # a grid table: the cell's words are read in its own column
                        cell_text, cell_offsets = cells[k]
                        inside = _Locator(cell_text).locate(visible, None) if visible else None
                        found = (inside[0], tuple(cell_offsets[o] for o in inside[1])) if inside else None
                    else:
                        found = locator.locate(visible, entry.line + body_lines if entry.line else None) if visible else None
                    at = offsets[-1] if offsets else locator.cursor
                    if k:
                        parts.append(" | ")
                        offsets.extend([at] * 3)
                    if found is None:
                        parts.append("-")
                        offsets.append(at)
                        continue
                    parts.append(found[0])
                    offsets.extend(found[1])
                if any(part not in (" | ", "-") for part in parts):
                    blocks.append(("table_row", "".join(parts), tuple(offsets), section, 0, headers))
        if grid is not None:
            locator.cursor = max(locator.cursor, grid[1])

    body_lines = text.count("\n", 0, body)

    def emit_commands(block, section: tuple[str, ...]) -> None:
        """A shell block's commands; every literal block's lines move the locator past it, so that
        the same line in a later block is not taken from this one."""
        language = next((c for c in block.get("classes", ()) if c != "code"), "")
        shell = is_shell(language)
        code: list[tuple[str, int]] = []
        for line in block.astext().splitlines():
            line = line.strip()
            if not line:
                continue
            at = _line_start(text, line, locator.cursor, locator.cursor + _GAP + len(line) + (2000 if not code else 0))
            if at < 0:
                continue  # tabs expanded, markup of a parsed literal: not the source's line
            code.append((line, at))
            locator.cursor = at + len(line)
        if shell is not False:
            for t, offs in command_lines(code, language if shell else ""):
                blocks.append(("command", t, tuple(offs), section, 0, ()))

    def walk(node, section: tuple[str, ...], depth: int, kind: str) -> None:
        for child in node.children:
            if isinstance(child, nodes.literal_block):
                emit_commands(child, section)
                continue
            if isinstance(child, _SKIP) or _generated(child):
                continue
            if isinstance(child, nodes.section):
                title = child.next_node(nodes.title)
                name = section
                if title is not None:
                    t = emit("heading", title, section, depth + 1)
                    if t:
                        if not first_title:
                            first_title.append(t)
                        name = (*section, t)
                walk(child, name, depth + 1, "paragraph")
            elif isinstance(child, nodes.title):
                continue  # emitted with its section
            elif isinstance(child, nodes.table):
                emit_table(child, section)
            elif isinstance(child, (nodes.paragraph, nodes.line)):
                emit(kind, child, section)
            elif isinstance(child, nodes.rubric):
                emit("heading", child, section, depth + 1)  # an informal heading: it opens no section
            elif isinstance(child, nodes.term):
                emit("list_item", child, section)  # a definition list's term names what its definition states
            elif isinstance(child, (nodes.list_item, nodes.definition_list_item)):
                walk(child, section, depth, "list_item")
            elif isinstance(child, nodes.block_quote):
                walk(child, section, depth, "quote" if kind == "paragraph" else kind)
            elif isinstance(child, nodes.Element):
                walk(child, section, depth, kind)

    walk(tree, (), 0, "paragraph")
    title = tree.get("title") or (first_title[0] if first_title else None)
    return blocks, title
