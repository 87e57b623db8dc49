"""A list item is one entry's own line: it is judged by that line where the newest release still
has it under the same heading, and the lead-in it was read with, or the lead-in read with another
entry's name, says nothing of it."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from kb.claims.units import LEAD_IN_ATTACHED
from kb.evidence.versions import states_as_written
from kb.verify import Verifier, VerifierSettings, within_lead_in
from tests.test_verifier import NEW, _claim, _ev

FINDER = "By default, the tool looks for interpreters in the following sources"
FLAG = "--platform=<PLATFORM>: A platform specifier. For example, tool lock --platform=linux locks for Linux x86_64. Available options are"


def _item(cid: str, lead: str, item: str):
    return replace(_claim(cid, f"{lead}: {item}"), source_text=item, reason=LEAD_IN_ATTACHED, section="Config > Finder")


def test_a_value_line_that_stands_alone_under_its_heading_is_stated_there():
    # "name: description" and a name with digits are one entry's own line
    assert states_as_written("path: The PATH environment variable", "Config > Finder",
                             "path: The PATH environment variable", "Config > Finder", alone=True)  # fmt: skip
    assert states_as_written("macos_arm64", "Lock > Targets", "macos_arm64", "Lock > Targets", alone=True)
    # repeated under its heading ("Default: True." for every option of a list), it is no one's
    assert not states_as_written("Default: True.", "Theme > Options", "Default: True.", "Theme > Options")
    # and never under another heading
    assert not states_as_written("macos_arm64", "Lock > Targets", "macos_arm64", "Install > Wheels", alone=True)


def test_the_lead_in_a_list_item_was_read_with_states_none_of_the_items():
    platform = _item("a", FLAG, "macos_arm64")
    example = "For example, tool lock --platform=linux locks for Linux x86_64."
    assert within_lead_in(platform, example)
    # the lead-in read with another entry's name: about that entry
    path = _item("b", FINDER, "path: The PATH environment variable")
    assert within_lead_in(path, f"{FINDER}: venv:")
    # ... but not with the claim's own entry, nor a sentence that is no part of the lead-in
    assert not within_lead_in(path, f"{FINDER}: path:")
    assert not within_lead_in(platform, "The macos_arm64 target locks for Apple silicon.")
    # a claim not read with a lead-in has none
    assert not within_lead_in(_claim("c", FLAG + ": macos_arm64"), example)

    v = Verifier(VerifierSettings(use_model=False))
    evidence = {"a": [_ev("a", "lock.md", NEW, example + " Available options are: linux", example, 1)],
                "b": [_ev("b", "config.md", NEW, f"{FINDER}: venv: The tool's own environment",
                          f"{FINDER}: venv:", 1)]}  # fmt: skip
    for out in v.verify([platform, path], evidence, date(2025, 6, 1)):
        assert out.label == "uncertain", out


def test_an_entry_whose_own_line_stands_is_supported_whatever_the_lead_in_reads():
    path = _item("b", FINDER, "path: The PATH environment variable")
    lead = _ev("b", "config.md", NEW, f"{FINDER}: venv: The tool's own environment", f"{FINDER}:", 1)
    own = replace(_ev("b", "config.md", NEW, "path: The PATH environment variable", "path: The PATH environment variable", 2),
                  section="Config > Finder")  # fmt: skip
    (out,) = Verifier(VerifierSettings(use_model=False)).verify([path], {"b": [lead, own]}, date(2025, 6, 1))
    assert out.label == "supported", out
