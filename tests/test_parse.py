"""Parsing: formats, front matter (incl. hostile YAML), offsets, ignore regions, bad input, size."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

import pytest

from kb.ingest.parse import OffsetMap, ParseError, parse_document, read_front_matter


def parse(text: str, name: str = "doc.md"):
    return parse_document(text.encode("utf-8"), name, f"/kb/{name}")


def check_offsets(doc) -> None:
    """Every character of every block maps to the same character in doc.text (markup aside)."""
    for block in doc.blocks:
        assert len(block.offsets) == len(block.text)
        for i, ch in enumerate(block.text):
            off = block.offsets[i]
            assert 0 <= off < len(doc.text)
            if ch.isalnum() and doc.text[off] != "&":  # a decoded character reference maps to its "&"
                assert doc.text[off] == ch, (block.text, i)


MD = """---
title: Payments API
updated: 2024-05-02
owner: payments-team
risk: high
tags: [api, payments]
---
# Payments API

The API uses **TLS 1.3** via [our proxy](https://proxy.example.com/a).
Run `make test` first.

Supported regions:

- us-east-1
- eu-west-1

| Plan | Price |
|------|-------|
| Free | $0 |
| Pro | $49 |

> Quoted *text*.

```python
print("code is not prose")
```

    indented code is not prose either

<!-- kbaudit: ignore -->
Internal paragraph.
<!-- kbaudit: end -->

Setext heading
--------------

Last paragraph with ![an image](img.png) and a <span>tag</span>.
"""


def test_markdown_blocks_and_metadata():
    doc = parse(MD)
    assert doc.format == "markdown"
    assert doc.title == "Payments API"
    assert doc.updated == date(2024, 5, 2)
    assert (doc.owner, doc.risk, doc.tags) == ("payments-team", "high", ("api", "payments"))
    kinds = [(b.kind, b.text) for b in doc.blocks]
    assert ("heading", "Payments API") in kinds
    para = next(b for b in doc.blocks if b.text.startswith("The API"))
    assert para.text == "The API uses TLS 1.3 via our proxy. Run make test first."
    assert "https://" not in " ".join(b.text for b in doc.blocks)
    items = [b for b in doc.blocks if b.kind == "list_item"]
    assert [b.text for b in items] == ["us-east-1", "eu-west-1"]
    assert all(b.lead_in == "Supported regions:" for b in items)
    rows = [b for b in doc.blocks if b.kind == "table_row"]
    assert [b.text for b in rows] == ["Free | $0", "Pro | $49"]
    assert rows[0].headers == ("Plan", "Price")
    assert any(b.kind == "quote" and b.text == "Quoted text." for b in doc.blocks)
    all_text = " ".join(b.text for b in doc.blocks)
    assert "code is not prose" not in all_text and "indented code" not in all_text
    assert "Internal paragraph" not in all_text
    assert "image" not in all_text and "<span>" not in all_text
    setext = next(b for b in doc.blocks if b.text == "Setext heading")
    assert setext.kind == "heading" and setext.level == 2
    last = doc.blocks[-1]
    assert last.section == ("Payments API", "Setext heading")
    check_offsets(doc)


def test_front_matter_offsets_point_into_full_text():
    doc = parse(MD)
    assert doc.text.startswith("---\n")  # front matter is kept in Document.text
    para = next(b for b in doc.blocks if b.text.startswith("The API"))
    assert doc.text[para.start : para.end].startswith("The API uses **TLS 1.3**")
    meta, body = read_front_matter(MD)
    assert meta["title"] == "Payments API"
    assert MD[body:].startswith("# Payments API")


def test_nested_lists_and_lead_in():
    doc = parse("The tool supports:\n- SSO\n- SCIM:\n  - Okta\n  - Azure AD\n- Audit logs\n")
    items = [(b.text, b.level, b.lead_in) for b in doc.blocks if b.kind == "list_item"]
    assert items == [
        ("SSO", 0, "The tool supports:"),
        ("SCIM:", 0, "The tool supports:"),
        ("Okta", 1, "SCIM:"),
        ("Azure AD", 1, "SCIM:"),
        ("Audit logs", 0, "The tool supports:"),
    ]


def test_html_visible_text_only():
    html = (
        "<html><head><title>Widget notes</title><style>p{}</style><script>var x='<p>no</p>';</script></head>"
        "<body><nav>Home</nav><h1>Widget</h1><p>Costs &euro;5<br>per   month.</p>"
        "<p>Features:</p><ul><li>Alpha</li><li>Beta</li></ul>"
        "<table><tr><th>OS</th><th>Min</th></tr><tr><td>Windows</td><td>10</td></tr></table>"
        "<!-- kbaudit: ignore --><p>hidden</p><!-- kbaudit: end --><p>Unclosed <b>bold"
    )
    doc = parse(html, "notes.html")
    assert doc.format == "html" and doc.title == "Widget notes"
    texts = [b.text for b in doc.blocks]
    assert "Costs €5 per month." in texts
    assert "Home" not in texts and "hidden" not in texts
    assert not any("var x" in t or "p{}" in t for t in texts)
    items = [b for b in doc.blocks if b.kind == "list_item"]
    assert [b.lead_in for b in items] == ["Features:", "Features:"]
    row = next(b for b in doc.blocks if b.kind == "table_row")
    assert row.text == "Windows | 10" and row.headers == ("OS", "Min")
    assert texts[-1] == "Unclosed bold"
    check_offsets(doc)


@pytest.mark.parametrize(
    "page",
    [
        "<a " * 100_000,
        "<" * 200_000,
        "<p " + "x=1 " * 50_000,
        "<script>" * 50_000,
        "<div>" * 50_000 + "t",
        "<!--" + "x" * 200_000,
        "&amp;&#x41;&bogus;" * 20_000,
        "<![CDATA[" + "x" * 100_000,
        "</" * 100_000,
    ],
)
def test_hostile_html_is_linear(page):
    # the standard library's HTMLParser takes minutes on "<a " * 300_000; ours must not
    t0 = time.perf_counter()
    doc = parse(page, "x.html")
    assert time.perf_counter() - t0 < 10
    check_offsets(doc)


def test_plain_text_headings_and_lists():
    doc = parse("Onboarding\n\nNew hires get a laptop.\nIt has 32 GB.\n\nTools:\n- GitHub\n- Slack\n", "a.txt")
    assert doc.format == "text" and doc.title == "Onboarding"
    assert [b.kind for b in doc.blocks] == ["heading", "paragraph", "paragraph", "list_item", "list_item"]
    assert doc.blocks[3].lead_in == "Tools:"
    check_offsets(doc)


def test_title_falls_back_to_stem():
    assert parse("just some words.", "notes/my-page.md").title == "my-page"


def test_kbaudit_ignore_front_matter():
    assert parse("---\nkbaudit: {ignore: true}\n---\nText.\n").ignore is True
    assert parse("Text.\n").ignore is False
    assert parse('---\nkbaudit: {ignore: "false"}\n---\nText.\n').ignore is False
    assert parse("---\nkbaudit:\n  ignore: yes\n---\nText.\n").ignore is True


@pytest.mark.parametrize(
    "front, needle",
    [
        ("a: !!python/object/apply:os.system ['echo pwned']", "unsafe"),
        ("a: !!python/name:os.system", "unsafe"),
        ("a: &x [1, 2]\nb: *x", "alias"),
        ("a: &a ['lol','lol']\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]", "alias"),
        ("a: [unclosed", "malformed"),
        ("updated: 2024-13-45", "malformed"),
        ("a: " + "[" * 5000 + "]" * 5000, "nests too deeply"),
        ("- just\n- a list", "not a mapping"),
        ("x: " + "y" * (70 * 1024), "larger than"),
    ],
)
def test_hostile_front_matter_is_a_clear_error(front, needle):
    with pytest.raises(ParseError) as err:
        parse(f"---\n{front}\n---\nBody.\n")
    message = str(err.value)
    assert needle in message and "\n" not in message


def test_binary_and_invalid_utf8_are_rejected():
    with pytest.raises(ParseError, match="binary"):
        parse_document(b"PK\x03\x04\x00\x00binary", "a.md", "/a.md")
    with pytest.raises(ParseError, match="UTF-8"):
        parse_document("caf\u00e9".encode("latin-1"), "a.md", "/a.md")
    doc = parse_document(b"\xef\xbb\xbf# Title\n\nText here.\n", "b.md", "/b.md")  # a BOM is fine
    assert doc.title == "Title"


@pytest.mark.parametrize(
    "text",
    [
        "```\nunclosed fence\n" * 3,
        "[unclosed link](http://x " * 50,
        "`" * 5000,
        "[" * 100_000,  # was quadratic: every "[" scanned ahead for its "]"
        "![" * 50_000,
        "[a](" * 50_000,
        "*" * 10000 + "_" * 10000,
        "<div><p>unclosed <b>" * 200,
        "| a | b |\n|---|\n| 1 |\n" * 10,
        "> " * 300 + "deep quote",
        "- " * 200 + "deep list",
        "<!-- unclosed comment\n" + "text\n" * 10,
        "---\nunclosed: front matter\n" + "x\n" * 10,
        "\r\n".join(["# CRLF", "", "Line one.", "Line two."]),
    ],
)
def test_malformed_markdown_is_best_effort(text):
    doc = parse(text)
    check_offsets(doc)
    parse(text, "x.html")  # and as HTML


def test_twenty_megabyte_document_parses_fast(tmp_path):
    para = (
        "The Payments API launched in 2019 and serves 40 regions. It uses **TLS 1.3** and `--strict` mode, "
        "see [the docs](https://docs.example.com/a.b). Refunds take 5-10 days; e.g. cards take 5 days.\n\n"
        "- item one with a [link](http://x.y)\n- item two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    )
    raw = ("# Big\n\n" + para * (20 * 1024 * 1024 // len(para) + 1)).encode()
    assert len(raw) >= 20 * 1024 * 1024
    path = tmp_path / "big.md"
    path.write_bytes(raw)
    t0 = time.perf_counter()
    doc = parse_document(path.read_bytes(), "big.md", str(path))
    elapsed = time.perf_counter() - t0
    assert len(doc.blocks) > 100_000
    assert elapsed < 60, elapsed  # linear: ~10 s on a loaded 2-core machine
    last = doc.blocks[-1]
    assert doc.text[last.offsets[0]] == last.text[0]


def test_one_giant_line_is_linear():
    text = ("word `code` [l](u) *e* " * 200_000) + "\n"
    t0 = time.perf_counter()
    doc = parse(text)
    assert time.perf_counter() - t0 < 30
    assert len(doc.blocks) == 1


def test_offset_map_behaves_like_a_tuple():
    m = OffsetMap.from_offsets([5, 6, 7, 10, 11, 20])
    assert len(m) == 6 and list(m) == [5, 6, 7, 10, 11, 20]
    assert m[3] == 10 and m[-1] == 20 and m[1:4] == (6, 7, 10)
    assert m == (5, 6, 7, 10, 11, 20) and hash(m) == hash(OffsetMap.from_offsets(list(m)))
    assert m.span(1, 4) == (6, 11)
    with pytest.raises(IndexError):
        m[6]


def test_link_definitions_footnotes_and_heading_attributes():
    doc = parse("# Title {#anchor}\n\nA footnote[^1] and a [ref link][r].\n\n[r]: https://example.com\n[^1]: The footnote says 3 things.\n")
    assert [b.text for b in doc.blocks] == ["Title", "A footnote and a ref link.", "The footnote says 3 things."]
    check_offsets(doc)


def test_attribute_lists_after_a_closing_sequence_leave_the_heading_alone():
    # Python-Markdown's attr_list, as MkDocs sites write release headings
    doc = parse("## [1.10.0](https://example.com/v1.10.0) - 2022-09-18 ## {: #v1.10.0 }\n\nAdded a flag.\n\n## Other { .wide }\n\nText.\n")
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "1.10.0 - 2022-09-18"), ("paragraph", "Added a flag."), ("heading", "Other"), ("paragraph", "Text.")
    ]  # fmt: skip
    check_offsets(doc)


def test_mdx_imports_are_not_prose():
    doc = parse("import Tabs from '@theme/Tabs';\n\n# Guide\n\n<Callout>The CLI is fast.</Callout>\n", "g.mdx")
    assert [b.text for b in doc.blocks] == ["Guide", "The CLI is fast."]


# ---- raw files as they sit in repositories: containers, directives, includes ----------------

RAW_CONTAINERS = """---
title: Raw
---
# Options

Opening text.
{: .subtitle }

!!! warning "Experimental HTTP3"
    HTTP3 support is experimental and must be enabled.

??? info "transport.readTimeout"

    _Optional, Default=0s_

    ```yaml tab="File (YAML)"
    readTimeout: 42s
    ```

    - The timeout applies to the request body.

=== "File (TOML)"

    ```toml
    [transport]
    readTimeout = "42s"
    ```

    Values without units are read as seconds.

::: tip Upgrading
Run the migration before you upgrade to version 3.
:::

```{note}
:class: dropdown
The cache is cleared on every restart.
```

```{program-output} black --help
Usage: black [OPTIONS]
```

:::{code-block} python
print("never prose")
:::

{{< notice tip >}}
Shortcode bodies are prose too.
{{< /notice >}}

{{< highlight go >}}
fmt.Println("code, not prose")
{{< /highlight >}}

{{< code-toggle file=hugo >}}
[services]
shortname = 'not prose'
{{</ code-toggle >}}

--8<-- "content/includes/oss-box.md"
{!upgrade-notice.md!}
{!> warning.md !}

(labels/why)=
## Why

Plain closing paragraph.
"""


def test_containers_keep_their_prose_and_drop_their_markup():
    doc = parse(RAW_CONTAINERS)
    check_offsets(doc)
    texts = [b.text for b in doc.blocks]
    assert texts == [
        "Options",
        "Opening text.",
        "Experimental HTTP3:",
        "HTTP3 support is experimental and must be enabled.",
        "transport.readTimeout:",
        "Optional, Default=0s",
        "The timeout applies to the request body.",
        "Values without units are read as seconds.",
        "Upgrading:",
        "Run the migration before you upgrade to version 3.",
        "The cache is cleared on every restart.",
        "Shortcode bodies are prose too.",
        "Why",
        "Plain closing paragraph.",
    ]
    # the admonition body is read dedented: its list item is a list item, not indented code
    item = next(b for b in doc.blocks if b.text.startswith("The timeout applies"))
    assert item.kind == "list_item" and item.section == ("Options",)
    for leaked in ("!!!", "???", ":::", "{{<", "--8<--", "{!", "readTimeout: 42s", "never prose", "Usage: black", ":class:"):
        assert not any(leaked in t for t in texts), leaked


def test_a_fenced_block_is_code_even_when_it_holds_container_markers():
    doc = parse('# T\n\n```markdown\n!!! note "Shown"\n    Not prose: an example of markup.\n:::\n```\n\nAfter.\n')
    assert [b.text for b in doc.blocks] == ["T", "After."]


def test_mdx_imports_and_components_are_not_prose():
    mdx = "---\ntitle: M\n---\nimport Tabs from '@theme/Tabs';\n\n# Install\n\n<Tabs>\n<TabItem value=\"npm\">\n\nRun the installer first.\n\n</TabItem>\n</Tabs>\n"
    doc = parse(mdx, "page.mdx")
    check_offsets(doc)
    assert [b.text for b in doc.blocks] == ["Install", "Run the installer first."]


RST = """=======
Install
=======

Black can be installed by running ``pip install black``. It requires
Python 3.9+ to run.

.. code-block:: console

   $ pip install black

- The ``--line-length`` option defaults to 88.
- See :ref:`the configuration <config>` for the rest.

.. note::

   The cache lives in the user cache directory.

.. automodule:: black
   :members:

.. Comment: not prose.

Configuration
-------------

A ``pyproject.toml`` file is found by walking up from the common base.
"""


def test_restructuredtext_reads_through_docutils():
    doc = parse(RST, "install.rst")
    check_offsets(doc)
    assert doc.format == "rst" and doc.title == "Install"
    got = [(b.kind, b.text) for b in doc.blocks]
    assert got == [
        ("heading", "Install"),
        ("paragraph", "Black can be installed by running pip install black. It requires Python 3.9+ to run."),
        ("command", "pip install black"),  # the console block's command, its prompt left out
        ("list_item", "The --line-length option defaults to 88."),
        ("list_item", "See the configuration for the rest."),
        ("paragraph", "The cache lives in the user cache directory."),
        ("heading", "Configuration"),
        ("paragraph", "A pyproject.toml file is found by walking up from the common base."),
    ]
    last = doc.blocks[-1]
    assert last.section == ("Install", "Configuration")
    assert doc.text[last.start : last.end] == "A ``pyproject.toml`` file is found by walking up from the common base."


def test_the_roles_of_sphinx_extensions_read_as_their_text():
    page = (
        "Development\n===========\n\n"
        "Install your own tox (using :pypi:`pipx` or similar is fine), added in :pull:`3325` by :user:`bob`.\n\n"
        "Checks run on :gh:`GitHub Actions <features/actions>`, see :rfc:`2616` and :sup:`2`.\n"
    )
    doc = parse(page, "development.rst")
    check_offsets(doc)
    assert [b.text for b in doc.blocks] == [
        "Development",
        "Install your own tox (using pipx or similar is fine), added in 3325 by bob.",
        "Checks run on GitHub Actions, see 2616 and 2.",
    ]
    # the same pull request under another extension's role name reads the same
    renamed = parse(page.replace(":pull:", ":pr:"), "development.rst")
    assert [b.text for b in renamed.blocks] == [b.text for b in doc.blocks]


def test_a_reference_name_keeps_its_word():
    """``pipx_`` and ``guide__`` are links whose text is the word before the underscores: the
    word stays in the sentence, so a page that writes the same link another way reads the same."""
    page = (
        "Development\n===========\n\n"
        "Install your own tox (using pipx_ or similar is fine), read the guide__ first, then tox_docs_.\n\n"
        ".. _pipx: https://pipx.pypa.io\n"
        "__ https://example.org/guide\n"
        ".. _tox_docs: https://tox.wiki\n"
    )
    doc = parse(page, "development.rst")
    check_offsets(doc)
    assert [b.text for b in doc.blocks] == [
        "Development",
        "Install your own tox (using pipx or similar is fine), read the guide first, then tox_docs.",
    ]
    linked = parse(page.replace("pipx_", ":pypi:`pipx`"), "development.rst")
    assert linked.blocks[1].text == doc.blocks[1].text


def test_an_admonition_title_may_hold_quotes_of_its_own():
    # Python-Markdown reads the title up to the line's last quote: a link title inside it
    # does not end the title, and the line is not left behind as prose
    page = (
        "# Cache\n\n"
        '!!! tip "Warming up [the cache](cache.md "How the cache works")"\n\n'
        "    The first request after a restart fills the cache.\n\n"
        "After the note.\n"
    )
    doc = parse(page)
    check_offsets(doc)
    assert [b.text for b in doc.blocks] == [
        "Cache",
        "Warming up the cache:",
        "The first request after a restart fills the cache.",
        "After the note.",
    ]


def test_myst_roles_read_as_their_text():
    page = "# Deploy\n\nSee {doc}`the server guide </usage/server>` and {ref}`limits` before {kbd}`Ctrl-C`.\n"
    doc = parse(page)
    check_offsets(doc)
    assert [b.text for b in doc.blocks] == ["Deploy", "See the server guide and limits before Ctrl-C."]
    # a brace that opens no role stays text
    assert parse("# T\n\nThe set {a, b} has two members.\n").blocks[1].text == "The set {a, b} has two members."
    # a target written without a space before it is a target too; a code role keeps its brackets
    page = "# T\n\nSphinx adds {ref}`in-line roles<rst-roles>` and {ref}`directives`. It returns {code}`List<String>`.\n"
    assert parse(page).blocks[1].text == "Sphinx adds in-line roles and directives. It returns List<String>."


def test_front_matter_reads_the_same_with_either_yaml_loader():
    """Plain front matter is read by libyaml; what it gives must be what the Python loader gives,
    and anything libyaml may not see (anchors, aliases, tags, flow nesting) still meets the Python
    loader's refusals."""
    from pathlib import Path

    import yaml

    from kb.ingest.front_matter import _load_front_matter, _NoAliasSafeLoader

    root = Path(__file__).resolve().parent.parent
    pages = sorted((root / "tests" / "fixtures").rglob("*.md")) + sorted((root / "kb" / "demo" / "docs").rglob("*.md"))
    texts = [p.read_text("utf-8").split("---\n")[1] for p in pages if p.read_text("utf-8").startswith("---\n")]
    texts += [
        "title: Ünïcode ✓\nupdated: 2024-02-29\nweight: 010\nratio: 1:30\nempty:\nflag: yes\n",
        "owner: team-a\nreviewed: 2024-06-01 10:30:00\nnested:\n  deeper:\n    deepest: 3\nlist:\n  - a\n  - 'b: c'\n",
        'title: "quoted # not a comment"  # a comment\nversion: 1.10\n',
        "tags: [a, b]\nmeta: {k: v}\n",
    ]
    assert len(texts) > 5
    for text in texts:
        assert _load_front_matter(text) == yaml.load(text, Loader=_NoAliasSafeLoader), text  # noqa: S506
    with pytest.raises(ParseError, match="anchors"):
        read_front_matter("---\nbase: &b {x: 1}\nother: *b\n---\nbody")
    with pytest.raises(ParseError, match="unsafe or unknown YAML tag"):
        read_front_matter("---\nx: !!python/object/apply:os.system ['true']\n---\nbody")
    with pytest.raises(ParseError, match="malformed front matter at line 2"):
        read_front_matter("---\ntitle: a\n  bad: indentation: here\n---\nbody")


def test_rst_table_rows_read_as_table_rows_with_their_headers():
    """A simple table and a list-table are read as a Markdown table is: one block per body row,
    its cells joined by " | ", the header row's cells as headers; each cell then states a fact."""
    from kb.claims.split import split_claims

    page = """Support
=======

===============  ===============
Product version  Minimum runtime
===============  ===============
8.0+             3.8+
7.1+             3.7+
===============  ===============

.. list-table:: Limits
   :header-rows: 1

   * - Name
     - Default
   * - ``timeout``
     - 30 seconds
   * - ``retries``
     -

The table ends here.
"""
    doc = parse_document(page.encode(), "support.rst", "/kb/support.rst")
    check_offsets(doc)
    rows = [(b.text, b.headers) for b in doc.blocks if b.kind == "table_row"]
    assert rows == [
        ("8.0+ | 3.8+", ("Product version", "Minimum runtime")),
        ("7.1+ | 3.7+", ("Product version", "Minimum runtime")),
        ("timeout | 30 seconds", ("Name", "Default")),
        ("retries | -", ("Name", "Default")),
    ]
    assert doc.blocks[-1].text == "The table ends here."
    texts = [c.text for c in split_claims(doc) if c.checkworthy]
    assert "Product version 8.0+: Minimum runtime is 3.8+" in texts and "Name timeout: Default is 30 seconds" in texts


def test_a_role_named_like_the_next_word_keeps_its_text():
    """ ":option:`-r` option": the role's name is markup, not the word after the role, so "-r"
    is no generated text to skip."""
    page = "T\n=\n\nMore details on the :option:`-r` option, and the :fixture:`recwarn` fixture, are in the help.\n"
    doc = parse(page, "t.rst")
    check_offsets(doc)
    assert doc.blocks[1].text == "More details on the -r option, and the recwarn fixture, are in the help."


def test_sphinx_description_and_version_directives_keep_their_prose():
    """``envvar``, ``confval`` and the like read as their name and body, an entry with options
    as a table row that names it ("name output_style: default is ..."); a version, tab or
    see-also directive, and an autodoc directive, as its body; a directive docutils and this list
    do not know stays out."""
    page = """Reference
=========

.. envvar:: ACME_DEBUG

   When set, the client prints tracing information.

.. confval:: output_style
   :type: ``str``
   :default: ``"progress"``

   Sets the console output style.

.. versionchanged:: 9.0

   The ``--strict`` flag sets every strictness option.

.. automodule:: acme.client
   :members:

.. autoclass:: Contract

    .. method:: pre_process(response)

        Checks the response before the callback sees it.

After the entries.
"""
    doc = parse(page, "reference.rst")
    check_offsets(doc)
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Reference"),
        ("list_item", "ACME_DEBUG"),
        ("paragraph", "When set, the client prints tracing information."),
        ("table_row", 'output_style | str | "progress"'),
        ("paragraph", "Sets the console output style."),
        ("paragraph", "The --strict flag sets every strictness option."),
        ("list_item", "pre_process(response)"),
        ("paragraph", "Checks the response before the callback sees it."),
        ("paragraph", "After the entries."),
    ]
    row = next(b for b in doc.blocks if b.kind == "table_row")
    assert row.headers == ("name", "type", "default")
    from kb.claims.split import split_claims

    assert 'name output_style: default is "progress"' in [c.text for c in split_claims(doc)]


# Docusaurus page (RTK Query "Automated Re-fetching"): a JSX table whose cells hold JSX string expressions
MDX_JSX_TABLE = """# Tags

<table>
  <thead>
    <tr>
      <th>Provided<br />Invalidated</th>
      <th>
        <div>Specific tag A1</div>
        <div style={{ fontWeight: 'normal', fontSize: '0.9rem' }}>
          {"[{ type: 'Post',"}
          <br />
          {' id: 1 }]'}
        </div>
      </th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <td>
        <div style={{ fontWeight: 'bold' }}>General tag A</div>
        <div style={{ fontSize: '0.9rem' }}>
          {"['Post'] / [{ type: 'Post' }]"}
        </div>
      </td>
      <td>✔️</td>
    </tr>
  </tbody>
</table>
"""


def test_mdx_jsx_string_expressions_read_as_their_text():
    doc = parse(MDX_JSX_TABLE, "automated-refetching.mdx")
    (row,) = [b for b in doc.blocks if b.kind == "table_row"]
    assert row.headers == ("Provided Invalidated", "Specific tag A1 [{ type: 'Post', id: 1 }]")
    assert row.text == "General tag A ['Post'] / [{ type: 'Post' }] | ✔️"
    check_offsets(doc)
    # in a Markdown page they are text as written
    (html_row,) = [b for b in parse(MDX_JSX_TABLE, "automated-refetching.md").blocks if b.kind == "table_row"]
    assert html_row.text.startswith('General tag A {"')


# Docusaurus page (Task "Any Variables"): a component's opening tag whose attributes run over lines
MDX_TABS = """# Any Variables

There are two active proposals for this experiment.

<Tabs defaultValue="1" queryString="proposal"
  values={[
    {label: 'Proposal 1', value: '1'},
    {label: 'Proposal 2', value: '2'}
  ]}>

<TabItem value="1">

This experiment proposal breaks the sh subkey.

</TabItem>
</Tabs>

<Note>Values are compared as "a > b" strings.</Note>
"""


def test_an_mdx_components_opening_tag_over_several_lines_is_markup():
    texts = [b.text for b in parse(MDX_TABS, "any_variables.mdx").blocks]
    assert texts == [
        "Any Variables",
        "There are two active proposals for this experiment.",
        "This experiment proposal breaks the sh subkey.",
        'Values are compared as "a > b" strings.',
    ]
    # a Markdown page read by VitePress holds Vue components the same way
    assert [b.text for b in parse(MDX_TABS, "any_variables.md").blocks] == texts


EMBED = """The example below runs in the browser:

<iframe
  src="https://codesandbox.io/embed/cache-lifetime-example?fontsize=12&theme=dark"
  style={{
    width: '100%',
    border: 0,
  }}
  title="Cache Lifetime Example"
></iframe>

<hr>
<main>
The cache keeps a subscription for 60 seconds after its last subscriber leaves.
</main>

## Further information
"""


@pytest.mark.parametrize("name", ["embed.md", "embed.mdx"])
def test_every_commonmark_block_tag_opens_an_html_block_and_an_embed_is_no_prose(name):
    # an <iframe> whose attributes run over several lines is an HTML block in CommonMark (its
    # tag is one of type 6's); read as a paragraph, its attributes became a claim
    texts = [b.text for b in parse(EMBED, name).blocks]
    assert texts == [
        "The example below runs in the browser:",
        "The cache keeps a subscription for 60 seconds after its last subscriber leaves.",
        "Further information",
    ]


ICONS = """Let's see how we can get it working on popular CI software:

- :simple-circleci: [Circle CI](circle.md)
- :simple-cirrusci:[Cirrus CI](cirrus.md)
- [:fontawesome-brands-github: Download v2.8.0][oss]{ .md-button .md-button--primary }

| Scope | Supported |
| --- | --- |
| Region | :material-check: |

The ratio is 3:4 at 10:30, see [the guide](guide.md){: target=_blank } for {x}.

[oss]: https://example.com/releases
"""


def test_an_icon_before_its_label_and_a_links_attribute_list_are_markup():
    # MkDocs Material's icons and Python-Markdown's attribute lists render no text: read as text
    # they made a list item that stands unchanged in the newest release ("Circle CI") read
    # ":simple-circleci: Circle CI", and removed
    texts = [b.text for b in parse(ICONS, "ci.md").blocks]
    assert texts == [
        "Let's see how we can get it working on popular CI software:",
        "Circle CI",
        "Cirrus CI",
        "Download v2.8.0",
        "Region | :material-check:",  # a lone icon in a cell is the cell's value
        "The ratio is 3:4 at 10:30, see the guide for {x}.",
    ]


EMPHASIS = (
    "Templates go in the layouts/_shortcodes directory, not `layouts/_partials`; an _emphasised_ word, "
    "**bold**, __strong__ and **a _nested_ one**; snake_case_name, \\_escaped\\_, 2 * 3 and ~~gone~~ in ~5 min.\n"
)


def test_only_paired_emphasis_markers_are_markup():
    # CommonMark reads an underscore that nothing closes as text: "layouts/_shortcodes" names
    # another directory than "layouts/shortcodes", and reading both alike let a renamed path
    # stand as a sentence the newest release states word for word
    (block,) = parse(EMPHASIS, "emphasis.md").blocks
    assert block.text == (
        "Templates go in the layouts/_shortcodes directory, not layouts/_partials; an emphasised word, "
        "bold, strong and a nested one; snake_case_name, _escaped_, 2 * 3 and gone in ~5 min."
    )


def test_pages_parsed_in_an_earlier_run_read_back_as_parsed(tmp_path):
    """A page's blocks kept under a run's cache folder come back equal, offsets and all, in a run
    that finds them there (a new process: the in-memory cache cleared), without parsing again."""
    from kb.ingest import parse as parse_module

    pages = {p.name: p.read_bytes() for p in sorted((Path(__file__).parent.parent / "kb" / "demo" / "docs").glob("*.md"))}
    pages["guide.rst"] = b"Guide\n=====\n\n.. note::\n\n   Retries are attempted **three** times.\n\n* one item\n* two items\n"
    pages["page.html"] = b"<html><body><h1>Title</h1><p>The limit is <b>10</b> requests.</p></body></html>"
    pages["tabs.mdx"] = MDX_TABS.encode()
    fresh = {name: parse_document(raw, name, name) for name, raw in pages.items()}
    try:
        parse_module.keep_parsed_blocks(tmp_path)
        parse_module._blocks.cache_clear()
        for name, raw in pages.items():
            assert parse_document(raw, name, name) == fresh[name]
        assert parse_module.save_parsed_blocks() == len(pages)
        parse_module._blocks.cache_clear()
        parse_module.keep_parsed_blocks(tmp_path)  # the next run
        for name, raw in pages.items():
            kept = parse_document(raw, name, name)
            assert kept.blocks == fresh[name].blocks and [list(b.offsets) for b in kept.blocks] == [
                list(b.offsets) for b in fresh[name].blocks
            ]
        assert parse_module.save_parsed_blocks() == 0  # nothing was parsed again
        assert parse_module._kept is None  # and after the run's reading, nothing is kept
    finally:
        parse_module.keep_parsed_blocks(None)
        parse_module._blocks.cache_clear()


def test_an_audit_keeps_its_parsed_pages_in_its_cache_unless_run_in_full(tmp_path):
    from kb.chain import run_audit
    from kb.config import load_settings
    from kb.ingest import parse as parse_module
    from tests.conftest import DEMO_TODAY

    parse_module._blocks.cache_clear()  # pages this process parsed before are not parsed again
    run_audit(load_settings({"today": DEMO_TODAY}, environ={}).validate(), cache_dir=tmp_path / "warm")
    assert list((tmp_path / "warm" / "stages" / "blocks").glob("*.parquet"))
    assert parse_module._kept is None  # nothing parsed after the run's reading is kept
    run_audit(load_settings({"today": DEMO_TODAY, "full": True}, environ={}).validate(), cache_dir=tmp_path / "full")
    assert not (tmp_path / "full" / "stages" / "blocks").exists()


@pytest.mark.parametrize(
    "front",
    [
        "title: Emojis\ncategories: [quick reference]\nkeywords: [emoji]\nmenu:\n  docs:\n    parent: quick-reference\n    weight: 20",
        "title: Page\naliases: [/old/, '/older/']\nparams: {searchable: false, tags: [a, b]}\ndate: 2024-05-01",
        "title: 'Brackets [in] a string'\nlist: [[1, 2], [3, [4, 5]]]",
    ],
)
def test_flow_collections_read_by_libyaml_as_by_the_python_loader(front):
    import yaml

    from kb.ingest.front_matter import _flow_depth, _NoAliasSafeLoader

    assert _flow_depth(front) <= 8  # the fast loader reads it
    meta, _ = read_front_matter(f"---\n{front}\n---\nBody.\n")
    assert meta == yaml.load(front, Loader=_NoAliasSafeLoader)  # noqa: S506 (safe subclass)


def test_a_grid_tables_cells_are_read_in_their_own_columns():
    """A grid table's cell runs over several lines with its neighbours' text between: each cell is
    read down its own column, and the prose after the table is read whole."""
    page = """Specifiers
==========

+----------+---------------------------------+--------------------------------+
| Operator | Description                     | Example                        |
+==========+=================================+================================+
|  ``<=``  | Any version less than or        | ``<=3.1``: any version         |
|          | equal to the specified version. | less than or equal to ``3.1``. |
+----------+---------------------------------+--------------------------------+
|  ``~=``  | Any compatible release.         | ``~=3.1``: version ``3.1``     |
|          | Compatible releases are         | or later, but not              |
|          | within the same major version.  | version ``4.0`` or later.      |
+----------+---------------------------------+--------------------------------+

The detailed specification of supported comparison operators is in the standard.
"""
    doc = parse(page, "spec.rst")
    check_offsets(doc)
    rows = [(b.text, b.headers) for b in doc.blocks if b.kind == "table_row"]
    assert rows == [
        (
            "<= | Any version less than or equal to the specified version. | <=3.1: any version less than or equal to 3.1.",
            ("Operator", "Description", "Example"),
        ),
        (
            "~= | Any compatible release. Compatible releases are within the same major version. "
            "| ~=3.1: version 3.1 or later, but not version 4.0 or later.",
            ("Operator", "Description", "Example"),
        ),
    ]
    assert doc.blocks[-1].text == "The detailed specification of supported comparison operators is in the standard."


def test_docutils_notes_filed_inside_an_element_are_not_its_text():
    """A link named twice makes docutils file a note inside the second one's table cell; read as
    the cell's text, it took the words of the sentences after the table."""
    page = """Classes
=======

- `Parsed <https://example.org/parse.py>`_ is the result of the second phase.

.. list-table::

    - - ``_options``
      - `Parsed <https://example.org/parse.py>`_
      - CLI parse result
    - - ``_args``
      - ``list[str]``
      - Original CLI arguments

The ``envs`` property creates the selector on first access.
"""
    doc = parse(page, "classes.rst")
    check_offsets(doc)
    assert [b.text for b in doc.blocks if b.kind == "table_row"] == [
        "_options | Parsed | CLI parse result",
        "_args | list[str] | Original CLI arguments",
    ]
    assert doc.blocks[-1].text == "The envs property creates the selector on first access."


def test_a_hugo_code_shortcode_without_a_closing_tag_has_no_body():
    """``{{< codeFromFile file=... >}}`` stands alone: the page after it is still read."""
    page = """## Extra Mounts

Extra mounts pass storage on the host through to a node.

{{< codeFromFile file="static/examples/config-with-mounts.yaml" lang="yaml" >}}

Check that the host path is included in the file sharing settings.

{{< codeFromInline lang="yaml" >}}
kind: Cluster
{{< /codeFromInline >}}

Port mappings forward traffic to the nodes.
"""
    texts = [b.text for b in parse(page, "mounts.md").blocks]
    assert texts == [
        "Extra Mounts",
        "Extra mounts pass storage on the host through to a node.",
        "Check that the host path is included in the file sharing settings.",
        "Port mappings forward traffic to the nodes.",
    ]
