"""reStructuredText to prose blocks with exact offsets, through docutils' own parser.

docutils builds the document tree; each prose element (section title, paragraph, list-item or
block-quote paragraph, admonition body) becomes a Block whose characters are located back in
the source text word by word (docutils keeps line numbers, not character offsets). Literal
blocks, comments, raw blocks, substitution definitions, tables, field lists and directives
docutils does not know (Sphinx's ``automodule``, ``program-output``...) never become prose.
Sphinx roles (``:ref:``, ``:func:``...) read as their text. Nothing is included or executed.
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import roles

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

_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": False, "file_insertion_enabled": False,
    "raw_enabled": False, "input_encoding": "unicode", "_disable_config": True, "embed_stylesheet": False,
    "syntax_highlight": "none", "doctitle_xform": False, "sectsubtitle_xform": False,
}  # fmt: skip
_SKIP = (nodes.literal_block, nodes.comment, nodes.raw, nodes.substitution_definition, nodes.system_message,
         nodes.table, nodes.field_list, nodes.docinfo, nodes.target, nodes.doctest_block, nodes.problematic,
         nodes.math_block, nodes.pending)  # fmt: skip
_WORD = re.compile(r"\S+")
_PIECE = re.compile(r"\w+|\W")


class _Locator:
    """Finds the visible words of successive blocks in the source, left to right."""

    def __init__(self, text: str):
        self.text = text
        self.cursor = 0

    def locate(self, visible: str, line: int | None) -> tuple[str, tuple[int, ...]] | None:
        if line:  # not before the element's line (a paragraph's first line; a title's underline)
            self.cursor = max(self.cursor, _line_offset(self.text, max(line - 2, 1)))
        out_text: list[str] = []
        offsets: list[int] = []
        pos = self.cursor
        for m in _WORD.finditer(visible):
            word = m.group()
            at = self.text.find(word, pos, pos + 2000 + len(word))
            if at >= 0:
                pieces = [(word, at)]
            else:  # markup inside the word ("``black``."): its pieces one by one, close together
                pieces = []
                p = pos
                for piece in _PIECE.findall(word):
                    q = self.text.find(piece, p, p + 40 + len(piece))
                    if q >= 0:
                        pieces.append((piece, q))
                        p = q + len(piece)
                if not pieces:
                    continue  # generated text (a substitution, a role's target): not in the source
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


def _line_offset(text: str, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return pos


def rst_blocks(text: str, body: int = 0) -> tuple[list[tuple], str | None]:
    """Prose of a reStructuredText document as ``(kind, text, offsets, section, level)`` tuples
    in document order, and its title (``body``: where the text after front matter starts)."""
    source = text[body:]
    try:
        tree = publish_doctree(source, settings_overrides=_SETTINGS)
    except Exception:  # noqa: BLE001 - docutils gave up: the text reads as plain text instead
        return [], None
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
        blocks.append((kind, t, offs, section, level))
        return t

    body_lines = text.count("\n", 0, body)

    def walk(node, section: tuple[str, ...], depth: int, kind: str) -> None:
        for child in node.children:
            if isinstance(child, _SKIP):
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
            elif isinstance(child, (nodes.paragraph, nodes.line)):
                emit(kind, child, section)
            elif isinstance(child, nodes.list_item):
                walk(child, section, depth, "list_item")
            elif isinstance(child, nodes.block_quote):
                walk(child, section, depth, "quote" if kind == "paragraph" else kind)
            elif isinstance(child, nodes.Element):
                walk(child, section, depth, kind)

    walk(tree, (), 0, "paragraph")
    title = tree.get("title") or (first_title[0] if first_title else None)
    return blocks, title
