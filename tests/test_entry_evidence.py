"""A reference entry's bare lines ("Default: 80", "Type: string", a "| Default: | 20 |" row, "Added
in version 1.2.") are about the entry their heading, term or row names: only evidence about that
same entry supports or refutes them, and a dropped history note is no changed fact.

Every case is a real git repository with two releases and a KB page of the older one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.claims.split import entry_term, field_name
from kb.config import Settings
from kb.verify.history import history_note, without_history_note
from tests.test_git_sources import TODAY, make_repo, release


def _audit(tmp_path: Path, name: str, old: str, new: str, by_heading: bool = False) -> dict:
    """Verdicts of the older page's claims against both releases, by claim text (by heading and
    text with ``by_heading``: two entries' lines read alike)."""
    from kb.chain import run_audit

    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {f"docs/{name}": old})
    release(repo, "v2.0.0", "2024-09-01", {f"docs/{name}": new})
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / name).write_text("---\nupdated: 2024-01-10\n---\n" + old)
    settings = Settings(docs=kb, sources=[f"git:{repo}@v1.0.0,v2.0.0:docs"], depth="D1", today=TODAY, full=True).validate()
    result = run_audit(settings)
    return {(c.section.rsplit(" > ", 1)[-1], c.text) if by_heading else c.text: v
            for c in result.claims if c.checkworthy for v in result.verdicts if v.claim_id == c.claim_id}  # fmt: skip


FIELDS = """# Server options

## Options

### port

Type: integer

Default: 80

The port the server listens on.

### timeout

Type: duration

Default: 80

How long a request may take.

### legacy_mode

Type: boolean

Default: false

Turns on the old behaviour.

### workers

Added in version 1.2.

Type: integer

Default: 4

The number of worker processes.
"""


def test_a_removed_options_field_lines_are_not_judged_by_a_neighbours_lines(tmp_path):
    new = (FIELDS.replace("Type: duration\n\nDefault: 80", "Type: duration\n\nDefault: 90")
           .replace("### legacy_mode\n\nType: boolean\n\nDefault: false\n\nTurns on the old behaviour.\n\n", "")
           .replace("Added in version 1.2.\n\n", ""))  # fmt: skip
    verdict = _audit(tmp_path, "server.md", FIELDS, new)
    assert verdict["port: Default: 80"].label == "supported", verdict["port: Default: 80"]
    assert verdict["timeout: Default: 80"].label == "stale", verdict["timeout: Default: 80"]
    # the option is gone: no other option's "Type: integer" or "Default: 90" stands for it
    for line in ("legacy_mode: Type: boolean", "legacy_mode: Default: false"):
        v = verdict[line]
        assert v.evidence_sentence in (None, ""), v
        assert v.label in ("stale", "uncertain"), v
    # the note went, the option stayed: no finding
    note = verdict["Added in version 1.2."]
    assert note.label == "uncertain" and "history note" in note.rationale, note
    assert verdict["workers: Default: 4"].label == "supported"


TABLES = """# Settings

## cache_size

| Key | Value |
|---|---|
| Type: | integer |
| Default: | 20 |

The size of the cache.

## max_items

| Key | Value |
|---|---|
| Type: | integer |
| Default: | 20 |

The most items a page holds.
"""


@pytest.mark.parametrize("changed", ["cache_size", "max_items"])
def test_a_field_row_is_judged_by_the_row_under_its_own_heading(tmp_path, changed):
    head = f"## {changed}\n\n| Key | Value |\n|---|---|\n| Type: | integer |\n| Default: | 20 |"
    new = TABLES.replace(head, head.replace("| Default: | 20 |", "| Default: | 50 |"))
    verdict = _audit(tmp_path, "settings.md", TABLES, new, by_heading=True)
    rows = {heading: v for (heading, text), v in verdict.items() if "Default" in text}
    kept = next(h for h in rows if h != changed)
    assert rows[kept].label == "supported", rows
    assert rows[changed].label == "stale" and "50" in (rows[changed].evidence_sentence or ""), rows


ENTRIES = """# Theme options

The theme supports the following options:

* **`highlightjs`**: Enables highlighting of source code. Default: `True`.
* **`navigation_depth`**: The most levels the navigation shows. Default: `2`.
* **`sticky_navigation`**: Keeps the navigation in view. Default: `True`.
"""


def test_a_field_line_inside_an_entry_is_read_with_the_entrys_term(tmp_path):
    new = ENTRIES.replace("shows. Default: `2`.", "shows. Default: `4`.").replace("view. Default: `True`.", "view. Default: `False`.")
    verdict = _audit(tmp_path, "theme.md", ENTRIES, new)
    assert verdict["highlightjs: Default: True."].label == "supported", verdict
    # each changed entry is stale, though another entry still reads "Default: True."
    assert verdict["navigation_depth: Default: 2."].label == "stale", verdict
    assert verdict["sticky_navigation: Default: True."].label == "stale", verdict


def test_a_definitions_field_line_is_its_terms(tmp_path):
    old = "# Options\n\nThe server reads these options:\n\n`port`\n:   The port to listen on. Default: 80.\n\n" \
          "`timeout`\n:   Seconds to wait for a reply. Default: 80.\n"  # fmt: skip
    verdict = _audit(tmp_path, "options.md", old, old.replace("reply. Default: 80.", "reply. Default: 90."))
    assert verdict["port: Default: 80."].label == "supported", verdict
    assert verdict["timeout: Default: 80."].label == "stale", verdict


NOTES = """# Config reference

## retries

How often a failed call is tried again.

This field was introduced in v1.4.

## backoff

The seconds between two tries.

New in version 1.6.
"""


def test_a_history_note_is_refuted_only_by_a_note_of_its_entity(tmp_path):
    # retries loses its note; backoff's note now names another version
    new = NOTES.replace("This field was introduced in v1.4.\n\n", "").replace("New in version 1.6.", "New in version 1.7.")
    verdict = _audit(tmp_path, "config.md", NOTES, new)
    dropped = verdict["This field was introduced in v1.4."]
    assert dropped.label == "uncertain" and "history note" in dropped.rationale, dropped
    assert verdict["New in version 1.6."].label in ("stale", "contradicted"), verdict["New in version 1.6."]


FUNCTIONS = """# Template functions

| Usage | Description |
|---|---|
| `mdv2escape "foo"` | escape characters according to MarkdownV2. Since v1.19 |
| `trimprefix "foo"` | removes the given prefix. Since v1.4 |
"""


def test_a_cell_read_without_the_history_note_it_ended_with(tmp_path):
    # the newest release moved the notes out of the cells; one description changed as well
    new = FUNCTIONS.replace(". Since v1.19", "").replace("removes the given prefix. Since v1.4", "removes the prefix, if any")
    verdict = _audit(tmp_path, "templates.md", FUNCTIONS, new)
    kept = next(v for c, v in verdict.items() if "MarkdownV2" in c)
    changed = next(v for c, v in verdict.items() if "prefix" in c)
    assert kept.label == "supported", kept
    assert changed.label in ("stale", "contradicted"), changed


def test_history_notes_terms_and_field_names_are_recognised():
    for note in ("Added in version 1.2.", "New in v0.123.0", "Since: v1.13", "Since: v1.17 (pro)",
                 "This field was introduced in v1.4.", "The `foo` option was added in 2.3", "Changed in version 2.0.",
                 "This field was introduced in Acme v3.4.", "New in Acme Cloud 2.1",
                 "Version: Since Acme 0.34.0", "Since Acme 1.0.0-beta.3"):  # fmt: skip
        assert history_note(note), note
    # a note that goes on with a fact states that fact
    # so does one on what runs where: a release that drops "Supported in Python 3.8" changed it
    for fact in ("Changed in version 2.0: the default is 5.", "Since 2.0 the default is 5", "The default is 5 since 2.0.",
                 "Supported in Python 3.8", "Added in Acme 2.0 with the cache", "Version: 2.0",
                 "Since Acme 2.0 the default is 5"):  # fmt: skip
        assert not history_note(fact), fact
    assert without_history_note("either 'clean' or 'dirty'. Since v1.24") == "either 'clean' or 'dirty'"
    assert without_history_note("Since v1.2") == "Since v1.2"  # the note alone is the note
    assert entry_term("timeout :   Seconds to wait") == "timeout"
    assert entry_term("**`navigation_depth`**: The most levels") == "navigation_depth"
    assert entry_term("Note: this is prose") == ""
    assert field_name("Default:") and field_name("**Type**") and not field_name("cache_size")


def test_another_lists_lead_in_says_nothing_of_an_item(tmp_path):
    from kb.chain import run_audit

    pages = {
        name: f"# {name.title()}\n\nFor it to work, you'll need to create a new {name.title()} app, and set some "
        f"environment variables on your pipeline:\n\n- `{name.upper()}_TOKEN`\n- `{name.upper()}_SECRET`\n"
        for name in ("twitter", "reddit", "telegram")
    }
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {f"docs/{n}.md": t for n, t in pages.items()})
    # the newest release moved the variables of one page under a heading of their own
    moved = pages["twitter"].replace("on your pipeline:\n\n", "on your pipeline.\n\n## Variables\n\n")
    release(repo, "v2.0.0", "2024-09-01", {"docs/twitter.md": moved})
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "twitter.md").write_text("---\nupdated: 2024-01-10\n---\n" + pages["twitter"])
    settings = Settings(docs=kb, sources=[f"git:{repo}@v1.0.0,v2.0.0:docs"], depth="D1", today=TODAY, full=True).validate()
    result = run_audit(settings)
    items = [v for c in result.claims if c.checkworthy and c.source_text.startswith("TWITTER")
             for v in result.verdicts if v.claim_id == c.claim_id]  # fmt: skip
    assert len(items) == 2
    for v in items:
        assert v.label not in ("stale", "contradicted"), v


DEPRECATIONS = """# Deprecations

## Active deprecation notices

### archives.format

> since 2023-06-06 (v1.19.0)

Use `archives.formats` instead.

## Removed in v1

### builds.gobinary

> since 2019-06-09, removed 2020-01-07 (v0.125.0)

Use `builds.tool` instead.
"""


def test_a_bare_line_is_refuted_only_under_its_own_heading(tmp_path):
    # the newest release dropped the removed notice and marked the active one removed: the notice
    # that went is not refuted by the other notice's dates
    new = DEPRECATIONS.split("## Removed in v1")[0].replace(
        "> since 2023-06-06 (v1.19.0)", "> since 2023-06-06 (v1.19.0), removed 2024-05-26 (v2.0)"
    )
    verdict = _audit(tmp_path, "deprecations.md", DEPRECATIONS, new)
    gone = next(v for c, v in verdict.items() if "2019-06-09" in c)
    assert "2024-05-26" not in (gone.evidence_sentence or ""), gone


PRESETS = """# Presets

| Preset | Usage | Other Notes |
|---|---|---|
| preset-rk-h264 | Rockchip MPP with h264 stream | Use the image with the rk suffix |
| preset-vaapi | Intel and AMD VAAPI | Check the driver first |
"""


def test_a_renamed_row_still_reads_as_a_change(tmp_path):
    # the newest release renamed the entry and reworded its cells: the row the diff put in its
    # place is the renamed one, while an entry whose own row stands keeps it
    new = PRESETS.replace("| preset-rk-h264 | Rockchip MPP with h264 stream |", "| preset-rkmpp | Rockchip MPP |")
    verdict = _audit(tmp_path, "presets.md", PRESETS, new)
    renamed = next(v for c, v in verdict.items() if "preset-rk-h264" in c and "Usage" in c)
    kept = next(v for c, v in verdict.items() if "preset-vaapi" in c and "Usage" in c)
    assert renamed.label == "stale", renamed
    assert kept.label == "supported", kept


# Redux Toolkit "createEntityAdapter" (Docusaurus): entries whose clauses read alike
CRUD = """# createEntityAdapter

## Return Value

### CRUD Functions

The primary content of an entity adapter is a set of generated reducer functions for adding, updating, and removing entity instances from an entity state object:

- `addOne`: accepts a single entity, and adds it if it's not already present.
- `addMany`: accepts an array of entities or an object in the shape of `Record<EntityId, T>`, and adds them if not already present.
- `setOne`: accepts a single entity and adds or replaces it
- `setMany`: accepts an array of entities or an object in the shape of `Record<EntityId, T>`, and adds or replaces them.
- `removeOne`: accepts a single entity ID value, and removes the entity with that ID if it exists.
- `removeMany`: accepts an array of entity ID values, and removes each entity with those IDs if they exist.
- `removeAll`: removes all entities from the entity state object.
- `updateMany`: accepts an array of update objects, and performs shallow updates on all corresponding entities.
"""


def test_another_entrys_line_of_a_list_refutes_no_entry(tmp_path):
    new = CRUD + "\nEach method has a signature that looks like `(state, argument) => newState`.\n"
    verdicts = _audit(tmp_path, "createEntityAdapter.mdx", CRUD, new)
    items = {text.split("entity state object: ", 1)[1]: v for text, v in verdicts.items() if "entity state object: " in text}
    assert len(items) == 14
    for text, v in items.items():
        assert v.label not in ("stale", "contradicted"), (text, v)
    # an entry whose own line stands as it was is supported by that line
    for text in ("removeMany: accepts an array of entity ID values", "addMany: adds them if not already present.",
                 "updateMany: accepts an array of update objects"):  # fmt: skip
        assert items[text].label == "supported", (text, items[text])


# RTK Query "Automated Re-fetching": lists of the same items under one heading, told apart by their lead-ins
TAG_LISTS = """# Automated Re-fetching

### Specific tag

Example 1:
If a specific tag of `{ type: 'Post', id: 1 }` was invalidated, endpoints whose data `provided` the following tags would all have their data invalidated:

- `[{ type: 'Post', id: 1 }]`
- `[{ type: 'Post', id: 1 }, { type: 'Post', id: 'LIST' }]`

Endpoints whose data `provided` the following tags would _not_ have their data invalidated:

- `['Post']`
- `[{ type: 'User', id: 1 }]`
- `[{ type: 'User', id: 'LIST' }]`

Example 2:
If a specific tag of `{ type: 'Post', id: 'LIST' }` was invalidated, endpoints whose data `provided` the following tags would all have their data invalidated:

- `[{ type: 'Post', id: 'LIST' }]`
- `[{ type: 'Post', id: 1 }, { type: 'Post', id: 'LIST' }]`

Endpoints whose data `provided` the following tags would _not_ have their data invalidated:

- `['Post']`
- `[{ type: 'User', id: 1 }]`
"""


def test_another_lists_lead_in_under_the_same_heading_refutes_no_item(tmp_path):
    new = TAG_LISTS + "\nTags are compared by type first.\n"
    verdicts = _audit(tmp_path, "automated-refetching.mdx", TAG_LISTS, new)
    items = {text: v for text, v in verdicts.items() if text.endswith("]")}
    assert len(items) == 7  # nine items, two of them in both "not" lists
    for text, v in items.items():
        assert v.label not in ("stale", "contradicted"), (text, v)


CONFVALS_V1 = """Reference
=========

Configuration options
---------------------

.. confval:: log_dir

   Sets the directory where log files are written. Default directory is ``.acme_logs`` which is
   created in the project root.

.. confval:: ignore_dirs

   Directory name patterns to skip when collecting files.
   Default patterns are ``'.*'``, ``'build'``, ``'dist'``, ``'node_modules'``.

.. confval:: report_dir

   Sets the directory where reports are written. Default directory is ``.acme_reports`` which is
   created in the project root.

.. confval:: strict

   Turns every warning into an error. Default is ``false``.
"""

CONFVALS_V2 = """Reference
=========

Configuration options
---------------------

.. confval:: log_dir
   :type: ``str``
   :default: ``".acme_logs"``

   Sets the directory where log files are written, relative to the project root.

.. confval:: ignore_dirs
   :type: ``list[str]``
   :default: ``[".*", "build", "dist", "node_modules"]``

   Directory name patterns to skip when collecting files.

.. confval:: report_dir
   :type: ``str``
   :default: ``"reports"``

   Sets the directory where reports are written, relative to the project root.

.. confval:: strict
   :type: ``bool``
   :default: ``true``

   Turns every warning into an error.
"""


def test_a_prose_default_moved_into_its_entrys_default_field_still_stands(tmp_path):
    """A release that moved each entry's default from its prose into the directive's
    ``:default:`` option (read as the entry's row) changed no default: the prose sentence is
    supported by the row that holds its value; a default that changed there is still a finding."""
    from kb.verify.policy import FIELD_DEFAULT_NOTE

    verdicts = _audit(tmp_path, "reference.rst", CONFVALS_V1, CONFVALS_V2)
    kept = verdicts["Default directory is .acme_logs which is created in the project root."]
    assert kept.label == "supported" and FIELD_DEFAULT_NOTE in kept.rationale, kept
    assert "log_dir" in (kept.evidence_sentence or ""), kept
    patterns = verdicts["Default patterns are '.*', 'build', 'dist', 'node_modules'."]
    assert patterns.label == "supported" and FIELD_DEFAULT_NOTE in patterns.rationale, patterns
    changed = verdicts["Default directory is .acme_reports which is created in the project root."]
    assert changed.label in ("stale", "contradicted"), changed
    # a plain word is every entry's default: "false" in some row names no entry's value
    plain = verdicts["Default is false."]
    assert plain.label != "supported" and FIELD_DEFAULT_NOTE not in plain.rationale, plain
