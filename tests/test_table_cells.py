"""A table cell is judged against its own entry's row, in its place: another entry's row is not
evidence about it, and a name with digits (sha256) is a name, not a number."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from kb.chain import run_audit
from kb.config import Settings
from kb.verify.additions import respelt_only
from kb.verify.rules import judge_rules
from kb.verify.tokens import word_tokens
from tests.test_git_sources import audit_releases, two_releases

TABLE = """# Shells

## Supported

| Shell | Name | Arguments | macOS | Windows | Unix |
| --- | --- | --- | --- | --- | --- |
| [Almquist shell](https://example.org/ash) | `ash` | `["-i"]` | yes | | yes |
| [Bash](https://example.org/bash) | `bash` | `["-i"]` | yes | no | yes |
| [C shell](https://example.org/csh) | `csh` | `["-i"]` | yes | | yes |
"""


def _audit(tmp_path: Path, kb: str, source: str):
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "shells.md").write_text(kb, encoding="utf-8")
    (tmp_path / "src" / "shells.md").write_text(source, encoding="utf-8")
    settings = Settings(docs=tmp_path / "docs", sources=[tmp_path / "src"], today=date(2025, 1, 1), full=True).validate()
    result = run_audit(settings)
    claims = {c.claim_id: c for c in result.claims}
    return {claims[v.claim_id].text: v for v in result.verdicts}


def test_each_cell_is_read_against_its_own_row_and_place(tmp_path):
    changed = TABLE.replace("| yes | no | yes |", "| yes | yes | yes |")
    verdicts = _audit(tmp_path, TABLE, changed)
    windows = verdicts["Shell Bash: Windows is no"]
    assert windows.label == "contradicted" and "'yes'" in windows.rationale, windows
    others = {text: v.label for text, v in verdicts.items() if text != "Shell Bash: Windows is no"}
    # every other cell stands in its row: the rows of other shells (yes, yes, yes) never refute them
    assert set(others.values()) == {"supported"}, others
    assert len(others) == 12


def test_a_cell_whose_row_moved_or_changed_shape_is_left_to_the_other_rules(tmp_path):
    wider = TABLE.replace("| Unix |", "| Unix | BSD |").replace("| --- |\n", "| --- | --- |\n", 1)
    wider = "\n".join(line + " yes |" if line.startswith("| [") else line for line in wider.splitlines()) + "\n"
    verdicts = _audit(tmp_path, TABLE, wider)
    # a column added: no cell is "changed" by position; none is refuted by another shell's row
    assert not [t for t, v in verdicts.items() if v.label in ("contradicted", "stale")], verdicts


def test_names_with_digits_are_not_numbers():
    assert word_tokens("Hash algorithm sha256 and utf8, version v2 and 30s") == [
        "Hash", "algorithm", "sha256", "and", "utf8", ",", "version", "v2", "and", "30s",
    ]  # fmt: skip
    judged = judge_rules("The supported hash algorithms include sha256", "As of Python 3.10, that list consists of:")
    assert judged is None or judged.relation != "refutes", judged


def test_a_last_cell_of_two_sentences_is_read_whole(tmp_path):
    # the source's row is cut where the cell's first sentence ends; the cell still holds both
    table = """# Output

## Processing

| Option | Effect |
| --- | --- |
| `--pretty=all` | Apply both colors and formatting. Default for terminal output |
| `--pretty=none` | Disables output processing. Default for redirected output |
| `--pretty=format` | Apply formatting. Not the default. You can set it with `--pretty=format` |
"""
    verdicts = _audit(tmp_path, table, table)
    cells = {text: v for text, v in verdicts.items() if "Default for" in text or "Not the default" in text}
    assert cells and all(v.label == "supported" for v in cells.values()), cells
    # the cell's second sentence gone, with the next row in view, is a change of the cell
    (tmp_path / "gone").mkdir()
    verdicts = _audit(tmp_path / "gone", table, table.replace(" Default for terminal output", ""))
    gone = [v for text, v in verdicts.items() if "Default for terminal output" in text]
    assert gone and all(v.label != "supported" for v in gone), gone


EMOJIS = """# Emojis

| | ico | shortcode | ico | shortcode | |
| --- | --- | --- | --- | --- | --- |
| top | :grinning: | `:grinning:` | :smiley: | `:smiley:` | top |
| top | :smile: | `:smile:` | :grin: | `:grin:` | top |
| top | :no_mouth: | `:no_mouth:` | :hugs: | `:hugs:` | top |
"""


def test_a_first_cell_on_every_row_names_no_entry(tmp_path):
    # a row inserted before shifts the cells: each value still stands in a row of the table
    shifted = EMOJIS.replace(":grin: | `:grin:`", ":face_exhaling: | `:face_exhaling:`").replace(
        ":no_mouth: | `:no_mouth:` | :hugs: | `:hugs:`", ":hugs: | `:hugs:` | :no_mouth: | `:no_mouth:`"
    )
    verdicts = _audit(tmp_path, EMOJIS, shifted)
    for kept in ("top: ico is :no_mouth:", "top: shortcode is :hugs:", "top: ico is :smile:"):
        assert verdicts[kept].label == "supported", verdicts[kept]
    # a value gone from the rows in view is not pinned on a neighbour's row
    gone = verdicts["top: ico is :grin:"]
    assert gone.label == "uncertain" and ":face_exhaling:" not in gone.rationale, gone


API_V1 = """# API Reference

## Task

| Attribute | Type | Description |
| --- | --- | --- |
| `summary` | `string` | A longer description of the task. This is displayed when calling `task --summary [task]`. |
| `vars` | `map[string]Variable` | A set of variables that can be used in the task and in every command it runs. |
| `dir` | `string` | The directory in which this task should run. Defaults to the current working directory. |
"""
SCHEMA_V2 = """# Schema Reference

## Task attributes

| Attribute | Type | Default | Description |
| --- | --- | --- | --- |
| `summary` | `string` | | A longer description of the task. This is displayed when calling `task --summary [task]`. |
| `vars` | `map[string]Variable` | | A set of variables that can be used in the task and in every command it runs. |
| `dir` | `string` | | The directory in which this task should run. Defaults to the directory of the Taskfile. |
"""


def test_a_cell_of_a_table_moved_to_another_page_still_stands(tmp_path):
    # the reference page was split: its rows stand on a new page, under other headings, with a column more
    clone = two_releases(tmp_path, {"docs/api.md": API_V1}, {"docs/reference/schema.md": SCHEMA_V2, "docs/api.md": None})
    result = audit_releases(clone, tmp_path / "cache")
    cells = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    kept = cells["A set of variables that can be used in the task and in every command it runs."]
    assert kept.label == "supported", kept
    two = cells["A longer description of the task. This is displayed when calling task --summary [task]."]
    assert two.label == "supported", two
    changed = cells["The directory in which this task should run. Defaults to the current working directory."]
    assert changed.label != "supported", changed


def test_a_cell_respelt_still_holds_its_value_and_a_word_added_is_a_change(tmp_path):
    options = """# CLI

| Short | Flag | Type | Default | Description |
| --- | --- | --- | --- | --- |
| `-o` | `--output` | `string` | Default set in the Taskfile or intervealed | Sets output style. |
| `-t` | `--transform` | `hook` | `(code: string, id: string) => TransformResult` | Transforms one module. |
| `-c` | `--color` | `bool` | `true` | Colored output. Enabled by default. |
"""
    newer = (
        options.replace("intervealed", "interleaved")
        .replace("id: string) =>", "id: string, meta: object) =>")
        .replace("`true` | Colored", "`false` | Colored")
    )
    verdicts = _audit(tmp_path, options, newer)
    assert verdicts["Short -o: Default is Default set in the Taskfile or intervealed"].label == "supported"
    # a parameter added to a signature, or another value in the cell's place: a change
    assert verdicts["Short -t: Default is (code: string, id: string) => TransformResult"].label == "contradicted"
    assert verdicts["Short -c: Default is true"].label == "contradicted"
    # the reading behind it: the respelt words alone, and nothing once a word is added
    cell = "Default set in the Taskfile or intervealed"
    assert respelt_only(cell, cell.replace("intervealed", "interleaved")) == "intervealed -> interleaved"
    assert respelt_only(cell, cell.replace("intervealed", "interleaved output")) is None
    assert respelt_only(cell, cell) is None
