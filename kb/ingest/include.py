"""Include directives of documentation generators, resolved inside the tree a page sits in.

``expand_includes(text, path, tree) -> (text, problems)``: the page's text with each include
line (outside code fences) replaced by the included file's text, indented as the include line
is (the way pymdownx.snippets splices a snippet into an admonition or a tab), recursively.

Directives (one line each unless said):

- ``--8<-- "file"`` and the block form (a ``--8<--`` line, one file per line, a ``--8<--`` line):
  pymdownx.snippets;
- ``{!file!}`` (markdown-include), ``{!> file !}`` (mdx_include);
- ``{% include "file" %}`` and ``{% include-markdown "file" %}`` (mkdocs-include-markdown,
  Jinja); any arguments after the file are ignored, the whole file is included;
- MyST ```` ```{include} file ```` ... ```` ``` ```` (options such as ``:start-after:`` are not
  honoured: the whole file is included);
- reStructuredText ``.. include:: file`` (its indented option lines go with it);
- VitePress ``<!--@include: ./file.md-->`` (a line range or region suffix is ignored).

A file is looked for, in order: beside the including file; under each folder above it up to the
tree's root (snippets resolve against the site's base folder, ``content/https/x.md`` from
``docs/``); and as the one file of the tree whose path ends with the name
(markdown-include's base folder is site configuration the tree may not hold). A name that leaves
the tree (``../..``, an absolute path, a URL), one that is not found, one that matches several
files, an include cycle, or nesting deeper than ``MAX_DEPTH`` is a problem (one line for an
``ingest_errors`` row) and that include line is dropped; the rest of the page is read.

A file a page includes (spliced in, or shown in a code block: an example configuration) is part
of that page: the source loaders read it there and not as a source of its own
(``parts_of_other_pages``), so an example's values are never read as the product's settings and
an included paragraph is not evidence twice.

Only what ``tree`` offers is read: a folder (``FolderTree``) or any mapping of tree paths to
bytes (a git rev's tree, kb/evidence/git_source.py). Nothing outside the tree is opened.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 8
MAX_EXPANDED = 5_000_000  # characters of a page with its includes

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_ONE_LINE = re.compile(
    r"(?P<indent>[ \t]*)(?:"
    r"--8<--[ \t]+(?P<q>[\"'])(?P<snip>[^\"']+)(?P=q)"
    r"|\{!>?[ \t]*(?P<bang>[^{}!]+?)[ \t]*!\}"
    r"|\{%-?[ \t]*include(?:-markdown)?[ \t]+(?P<jq>[\"'])(?P<jinja>[^\"']+)(?P=jq)[^{}]*-?%\}"
    r"|\.\.[ \t]+include::[ \t]+(?P<rst>\S.*?)"
    r"|<!--[ \t]*@include:[ \t]*(?P<vp>[^{}#\s>]+)(?:\{[\d,\s]*\}|#[\w-]+)?[ \t]*-->"
    r")[ \t]*$"
)
_SNIPPET_FENCE = re.compile(r"[ \t]*--8<--[ \t]*$")
_MYST_INCLUDE = re.compile(r"(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{include\}[ \t]+(?P<target>\S.*?)[ \t]*$")
_OPTION = re.compile(r"[ \t]*:[\w-]+:(?:[ \t].*)?$")
_FRONT_MATTER = re.compile(r"---[ \t]*\r?\n.*?\n(?:---|\.\.\.)[ \t]*\r?(?:\n|$)", re.S)
HINT = re.compile(r"--8<--|\{!|\{%-?[ \t]*include|include::|\{include\}|@include:")
_TARGETS = ("snip", "bang", "jinja", "rst", "vp")  # the _ONE_LINE groups that hold the file named


def _target(m: re.Match[str]) -> str:
    return next(m.group(g) for g in _TARGETS if m.group(g) is not None)


def _closes(line: str, fence: str) -> bool:
    """``line`` closes a code fence opened by ``fence`` (as long a run of the same character)."""
    body = line.strip()
    return body.startswith(fence) and not body.strip(fence[0])


class Tree:
    """The files an include may name: tree paths (posix, relative to the root) to bytes."""

    def read(self, path: str) -> bytes | None:  # pragma: no cover - interface
        raise NotImplementedError

    def paths(self) -> Iterable[str]:  # pragma: no cover - interface
        raise NotImplementedError


class MappingTree(Tree):
    """A tree given as a mapping (path -> bytes, or a callable giving them)."""

    def __init__(self, files: Mapping[str, Callable[[], bytes] | bytes]):
        self.files = files

    def read(self, path: str) -> bytes | None:
        got = self.files.get(path)
        if got is None:
            return None
        return got() if callable(got) else got

    def paths(self) -> Iterable[str]:
        return self.files.keys()


class FolderTree(Tree):
    """A folder on disk; nothing outside it is read (links that leave it are not followed)."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self._paths: list[str] | None = None

    def read(self, path: str) -> bytes | None:
        file = (self.root / path).resolve()
        if not file.is_relative_to(self.root) or not file.is_file():
            return None
        try:
            return file.read_bytes()
        except OSError:
            return None

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            self._paths = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file() and not p.is_symlink())
        return self._paths


@dataclass
class _Expansion:
    tree: Tree
    problems: list[str] = field(default_factory=list)
    included: set[str] = field(default_factory=set)  # tree paths spliced in or shown in a code block
    size: int = 0
    _by_suffix: dict[str, list[str]] | None = None

    def unique_suffix(self, name: str) -> list[str]:
        if self._by_suffix is None:
            self._by_suffix = {}
            for p in self.tree.paths():
                parts = p.split("/")
                for k in range(len(parts)):
                    self._by_suffix.setdefault("/".join(parts[k:]), []).append(p)
        return self._by_suffix.get(name, [])

    def resolve(self, target: str, includer: str, report: bool = True) -> str | None:
        if not report:
            problems, self.problems = self.problems, []
            try:
                return self.resolve(target, includer)
            finally:
                self.problems = problems
        name = target.strip().strip("\"'")
        if not name or "://" in name or name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", name):
            self.problems.append(f"{includer}: include {target!r} is not a path inside the tree: not read")
            return None
        folder = posixpath.dirname(includer)
        tried_inside = False
        while True:
            cand = posixpath.normpath(posixpath.join(folder, name))
            if not (cand == ".." or cand.startswith("../")):
                tried_inside = True
                if self.tree.read(cand) is not None:
                    return cand
            if not folder:
                break
            folder = posixpath.dirname(folder)
        if not tried_inside:
            self.problems.append(f"{includer}: include {target!r} points outside the tree: not read")
            return None
        clean = posixpath.normpath(name)
        if not clean.startswith(".."):
            found = self.unique_suffix(clean)
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                self.problems.append(
                    f"{includer}: include {target!r} matches {len(found)} files ({', '.join(sorted(found)[:3])}): not read"
                )
                return None
        self.problems.append(f"{includer}: include {target!r} not found in the tree: not read")
        return None

    def text_of(self, path: str, stack: tuple[str, ...]) -> str | None:
        raw = self.tree.read(path)
        if raw is None:
            return None
        if b"\x00" in raw:
            self.problems.append(f"{stack[-1]}: include {path!r} is a binary file: not read")
            return None
        text = raw.decode("utf-8", "replace").lstrip("\ufeff")
        fm = _FRONT_MATTER.match(text) if path.lower().endswith((".md", ".markdown", ".mdx")) else None
        if fm:
            text = text[fm.end() :]
        return self.expand(text, path, stack + (path,))

    def splice(self, out: list[str], target: str, indent: str, includer: str, stack: tuple[str, ...]) -> None:
        found = self.resolve(target, includer)
        if found is None:
            return
        if found in stack:
            chain = " -> ".join((*stack[stack.index(found) :], found))
            self.problems.append(f"{includer}: include cycle {chain}: not read")
            return
        if len(stack) > MAX_DEPTH:
            self.problems.append(f"{includer}: includes nest deeper than {MAX_DEPTH}: {target!r} not read")
            return
        self.included.add(found)
        body = self.text_of(found, stack)
        if body is None:
            return
        if self.size + len(body) > MAX_EXPANDED:
            self.problems.append(f"{includer}: includes grow the page past {MAX_EXPANDED} characters: {target!r} not read")
            return
        self.size += len(body)
        for line in body.splitlines():
            out.append(indent + line if line.strip() else "")

    def expand(self, text: str, path: str, stack: tuple[str, ...]) -> str:
        if not HINT.search(text):
            return text
        lines = text.splitlines()
        out: list[str] = []
        fence: str | None = None
        i = 0
        while i < len(lines):
            line = lines[i]
            if fence is not None:
                out.append(line)
                shown = _ONE_LINE.match(line)
                if shown:  # a file shown as code (an example config): part of this page, not spliced
                    found = self.resolve(_target(shown), path, report=False)
                    if found is not None:
                        self.included.add(found)
                if _closes(line, fence):
                    fence = None
                i += 1
                continue
            m = _MYST_INCLUDE.match(line)
            if m:
                close = m.group("fence")
                j = i + 1
                while j < len(lines) and not _closes(lines[j], close):
                    j += 1
                self.splice(out, m.group("target"), m.group("indent"), path, stack)
                i = j + 1
                continue
            fm = _FENCE.match(line)
            if fm:
                fence = fm.group(1)
                out.append(line)
                i += 1
                continue
            m = _ONE_LINE.match(line)
            if m:
                self.splice(out, _target(m), m.group("indent"), path, stack)
                i += 1
                if m.group("rst") is not None:
                    while i < len(lines) and lines[i].strip() and _OPTION.match(lines[i]):
                        i += 1  # the directive's options (":start-line:", ":literal:")
                continue
            if _SNIPPET_FENCE.match(line):
                indent = line[: len(line) - len(line.lstrip())]
                j = i + 1
                while j < len(lines) and not _SNIPPET_FENCE.match(lines[j]):
                    name = lines[j].strip()
                    if name and not name.startswith(";"):  # ";file" is a disabled snippet
                        self.splice(out, name, indent, path, stack)
                    j += 1
                i = j + 1
                continue
            out.append(line)
            i += 1
        return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def expand_includes(text: str, path: str, tree: Tree, included: set[str] | None = None) -> tuple[str, list[str]]:
    """``text`` (the file at tree path ``path``) with its includes spliced in, and the problems
    met (one line each). Text with no include directive comes back unchanged (the same object).
    ``included`` (when given) receives the tree paths the page includes, directly or through
    another include, spliced in or shown inside a code block."""
    if not HINT.search(text):
        return text, []
    ex = _Expansion(tree)
    out = ex.expand(text, path, (path,))
    if included is not None:
        included.update(ex.included - {path})
    return out, ex.problems


def parts_of_other_pages(includes: dict[str, set[str]]) -> set[str]:
    """The files that are part of another page (``includes``: page -> the files it includes):
    read there, not as pages of their own. Files that include each other (a cycle) stay pages."""
    out = set()
    for page, parts in includes.items():
        for part in parts:
            if page not in includes.get(part, ()):
                out.add(part)
    return out
