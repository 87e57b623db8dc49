"""bench parse: prose lost against a reference rendering, long claims and non-sentences, read from a git bundle."""

import json
import subprocess

import pytest

from bench.parse_fidelity import Params, not_a_sentence, run
from kb.errors import ConfigError

GUIDE_V1 = """# Guide

Workers restart after 500 requests by default.

<!-- kbaudit: ignore -->
Nightly builds are unsupported.
<!-- kbaudit: end -->
"""
GUIDE_V2 = GUIDE_V1 + "\nThe cache (see below keeps entries for ten minutes.\n"
LIMITS = """Limits
======

Uploads are capped at 8 MB per file.

======  =====================
name    value
======  =====================
upload  8 MB
======  =====================
"""
TABLE = "# Options\n\n| option | meaning |\n|---|---|\n| `--long` | " + "a very long explanation " * 30 + "|\n"


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _corpus(tmp_path):
    """A docs-histories folder of one project: two tagged releases in a bundle, and its manifest."""
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    _git(work, "init", "-q", "-b", "master")
    for tag, files in (("v1.0", {"guide.md": GUIDE_V1, "limits.rst": LIMITS}), ("v2.0", {"guide.md": GUIDE_V2, "options.md": TABLE})):
        for name, text in files.items():
            (work / "docs" / name).write_text(text, encoding="utf-8")
        _git(work, "add", "-A")
        _git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", tag)
        _git(work, "tag", tag)
    data = tmp_path / "docs-histories"
    data.mkdir()
    _git(work, "bundle", "create", str(data / "tiny.bundle"), "--all")
    manifest = [{"project": "tiny", "bundle": "tiny.bundle", "docs_paths": ["docs/"], "format": "Markdown",
                 "tags": [{"tag": "v1.0", "date": "2024-01-01"}, {"tag": "v2.0", "date": "2024-06-01"}]}]  # fmt: skip
    (data / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return data


def _letters(text: str) -> int:
    return sum(len(w) for w in text.replace(".", " ").split())


def test_prose_lost_claims_and_non_sentences_over_every_release(tmp_path):
    data = _corpus(tmp_path)
    out = run(Params(data=str(data)))
    # four page versions: guide.md at each release, limits.rst (the same blob at both) and options.md
    assert out["pages"] == 4
    # the passage set off with ignore markers is the only prose the parser leaves out (twice:
    # both versions of guide.md), the rST page loses nothing
    ignored = _letters("Nightly builds are unsupported")
    prose = (
        2 * _letters("Guide Workers restart after 500 requests by default Nightly builds are unsupported")
        + _letters("The cache see below keeps entries for ten minutes")
        + _letters("Limits Uploads are capped at 8 MB per file")
        + _letters("Options")
    )
    assert out["prose_lost_share.tiny"] == round(2 * ignored / prose, 5)
    assert out["prose_lost_share.tiny.rst"] == 0.0
    assert out["max_prose_lost_share"] == out["prose_lost_share.tiny"]
    # the table row is the one claim over 600 characters, and it is not prose
    assert out["claims_over_600"] == out["claims_over_600.tiny"] == 1
    assert out["claims_over_600_prose"] == 0
    # "The cache (see below keeps ...": its bracket never closes
    assert out["non_sentence_claims"] == out["non_sentence_claims.tiny"] == 1


def test_releases_reads_only_the_newest_tags_and_dump_names_what_was_lost(tmp_path):
    data = _corpus(tmp_path)
    dump = tmp_path / "dump.jsonl"
    out = run(Params(data=str(data), releases=1, dump=str(dump)))
    assert out["pages"] == 3  # guide.md, limits.rst (unchanged) and options.md at v2.0
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    lost = [r for r in rows if "missing" in r]
    assert [(r["release"], r["path"], r["missing"]) for r in lost] == [
        ("v2.0", "docs/guide.md", {"nightly": 1, "builds": 1, "are": 1, "unsupported": 1})
    ]
    flagged = sorted(r["why"] for r in rows if "why" in r)
    assert flagged == ["over 600 characters", "unbalanced brackets"]


def test_the_data_folder_comes_from_the_flag_or_the_environment_only(tmp_path, monkeypatch):
    monkeypatch.delenv("KBAUDIT_DATA", raising=False)
    with pytest.raises(ConfigError, match="--data"):
        run(Params())
    data = _corpus(tmp_path)
    monkeypatch.setenv("KBAUDIT_DATA", str(tmp_path))
    assert run(Params(releases=1))["pages"] == 3
    with pytest.raises(ConfigError, match="no manifest.json"):
        run(Params(data=str(tmp_path)))
    with pytest.raises(ConfigError, match="nothere"):
        run(Params(data=str(data), projects="tiny,nothere"))


@pytest.mark.parametrize(
    ("text", "kind", "why"),
    [
        ("Plugins run in order (e.g.", "paragraph", "unbalanced brackets"),
        ("Add it to the [CLI Reference](/reference/cli).", "paragraph", "link markup left in the text"),
        ("See the [schema][schema-ref] too.", "paragraph", "link markup left in the text"),
        ("Values such as [a, b] or f(x) are lists.", "paragraph", None),
        ("Set a short timeout, e.g.", "paragraph", "cut after an abbreviation"),
        ("Logs go to files, sockets, etc.", "paragraph", None),
        ("The default is for the client .", "paragraph", "space before a full stop or comma"),
        ("Patterns are separated with :, or ; on Windows.", "paragraph", None),
        ("for every request that the client sends.", "paragraph", "starts mid-sentence"),
        ("for every request that the client sends", "list_item", None),
        ("The default timeout (30 s) applies to every request.", "paragraph", None),
    ],
)
def test_what_cannot_be_a_sentence(text, kind, why):
    assert not_a_sentence(text, kind) == why


def test_a_clause_the_splitter_took_from_a_sentence_may_start_mid_sentence():
    assert not_a_sentence("but this can lead to reduced copy times.", "paragraph", opens_block=False) is None


def test_the_markdown_reference_reads_what_the_generators_show():
    from bench.parse_fidelity import markdown_prose

    page = """---
title: Guide
---

!!! note "Limits"
    Uploads are capped at 8 MB.

:::{note}
:class: dropdown
Workers restart nightly.
:::

```{list-table}
* - generated
```

```{note}
Sessions expire after an hour.
```

```
# a comment in an example
```

[opengraph.html]: {{% eturl opengraph %}}

## Homebrew \\{#homebrew}

{/* prettier-ignore-start */}
[homebrew]: https://brew.sh
"""
    assert markdown_prose(page).split() == [
        "Limits", "Uploads", "are", "capped", "at", "8", "MB.", "Workers", "restart", "nightly.",
        "Sessions", "expire", "after", "an", "hour.", "Homebrew",
    ]  # fmt: skip


def test_a_myst_role_shows_its_text_in_the_reference():
    from bench.parse_fidelity import markdown_prose

    page = "Use a {ref}`virtual environment <pypug:Creating and using Virtual Environments>` and `pip`.\n"
    assert markdown_prose(page).split() == ["Use", "a", "virtual", "environment", "and", "pip."]


def test_markdown_inside_a_component_reads_as_markdown_in_the_reference():
    from bench.parse_fidelity import markdown_prose

    page = '<TabItem value="1">\n```shell title="~/.bashrc"\neval "$(task --completion bash)"\n```\n</TabItem>\n\nLoad it once.\n'
    assert markdown_prose(page).split() == ["Load", "it", "once."]


def test_attribute_lists_and_multi_line_component_tags_are_markup_in_the_reference():
    from bench.parse_fidelity import markdown_prose

    heading = "## [1.32.0](https://example.org/v1.32.0) - 2026-08-11 ## {: #hatchling-v1.32.0 }\n\nBump the version.\n"
    assert markdown_prose(heading).split() == ["1.32.0", "-", "2026-08-11", "Bump", "the", "version."]
    tabs = "<Tabs defaultValue=\"1\"\n  values={[\n    {label: 'One', value: '1'}\n  ]}>\n\nPick one.\n"
    assert markdown_prose(tabs).split() == ["Pick", "one."]
