"""The repository describes the product: no file speaks of how it was made (work sessions,
internal issue numbers, a development data folder beside the checkout), and every repository
path a doc or comment names exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|[0-9]+(?:st|nd|rd|th)"
)
HISTORY = re.compile(
    rf"\b(?:{ORDINALS}) session\b|\bsession's (?:figure|run|rerun|cut|code|change)|\bthis session\b|\bearlier sessions?\b"
    r"|\bissue [0-9]+\b|\.\./shared\b|\bshared/data\b|\bother agents\b|\bthis machine's\b",
    re.IGNORECASE,
)
# this test's own patterns and examples name what it looks for
HISTORY_EXEMPT = {"tests/test_repo_hygiene.py"}
# A module of the project named by its path, and a Markdown link to a page of the repository
# (other paths in docs and tests are examples of a user's KB: `kb/pricing.md`, `docs/guide.md`).
MODULE_RE = re.compile(r"(?<![\w./-])((?:kb|flows|tasks|reports|cli|review_app|bench|training|tests)/[\w./-]*\w\.py)(?![\w])")
# README.md, CHANGELOG.md, CONTRACTS.md...: named by file name alone, at the root or in docs/
# (the tests name a user's changelog files as data)
PAGE_RE = re.compile(r"(?<![\w/.-])([A-Z][A-Z_-]+\.md)\b")
LINK_RE = re.compile(r"\]\(((?!https?:|#|mailto:)[^)#\s]+)(?:#[^)]*)?\)")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".txt", ""}


def tracked_text_files() -> list[Path]:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: the hygiene check reads the tracked files")
    names = [n for n in done.stdout.splitlines() if not n.startswith("kb/demo/") and "/weights/" not in n]
    return [ROOT / n for n in names if Path(n).suffix in TEXT_SUFFIXES and (ROOT / n).is_file()]


def test_no_file_speaks_of_how_the_project_was_made():
    found = []
    for path in tracked_text_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in HISTORY_EXEMPT:
            continue
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
    assert not found, "\n".join(found)


def test_no_tracked_file_is_a_link():
    """A committed link (a virtual environment linked in from another checkout) replaces the
    folder it names in every clone, and the install then fails on the clone."""
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: the hygiene check reads the tracked files")
    links = [line.split("\t", 1)[1] for line in done.stdout.splitlines() if line.startswith("120000 ")]
    assert not links, links


def test_every_named_repository_path_exists():
    missing = []
    for path in tracked_text_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel == "tests/test_repo_hygiene.py":  # its own examples of what it catches
            continue
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            for name in MODULE_RE.findall(line):
                if "<" not in name and not (ROOT / name).exists():
                    missing.append(f"{rel}:{number}: {name}")
            for page in PAGE_RE.findall(line) if not rel.startswith("tests/") else ():
                if not ((ROOT / page).exists() or (ROOT / "docs" / page).exists()):
                    missing.append(f"{rel}:{number}: {page}")
            if path.suffix == ".md":
                for link in LINK_RE.findall(line):
                    if not (path.parent / link).exists():
                        missing.append(f"{rel}:{number}: link {link}")
    assert not missing, "\n".join(missing)


def test_the_checks_catch_what_they_look_for(tmp_path):
    assert HISTORY.search("as measured in the seventh session") and HISTORY.search("see issue 24")
    assert HISTORY.search("data under ../shared/data") and not HISTORY.search("a Prefect test session")
    assert MODULE_RE.findall("see `kb/chain.py`, kb/nowhere.py and kb/guide.md.") == ["kb/chain.py", "kb/nowhere.py"]
    assert PAGE_RE.findall("see DESIGN.md and docs/CONTRACTS.md") == ["DESIGN.md"]
    assert LINK_RE.findall("[a](benchmarks.md#speed) [b](https://x.org/a.md) [c](../README.md)") == ["benchmarks.md", "../README.md"]
