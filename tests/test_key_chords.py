"""A keybinding reference that changed its notation for key chords ("<c-t>" -> "<ctrl+t>") keeps
its rows: the action bound to a key is judged against the row of the same key, however spelt."""

from __future__ import annotations

import pytest

from tests.test_git_sources import audit_releases, two_releases

OLD = """# Keybindings

## Files

| Key | Action | Info |
|-----|--------|------|
| `` <c-t> `` | Open external diff tool (git difftool) | - |
| `` <s-up> `` | Range select up | - |
| `` <c-o> `` | Copy commit hash to clipboard | - |
| `` <a-x> `` | Discard all changes in the file | - |
"""
NEW = """# Keybindings

## Files

| Key | Action | Info |
|-----|--------|------|
| `` <ctrl+t> `` | Open external diff tool (git difftool) | - |
| `` <shift+up> `` | Range select up | - |
| `` <ctrl+o> `` | Copy abbreviated commit hash to clipboard | - |
| `` <ctrl+x> `` | Discard all changes in the file | - |
"""


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    root = tmp_path_factory.mktemp("chords")
    clone = two_releases(root, {"docs/keys.md": OLD}, {"docs/keys.md": NEW})
    result = audit_releases(clone, root / "cache")
    claims = {c.claim_id: c for c in result.claims}
    return {claims[v.claim_id].source_text: v for v in result.verdicts}


@pytest.mark.parametrize("action", ["Open external diff tool (git difftool)", "Range select up"])
def test_an_action_whose_key_is_spelt_another_way_still_stands(audit, action):
    assert audit[action].label == "supported", audit[action].rationale


def test_an_action_changed_on_its_key_is_stale_and_another_modifier_is_another_key(audit):
    changed = audit["Copy commit hash to clipboard"]
    assert changed.label == "stale" and "Copy abbreviated commit hash to clipboard" in changed.rationale
    # alt+x is no ctrl+x: the row of the action's key is gone, and the row on ctrl+x supports nothing
    assert audit["Discard all changes in the file"].label != "supported"
