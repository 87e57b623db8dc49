"""The containers of the documentation generators in Markdown: admonitions, tabs, MyST and
colon-fenced directives, snippet includes, shortcodes, attribute lists."""

from __future__ import annotations

import re

from kb.ingest.commands import CODE_DIRECTIVES

__all__ = ["FENCE", "PROSE_DIRECTIVES", "closes_fence", "unwrap_containers"]

FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")

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
_SHORTCODE_CODE = re.compile(r"[ \t]*\{\{[<%][ \t]*((?:highlight|code|mermaid)[\w-]*)[^{}]*[%>]\}\}")
_ATTR_LIST_LINE = re.compile(r"[ \t]*\{:?[ \t]*[.#][^{}]*\}[ \t]*$|\([\w/.:-]+\)=[ \t]*$")  # attr list; MyST target
_MARKUP_LEADS = frozenset("!?=:`~{(-")
# directives whose body is prose (MyST / Sphinx admonitions); any other directive is skipped
PROSE_DIRECTIVES = frozenset({
    "note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error",
    "seealso", "admonition", "info", "details", "versionadded", "versionchanged", "deprecated",
    "topic", "sidebar", "dropdown", "tab-item", "tab-set", "card", "grid-item-card",
})  # fmt: skip


def unwrap_containers(text: str, lines: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], dict[int, tuple[str, int]]]:
    """Lines with container markup blanked and container bodies dedented (spans stay exact);
    returns them and {line index: (title, offset)} for container titles."""
    # A line-by-line state machine over nested containers: each line's handling depends on the open ones.
    out: list[tuple[int, int]] = []
    titles: dict[int, tuple[str, int]] = {}
    indents: list[int] = []  # body indent of each open indented container (admonition, tab)
    closers: list[str] = []  # the fence that closes each open MyST backtick directive
    fence: str | None = None  # inside a code fence: nothing is markup
    skip_until: re.Pattern | None = None
    skip_fence: str | None = None  # a directive that is not prose: skipped to its closing fence
    fence_indent = 0  # a closing fence is indented at most 3 spaces more than its opening one
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
            if closes_fence(body, fence, fence_indent):
                fence = None
            continue
        if skip_fence is not None:
            out.append((s, s))
            if closes_fence(body, skip_fence, fence_indent):
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
        if m and m.group(2).lower() in CODE_DIRECTIVES:  # a code block: the Markdown reader takes it
            fence = m.group(1)
            fence_indent = len(body) - len(body.lstrip(" "))
            out.append((s + cut, e))
            continue
        if m:
            out.append((s, s))
            if m.group(2).lower() in PROSE_DIRECTIVES:
                closers.append(m.group(1))
                options = True
                if m.group(3):
                    titles[len(out) - 1] = (m.group(3), s + cut + m.start(3))
            else:
                skip_fence = m.group(1)
                fence_indent = len(body) - len(body.lstrip(" "))
            continue
        if closers and body.strip() == closers[-1]:
            closers.pop()
            out.append((s, s))
            continue
        m = FENCE.match(body)
        if m and not (m.group(1)[0] == "`" and "`" in body[m.end() :]):
            fence = m.group(1)
            fence_indent = len(body) - len(body.lstrip(" "))
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
                # Hugo closes as "{{< /code-toggle >}}" or "{{</ code-toggle >}}". A shortcode
                # with no closing tag further down ("{{< codeFromFile file=... >}}") has no body:
                # skipping to a closer that never comes would hide the rest of the page
                closer = re.compile(r"[ \t]*\{\{[<%][ \t]*/[ \t]*" + re.escape(cm.group(1)) + r"(?![\w-])")
                if closer.search(text, e):
                    skip_until = closer
            continue
        if _SNIPPET_BLOCK.match(line):
            out.append((s, s))
            snippet = True
            continue
        out.append((s + cut, e))
    return out, titles


def closes_fence(line: str, fence: str, indent: int) -> bool:
    """Whether ``line`` closes a fence opened with ``fence`` at ``indent`` spaces: the same
    character, at least as many, nothing else, and (CommonMark) at most 3 spaces further in, so
    that a fence nested deeper in a list inside it ("    ````") does not close it."""
    body = line.lstrip(" ")
    return body.startswith(fence) and not body.strip().strip(fence[0]) and len(line) - len(body) <= indent + 3


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
