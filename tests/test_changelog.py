"""Changelogs and release notes: one dated source per release section, and supersession."""

from __future__ import annotations

import json
from datetime import date

from test_git_sources import audit_releases, git, make_repo, release, two_releases

from kb.chain import run_audit
from kb.config import Settings
from kb.evidence.changelog import is_changelog, release_heading
from kb.evidence.sources import load_sources

TODAY = date(2025, 6, 1)

CHANGELOG = """# Changelog

## [Unreleased]

- Nothing yet.

## [1.2.0] - 2024-05-01

### Changed

- The default timeout is now 60 seconds.

## v1.1.0 / 2023-09-14

- Uploads are limited to 20 MB per file.

## 1.0.1 (2023-02-03)

- Fixed a crash on empty uploads.

## 1.0.0

- First release.
"""


def test_release_headings_and_file_names():
    assert release_heading("[1.2.0] - 2024-05-01")[:2] == ("1.2.0", date(2024, 5, 1))
    assert release_heading("v2.30.0 / 2021-09-14")[:2] == ("2.30.0", date(2021, 9, 14))
    assert release_heading("1.2.0 (2024-05-01)")[:2] == ("1.2.0", date(2024, 5, 1))
    assert release_heading("Release 3.1.0 - May 1, 2024")[:2] == ("3.1.0", date(2024, 5, 1))
    assert release_heading("1.0.0")[:2] == ("1.0.0", None)
    assert release_heading("Changed") is None and release_heading("Upgrading from 1.x to 2.0") is None
    # pre-releases written without a separator are versions of their own, not "4.0.0" dated "rc3"
    assert release_heading("v4.0.0rc3 (2022-12-05)")[:2] == ("4.0.0rc3", date(2022, 12, 5))
    assert release_heading("v4.0.0a1")[:2] == ("4.0.0a1", None)
    assert release_heading("2.0b1")[:2] == ("2.0b1", None)
    assert release_heading("1.0.0.dev1 - 2024-01-02")[:2] == ("1.0.0.dev1", date(2024, 1, 2))
    # a heading that names its product first is a release when a date follows the version
    assert release_heading("acme 3.7.0 (2018-07-30)")[:2] == ("3.7.0", date(2018, 7, 30))
    assert release_heading("Python 3.8 support") is None and release_heading("Acme v4.2.0") is None
    for name in ("CHANGELOG.md", "changes.rst", "HISTORY.md", "NEWS", "RELEASE_NOTES.md", "release-notes.md"):
        assert is_changelog(name), name
    assert not is_changelog("guide.md") and is_changelog("whatsnew.md", {"kind": "changelog"})
    # a folder of release notes, one page per component ("history/hatchling.md")
    assert is_changelog("history/hatchling.md") and is_changelog("docs/releases/v2.md")
    assert not is_changelog("guides/install.md")


def test_each_section_is_a_dated_source(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    sources, errors = load_sources(tmp_path, today=TODAY)
    got = sorted((s.source_id, s.source_date, s.source_kind) for s in sources)
    assert got == [
        ("CHANGELOG.md#1.0.1", date(2023, 2, 3), "changelog"),
        ("CHANGELOG.md#1.1.0", date(2023, 9, 14), "changelog"),
        ("CHANGELOG.md#1.2.0", date(2024, 5, 1), "changelog"),
    ]
    entry = next(s for s in sources if s.source_id.endswith("1.2.0"))
    assert [b.text for b in entry.blocks] == ["Changed", "The default timeout is now 60 seconds."]
    messages = sorted(e.error for e in errors)
    assert messages == ["changelog section 1.0.0: no date; skipped", "changelog section Unreleased: unreleased; skipped"]


def test_github_release_notes_json(tmp_path):
    releases = [
        {
            "tag_name": "v2.0.0",
            "name": "v2.0.0",
            "published_at": "2024-03-03T10:00:00Z",
            "body": "## Breaking\n\n- `--legacy` was removed.",
        },
        {"tag_name": "v1.9.0", "name": "v1.9.0", "published_at": None, "body": "- Faster startup."},
        {"tag_name": "v2.1.0-rc1", "draft": True, "published_at": None, "body": "draft"},
    ]
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(releases))
    sources, errors = load_sources(path, today=TODAY)
    assert [(s.source_id, s.source_date) for s in sources] == [("releases.json#2.0.0", date(2024, 3, 3))]
    assert "--legacy was removed." in [b.text for b in sources[0].blocks]
    assert [e.error for e in errors] == ["release v1.9.0: no published_at date; skipped"]


def test_undated_section_read_from_git_takes_the_release_that_added_it(tmp_path):
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2023-01-05", {"CHANGES.md": "# Changes\n\n## 1.0.0\n\n- First release.\n"})
    release(
        repo, "v1.1.0", "2023-06-07", {"CHANGES.md": "# Changes\n\n## 1.1.0\n\n- Uploads up to 20 MB.\n\n## 1.0.0\n\n- First release.\n"}
    )
    sources, errors = load_sources(f"git:{repo}@tags", today=TODAY)
    assert errors == []
    got = sorted((s.source_id, s.source_date, s.date_origin, s.source_rev) for s in sources)
    assert got == [("CHANGES.md#1.0.0", date(2023, 1, 5), "git", "v1.1.0"),
                   ("CHANGES.md#1.1.0", date(2023, 6, 7), "git", "v1.1.0")]  # fmt: skip
    assert git(repo, "status", "--porcelain") == ""


def test_a_newer_changelog_entry_supersedes_a_page(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "faq.md").write_text(
        "---\ntitle: FAQ\n---\n# FAQ\n\nThe default timeout is 30 seconds.\n\nUploads are limited to 20 MB per file.\n"
    )
    src = tmp_path / "sources"
    src.mkdir()
    (src / "guide.md").write_text("---\nupdated: 2023-03-01\n---\n# Guide\n\nThe default timeout is 30 seconds.\n\n"
                                  "Uploads are limited to 20 MB per file.\n")  # fmt: skip
    (src / "CHANGELOG.md").write_text(CHANGELOG)
    settings = Settings(docs=kb, sources=[src], depth="D0", today=TODAY, full=True).validate()
    result = run_audit(settings)
    label = {c.source_text: v.label for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    why = {c.source_text: v.rationale for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    assert label["The default timeout is 30 seconds."] == "stale", why
    assert "changelog entry CHANGELOG.md#1.2.0 (2024-05-01)" in why["The default timeout is 30 seconds."]
    # the page and the 1.1.0 entry agree: supported
    assert label["Uploads are limited to 20 MB per file."] == "supported", why


RST_CHANGELOG = """Release History
===============

{newer}v4.0.0 (2022-12-07)
*******************

Bugfixes - 4.0.0
----------------

- The temporary folder within the environment is named ``.tmp`` instead of ``.temp``.

v4.0.0rc3 (2022-12-05)
**********************

- Add the ``--exit-and-dump-after`` flag that kills the run when it does not finish within the given seconds.

v4.0.0a1
********

- First version, all is brand new.

v3.28.0 (2022-12-01)
********************

- Support the ``always_copy`` flag for virtual environment based test environments.
"""

NEWER_SECTION = """v4.1.0 (2023-01-10)
*******************

- Fix the plugin initialisation order: core plugins first, then third party ones.

"""


def test_pre_release_sections_of_a_kept_changelog_stay_supported(tmp_path):
    """Every entry of an old changelog that the newest release keeps as it was is supported: an
    alpha or candidate section is not read as a second "4.0.0" that drops the first one's entries."""
    repo = make_repo(tmp_path)
    release(repo, "v4.0.0", "2022-12-07", {"docs/changelog.rst": RST_CHANGELOG.format(newer="")})
    release(repo, "v4.1.0", "2023-01-10", {"docs/changelog.rst": RST_CHANGELOG.format(newer=NEWER_SECTION)})
    sources, errors = load_sources(f"git:{repo}@v4.1.0:docs", today=TODAY)
    ids = sorted(s.source_id for s in sources)
    assert ids == ["changelog.rst#3.28.0", "changelog.rst#4.0.0", "changelog.rst#4.0.0a1", "changelog.rst#4.0.0rc3",
                   "changelog.rst#4.1.0"], (ids, errors)  # fmt: skip
    settings = Settings(docs=f"git:{repo}@v4.0.0:docs", sources=[f"git:{repo}@v4.0.0,v4.1.0:docs"], depth="D0",
                        today=TODAY, full=True).validate()  # fmt: skip
    result = run_audit(settings)
    labels = {c.source_text: v.label for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id and c.checkworthy}
    why = {c.source_text: v.rationale for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    entries = [t for t in labels if "--exit-and-dump-after" in t or ".tmp" in t or "always_copy" in t]
    assert len(entries) == 3, labels
    assert {labels[t] for t in entries} == {"supported"}, {t: why[t] for t in entries}


def test_a_version_written_under_two_headings_is_one_source(tmp_path):
    page = "# Changes\n\n## 2.0.0 (2024-02-01)\n\n- Faster startup.\n\n## 1.0.0 (2023-01-01)\n\n- First release.\n\n## 2.0.0\n\n- Smaller wheels.\n"
    (tmp_path / "CHANGES.md").write_text(page)
    sources, errors = load_sources(tmp_path, today=TODAY)
    by_id = {s.source_id: s for s in sources}
    assert sorted(by_id) == ["CHANGES.md#1.0.0", "CHANGES.md#2.0.0"] and errors == []
    assert [b.text for b in by_id["CHANGES.md#2.0.0"].blocks] == ["Faster startup.", "Smaller wheels."]
    assert by_id["CHANGES.md#2.0.0"].source_date == date(2024, 2, 1)


HISTORY_V1 = """# Builder history

## [1.10.0](https://example.com/releases/v1.10.0) - 2022-09-18 ## {: #v1.10.0 }

***Added:***

- Add the following to the list of directories that cannot be traversed: `__pypackages__`, `.hg`, `.hatch`, `.tox`, `.nox`

## [1.9.0](https://example.com/releases/v1.9.0) - 2022-08-01 ## {: #v1.9.0 }

***Fixed:***

- Fix the order of the build targets when several are given on the command line
"""
HISTORY_V2 = HISTORY_V1.replace(
    "# Builder history\n",
    "# Builder history\n\n## [1.24.2](https://example.com/releases/v1.24.2) - 2024-04-22 ## {: #v1.24.2 }\n\n"
    "***Fixed:***\n\n- Add `.venv` to the list of directories that cannot be traversed\n",
)


def test_an_item_of_a_release_note_in_a_history_folder_stays_that_releases_note(tmp_path):
    """A page of a history folder is a changelog, its attr_list release headings are releases, and
    an item of an old release's list is not undone by a later release's entry about that list."""
    clone = two_releases(tmp_path, {"docs/history/builder.md": HISTORY_V1}, {"docs/history/builder.md": HISTORY_V2})
    result = audit_releases(clone, tmp_path / "cache")
    labels = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id and c.checkworthy}
    items = {t: v for t, v in labels.items() if t in ("__pypackages__", ".hg", ".hatch", ".tox", ".nox")}
    assert items and all(v.label not in ("stale", "contradicted") for v in items.values()), items
