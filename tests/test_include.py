"""Include directives in sources: resolved in the same folder or the same git rev.

Real folders in tmp_path and a real git repository built with the git CLI (tests/test_git_sources.py
helpers); the included prose becomes passages of the including page.
"""

from __future__ import annotations

from pathlib import Path

from kb.evidence.git_source import load_git_sources
from kb.evidence.sources import load_sources
from kb.ingest.include import FolderTree, expand_includes
from tests.test_git_sources import TODAY, make_repo, release, write


def passages(source) -> list[str]:
    return [b.text for b in source.blocks]


def test_every_directive_form_is_spliced_where_it_stands(tmp_path):
    write(tmp_path, {
        "guide.md": (
            "# Guide\n\n"
            '--8<-- "parts/limits.md"\n\n'
            "{!parts/retries.md!}\n\n"
            "{!> parts/auth.md !}\n\n"
            '{% include "parts/proxy.md" %}\n\n'
            "<!--@include: ./parts/cache.md-->\n\n"
            "```{include} parts/logs.md\n:start-after: nothing\n```\n\n"
            '!!! note "Quotas"\n\n    --8<-- "parts/quota.md"\n\n'
            "--8<--\nparts/tls.md\n--8<--\n\n"
            "```yaml\n--8<-- \"parts/example.yaml\"\n```\n"
        ),
        "parts/limits.md": "---\ntitle: hidden\n---\nUploads are limited to 25 MB.\n",
        "parts/retries.md": "Failed jobs are retried three times.\n",
        "parts/auth.md": "Tokens expire after 12 hours.\n",
        "parts/proxy.md": "The proxy listens on port 3128.\n",
        "parts/cache.md": "The cache holds 500 entries.\n",
        "parts/logs.md": "Logs are kept for 14 days.\n",
        "parts/quota.md": "Each project gets 10 GB of storage.\n",
        "parts/tls.md": "TLS 1.2 is the oldest version accepted.\n",
        "parts/example.yaml": "storage: 99\n",
    })  # fmt: skip
    sources, errors = load_sources(tmp_path, today=TODAY)
    guide = next(s for s in sources if s.source_id == "guide.md")
    assert passages(guide) == [
        "Guide",
        "Uploads are limited to 25 MB.",
        "Failed jobs are retried three times.",
        "Tokens expire after 12 hours.",
        "The proxy listens on port 3128.",
        "The cache holds 500 entries.",
        "Logs are kept for 14 days.",
        "Quotas:",
        "Each project gets 10 GB of storage.",
        "TLS 1.2 is the oldest version accepted.",
    ]
    assert errors == []
    # each included file, the example shown in a code block too, is part of the page only
    assert [s.source_id for s in sources] == ["guide.md"]
    # the passage's text is what the page holds: its offsets point into the expanded page
    block = guide.blocks[1]
    assert guide.text[block.start : block.end] == "Uploads are limited to 25 MB."


def test_a_name_resolves_beside_the_page_above_it_or_as_the_one_file_of_that_name(tmp_path):
    write(tmp_path, {
        "docs/content/https/acme.md": '# ACME\n\n--8<-- "content/https/snippet.md"\n\n{!notice.md!}\n',
        "docs/content/https/snippet.md": "Certificates renew 30 days before they expire.\n",
        "docs/content/includes/notice.md": "Support ends after two years.\n",
    })  # fmt: skip
    tree = FolderTree(tmp_path)
    page = (tmp_path / "docs/content/https/acme.md").read_text()
    text, problems = expand_includes(page, "docs/content/https/acme.md", tree)
    assert problems == []
    assert "Certificates renew 30 days" in text and "Support ends after two years." in text


def test_missing_outside_ambiguous_and_cyclic_includes_are_reported_and_the_rest_loads(tmp_path):
    (tmp_path / "secret.md").write_text("The root password is hunter2.\n")
    src = tmp_path / "src"
    write(src, {
        "page.md": (
            "# Page\n\nBefore.\n\n"
            '--8<-- "gone.md"\n\n'
            "{!../secret.md!}\n\n"
            ".. include:: /etc/hostname\n\n"
            "{!note.md!}\n\n"
            "{!a.md!}\n\nAfter.\n"
        ),
        "one/note.md": "First note.\n",
        "two/note.md": "Second note.\n",
        "a.md": "Text of a.\n\n{!b.md!}\n",
        "b.md": "Text of b.\n\n{!a.md!}\n",
    })  # fmt: skip
    sources, errors = load_sources(src, today=TODAY)
    page = next(s for s in sources if s.source_id == "page.md")
    # the notes nobody could include stay pages; a.md and b.md are part of page.md
    assert sorted(s.source_id for s in sources) == ["one/note.md", "page.md", "two/note.md"]
    assert passages(page) == ["Page", "Before.", "Text of a.", "Text of b.", "After."]
    messages = [e.error for e in errors if e.path == "page.md"]
    assert any("'gone.md' not found" in m for m in messages)
    assert any("'../secret.md' points outside the tree" in m for m in messages)
    assert any("'/etc/hostname' is not a path inside the tree" in m for m in messages)
    assert any("'note.md' matches 2 files" in m for m in messages)
    assert any("include cycle a.md -> b.md -> a.md" in m for m in messages)
    assert not any("hunter2" in t for s in sources for t in passages(s) if s.source_id == "page.md")


def test_git_sources_include_from_the_same_rev(tmp_path):
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {
        "docs/guide.md": "# Guide\n\n{!limits.md!}\n\nThe guide ends here.\n",
        "docs/_snippets/limits.md": "Uploads are limited to 25 MB.\n",
    })  # fmt: skip
    release(repo, "v2.0.0", "2024-09-01", {"docs/_snippets/limits.md": "Uploads are limited to 50 MB.\n"})
    release(repo, "v3.0.0", "2025-01-15", {"docs/guide.md": "# Guide\n\n{!limits.md!}\n\n{!missing.md!}\n\nThe guide ends here.\n"})
    sources, errors = load_git_sources(f"git:{repo}@tags:docs", today=TODAY)
    guide = sorted((s for s in sources if s.source_id == "guide.md"), key=lambda s: str(s.source_date))
    # the page is a new version where the snippet changed (v2.0.0) though its own file did not;
    # each version holds the snippet as it was at its rev
    assert [(s.source_rev, passages(s)[1]) for s in guide] == [
        ("v1.0.0", "Uploads are limited to 25 MB."),
        ("v2.0.0", "Uploads are limited to 50 MB."),
        ("v3.0.0", "Uploads are limited to 50 MB."),
    ]
    assert [e.error for e in errors if "missing.md" in e.error] == ["docs/guide.md: include 'missing.md' not found in the tree: not read"]
    assert all(passages(s)[-1] == "The guide ends here." for s in guide)
    assert {s.source_id for s in sources} == {"guide.md"}  # the snippet is read inside the guide


def test_an_example_config_a_page_shows_is_not_read_as_settings(tmp_path):
    repo = make_repo(tmp_path)
    page = '# Reference\n\nEvery option, with placeholder values:\n\n```yaml\n--8<-- "ref/all-options.yaml"\n```\n'
    release(repo, "v1.0.0", "2024-01-10", {
        "docs/reference.md": page,
        "docs/ref/all-options.yaml": "server:\n  timeout: 42\n",
        "docs/app.yaml": "server:\n  workers: 4\n",
    })  # fmt: skip
    sources, errors = load_git_sources(f"git:{repo}@tags:docs", today=TODAY)
    assert sorted((s.source_id, s.source_kind) for s in sources) == [("app.yaml", "spec"), ("reference.md", None)]
    assert errors == []
    folder = tmp_path / "folder"
    write(folder, {"reference.md": page, "ref/all-options.yaml": "server:\n  timeout: 42\n", "app.yaml": "server:\n  workers: 4\n"})
    sources, errors = load_sources(folder, today=TODAY)
    assert sorted((s.source_id, s.source_kind) for s in sources) == [("app.yaml", "spec"), ("reference.md", None)]


def test_pages_that_include_each_other_stay_pages(tmp_path):
    write(tmp_path, {"a.md": "# A\n\nText of a.\n\n{!b.md!}\n", "b.md": "# B\n\nText of b.\n\n{!a.md!}\n"})
    sources, errors = load_sources(tmp_path, today=TODAY)
    assert sorted(s.source_id for s in sources) == ["a.md", "b.md"]
    assert sum("include cycle" in e.error for e in errors) == 2


def test_text_without_includes_is_returned_as_is(tmp_path):
    text = "# Plain\n\nNothing is included here.\n"
    assert expand_includes(text, "plain.md", FolderTree(Path(tmp_path))) == (text, [])
