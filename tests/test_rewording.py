"""A rewording is not a refutation: the newest release saying the same thing in other words is
no drift, while a changed number, code name, negation, proper name, status word or a swapped
noun still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.records import Claim, Judgement
from kb.verify.policy import DEFAULT_THRESHOLDS, reworded_refutation
from kb.verify.rewording import restates
from tests.test_git_sources import audit_releases, two_releases

RESTATED = [
    ("tox needs a configuration file where you define what tools you need to run and how to provision a test environment for these.",
     "tox needs a configuration file where you define what tools to run and how to set up environments for them."),
    ("tox always builds projects in a PEP-518 compatible virtual environment.",
     "tox builds projects in a PEP 518 compatible virtual environment."),
    ("For pure Python projects (non C-Extension ones) it's recommended to set `wheel_build_env` to the same as the `package_env`.",
     "For pure Python projects (no C extensions), set wheel_build_env to the same value as package_env."),
    ("Nox might be useful if you find tox's configuration too limiting.",
     "It might be useful if you find tox configuration too limiting."),
    # a failure both name is no change of outcome
    ("If the download fails, the installer retries it three times.", "When the download fails, the installer retries it three times."),
    # a key chord in another notation is the same key
    ("In the files panel, press <c-t> to provision a test environment for these tools.",
     "In the files panel, press ctrl+t to set up environments for them."),
    # a list's items in another order
    ("For example, html, rss, and json are built-in output formats.",
     "For example, html, json, and rss are built-in output formats."),
    ("Supported formats are yaml, toml and json.", "Supported formats are json, toml and yaml."),
    # the name an instruction is about written as the line's label
    ("Enable Automatic User Provision if you want users to be created in Kasm Workspaces.",
     "Automatic User Provision: Enable if you want users to be created in Kasm Workspaces."),
    # a word in another form
    ("This command runs the spider with name quotes that we have just added.",
     "This command runs the spider named quotes that we have just added."),
    # the release it came in dropped from the opening, the rest reworded
    ("Since Acme 0.4.0, tox needs a configuration file where you define what tools you need to run and how to provision a "
     "test environment for these.", "tox needs a configuration file where you define what tools to run and how to set up environments for them."),
]  # fmt: skip
CHANGED = [
    ("tox requires CPython 3.9 and higher.", "tox requires CPython 3.10 and higher."),
    ("The option is optional for every build.", "The option is required for every build."),
    ("Configure the runner in the check.yml file.", "Configure the runner in the check.yaml file."),
    ("Run `pdm init` to create a project.", "Run `pdm new` to create a project."),
    ("The exporter supports MySQL and Postgres databases.", "The exporter supports Postgres databases."),
    ("Caching is enabled by default on every runner.", "Caching is not enabled by default on every runner."),
    ("Widgets can be loaded from the plugins folder.", "Widgets can be loaded from the extensions folder."),
    ("Settings are inherited by individual environments.", "Settings are inherited by all environments."),
    ("Pass the escaped pem in the X-Forwarded-Tls-Client-Cert header.", "Pass the pem in the X-Forwarded-Tls-Client-Cert header."),
    # one of two ways joined by "and" dropped, nothing put in its place
    (
        "This limit can be set per spider using the download_maxsize spider attribute and per request using the download_maxsize Request.meta key.",
        "This limit can be set per-request using the download_maxsize Request.meta key.",
    ),
    # another key bound to the action, however plain its words
    (
        "You can undo the last action by pressing 'z' and redo with ctrl+z.",
        "You can undo the last action by pressing 'z' and redo with 'Z' (shift+z).",
    ),
    (
        "In the files panel, press <c-t> to provision a test environment for these tools.",
        "In the files panel, press ctrl+o to set up environments for them.",
    ),
    # another statement a diff put in the old one's place: little is shared, though nothing holds a value
    ("You cannot use this syntax when the checker runs.", "These hooks are not called when you are running the checker."),
    ("This list is empty if the function was never resolved.", "This function never throws an error."),
    # the same words in another order that is no list's: another statement, or steps swapped
    ("The server depends on the database.", "The database depends on the server."),
    ("Use --force, then --yes to confirm.", "Use --yes, then --force to confirm."),
    ("Set timeout to 30 and retries to 5.", "Set timeout to 5 and retries to 30."),
    # another instruction under the label, or a name taken from further in than the head
    (
        "Enable Automatic User Provision if you want users to be created in Kasm Workspaces.",
        "Automatic User Provision: Disable if you want users to be created in Kasm Workspaces.",
    ),
    ("Set timeout to 30 and retries to 5.", "Retries: Set timeout to 30 and to 5."),
    # an outcome of failure put where the claim had the action succeed
    (
        "Files listed here will overwrite any path that other options already included.",
        "Attempting to overwrite any path that other options already included will raise an error.",
    ),
    ("Unknown keys in the config file are ignored by the loader.", "Unknown keys in the config file are rejected by the loader."),
    # a word that only starts like the other is another word
    ("Set the port in the settings file for the server.", "Set the portal in the settings file for the server."),
    # a history clause dropped beside a changed value is still a change
    ("Since Acme 0.4.0, tox requires CPython 3.9 and higher.", "tox requires CPython 3.10 and higher."),
]


def _claim(text: str) -> Claim:
    return Claim("c1", "guide.md", "v1", 0, len(text), text, text.replace("`", ""))


@pytest.mark.parametrize(("old", "new"), RESTATED)
def test_a_restatement_holds_no_changed_value(old, new):
    assert restates(_claim(old), new)
    # the model reading it as a refutation is the model reading a rewording
    assert reworded_refutation(_claim(old), new, Judgement("refutes", 0.93, "model", "model: refutes (p=0.93)"), DEFAULT_THRESHOLDS)


@pytest.mark.parametrize(("old", "new"), CHANGED)
def test_a_changed_value_is_no_restatement(old, new):
    assert not restates(_claim(old), new)


def test_a_list_item_whose_name_became_its_label_is_restated_under_its_lead_in():
    item = "Enable Automatic User Provision if you want users to be created in Kasm Workspaces."
    claim = Claim("c1", "kasm.md", "v1", 0, len(item), f"Set the following values: {item}", item)
    assert restates(claim, "Automatic User Provision: Enable if you want users to be created in Kasm Workspaces.")
    assert not restates(claim, "Automatic User Provision: Disable if you want users to be created in Kasm Workspaces.")


def test_a_rules_refutation_or_a_sentence_about_something_else_is_not_read_as_rewording():
    old, new = RESTATED[0]
    rules = Judgement("refutes", 0.93, "rules", "version: claim 3.9 vs evidence 3.10", "3.9", "3.10")
    assert not reworded_refutation(_claim(old), new, rules, DEFAULT_THRESHOLDS)
    other = "The changelog lists every release of the project with its date."
    assert not reworded_refutation(_claim(old), other, Judgement("refutes", 0.9, "model", "model: refutes (p=0.90)"), DEFAULT_THRESHOLDS)


PAGE = """# Configuration

tox needs a configuration file where you define what tools you need to run and how to provision a test environment for these.

The default timeout is 30 seconds for every request that the runner sends.

Widgets and add-ons can be loaded from the plugins folder of the project.
"""
REWORDED = (
    PAGE.replace("what tools you need to run and how to provision a test environment for these",
                 "what tools to run and how to set up environments for them")
    .replace("30 seconds", "60 seconds")
    .replace("plugins folder", "extensions folder")
)  # fmt: skip


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    return two_releases(tmp_path_factory.mktemp("reworded"), {"docs/config.md": PAGE}, {"docs/config.md": REWORDED})


@pytest.mark.parametrize("depth", ["D0", "D1"])
def test_a_reworded_sentence_is_supported_and_changed_facts_stay_stale(history, tmp_path, depth):
    result = audit_releases(history, tmp_path / "cache", depth)
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    restated = verdicts[PAGE.splitlines()[2]]
    assert restated.label == "supported", restated
    assert restated.evidence_sentence and "set up environments" in restated.evidence_sentence, restated
    timeout = verdicts["The default timeout is 30 seconds for every request that the runner sends."]
    assert timeout.label == "stale", timeout
    folder = verdicts["Widgets and add-ons can be loaded from the plugins folder of the project."]
    assert folder.label == "stale", folder


LIMITS_V1 = """# Settings

## Download size

This limit can be set per spider using the download_maxsize spider attribute and per request using the download_maxsize Request.meta key.

The default download size limit is 1024 MB for every response.
"""


def test_an_item_dropped_from_a_sentence_is_drift(tmp_path):
    """The newest release keeps one of two ways a sentence joined with "and" and drops the other:
    the claim that still names both is stale, with the revision as its evidence; the unchanged
    sentence beside it stands."""
    newer = LIMITS_V1.replace("set per spider using the download_maxsize spider attribute and per request using", "set per-request using")
    clone = two_releases(tmp_path, {"docs/settings.md": LIMITS_V1}, {"docs/settings.md": newer})
    result = audit_releases(clone, tmp_path / "cache")
    verdicts = {c.text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    both = next(v for text, v in verdicts.items() if "per spider" in text)
    assert both.label == "stale" and "per-request" in (both.evidence_sentence or ""), both
    default = next(v for text, v in verdicts.items() if "1024 MB" in text)
    assert default.label == "supported", default
