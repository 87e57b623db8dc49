"""Parser fidelity: pages of the shapes real documentation has, read without losing or garbling prose."""

import kb.ingest.rst
from kb.claims.split import split_claims
from kb.ingest.parse import parse_document


def _blocks(text: str, path: str):
    doc = parse_document(text.encode("utf-8"), path, path)
    for b in doc.blocks:  # every block's offsets point at its own characters in the page
        assert all(doc.text[o] == ch for o, ch in zip(b.offsets, b.text) if not ch.isspace()), b.text
    return doc, [(b.kind, b.text) for b in doc.blocks]


# ---------------------------------------------------------------------------------------------
# reStructuredText


def test_a_table_of_contents_does_not_take_the_sections_after_it():
    page = """Guide
=====

.. contents::
    :depth: 1
    :local:

Section One
-----------

The default timeout is 30 seconds for every request that the client sends.

Section Two
-----------

Retries are attempted three times before the client gives up on the server.
"""
    doc, blocks = _blocks(page, "guide.rst")
    assert blocks == [
        ("heading", "Guide"),
        ("heading", "Section One"),
        ("paragraph", "The default timeout is 30 seconds for every request that the client sends."),
        ("heading", "Section Two"),
        ("paragraph", "Retries are attempted three times before the client gives up on the server."),
    ]
    claims = [c.source_text for c in split_claims(doc)]
    assert "The default timeout is 30 seconds for every request that the client sends." in claims
    assert "Retries are attempted three times before the client gives up on the server." in claims


def test_a_page_of_directives_alone_has_no_prose_and_text_docutils_cannot_read_is_plain_text(monkeypatch):
    # a page that includes a file outside the docs tree (read as it is, nothing included) and a
    # page that is a table of contents: neither says anything a claim could be made of
    for page in (".. include:: ../CONTRIBUTING.rst\n", ".. toctree::\n   :maxdepth: 2\n\n   install\n   usage\n"):
        doc, blocks = _blocks(page, "contributing.rst")
        assert blocks == [] and split_claims(doc) == []

    # where docutils gives up, the words are still read, as plain text
    def gives_up(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(kb.ingest.rst, "publish_doctree", gives_up)
    doc, blocks = _blocks("Timeouts default to 30 seconds.\n", "broken.rst")
    assert blocks == [("paragraph", "Timeouts default to 30 seconds.")]


def test_a_word_after_a_role_is_not_taken_from_a_later_sentence():
    page = """Logging
=======

Flask uses standard Python :mod:`logging`. Messages about your Flask
application are logged with :meth:`app.logger <flask.Flask.logger>`,
which takes the same name as :attr:`app.name <flask.Flask.name>`.

.. code-block:: python

    app.logger.info('%s logged in successfully', user.username)

If you don't configure logging, Python's default log level is usually
'warning'. Nothing below the configured level will be visible.
"""
    _, blocks = _blocks(page, "logging.rst")
    assert blocks == [
        ("heading", "Logging"),
        (
            "paragraph",
            "Flask uses standard Python logging. Messages about your Flask application are logged with app.logger, "
            "which takes the same name as app.name.",
        ),
        ("paragraph", "If you don't configure logging, Python's default log level is usually 'warning'. "
                      "Nothing below the configured level will be visible."),
    ]  # fmt: skip


def test_a_substitution_does_not_send_the_rest_of_its_paragraph_to_its_definition():
    page = """Fetch
=====

|fetch|_ is the built-in JavaScript solution to making requests from a page.
You may have heard of libraries such as |XHR|_ or `jQuery`_. These are no
longer needed in modern browsers.

.. |fetch| replace:: ``fetch()``
.. _fetch: https://developer.mozilla.org/Web/API/Fetch_API
.. |XHR| replace:: ``XMLHttpRequest()``
.. _XHR: https://developer.mozilla.org/Web/API/XMLHttpRequest
.. _jQuery: https://jquery.com/

Rendering
---------

Templates are rendered on the server, before the response is sent.
"""
    _, blocks = _blocks(page, "fetch.rst")
    # the substitutions' text is not on the page where they stand; the words after them are
    assert blocks[1][1].startswith("fetch is the built-in JavaScript solution to making requests from a page.")
    assert blocks[1][1].endswith("or jQuery. These are no longer needed in modern browsers.")
    assert blocks[2:] == [("heading", "Rendering"), ("paragraph", "Templates are rendered on the server, before the response is sent.")]


def test_a_word_is_not_found_inside_a_longer_word_beside_it():
    page = """Headers
=======

Note: All header values must be a ``string``, bytestring, or unicode. While permitted,
it's advised to avoid passing unicode header values.

More complicated POST requests
------------------------------

Typically, you want to send some form-encoded data.
"""
    _, blocks = _blocks(page, "headers.rst")
    assert blocks[1:] == [
        ("paragraph", "Note: All header values must be a string, bytestring, or unicode. While permitted, "
                      "it's advised to avoid passing unicode header values."),
        ("heading", "More complicated POST requests"),
        ("paragraph", "Typically, you want to send some form-encoded data."),
    ]  # fmt: skip


def test_an_aside_in_brackets_is_never_cut_into_claims():
    page = """Deprecation roadmap
===================

We only start removing deprecated functionality in major releases (e.g., if we deprecate something
in 3.0, we start to remove it in 4.0), and keep it around for at least two minor releases.
"""
    doc, _ = _blocks(page, "roadmap.rst")
    claims = [c.source_text for c in split_claims(doc)][1:]
    assert claims == [
        "We only start removing deprecated functionality in major releases (e.g., if we deprecate something in 3.0, "
        "we start to remove it in 4.0)",
        "keep it around for at least two minor releases.",
    ]
    assert all(c.count("(") == c.count(")") for c in claims)


# ---------------------------------------------------------------------------------------------
# Markdown


def test_an_html_definition_list_in_markdown_reads_one_item_per_term_and_definition():
    page = """# Options

<dl>
<dt><code>--verbose</code></dt><dd>Print every request that the client sends.</dd>
<dt><code>--timeout SECONDS</code></dt>
<dd>Give up after this many seconds. The default is 30.</dd>
</dl>

Both options apply to every command.
"""
    doc, blocks = _blocks(page, "cli.md")
    assert blocks == [
        ("heading", "Options"),
        ("list_item", "--verbose"),
        ("list_item", "Print every request that the client sends."),
        ("list_item", "--timeout SECONDS"),
        ("list_item", "Give up after this many seconds. The default is 30."),
        ("paragraph", "Both options apply to every command."),
    ]
    definitions = [b for b in doc.blocks if b.text.startswith(("Print", "Give"))]
    assert [(b.lead_in, b.section) for b in definitions] == [("--verbose", ("Options",)), ("--timeout SECONDS", ("Options",))]


def test_link_definitions_after_a_comment_line_are_not_a_paragraph():
    page = """# Kind

Participation is governed by the [Code of Conduct].

<!--links-->
[kind]: https://sigs.k8s.io/kind
[Code of Conduct]: https://example.org/code-of-conduct
"""
    mdx = """# Contributing

Read the [guide] first.

{/* prettier-ignore-start */}
[guide]: /guide
[task]: https://github.com/go-task/task
{/* prettier-ignore-end */}
"""
    assert _blocks(page, "index.md")[1] == [("heading", "Kind"), ("paragraph", "Participation is governed by the Code of Conduct.")]
    assert _blocks(mdx, "contributing.mdx")[1] == [("heading", "Contributing"), ("paragraph", "Read the guide first.")]


def test_links_code_and_emphasis_that_go_on_over_a_line_break_are_read_as_commonmark_reads_them():
    # docs wrapped at 80 columns break a link's text, a code span or an emphasis over two lines;
    # read line by line, "[CLI" and "Reference](/reference/cli)" stayed in the sentence as written
    page = """# Contributing

If you added a new command, add it to the [CLI
Reference](/reference/cli). New fields go to the [Schema
Reference][schema] too, and the *field
descriptions* in `the docs and
the schema` should match.\\
A hard break ends no sentence.

[schema]: /reference/schema
"""
    expected = (
        "If you added a new command, add it to the CLI Reference. New fields go to the Schema Reference too, and "
        "the field descriptions in the docs and the schema should match. A hard break ends no sentence."
    )
    for path in ("contributing.md", "contributing.mdx"):
        assert _blocks(page, path)[1] == [("heading", "Contributing"), ("paragraph", expected)]


def test_an_mdx_heading_id_is_not_part_of_the_heading():
    page = "# Installation\n\n### [Homebrew][homebrew] \\{#homebrew}\n\nTask is available via Homebrew.\n\n[homebrew]: https://brew.sh\n"
    assert _blocks(page, "installation.mdx")[1] == [
        ("heading", "Installation"),
        ("heading", "Homebrew"),
        ("paragraph", "Task is available via Homebrew."),
    ]


# ---------------------------------------------------------------------------------------------
# HTML


def test_template_actions_in_an_html_page_are_not_prose():
    page = """<div class="edit">
{{ $parts := slice site.Params.docsRepo }}
{{ if (eq site.Params.repoHost "GitHub") }}<a href="{{ $url }}">Edit this page on GitHub</a>{{ end }}
</div>
<p>Pages are rebuilt on every push to {% if main %}the main branch{% endif %}.</p>
"""
    assert _blocks(page, "edit-page.html")[1] == [
        ("paragraph", "Edit this page on GitHub"),
        ("paragraph", "Pages are rebuilt on every push to the main branch."),
    ]


def test_a_translation_call_in_a_template_renders_as_its_string():
    """A Sphinx theme's template says its text through gettext: ``{{ _('...') }}`` is that text,
    while any other action is still code."""
    page = """<h3>{{ _('Useful Links') }}</h3>
<ul>
  <li><a href="{{ pathto('community/recommended') }}">{{ _('Recommended Packages and Extensions') }}</a></li>
  <li><a href="https://pypi.org/project/requests/">{{ gettext("Requests @ PyPI") }}</a></li>
</ul>
<p>{{- _("Requests is an elegant HTTP library.") -}} {{ version }}</p>
"""
    assert _blocks(page, "sidebar.html")[1] == [
        ("heading", "Useful Links"),
        ("list_item", "Recommended Packages and Extensions"),
        ("list_item", "Requests @ PyPI"),
        ("paragraph", "Requests is an elegant HTTP library."),
    ]


# ---------------------------------------------------------------------------------------------
# claims


def test_a_run_on_sentence_is_cut_into_claims_of_at_most_600_characters_at_clause_boundaries():
    clause = (
        "In no event and under no legal theory, whether in tort (including negligence), contract, or otherwise, unless "
        "required by applicable law (such as deliberate and grossly negligent acts) or agreed to in writing, shall any "
        "Contributor be liable to You for damages, including any direct, indirect, special, incidental, or consequential "
        "damages of any character arising as a result of this License or out of the use or inability to use the Work "
        "(including but not limited to damages for loss of goodwill, work stoppage, computer failure or malfunction, or any "
        "and all other commercial damages or losses), even if such Contributor has been advised of the possibility of such "
        "damages."
    )
    users = " | ".join(["aiogram", "Apache Airflow", "argon2-cffi", "attrs", "Black", "coffea", "Colorama"] * 12)
    doc, _ = _blocks(f"# License\n\n{clause}\n\n## Users\n\n{users}\n", "license.md")
    claims = [c.source_text for c in split_claims(doc) if c.source_text not in ("License", "Users")]
    assert all(len(c) <= 600 for c in claims)
    assert claims[:2] == [clause[: clause.index(" even if")], clause[clause.index("even if") :]]
    assert " | ".join(claims[2:]) == users  # each name whole, no separator left at a cut


def test_a_paragraph_opening_with_markup_after_an_overlined_title_is_found_where_it_stands():
    page = """.. note::

    This section is being written.

****************************************
Repository anatomy & directory structure
****************************************

``pip``’s codebase (`GitHub repository`_) is structured as a standard Python package.

Root and tools
==============

The ``README`` and license are in the top level, as in pip’s other repositories.

.. _GitHub repository: https://github.com/pypa/pip
"""
    _, blocks = _blocks(page, "anatomy.rst")
    assert blocks[1:] == [
        ("heading", "Repository anatomy & directory structure"),
        ("paragraph", "pip’s codebase (GitHub repository) is structured as a standard Python package."),
        ("heading", "Root and tools"),
        ("paragraph", "The README and license are in the top level, as in pip’s other repositories."),
    ]


def test_definition_list_terms_are_read_and_a_role_s_generated_word_does_not_move_the_paragraph():
    page = """--exists-action option
======================

This option specifies default behavior when path already exists.

*(s)witch*
    Only relevant to VCS checkout.
*(w)ipe*
    Delete the file before trying to create a new one.

Build System Output
~~~~~~~~~~~~~~~~~~~

Under :pep:`517`, handling of build tool output is the backend's responsibility,
and pip simply displays the output produced by the backend.

PEP 517 and 518 Support
~~~~~~~~~~~~~~~~~~~~~~~

As of version 10.0, pip supports projects declaring dependencies.
"""
    _, blocks = _blocks(page, "pip.rst")
    assert blocks[2:6] == [
        ("list_item", "(s)witch"),
        ("list_item", "Only relevant to VCS checkout."),
        ("list_item", "(w)ipe"),
        ("list_item", "Delete the file before trying to create a new one."),
    ]
    # the role shows "PEP 517"; only "517" is on the page there, and the rest of the paragraph follows it
    assert blocks[7] == (
        "paragraph",
        "Under 517, handling of build tool output is the backend's responsibility, and pip simply displays the output "
        "produced by the backend.",
    )
    assert blocks[8:] == [
        ("heading", "PEP 517 and 518 Support"),
        ("paragraph", "As of version 10.0, pip supports projects declaring dependencies."),
    ]


def test_a_fence_nested_deeper_does_not_close_the_directive_around_it():
    page = """### Roles

To define an in-line role, use the following form:

````{list-table}
:header-rows: 1

* - MyST
  - reStructuredText
* - ````md
    {role-name}`role content`
    ````
  - ```rst
    :role-name:`role content`
    ```
````

You can use roles to reference equations and other items in your book.

```python
print("a fence inside a list item closes at its own indent")
```

The content of roles is parsed differently depending on the role.
"""
    _, blocks = _blocks(page, "roles.md")
    assert blocks == [
        ("heading", "Roles"),
        ("paragraph", "To define an in-line role, use the following form:"),
        ("paragraph", "You can use roles to reference equations and other items in your book."),
        ("paragraph", "The content of roles is parsed differently depending on the role."),
    ]


def test_a_closing_bracket_after_a_link_target_stays_with_its_word():
    page = """Changes
=======

- Fix a crash when a fixture raises during teardown. (`#2588 <https://github.com/pytest-dev/pytest/issues/2588>`_)
"""
    doc, blocks = _blocks(page, "changelog.rst")
    assert blocks[1] == ("list_item", "Fix a crash when a fixture raises during teardown. (#2588)")
    assert [c.source_text for c in split_claims(doc)][1:] == ["Fix a crash when a fixture raises during teardown.", "(#2588)"]


def test_a_full_stop_inside_brackets_ends_no_claim_but_an_unclosed_bracket_does_not_swallow_the_page():
    page = (
        "# Listeners\n\nListeners run in order. (Calling one asynchronously will throw an error. Call it once.) "
        "Then the middleware stops.\n\nA broken (paren. The next sentence stands alone. And another one.\n"
    )
    doc, _ = _blocks(page, "listeners.md")
    assert [c.source_text for c in split_claims(doc)][1:] == [
        "Listeners run in order.",
        "(Calling one asynchronously will throw an error. Call it once.)",
        "Then the middleware stops.",
        "A broken (paren.",
        "The next sentence stands alone.",
        "And another one.",
    ]


def test_a_sentence_s_last_word_is_not_found_inside_the_next_term():
    page = """Application Discovery
---------------------

``FLASK_APP=src/hello``
    Sets the current working directory to ``src`` then imports ``hello``.

``FLASK_APP=hello.web``
    Imports the path ``hello.web``.

If ``FLASK_APP`` is not set, the command will try to import "app" or "wsgi".
"""
    _, blocks = _blocks(page, "cli.rst")
    assert blocks[1:] == [
        ("list_item", "FLASK_APP=src/hello"),
        ("list_item", "Sets the current working directory to src then imports hello."),
        ("list_item", "FLASK_APP=hello.web"),
        ("list_item", "Imports the path hello.web."),
        ("paragraph", 'If FLASK_APP is not set, the command will try to import "app" or "wsgi".'),
    ]


def test_a_fence_inside_a_nested_quote_closes_there():
    page = """> NEW: **Changed in version 1.5:**
>
> > EXAMPLE: **Obsolete style:**
> >
> > ```django
> >   {%- for path in extra_javascript %}
> > ```
> >
> > This old-style example uses the obsolete top-level `extra_javascript` list.

The theme must include the HTML that links the items from these configs.
"""
    _, blocks = _blocks(page, "themes.md")
    assert [text for _, text in blocks][-2:] == [
        "This old-style example uses the obsolete top-level extra_javascript list.",
        "The theme must include the HTML that links the items from these configs.",
    ]


def test_a_rubric_is_read_as_a_heading():
    page = """User Guide
==========

.. _`0-netrc-support`:
.. rubric:: netrc Support

This is now covered in the authentication topic.
"""
    _, blocks = _blocks(page, "user_guide.rst")
    assert blocks == [
        ("heading", "User Guide"),
        ("heading", "netrc Support"),
        ("paragraph", "This is now covered in the authentication topic."),
    ]


def test_a_list_item_that_is_a_code_fence_ends_at_its_own_closing_fence():
    page = """- `PIP_DEFAULT_TIMEOUT=60` is the same as `--default-timeout=60`
- ```
  PIP_FIND_LINKS="http://mirror1.example.com http://mirror2.example.com"
  ```

  is the same as

  ```
  --find-links=http://mirror1.example.com --find-links=http://mirror2.example.com
  ```

Repeatable options that do not take a value (such as `--verbose`) can be
specified using the number of repetitions:

- `PIP_VERBOSE=3` is the same as `pip install -vvv`
"""
    _, blocks = _blocks(page, "configuration.md")
    assert blocks == [
        ("list_item", "PIP_DEFAULT_TIMEOUT=60 is the same as --default-timeout=60"),
        ("list_item", "is the same as"),
        ("paragraph", "Repeatable options that do not take a value (such as --verbose) can be specified using the number of repetitions:"),
        ("list_item", "PIP_VERBOSE=3 is the same as pip install -vvv"),
    ]
