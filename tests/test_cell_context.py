"""A table cell that the newer row states word for word is unchanged, though the row's first
cell (the context the claim was given) was renamed around it: the product "Frigate NVR" became
"Frigate", its add-on URLs stand."""

from __future__ import annotations

from tests.test_git_sources import audit_releases, two_releases

OLDER = """# Home Assistant

## Setup

If you are using the Home Assistant add-on, the URL should be one of the following.

| Add-on Variant | URL |
| --- | --- |
| Frigate NVR | `http://ccab4aaf-frigate:5000` |
| Frigate NVR (Full Access) | `http://ccab4aaf-frigate-fa:5000` |
| Frigate NVR Beta | `http://ccab4aaf-frigate-beta:5000` |
"""


def _labels(tmp_path, older: str, newer: str):
    clone = two_releases(tmp_path, {"docs/page.md": older}, {"docs/page.md": newer})
    result = audit_releases(clone, tmp_path / "cache")
    claims = {c.claim_id: c for c in result.claims}
    return {claims[v.claim_id].source_text: v for v in result.verdicts}


def test_a_cell_the_newer_row_states_is_not_left_behind_by_its_renamed_row(tmp_path):
    verdicts = _labels(tmp_path, OLDER, OLDER.replace("Frigate NVR", "Frigate"))
    urls = {text: v for text, v in verdicts.items() if text.startswith("http://")}
    assert len(urls) == 3, verdicts.keys()
    assert all(v.label not in ("stale", "contradicted") for v in urls.values()), {t: (v.label, v.rationale) for t, v in urls.items()}


def test_a_cell_whose_own_words_changed_is_still_stale(tmp_path):
    verdicts = _labels(tmp_path, OLDER, OLDER.replace("frigate-beta:5000", "frigate-beta:5001"))
    beta = verdicts["http://ccab4aaf-frigate-beta:5000"]
    assert beta.label in ("stale", "contradicted"), (beta.label, beta.rationale)


SCRIPTS = """# Behavior

## Default scripts

The default scripts expand to the following commands.

| Script | Command |
| --- | --- |
| `hatch fmt` | `flake8 .` |
| `hatch fmt --check` | `black --check --diff .` |
| `hatch fmt --fix` | `isort .` |
"""


def test_a_cell_kept_in_a_reshaped_table_is_not_removed(tmp_path):
    newer = SCRIPTS.replace("| Script | Command |\n| --- | --- |", "| Script | Command | Since |\n| --- | --- | --- |")
    newer = newer.replace("| `hatch fmt` | `flake8 .` |", "| `hatch check code` | `flake8 .` | 1.18 |")
    newer = newer.replace("| `hatch fmt --check` | `black --check --diff .` |", "| `hatch check fmt` | `black --check --diff .` | 1.18 |")
    newer = newer.replace("| `hatch fmt --fix` | `isort .` |", "| `hatch check fmt --fix` | `isort .` | 1.18 |")
    verdicts = _labels(tmp_path, SCRIPTS, newer)
    for command in ("flake8 .", "black --check --diff ."):
        assert verdicts[command].label not in ("stale", "contradicted"), (command, verdicts[command].rationale)
