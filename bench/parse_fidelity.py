"""Parser fidelity on real documentation histories: prose lost, overlong claims, claims that are not sentences.

``kbaudit bench parse --data DIR [--projects a,b] [--releases N] [--dump FILE] [--json OUT]``

``DIR`` is laid out as the docs-histories corpus: one ``<project>.bundle`` (a git bundle, one
commit per release tag) per project and a ``manifest.json`` listing them. Without ``--data`` the
folder is ``$KBAUDIT_DATA/docs-histories``. Each bundle is cloned bare into a temporary folder and
every page (``.md .markdown .mdx .rst .html .htm .txt``) of every release tag (``--releases N``:
the newest N) is read with pygit2; a page version that several releases share is scored once.

Each page is parsed with ``parse_document`` and split with ``split_claims``, and rendered by a
reference renderer that shares no code with the parser (docs/formats.md, "Parser fidelity"):

- Markdown: markdown-it-py's CommonMark parser (tables enabled), after the documentation
  generators' container markup is taken off (front matter; ``!!!``/``???``/``===`` markers, whose
  indented bodies are read dedented; ``:::`` fence lines; Hugo shortcode lines and the code
  shortcodes' bodies; MDX ``import``/``export`` and comment lines; snippet and include lines; attribute
  lists and heading ids; a line holding only a component tag (``<TabItem value="1">``) ends
  there, so the Markdown inside reads as Markdown, and a component's opening tag whose attributes
  run over several lines is markup; MkDocs Material's icons before a label and attribute lists
  after a link; link reference definitions that Hugo fills with a shortcode; MyST directives other than
  docutils' admonitions). Prose: the inline text of paragraphs and headings (code spans and link labels included,
  image alt text not; a MyST role shows its text, not its name or target), and the visible text
  of HTML blocks. Not prose: code blocks, tables.
- reStructuredText: docutils' document tree. Prose: the text of every element except code
  (literal, doctest and math blocks), comments, raw blocks, tables, field lists, option strings,
  substitution definitions, error messages and the tables of contents docutils generates.
- HTML: the visible text, less ``script``, ``style``, ``pre`` and the like and template actions
  (``{{ ... }}``, ``{% ... %}``) but for a translation call's string (``{{ _('Home') }}``)
  (html.parser).
- plain text: every word.

Prose characters are the letters and digits of the reference's prose words (``\\w+``, case
folded; punctuation and spacing are left out, since renderers differ on them), counting only
words the page's source contains (generated text such as numbering is not the page's). A word
is lost when the parser's blocks hold it fewer times than the reference does. Figures:

- ``prose_lost_share.<project>`` (and ``.<project>.<format>``): lost prose characters / prose
  characters; ``prose_lost_share``: the same over every project; ``max_prose_lost_share``: the
  worst project;
- ``claims_over_600`` (``.<project>``): claims whose text as written runs past 600 characters;
  ``claims_over_600_prose``: those of them from prose (paragraphs, list items, quotes), not
  table rows or headings;
- ``non_sentence_claims`` (``.<project>``): claims from prose that cannot be a sentence as
  written: brackets that do not close, a link's markup left in the text (``[CLI
  Reference](/reference/cli)``), a cut after an abbreviation (``e.g.``), a space before a
  full stop or comma (a dropped word), or a paragraph that starts mid-sentence (a lower-case
  conjunction, preposition or article; a claim the splitter took from inside a sentence may);
- ``pages``, ``claims``, ``parse_errors``.
"""

from __future__ import annotations

import html.parser
import json
import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from markdown_it import MarkdownIt
from pydantic import BaseModel, Field

from bench import DATA_ENV, data_path
from kb.claims.split import split_claims
from kb.errors import ConfigError, ParseError
from kb.evidence.git_source import _tags, _walk
from kb.ingest.parse import detect_format, parse_document

PAGE_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".html", ".htm", ".txt")
LONG_CLAIM = 600
PROSE_KINDS = ("paragraph", "list_item", "quote")


class Params(BaseModel):
    """`kbaudit bench parse` parameters."""

    data: str = Field(
        default_factory=lambda: data_path("docs-histories"),
        description=f"the docs-histories folder: <project>.bundle files and manifest.json (default: ${DATA_ENV}/docs-histories)",
    )
    projects: str | None = Field(default=None, description="comma-separated project names (default: every project of the manifest)")
    releases: int | None = Field(default=None, ge=1, description="read only the newest N release tags of each project (default: all)")
    dump: str | None = Field(default=None, description="write each page's lost words and each flagged claim here (JSONL)")


# ---------------------------------------------------------------------------------------------
# words

_WORD = re.compile(r"\w+")


def words(text: str) -> Counter:
    return Counter(w.casefold() for w in _WORD.findall(text))


# ---------------------------------------------------------------------------------------------
# Markdown reference: CommonMark after the generators' container markup is taken off

_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?^(?:---|\.\.\.)[ \t]*\r?$", re.S | re.M)
_MARKER = re.compile(r"^( *)(?:!!!|\?\?\?\+?)[ \t]*[\w-]*(?:[ \t]+\"(.*)\")?.*$")
_TAB_MARKER = re.compile(r"^( *)===\+?[ \t]+\".*\"[ \t]*$")
_COLON = re.compile(r"^ {0,3}(:{3,})[ \t]*(\{?[\w-]*\}?)[ \t]*(.*?)[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(?:\{([\w-]+)\})?")
_OPTION = re.compile(r"^[ \t]*:[\w-]+:")
# docutils' admonitions: a MyST directive of one of these names holds prose; any other holds what
# a Sphinx extension generates from it (a table, an example, a grid of cards), read as not prose
ADMONITIONS = frozenset({"admonition", "attention", "caution", "danger", "error", "hint", "important", "note", "tip", "warning"})
_SHORTCODE = re.compile(r"^[ \t]*(?:\{\{[<%].*?[%>]\}\}[ \t]*)+$")
_CODE_SHORTCODE = re.compile(r"^[ \t]*\{\{[<%][ \t]*(highlight|code|code-toggle|mermaid|codeFromInline)\b.*?[%>]\}\}")
_DROP_LINE = re.compile(
    r"^(?: {0,3}\[[^\]]+\]:[ \t]*\{\{.*|[ \t]*\{/\*.*\*/\}[ \t]*|(?:import|export)\s.*|[ \t]*--8<--.*|[ \t]*\{!.*!\}[ \t]*|[ \t]*\{%.*%\}[ \t]*|[ \t]*\{:?[ \t]*[.#][^{}]*\}[ \t]*|\([\w/.:-]+\)=[ \t]*)$"
)
_COMPONENT_LINE = re.compile(r"^[ \t]*</?[A-Z][\w.]*(?:\s[^<>]*)?/?>[ \t]*$")
# a component's opening tag whose attributes run on over the next lines, up to the one it closes on
_COMPONENT_OPENS = re.compile(r"^[ \t]*<[A-Z][\w.]*(?:\s[^<>]*)?$")
_COMPONENT_CLOSES = re.compile(r".*>[ \t]*$")
_MYST_ROLE_END = re.compile(r"\{[A-Za-z][\w:+.-]*\}$")
# MkDocs Material's icon before a label (":simple-circleci: Circle CI") renders an icon, and an
# attribute list after a link ("[Install](x){ .md-button }") a style: neither is text
_MATERIAL_ICON = re.compile(r"(?<![\w:]):(?:material|fontawesome-(?:solid|regular|brands)|octicons|simple)-[\w-]+:(?=[ \t]*[^\s:|])")
_AFTER_LINK_ATTRS = re.compile(r"(\]\([^()\s]*\)|\]\[[^\]]*\])\{(?::[^{}]+|[ \t]*[.#][^{}]*)\}")
_HEADING_ID = re.compile(r"[ \t]*\\?\{:?[ \t]*[#.][^{}]*\}[ \t]*$")
_MD = MarkdownIt("commonmark").enable("table")


def _markdown_source(text: str) -> str:
    """The page as CommonMark would need it to show what the generator shows."""
    m = _FRONT.match(text)
    if m:
        text = "\n" * text.count("\n", 0, m.end()) + text[m.end() :]
    out: list[str] = []
    bodies: list[int] = []  # the indent of each open container body
    skip_to: re.Pattern | None = None  # the end of a block that is not prose
    fence: re.Pattern | None = None  # the end of a code fence: nothing inside is markup
    options = False  # a directive's ":key: value" lines may follow its opening line
    closers: list[re.Pattern] = []  # the closing fences of the open MyST admonitions
    for line in text.split("\n"):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        while bodies and stripped and indent < bodies[-1]:
            bodies.pop()
        cut = bodies[-1] if bodies else 0
        line = line[cut:] if stripped else ""
        if fence is not None:
            out.append(line)
            if fence.match(line):
                fence = None
            continue
        if skip_to is not None:
            out.append("")
            if skip_to.match(line):
                skip_to = None
            continue
        if options and _OPTION.match(line):
            out.append("")
            continue
        options = False
        if closers and closers[-1].match(line):
            closers.pop()
            out.append("")
            continue
        m = _FENCE_OPEN.match(line)
        if m:
            run = m.group(1)
            close = re.compile(r"^ {0,3}" + re.escape(run[0]) + "{" + str(len(run)) + r",}[ \t]*$")
            if m.group(2) and m.group(2).lower() not in ADMONITIONS:
                skip_to = close  # a MyST directive: generated or example output, not the page's prose
                out.append("")
            elif m.group(2):
                out.append("")  # an admonition: its body is prose, the fence lines are not
                options = True
                closers.append(close)
            else:
                fence = close
                out.append(line)
            continue
        m = _MARKER.match(line) or _TAB_MARKER.match(line)
        if m:
            title = m.group(2) if m.re is _MARKER and m.group(2) else ""
            out.extend(["", title, ""])
            bodies.append(cut + len(m.group(1)) + 4)
            continue
        m = _COLON.match(line)
        if m:
            name = m.group(2) or ""
            if name.startswith("{") and name.strip("{}").lower() not in ADMONITIONS:
                skip_to = re.compile(r"^ {0,3}" + m.group(1) + r"[ \t]*$")
                out.append("")
                continue
            out.extend(["", "" if name.startswith("{") else m.group(3), ""])
            options = name.startswith("{")
            continue
        m = _CODE_SHORTCODE.match(line)
        if m and "/" + m.group(1) not in line:
            skip_to = re.compile(r"^[ \t]*\{\{[<%][ \t]*/" + m.group(1) + r"\b")
            out.append("")
            continue
        if line.lstrip().startswith("#"):
            line = _HEADING_ID.sub("", line)
        line = _MATERIAL_ICON.sub("", _AFTER_LINK_ATTRS.sub(r"\1", line))
        if _SHORTCODE.match(line) or _DROP_LINE.match(line):
            out.append("")
            continue
        if _COMPONENT_LINE.match(line):
            out.extend([line, ""])  # MDX and VitePress read the Markdown inside a component as Markdown
            continue
        if _COMPONENT_OPENS.match(line):
            skip_to = _COMPONENT_CLOSES  # its attributes are markup, not prose
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


# a page that still holds template actions is a template: they are its code, but for the text a
# translation call says (a Sphinx theme's "{{ _('Useful Links') }}")
_TEMPLATE_ACTION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
_TRANSLATION = re.compile(r"""\{\{-?\s*(?:_|gettext)\(\s*(["'])(.*?)\1\s*\)\s*-?\}\}""", re.S)


class _VisibleText(html.parser.HTMLParser):
    _HIDDEN = frozenset({"script", "style", "pre", "textarea", "template", "svg", "math", "head", "noscript", "iframe"})

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in self._HIDDEN:
            self.hidden += 1
        else:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in self._HIDDEN:
            self.hidden = max(self.hidden - 1, 0)
        else:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self.hidden:
            said = _TRANSLATION.sub(lambda m: f" {m.group(2)} ", data)
            self.parts.append(_TEMPLATE_ACTION.sub(" ", said))


def html_prose(text: str) -> str:
    p = _VisibleText()
    p.feed(text)
    p.close()
    return "".join(p.parts)


def markdown_prose(text: str) -> str:
    parts: list[str] = []
    in_table = 0
    for tok in _MD.parse(_markdown_source(text)):
        if tok.type == "table_open":
            in_table += 1
        elif tok.type == "table_close":
            in_table -= 1
        elif tok.type == "html_block" and not in_table:
            parts.append(html_prose(tok.content))
        elif tok.type == "inline" and not in_table:
            role = False
            for child in tok.children or ():
                if child.type == "text":
                    # a MyST role, "{ref}`the text <target>`", shows its text: not its name nor its target
                    m = _MYST_ROLE_END.search(child.content)
                    role = m is not None
                    parts.append(child.content[: m.start()] if m else child.content)
                    continue
                if child.type == "code_inline":
                    content = child.content
                    if role and content.endswith(">") and " <" in content:
                        content = content[: content.rfind(" <")]
                    parts.append(content)
                role = False
                if child.type in ("softbreak", "hardbreak"):
                    parts.append(" ")
                elif child.type == "html_inline":
                    parts.append(" ")
            parts.append("\n")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# reStructuredText reference: docutils' tree


def rst_prose(text: str) -> str:
    from docutils import nodes
    from docutils.core import publish_doctree

    # kb.ingest.rst registers Sphinx's cross-reference roles with docutils (they read as their
    # title, as Sphinx shows them); the settings are docutils' safe ones, nothing is included
    from kb.ingest.rst import _SETTINGS

    hidden = (nodes.literal_block, nodes.doctest_block, nodes.math_block, nodes.comment, nodes.raw, nodes.table,
              nodes.field_list, nodes.docinfo, nodes.option_string, nodes.substitution_definition, nodes.system_message,
              nodes.problematic, nodes.target, nodes.pending, nodes.image)  # fmt: skip
    try:
        tree = publish_doctree(text, settings_overrides=_SETTINGS)
    except Exception:  # noqa: BLE001 - docutils gave up on the page: it has no reference
        return ""
    parts: list[str] = []

    def walk(node) -> None:
        for child in node.children:
            if isinstance(child, hidden):
                continue
            if isinstance(child, nodes.topic) and "contents" in child.get("classes", ()):
                continue
            if isinstance(child, nodes.Text):
                parts.append(child.astext())
            else:
                walk(child)
                if isinstance(child, nodes.TextElement):
                    parts.append("\n")

    walk(tree)
    return "".join(parts)


def reference_prose(text: str, fmt: str) -> str:
    if fmt == "markdown":
        return markdown_prose(text)
    if fmt == "rst":
        return rst_prose(text)
    if fmt == "html":
        return html_prose(text)
    return text


# ---------------------------------------------------------------------------------------------
# claims that cannot be sentences

_CUT_AFTER_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|cf|vs)\.?|\(\s*)$", re.I)
_SPACE_BEFORE_CLOSE = re.compile(r"\w\s+[.,](?:\s|$)")
# a Markdown link's label followed by its target or reference: the renderer shows the label only
_LINK_MARKUP = re.compile(r"\]\(\S|\]\[[^\]\s]")
_MID_SENTENCE_START = re.compile(r"^(?:and|or|but|nor|for|with|to|of|in|on|at|by|from|as|than|the|a|an|which|that|whose)\s")


def not_a_sentence(text: str, kind: str, opens_block: bool = True) -> str | None:
    """Why a claim from prose cannot be a sentence as written; None when it can. A claim the
    splitter took from inside a sentence ("but this can lead to ...") may start mid-sentence;
    a paragraph may not (``opens_block``: the claim starts where its block starts)."""
    if text.count("(") != text.count(")") or text.count("[") != text.count("]"):
        return "unbalanced brackets"
    if _LINK_MARKUP.search(text):
        return "link markup left in the text"
    if _CUT_AFTER_ABBREVIATION.search(text.rstrip()):
        return "cut after an abbreviation"
    if _SPACE_BEFORE_CLOSE.search(text):
        return "space before a full stop or comma"
    if kind != "list_item" and opens_block and _MID_SENTENCE_START.match(text):
        return "starts mid-sentence"
    return None


# ---------------------------------------------------------------------------------------------
# the run


@dataclass
class Tally:
    prose: int = 0
    lost: int = 0
    by_format: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    pages: int = 0
    claims: int = 0
    long: int = 0
    long_prose: int = 0
    non_sentence: int = 0
    errors: int = 0


def data_folder(data: str) -> Path:
    if not data:
        raise ConfigError(f"bench parse needs --data DIR (the docs-histories folder) or ${DATA_ENV}")
    folder = Path(data)
    if not (folder / "manifest.json").is_file():
        raise ConfigError(f"{folder} has no manifest.json: not a docs-histories folder")
    return folder


def score_page(raw: bytes, path: str, tally: Tally, dump: list[dict] | None, where: dict) -> None:
    fmt = detect_format(path)
    try:
        doc = parse_document(raw, path, path)
    except ParseError:
        tally.errors += 1
        return
    tally.pages += 1
    source = words(doc.text)
    ref = words(reference_prose(doc.text, fmt))
    ours = words(" ".join(b.text for b in doc.blocks))
    prose = lost = 0
    missing: dict[str, int] = {}
    for w, n in ref.items():
        if w not in source:
            continue  # generated by the renderer, not written on the page
        prose += n * len(w)
        short = n - ours.get(w, 0)
        if short > 0:
            lost += short * len(w)
            missing[w] = short
    tally.prose += prose
    tally.lost += lost
    tally.by_format[fmt][0] += prose
    tally.by_format[fmt][1] += lost
    if dump is not None and lost:
        dump.append({**where, "path": path, "prose": prose, "lost": lost, "missing": missing})
    spans = [(b.start, b.end, b.kind) for b in doc.blocks]
    for claim in split_claims(doc):
        tally.claims += 1
        start, kind = next(((s, k) for s, e, k in spans if s <= claim.start < e), (-1, ""))
        text = claim.source_text
        flag = None
        if len(text) > LONG_CLAIM:
            tally.long += 1
            if kind in PROSE_KINDS:
                tally.long_prose += 1
            flag = f"over {LONG_CLAIM} characters"
        if kind in PROSE_KINDS and (why := not_a_sentence(text, kind, claim.start == start)):
            tally.non_sentence += 1
            flag = why
        if dump is not None and flag:
            dump.append({**where, "path": path, "claim": text[:2000], "kind": kind, "why": flag})


def score_project(bundle: Path, releases: int | None, tally: Tally, dump: list[dict] | None, project: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kbaudit-bench-parse-") as tmp:
        clone = Path(tmp) / "repo.git"
        subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(clone)], check=True, capture_output=True)
        repo = pygit2.Repository(str(clone))
        revs = _tags(repo)
        if releases:
            revs = revs[-releases:]
        seen: set[tuple[str, str]] = set()
        for rev in revs:
            for path, entry in _walk(repo, rev.commit.tree):
                if not path.lower().endswith(PAGE_SUFFIXES) or (path, str(entry.id)) in seen:
                    continue
                seen.add((path, str(entry.id)))
                blob = repo[entry.id]
                if isinstance(blob, pygit2.Blob):
                    score_page(blob.data, path, tally, dump, {"project": project, "release": rev.name})


def run(params: Params) -> dict[str, float | int]:
    folder = data_folder(params.data)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    wanted = {p.strip() for p in params.projects.split(",") if p.strip()} if params.projects else None
    entries = [e for e in manifest if wanted is None or e["project"] in wanted]
    if wanted and (unknown := wanted - {e["project"] for e in entries}):
        raise ConfigError(f"not in {folder / 'manifest.json'}: {', '.join(sorted(unknown))}")
    dump: list[dict] | None = [] if params.dump else None
    out: dict[str, float | int] = {}
    total = Tally()
    shares: list[float] = []
    for entry in entries:
        name = entry["project"]
        tally = Tally()
        score_project(folder / entry["bundle"], params.releases, tally, dump, name)
        share = tally.lost / tally.prose if tally.prose else 0.0
        shares.append(share)
        out[f"prose_lost_share.{name}"] = round(share, 5)
        for fmt, (prose, lost) in sorted(tally.by_format.items()):
            out[f"prose_lost_share.{name}.{fmt}"] = round(lost / prose, 5) if prose else 0.0
        out[f"claims_over_600.{name}"] = tally.long
        out[f"non_sentence_claims.{name}"] = tally.non_sentence
        for attr in ("prose", "lost", "pages", "claims", "long", "long_prose", "non_sentence", "errors"):
            setattr(total, attr, getattr(total, attr) + getattr(tally, attr))
    out["prose_lost_share"] = round(total.lost / total.prose, 5) if total.prose else 0.0
    out["max_prose_lost_share"] = round(max(shares), 5) if shares else 0.0
    out["claims_over_600"] = total.long
    out["claims_over_600_prose"] = total.long_prose
    out["non_sentence_claims"] = total.non_sentence
    out["pages"] = total.pages
    out["claims"] = total.claims
    out["parse_errors"] = total.errors
    if params.dump and dump is not None:
        with open(params.dump, "w", encoding="utf-8") as fh:
            for row in dump:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return out
