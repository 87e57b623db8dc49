"""A term the newest release renamed across its pages ("site configuration" -> "project
configuration") is no change of fact; a state word changed on as many pages still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.evidence.versions import with_terms_renamed
from tests.test_git_sources import audit_releases, two_releases

PAGES = {
    "docs/urls.md": "# URLs\n\nThe path is relative to the baseURL in your site configuration.\n\n"
    "Set the port in the server block of the file when you need another one.\n",
    "docs/i18n.md": "# Translations\n\nTo render placeholders for missing translations, set the placeholder option in your "
    "site configuration.\n\nThe counter is global for both monolingual and multilingual sites.\n",
    "docs/pager.md": "# Pager\n\nThe number of pages per pager falls back to the pager size as defined in your site "
    "configuration.\n\nThe pager is enabled by default for every list page of the theme.\n",
    "docs/deploy.md": "# Deploy\n\nImport a site from another system with the import command of the tool.\n\n"
    "A theme of the tool may serve as the basis for a new site of the team.\n\n"
    "The upload cache is enabled by default for every target that the deploy command knows.\n",
    "docs/cli.md": "# CLI\n\nThe path is relative to the baseURL in your site configuration.\n\n"
    "The build command writes the output to the public folder of the working directory.\n",
    "docs/cache.md": "# Cache\n\nThe download cache is enabled by default for every module that the build reads.\n\n"
    "The image cache is enabled by default for every image that the build processes.\n\n"
    "The keepComments flag of the minifier takes precedence over the comments setting in the site configuration.\n",
}


SIGNED = "The release is signed by Florian, who keeps the signing key of the project safe."
for _page in ("docs/urls.md", "docs/pager.md", "docs/cli.md"):
    PAGES[_page] += f"\n{SIGNED}\n"

# a product that no longer writes its major version on its name: the same product
ENGINE = "Every page is rendered with Jinja2, which escapes the HTML of each template variable."
for _page in ("docs/urls.md", "docs/pager.md", "docs/deploy.md"):
    PAGES[_page] += f"\n{ENGINE}\n"


def _newer(text: str) -> str:
    return (
        text.replace("Florian", "Freya")
        .replace("Jinja2", "Jinja")
        .replace("site configuration", "project configuration")
        .replace("multilingual sites", "multilingual projects")
        .replace("Import a site", "Import a project")
        .replace(
            "A theme of the tool may serve as the basis for a new site", "A module of the tool may serve as the basis for a new project"
        )
        .replace("enabled by default", "disabled by default")
        .replace("setting in the project configuration", "setting in your project configuration")
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    return two_releases(tmp_path_factory.mktemp("renamed"), dict(PAGES), {path: _newer(text) for path, text in PAGES.items()})


def test_a_term_renamed_across_pages_is_supported_and_a_state_changed_across_pages_is_not(history, tmp_path):
    result = audit_releases(history, tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    renamed = verdicts["The path is relative to the baseURL in your site configuration."]
    assert renamed.label == "supported", renamed
    assert "project configuration" in (renamed.evidence_sentence or ""), renamed
    assert "renamed" in renamed.rationale and "site -> project" in renamed.rationale, renamed
    # the same sentence on another page, older and newer, is no vote against it
    repeated = [v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id and "baseURL" in c.source_text]
    assert len(repeated) == 2 and all(v.label == "supported" for v in repeated), repeated
    plural = verdicts["The counter is global for both monolingual and multilingual sites."]
    assert plural.label == "supported", plural
    # renamed and reworded a little ("the" -> "your"): the rename is still no change of fact
    reworded = verdicts["The keepComments flag of the minifier takes precedence over the comments setting in the site configuration."]
    assert reworded.label == "supported", reworded
    # a name changed on as many pages is another person, not a term renamed
    signed = [v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id and c.source_text == SIGNED]
    assert signed and all(v.label in ("stale", "contradicted") for v in signed), signed
    engine = [v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id and c.source_text == ENGINE]
    assert len(engine) == 3 and all(v.label == "supported" for v in engine), engine
    assert "jinja2 -> jinja" in engine[0].rationale, engine[0]
    # five pages flipped a default alike: that is a change of fact on each, not a rename
    flipped = verdicts["The download cache is enabled by default for every module that the build reads."]
    assert flipped.label in ("stale", "contradicted"), flipped
    # another subject with a renamed term beside it: the subject changed, the renamed term did not
    subject = verdicts["A theme of the tool may serve as the basis for a new site of the team."]
    assert subject.label in ("stale", "contradicted") and "theme" in subject.rationale, subject
    assert "site" not in subject.rationale.split("renamed across its pages")[-1].replace("site -> project", ""), subject


def test_a_name_is_not_renamed_with_the_word():
    text, took = with_terms_renamed("Read site.Params or pass --site to change the Site title.", {"site": "project"})
    assert text == "Read site.Params or pass --site to change the Project title."
    assert took == {"site": "project"}


def test_a_name_keeps_its_capitals_when_its_version_number_goes():
    text, took = with_terms_renamed("Run it on PyPy3 or on CPython.", {"pypy3": "pypy"})
    assert text == "Run it on PyPy or on CPython." and took == {"pypy3": "pypy"}
