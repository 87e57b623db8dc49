"""An inline list regrouped into a bulleted list under a reworded lead-in ("only the following
objects are supported: `car`, ..." -> "- **Vehicles**: `car`, `boat`") still lists its items:
an item it kept is not removed, an item it dropped is. (An item whose regrouped line retrieval
does not return, here the animals, is still read as removed: the rule reads evidence only.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_git_sources import audit_releases, two_releases

OLD = """# Models

## Available label types

Models support a set of objects chosen for security cameras. Currently, only the following objects are
supported: `person`, `face`, `car`, `license_plate`, `dog`, `cat`, `fox`. Other object types of the default
model are not available.

## Training

A model is trained on the images you submitted and verified in the last month.
"""

NEW = """# Models

## Available label types

Models support a set of objects chosen for security cameras. The labels for annotation are configurable
per camera. Currently, the following objects are supported:

- **People**: `person`, `face`
- **Vehicles**: `car`, `boat`, `license_plate`
- **Animals**: `dog`, `cat`, `horse`

Other object types of the default model are not available.

## Training

A model is trained on the images you submitted and verified in the last month.
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    return two_releases(tmp_path_factory.mktemp("regrouped"), {"docs/models.md": OLD}, {"docs/models.md": NEW})


def test_an_item_still_listed_in_a_regrouped_list_is_not_removed(history, tmp_path):
    result = audit_releases(history, tmp_path / "cache")
    items = {c.source_text: v for c in result.claims for v in result.verdicts
             if v.claim_id == c.claim_id and c.text.startswith("Currently")}  # fmt: skip
    for kept in ("person", "face", "car", "license_plate"):
        assert items[kept].label not in ("stale", "contradicted"), items[kept]
    assert "still lists" in items["car"].rationale or items["car"].label == "supported", items["car"]
    # the item the regrouped list dropped is still a removal
    assert items["fox"].label == "stale", items["fox"]
