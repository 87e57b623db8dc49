"""Git sources: versions per rev, dating, rev order, renames, bad input, the KB read from git.

Every repository here is built with the git CLI in tmp_path; pygit2 reads it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from kb.chain import run_audit
from kb.config import ClaimSettings, ConfigError, Settings, load_settings
from kb.config.gitspec import GitSpecError, parse_spec, with_kb_release
from kb.evidence.git_source import ingest_git, load_git_sources
from kb.evidence.sources import load_sources

TODAY = date(2025, 6, 1)


def git(repo: Path, *args: str, when: str | None = None) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_NOSYSTEM="1",
               HOME=str(repo.parent))  # fmt: skip
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"{when}T12:00:00+00:00"
    out = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def write(repo: Path, files: dict[str, str | bytes | None]) -> None:
    for rel, content in files.items():
        path = repo / rel
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def release(repo: Path, tag: str, when: str, files: dict[str, str | bytes | None]) -> None:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"release {tag}", when=when)
    git(repo, "tag", tag)


def make_repo(tmp_path: Path, name: str = "product") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


def two_releases(root: Path, older: dict[str, str], newer: dict[str, str]) -> Path:
    """A bare clone of a repository with two tagged releases of its docs, v1.0.0 and v1.1.0."""
    repo = make_repo(root, "product")
    release(repo, "v1.0.0", "2024-01-10", older)
    release(repo, "v1.1.0", "2024-06-10", newer)
    clone = root / "clone.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo), str(clone)], check=True)
    return clone


def audit_releases(clone: Path, cache: Path, depth: str = "D1"):
    """The audit of release v1.0.0's docs against v1.0.0 and v1.1.0 (``two_releases``)."""
    settings = Settings(docs=f"git:{clone}@v1.0.0:docs", sources=[f"git:{clone}@v1.0.0,v1.1.0:docs"],
                        today=date(2024, 6, 10), depth=depth, full=True).validate()  # fmt: skip
    return run_audit(settings, cache_dir=cache)


GUIDE_V1 = "# Guide\n\nThe default timeout is 30 seconds.\n\nUploads are limited to 10 MB per file.\n"
GUIDE_V2 = "# Guide\n\nThe default timeout is 60 seconds.\n\nUploads are limited to 10 MB per file.\n"
INSTALL = "# Install\n\nRun the installer as an administrator. It needs Python 3.9 or newer to run.\n" * 3


@pytest.fixture()
def product(tmp_path):
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": GUIDE_V1, "docs/install.md": INSTALL, "README.md": "# Product\n\nSee docs.\n"})
    # v1.10.0 comes after v1.9.0 in version order though it is listed (and tagged) first here
    release(repo, "v1.9.0", "2024-03-05", {"docs/guide.md": GUIDE_V2})
    # a docs reorganisation: install.md moves into a subfolder, unchanged but for one line
    moved = INSTALL.replace("# Install", "# Installing")
    release(repo, "v1.10.0", "2024-06-20", {"docs/install.md": None, "docs/setup/install.md": moved})
    return repo


def by_id(sources):
    out = {}
    for s in sources:
        out.setdefault(s.source_id, []).append(s)
    return {k: sorted(v, key=lambda s: s.source_date) for k, v in out.items()}


def test_each_rev_is_a_dated_version_with_its_rev(product):
    sources, errors = load_git_sources(f"git:{product}:docs", today=TODAY)
    assert errors == []
    ids = by_id(sources)
    # README.md is outside PATH; ids are relative to it
    assert sorted(ids) == ["guide.md", "setup/install.md"]
    guide = ids["guide.md"]
    assert [(s.source_date, s.source_rev, s.date_origin) for s in guide] == [
        (date(2024, 1, 10), "v1.0.0", "git"),
        # unchanged at v1.10.0: one version carrying the latest rev and date
        (date(2024, 6, 20), "v1.10.0", "git"),
    ]
    assert "30 seconds" in guide[0].text and "60 seconds" in guide[1].text
    assert guide[1].path.endswith("@v1.10.0:docs/guide.md")


def test_renamed_file_keeps_its_identity(product):
    sources, _ = load_git_sources(f"git:{product}:docs", today=TODAY)
    install = by_id(sources)["setup/install.md"]
    # the v1.0.0 version (at docs/install.md) and the moved one are one source, named by its newest path
    assert [s.source_rev for s in install] == ["v1.9.0", "v1.10.0"]
    assert install[0].text.startswith("# Install\n") and install[1].text.startswith("# Installing\n")


def test_revs_given_tags_keyword_and_default(product):
    git(product, "checkout", "-q", "-b", "next")
    write(product, {"docs/guide.md": GUIDE_V2.replace("60 seconds", "90 seconds")})
    git(product, "commit", "-qam", "next", when="2024-08-01")
    # default: every tag plus HEAD (the branch tip, untagged)
    sources, _ = load_git_sources(f"git:{product}:docs/guide.md", today=TODAY)
    assert [s.source_rev for s in sorted(sources, key=lambda s: s.source_date)] == ["v1.0.0", "v1.10.0", "HEAD"]
    # `tags`: the tags only, in version order
    sources, _ = load_git_sources(f"git:{product}@tags:docs/guide.md", today=TODAY)
    assert {s.source_rev for s in sources} == {"v1.0.0", "v1.10.0"}
    # explicit revs: a branch and a commit
    first = git(product, "rev-list", "--max-parents=0", "HEAD")
    sources, _ = load_git_sources(f"git:{product}@{first[:10]},next:docs/guide.md", today=TODAY)
    assert sorted((s.source_rev, s.source_date) for s in sources) == [(first[:10], date(2024, 1, 10)), ("next", date(2024, 8, 1))]
    # a glob PATH
    sources, _ = load_git_sources(f"git:{product}@v1.10.0:docs/**/*.md", today=TODAY)
    assert {s.source_id for s in sources} == {"docs/setup/install.md"}


def test_bare_clone_and_the_repo_is_never_written(product, tmp_path):
    bare = tmp_path / "product.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(product), str(bare)], check=True)
    before = sorted((p.relative_to(bare).as_posix(), p.stat().st_mtime_ns) for p in bare.rglob("*"))
    sources, errors = load_git_sources(f"git:{bare}@tags:docs", today=TODAY)
    assert errors == [] and len(sources) == 4
    assert sorted((p.relative_to(bare).as_posix(), p.stat().st_mtime_ns) for p in bare.rglob("*")) == before
    assert git(product, "status", "--porcelain") == ""


def test_bad_input_is_reported_and_the_rest_loads(tmp_path):
    repo = make_repo(tmp_path)
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nNot part of the docs tree.\n")
    release(repo, "v1", "2024-01-01", {"other/readme.md": "# Other\n\nNo docs folder yet.\n"})
    release(repo, "v2", "2024-02-01", {"docs/ok.md": GUIDE_V1, "docs/blob.md": b"\x00\x01binary\x00"})
    os.symlink(str(outside), repo / "docs" / "leak.md")
    os.symlink("ok.md", repo / "docs" / "alias.md")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links", when="2024-03-01")
    git(repo, "tag", "v3")
    sources, errors = load_git_sources(f"git:{repo}@v1,v2,v3,nope-9:docs", today=TODAY)
    messages = [f"{e.path} {e.error}" for e in errors]
    assert any("'nope-9' does not resolve" in m for m in messages)
    assert any("'docs' is absent at v1" in m for m in messages)
    assert any("blob.md" in m and "binary file" in m for m in messages)
    assert any("leak.md" in m and "symlink points outside the tree" in m for m in messages)
    assert {s.source_id for s in sources} == {"ok.md"}
    assert not any("Secret" in s.text for s in sources)


def test_shallow_clone_is_reported(product, tmp_path):
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{product}", str(shallow)], check=True)
    sources, errors = load_git_sources(f"git:{shallow}:docs", today=TODAY)
    assert any("shallow clone" in e.error for e in errors)
    assert sources  # what the clone holds still loads


def test_not_a_repository_and_bad_specs_are_usage_errors(tmp_path):
    with pytest.raises(GitSpecError, match="not a git repository"):
        load_git_sources(f"git:{tmp_path}", today=TODAY)
    with pytest.raises(GitSpecError, match="empty rev list"):
        parse_spec("git:repo@:docs")
    with pytest.raises(ConfigError, match="not a git repository"):
        Settings(docs=tmp_path, sources=[f"git:{tmp_path / 'missing'}"]).validate()


def test_load_sources_and_settings_take_git_specs(product, tmp_path):
    sources, errors = load_sources(f"git:{product}@v1.0.0,v1.9.0:docs", today=TODAY)
    assert errors == [] and {s.source_rev for s in sources} == {"v1.0.0", "v1.9.0"}
    (tmp_path / "kb").mkdir()
    (tmp_path / "kbaudit.toml").write_text(
        f'docs = "kb"\n[[sources]]\ngit = "{product.name}"\nrevs = ["v1.0.0", "v1.10.0"]\npath = "docs"\n'
    )
    settings = load_settings({}, cwd=tmp_path, environ={}).validate()
    assert settings.sources == [f"git:{product.resolve()}@v1.0.0,v1.10.0:docs"]
    # the flag form, and a round trip through the settings a flow run receives
    flagged = load_settings({"sources": [f"git:{product}@tags:docs"]}, cwd=tmp_path, environ={})
    assert Settings.from_public_dict(flagged.public_dict()).sources == [f"git:{product}@tags:docs"]
    (tmp_path / "kbaudit.toml").write_text('[[sources]]\ngit = "x"\nbranch = "main"\n')
    with pytest.raises(ConfigError, match="unknown key"):
        load_settings({}, cwd=tmp_path, environ={})


def test_kb_read_from_git_at_a_rev(product):
    docs, errors = ingest_git(f"git:{product}@v1.0.0:docs", 1_000_000)
    assert errors == []
    assert sorted(d.doc_id for d in docs) == ["guide.md", "install.md"]
    guide = next(d for d in docs if d.doc_id == "guide.md")
    assert "30 seconds" in guide.text and guide.updated == date(2024, 1, 10)
    with pytest.raises(GitSpecError, match="exactly one rev"):
        ingest_git(f"git:{product}@v1.0.0,v1.9.0:docs", 1_000_000)


@pytest.mark.slow
def test_run_audits_a_kb_from_git_and_refuses_apply(product, tmp_path):
    """kbaudit run git:REPO@REV:PATH against the newest release: the old timeout is stale."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    kb = f"git:{product}@v1.0.0:docs"
    cmd = [sys.executable, "-m", "cli.main", "run", kb, "--sources", f"git:{product}@tags:docs",
           "--out", str(tmp_path / "store"), "--depth", "D0", "--today", "2025-01-01", "--json"]  # fmt: skip
    refused = subprocess.run([*cmd, "--apply"], env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2
    assert "--apply cannot write to a KB read from git" in refused.stderr
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    import duckdb

    con = duckdb.connect(str(tmp_path / "store" / "kbaudit.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT c.source_text, v.label, e.source_rev, e.source_date FROM claims c JOIN verdicts v USING (claim_id) "
        "LEFT JOIN evidence e ON e.claim_id = c.claim_id AND e.rank = 1 WHERE c.source_text LIKE '%timeout%'"
    ).fetchall()
    assert rows, "the timeout claim was not audited"
    text, label, rev, day = rows[0]
    assert label == "stale", rows
    assert git(product, "status", "--porcelain") == ""


def test_a_sentence_the_newest_release_dropped_is_reported_removed(tmp_path):
    """Stale with a removal gap (docs/design-notes.md), its correction a deletion queued for review."""
    from kb.chain import run_audit

    repo = make_repo(tmp_path)
    page = ("# Options\n\nThe `--legacy-parser` flag switches to the old parser for one release.\n\n"
            "The default timeout is 30 seconds.\n\nUploads are limited to 10 MB per file.\n")  # fmt: skip
    release(repo, "v1.0.0", "2024-01-10", {"docs/options.md": page})
    release(
        repo,
        "v2.0.0",
        "2024-09-01",
        {"docs/options.md": page.replace("The `--legacy-parser` flag switches to the old parser for one release.\n\n", "")},
    )
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "options.md").write_text("---\nupdated: 2024-01-10\n---\n" + page)
    settings = Settings(docs=kb, sources=[f"git:{repo}@tags:docs"], depth="D0", today=TODAY, full=True).validate()
    result = run_audit(settings)
    verdict = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    gone = verdict["The --legacy-parser flag switches to the old parser for one release."]
    assert gone.label == "stale", gone
    assert gone.action.startswith("removed in v2.0.0"), gone.action
    assert verdict["Uploads are limited to 10 MB per file."].label == "supported"
    edit = next(e for e in result.edits if e.claim_id == gone.claim_id)
    assert edit.status == "queued" and edit.new_text == "" and "removed in v2.0.0" in edit.reason


def test_a_file_the_newest_rev_deleted_is_not_current_documentation(tmp_path):
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {"docs/legacy.md": "# Legacy\n\nThe legacy agent polls every 5 minutes.\n",
                                           "docs/guide.md": "# Guide\n\nThe agent polls every 5 minutes.\n"})  # fmt: skip
    release(repo, "v2.0.0", "2024-09-01", {"docs/legacy.md": None, "docs/guide.md": "# Guide\n\nThe agent polls every minute.\n"})
    sources, errors = load_git_sources(f"git:{repo}@tags:docs", today=TODAY)
    assert sorted((s.source_id, s.source_rev, s.deleted_in) for s in sources) == [
        ("guide.md", "v1.0.0", ""), ("guide.md", "v2.0.0", ""), ("legacy.md", "v1.0.0", "v2.0.0")
    ]  # fmt: skip
    # a file moved between the revs is the same source, not a deleted one
    release(repo, "v3.0.0", "2025-01-15", {"docs/guide.md": None, "docs/manual/guide.md": "# Guide\n\nThe agent polls every minute.\n"})
    sources, errors = load_git_sources(f"git:{repo}@tags:docs", today=TODAY)
    assert {s.source_id: s.deleted_in for s in sources} == {"manual/guide.md": "", "legacy.md": "v2.0.0"} and len(sources) == 3


def test_a_claim_only_a_deleted_page_supported_is_reported_removed_in_the_deleting_rev(tmp_path):
    """Deleting a page removes its facts (stale, removal gap), and its old text no longer speaks
    for another page's changed sentence."""
    from kb.chain import run_audit

    repo = make_repo(tmp_path)
    legacy = "# Legacy agent\n\nThe legacy agent reads its settings from `/etc/agent.ini`.\n\nThe agent polls every 5 minutes.\n"
    guide = "# Guide\n\nThe agent polls every 5 minutes.\n\nLogs are kept for 14 days.\n"
    release(repo, "v1.0.0", "2024-01-10", {"docs/legacy.md": legacy, "docs/guide.md": guide})
    release(repo, "v2.0.0", "2024-09-01", {"docs/legacy.md": None, "docs/guide.md": guide.replace("every 5 minutes", "every minute")})
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "agent.md").write_text(
        "---\nupdated: 2024-01-10\n---\n# Agent\n\nThe legacy agent reads its settings from `/etc/agent.ini`.\n\n"
        "The agent polls every 5 minutes.\n\nLogs are kept for 14 days.\n"
    )
    settings = Settings(docs=kb, sources=[f"git:{repo}@tags:docs"], depth="D0", today=TODAY, full=True).validate()
    result = run_audit(settings)
    verdict = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    gone = verdict["The legacy agent reads its settings from /etc/agent.ini."]
    assert gone.label == "stale" and gone.action.startswith("removed in v2.0.0"), gone
    assert verdict["The agent polls every 5 minutes."].label == "stale", verdict["The agent polls every 5 minutes."]
    assert verdict["Logs are kept for 14 days."].label == "supported"


def test_a_fact_whose_page_was_split_off_is_not_removed(tmp_path):
    """A removal needs the fact's absence from the whole newest corpus: a section that moved to
    a page of its own between releases still states its facts, so they stay supported, while a
    sentence dropped everywhere is still reported removed."""
    from kb.chain import run_audit

    repo = make_repo(tmp_path)
    intro = "# Guide\n\nThe client is configured with a TOML file.\n\n"
    proxies = "## Proxies\n\nThe client reads the proxy address from the `HTTPS_PROXY` variable.\n\nProxy credentials are sent with basic authentication.\n\n"
    dropped = "The `--legacy-tls` flag turns on TLS 1.0 for old servers.\n"
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": intro + proxies + dropped})
    release(repo, "v2.0.0", "2024-09-01", {"docs/guide.md": intro, "docs/proxies.md": proxies.replace("## Proxies", "# Proxies")})
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "guide.md").write_text("---\nupdated: 2024-01-10\n---\n" + intro + proxies + dropped)
    settings = Settings(docs=kb, sources=[f"git:{repo}@tags:docs"], depth="D0", today=TODAY, full=True).validate()
    result = run_audit(settings)
    verdict = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    moved = verdict["The client reads the proxy address from the HTTPS_PROXY variable."]
    assert moved.label == "supported", moved
    assert verdict["Proxy credentials are sent with basic authentication."].label == "supported"
    gone = verdict["The --legacy-tls flag turns on TLS 1.0 for old servers."]
    assert gone.label == "stale" and gone.action.startswith("removed in v2.0.0"), gone


def _kb_page_verdicts(tmp_path: Path, name: str, page: str, sources: str, by_text: bool = False) -> dict:
    """The verdicts of a KB page written at the first release, audited at depth D1 against
    ``sources``: by each check-worthy claim's text as written (as read, with ``by_text``)."""
    from kb.chain import run_audit

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / name).write_text("---\nupdated: 2024-01-10\n---\n" + page)
    result = run_audit(Settings(docs=kb, sources=[sources], depth="D1", today=TODAY, full=True).validate())
    return {c.text if by_text else c.source_text: v
            for c in result.claims if c.checkworthy for v in result.verdicts if v.claim_id == c.claim_id}  # fmt: skip


def test_a_fact_moved_to_another_page_nearly_as_written_is_not_removed(tmp_path):
    """A sentence whose page was split up, and whose new place dropped a link and ends on a colon,
    still stands in the newest corpus: supported, with its new place as the evidence. A sentence
    gone from every page is still a removal."""

    repo = make_repo(tmp_path)
    hooks = (
        "# Configuration\n\n## Hooks\n\nA setup file can either export named functions `setup` and `teardown` or a "
        "`default` function that returns a teardown function ([example](https://example.org/setup.ts)).\n\n"
        "The `--legacy-hooks` flag runs the hooks of version 1.\n\n## Output\n\nReports are written to the out folder.\n"
    )
    moved = (
        "# Hooks\n\nA setup file can either export named functions `setup` and `teardown` or a `default` function that "
        "returns a teardown function:\n\n```ts\nexport default () => () => {}\n```\n"
    )
    release(repo, "v1.0.0", "2024-01-10", {"docs/config.md": hooks})
    release(repo, "v2.0.0", "2024-09-01", {"docs/config.md": None, "docs/hooks.md": moved,
                                           "docs/output.md": "# Output\n\nReports are written to the out folder.\n"})  # fmt: skip
    verdict = _kb_page_verdicts(tmp_path, "config.md", hooks, f"git:{repo}@tags:docs")
    setup = next(v for text, v in verdict.items() if text.startswith("A setup file can either"))
    assert setup.label == "supported", setup
    assert setup.evidence_sentence and setup.evidence_sentence.endswith("teardown function:"), setup
    gone = verdict["The --legacy-hooks flag runs the hooks of version 1."]
    assert gone.label == "stale" and gone.action.startswith("removed in v2.0.0"), gone


def test_what_the_newest_release_states_as_written_is_supported(tmp_path):
    """A list of bare names the newest release still holds under the same heading is supported
    as written (a model reading one name against another is no contradiction), as is a sentence
    it states word for word on another page; a changed value is still a finding."""
    from kb.chain import run_audit

    repo = make_repo(tmp_path)
    errors = "# Errors\n\n## The hierarchy\n\n* HTTPError\n    * RequestError\n        * TransportError\n        * DecodingError\n    * StatusError\n\n"
    # entries of the form "name: description", and names with digits, are each entry's own line
    errors += "## Finder\n\nThe client looks for proxies in these places:\n\n- `env`: The environment variables\n- `winreg`: The Windows registry\n- `macos_arm64`\n\n"
    limits = "## Limits\n\nThe default timeout is 30 seconds.\n\nResponses are decoded with the charset that the server declares.\n"
    release(repo, "v1.0.0", "2024-01-10", {"docs/errors.md": errors + limits})
    release(repo, "v2.0.0", "2024-09-01", {"docs/errors.md": errors + "## Limits\n\nThe default timeout is 60 seconds.\n",
                                           "docs/encoding.md": "# Encoding\n\nResponses are decoded with the charset that the server declares.\n"})  # fmt: skip
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "errors.md").write_text("---\nupdated: 2024-01-10\n---\n" + errors + limits)
    settings = Settings(docs=kb, sources=[f"git:{repo}@v2.0.0:docs"], depth="D1", today=TODAY, full=True).validate()
    result = run_audit(settings)
    verdict = {c.source_text: v for c in result.claims if c.checkworthy for v in result.verdicts if v.claim_id == c.claim_id}
    for name in ("RequestError", "TransportError", "DecodingError", "StatusError"):
        assert verdict[name].label == "supported" and "word for word" in verdict[name].rationale, (name, verdict[name])
    for line in ("winreg: The Windows registry", "macos_arm64"):  # found as evidence, then judged by the rules
        assert verdict[line].label == "supported" and verdict[line].evidence_sentence == line, (line, verdict[line])
    moved = verdict["Responses are decoded with the charset that the server declares."]
    assert moved.label == "supported" and moved.evidence_sentence == "Responses are decoded with the charset that the server declares."
    assert verdict["The default timeout is 30 seconds."].label in ("contradicted", "stale")


@pytest.mark.parametrize(
    ("changed", "kept"),
    [
        ("readTimeout", "writeTimeout"),
        # "`readTimeout`:" ends in the letters of "timeout", but names another option
        ("timeout", "readTimeout"),
    ],
)
def test_another_options_setting_line_left_alone_under_the_heading_is_not_the_changed_ones(tmp_path, changed, kept):
    """Two options' setting lines under one heading: the newest release changed one, and the other's
    line now stands alone there. It is still the other option's line, so the changed one is stale."""

    repo = make_repo(tmp_path)
    lines = {name: f"`{name}`:\n\nOptional, Default=0s\n" for name in (changed, kept)}
    timeouts = "# Server\n\n## Timeouts\n\n" + "\n".join(lines[n] for n in sorted(lines, key=str.lower))
    release(repo, "v1.0.0", "2024-01-10", {"docs/server.md": timeouts})
    release(repo, "v2.0.0", "2024-09-01", {"docs/server.md": timeouts.replace(lines[changed], lines[changed].replace("0s", "60s"))})
    verdict = _kb_page_verdicts(tmp_path, "server.md", timeouts, f"git:{repo}@v1.0.0,v2.0.0:docs", by_text=True)
    assert verdict[f"{changed}: Optional, Default=0s"].label == "stale", verdict
    assert verdict[f"{kept}: Optional, Default=0s"].label == "supported", verdict


BUILDER = (
    "# Builder\n\n| Option | Default | Description |\n| --- | --- | --- |\n"
    '| `core-metadata-version` | `"2.3"` | The version of core metadata to use |\n'
    "| `strict-naming` | `true` | Whether to normalise the names of the files it writes |\n"
)


def test_a_cell_whose_value_changed_in_its_entrys_own_row_is_stale(tmp_path):
    """A cell's claim is a short one ('Option core-metadata-version: Default is "2.3"'): the
    row's first cell is what names its entry, and the newest release's row says 2.4."""
    history = two_releases(tmp_path, {"docs/builder.md": BUILDER}, {"docs/builder.md": BUILDER.replace('"2.3"', '"2.4"')})
    result = audit_releases(history, tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    changed = verdicts['"2.3"']
    assert changed.label == "stale", changed
    assert changed.evidence_value == '"2.4"', changed
    assert verdicts["true"].label == "supported"


TEMPLATES = (
    "# Shortcodes\n\nHugo reads shortcode templates from the layouts/shortcodes directory of the project, at its "
    "root or in subdirectories.\n\nA shortcode is called by its file name from any content file.\n"
)


def test_a_directory_renamed_with_a_leading_underscore_is_a_changed_fact(tmp_path):
    """'layouts/_shortcodes' names another directory than 'layouts/shortcodes': the sentence that
    names the old one is no longer stated word for word, and it is not supported."""
    newer = TEMPLATES.replace("layouts/shortcodes", "layouts/_shortcodes")
    history = two_releases(tmp_path, {"docs/shortcodes.md": TEMPLATES}, {"docs/shortcodes.md": newer})
    result = audit_releases(history, tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    moved = next(v for text, v in verdicts.items() if "layouts/shortcodes" in text)
    assert moved.label == "stale", moved
    assert "_shortcodes" in (moved.evidence_sentence or ""), moved
    assert verdicts["A shortcode is called by its file name from any content file."].label == "supported"


def audit_with_timeout_changed_in_v1_1(docs: str, sources: str, cache: Path) -> dict:
    """The verdicts by sentence of an audit whose sources' v1.1.0 changed GUIDE_V1's timeout,
    checked to read that change against the older version, dated 2024-01-10."""
    settings = Settings(docs=docs, sources=[sources], today=date(2024, 6, 10), depth="D1", full=True).validate()
    result = run_audit(settings, cache_dir=cache)
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    changed = verdicts["The default timeout is 30 seconds."]
    assert changed.label == "stale", changed
    assert "older version (2024-01-10)" in changed.rationale, changed
    return verdicts


def test_the_kbs_own_release_is_the_oldest_version_of_the_sources_of_its_repository(tmp_path):
    """The KB read at v1.0.0, the sources at the two later releases only: the first of them
    already changed the timeout, and the KB's own page is the version it changed. A page the
    later releases deleted is not read from the KB's release."""
    repo = make_repo(tmp_path)
    faq = "# FAQ\n\nThe service answers every request within two seconds of its arrival.\n"
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": GUIDE_V1, "docs/faq.md": faq})
    # the FAQ page is rewritten into other pages: its facts may stand there in other words
    release(repo, "v1.1.0", "2024-03-05", {"docs/guide.md": GUIDE_V2, "docs/faq.md": None})
    release(repo, "v1.2.0", "2024-06-10", {"docs/guide.md": GUIDE_V2 + "\nLogs are kept for a week.\n"})
    docs, sources = f"git:{repo}@v1.0.0:docs", f"git:{repo}@v1.1.0,v1.2.0:docs"
    assert with_kb_release(sources, docs) == (f"git:{repo}@v1.0.0,v1.1.0,v1.2.0:docs", "v1.0.0")
    # sources that read every tag, another repository or a KB newer than them are left as they are
    assert with_kb_release(f"git:{repo}@tags:docs", docs) == (f"git:{repo}@tags:docs", None)
    assert with_kb_release(f"git:{repo}@v1.0.0:docs", f"git:{repo}@v1.1.0:docs") == (f"git:{repo}@v1.0.0:docs", None)
    assert with_kb_release(str(tmp_path / "folder"), docs) == (str(tmp_path / "folder"), None)
    verdicts = audit_with_timeout_changed_in_v1_1(docs, sources, tmp_path / "cache")
    assert verdicts["Uploads are limited to 10 MB per file."].label == "supported"
    # a page only the KB's release holds is no older version of anything: not a removal
    assert verdicts["The service answers every request within two seconds of its arrival."].label == "uncertain"


def test_a_kb_commit_on_top_of_a_release_reads_that_release_as_the_oldest_version(tmp_path):
    """The KB is a team's edit on top of v1.0.0 (a sentence added), the sources the later release:
    v1.0.0 is what v1.1.0 changed, so the timeout reads as stale; the team's own new sentence is
    in no release and was removed from none."""
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {"docs/guide.md": GUIDE_V1})
    git(repo, "checkout", "-q", "-b", "edits")
    write(repo, {"docs/guide.md": GUIDE_V1 + "\nThe guide is reviewed by the support team every week.\n"})
    git(repo, "commit", "-q", "-am", "a day's edits", when="2024-01-10")
    edited = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    release(repo, "v1.1.0", "2024-06-10", {"docs/guide.md": GUIDE_V2})
    docs, sources = f"git:{repo}@{edited}:docs", f"git:{repo}@v1.1.0:docs"
    assert with_kb_release(sources, docs) == (f"git:{repo}@v1.0.0,v1.1.0:docs", "v1.0.0")
    verdicts = audit_with_timeout_changed_in_v1_1(docs, sources, tmp_path / "cache")
    assert verdicts["The guide is reviewed by the support team every week."].label == "uncertain"


def test_a_lead_in_before_a_code_block_is_stale_only_when_a_value_of_its_own_changed(tmp_path):
    """A lead-in that names a value is a claim: the Python floor it states moved from 3.10 to
    3.12. One whose install step was rewritten away says nothing of a changed fact: the tap may
    stand elsewhere in other words."""
    code = "\n\n```\npython3 -V\n```\n\n"
    older = {"docs/install.md": "# Install\n\nCheck that your installed Python version is at least 3.10:" + code
             + "On macOS, install the tool from our tap with `brew install acme/tap/acme`:" + code}  # fmt: skip
    newer = {"docs/install.md": "# Install\n\nCheck that your installed Python version is at least 3.12:" + code
             + "Packages for every platform are listed on the releases page." + code}  # fmt: skip
    clone = two_releases(tmp_path, older, newer)
    settings = Settings(docs=f"git:{clone}@v1.0.0:docs", sources=[f"git:{clone}@v1.0.0,v1.1.0:docs"], today=date(2024, 6, 10),
                        depth="D1", full=True, claims=ClaimSettings(code_lead_ins=True)).validate()  # fmt: skip
    result = run_audit(settings, cache_dir=tmp_path / "cache")
    claims = {c.source_text: c for c in result.claims}
    verdicts = {v.claim_id: v for v in result.verdicts}
    floor = claims["Check that your installed Python version is at least 3.10:"]
    assert floor.checkworthy and verdicts[floor.claim_id].label == "stale", verdicts[floor.claim_id]
    tap = claims["On macOS, install the tool from our tap with brew install acme/tap/acme:"]
    assert tap.checkworthy and verdicts[tap.claim_id].label == "uncertain", verdicts[tap.claim_id]
    assert "a lead-in of the block that follows" in verdicts[tap.claim_id].rationale
