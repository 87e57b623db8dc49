"""A default configuration printed as a YAML code block is read as a table of settings: its rows
pair across releases by setting, so a changed default is stale with the new value, an alias
added beside a key binding is no change, and the block's comments are not claims."""

from __future__ import annotations

from kb.claims.units import TABLE_NOTE
from kb.ingest.parse import parse_document
from kb.records import Claim
from kb.verify import table_judgement
from tests.test_entry_evidence import _audit

CONFIG = """# User Config

Settings go in `config.yml`.

## Default

```yaml
# Config relating to the UI
gui:
  # The number of lines you scroll by when scrolling the main window
  scrollHeight: 2
  # One of: 'margin' (default) | 'jump'
  scrollOffBehavior: margin
  spinner:
    frames: ['|', '/', '-', '\\\\']
    rate: 50
  customCommands:
    - key: a
      command: echo
  mainBranches:
    - master
    - main
  template: |
    line one
    line two
keybinding:
  universal:
    quit: q
    redo: <c-z>
    scrollDownMain: <pgdown>
    openDiffTool: <c-t>
```

## Examples

```yaml
gui:
  scrollHeight: 10
```
"""


def _rows(text: str) -> list[str]:
    doc = parse_document(text.encode(), "Config.md", "Config.md")
    return [b.text for b in doc.blocks if b.kind == "table_row"]


def test_a_default_yaml_block_is_read_as_rows_of_settings():
    doc = parse_document(CONFIG.encode(), "Config.md", "Config.md")
    rows = [b for b in doc.blocks if b.kind == "table_row"]
    assert [b.text for b in rows] == [
        "gui.scrollHeight | 2",
        "gui.scrollOffBehavior | margin",
        "gui.spinner.frames | ['|', '/', '-', '\\\\']",
        "gui.spinner.rate | 50",
        "gui.mainBranches | [master, main]",
        "keybinding.universal.quit | q",
        "keybinding.universal.redo | <c-z>",
        "keybinding.universal.scrollDownMain | <pgdown>",
        "keybinding.universal.openDiffTool | <c-t>",
    ]  # a list of structures and a multi-line template are no one-line values; the example block is no default
    assert all(b.headers == ("Setting", "Default") and b.section == ("User Config", "Default") for b in rows)
    rate = rows[3]
    assert doc.text[rate.offsets[len("gui.spinner.rate | ")] :].startswith("50")  # the value maps to where it is written
    assert not any("scroll by" in b.text for b in doc.blocks)  # comments are not claims


def test_a_yaml_block_is_read_as_settings_only_where_it_is_announced_as_the_defaults():
    lead_in = "The default port can be changed.\n\n```yaml\nport: 80\n```\n"
    assert _rows("# Server\n\nThe default configuration is as follows:\n\n```yaml\nport: 80\n```\n") == ["port | 80"]
    assert _rows("# Server\n\nFor example:\n\n```yaml\nport: 80\n```\n") == []
    assert _rows("# Server\n\nAn example configuration for the default port:\n\n```yaml\nport: 8080\n```\n") == []
    # how to change a default leads into another value: "By default ..., set:" is no default
    assert _rows("# Server\n\nBy default the server listens on port 80. To move it, set:\n\n```yaml\nport: 8080\n```\n") == []
    assert _rows("# Server\n\n## Default detector\n\n```yaml\ndetector: cpu\n```\n") == []
    assert _rows("# Server\n\n## Defaults\n\n```yaml\nport: 80\n```\n") == ["port | 80"]
    assert _rows(f"# Server\n\n{lead_in}") == []  # "default" in a sentence that does not lead into the block
    assert _rows("# Server\n\nEvery option and its default value:\n\n```yml\nport: 80\n```\n") == ["port | 80"]
    assert _rows("# Defaults\n\n```yaml\n- a\n- b\n```\n") == []  # not a mapping
    assert _rows("# Defaults\n\n```yaml\nport: [80\n```\n") == []  # not YAML: left alone
    assert _rows("# Defaults\n\n```toml\nport = 80\n```\n") == []
    # an alias to a mapping already read is not read again: no endless loop, no exponential blow-up
    assert _rows("# Defaults\n\n```yaml\na: &x\n  b: 1\n  c: *x\n```\n") == ["a.b | 1"]
    bomb = "".join(f"l{n}: &l{n}\n  x: *l{n - 1}\n  y: *l{n - 1}\n" for n in range(1, 30))
    assert len(_rows(f"# Defaults\n\n```yaml\nl0: &l0\n  v: 1\n{bomb}```\n")) == 1


def _cell(value: str, key: str) -> Claim:
    text = f"Setting {key}: Default is {value}"
    return Claim(claim_id="c1", doc_id="Config.md", version_id="v1", start=0, end=len(text), text=text,
                 source_text=value, reason=f"{TABLE_NOTE}, column 2 of 2", section="User Config > Default")  # fmt: skip


def test_a_key_binding_in_another_notation_or_with_an_alias_beside_it_still_holds():
    row = table_judgement(_cell("<c-t>", "keybinding.universal.openDiffTool"), "keybinding.universal.openDiffTool | <ctrl+t>")
    assert row.relation == "supports", row
    row = table_judgement(_cell("<pgdown>", "keybinding.universal.scrollDownMain"),
                          "keybinding.universal.scrollDownMain | [<pgdown>, J, <ctrl+d>]")  # fmt: skip
    assert row.relation == "supports" and "others listed beside it" in row.rationale, row
    row = table_judgement(_cell("'>'", "keybinding.universal.gotoBottom"), "keybinding.universal.gotoBottom | ['>', <end>]")
    assert row.relation == "supports", row
    row = table_judgement(_cell("<c-z>", "keybinding.universal.redo"), "keybinding.universal.redo | Z")
    assert row.relation == "refutes" and (row.claim_value, row.evidence_value) == ("<c-z>", "Z"), row
    row = table_judgement(_cell("q", "keybinding.universal.quit"), "keybinding.universal.quit | [x, <ctrl+c>]")
    assert row.relation == "refutes", row


def test_a_changed_default_in_the_yaml_block_is_stale_with_the_new_value(tmp_path):
    newer = (
        CONFIG.replace("rate: 50", "rate: 180")
        .replace("mainBranches:\n    - master\n    - main", "mainBranches: [master, main]")
        .replace("redo: <c-z>", "redo: Z")
        .replace("openDiffTool: <c-t>", "openDiffTool: <ctrl+t>")
    )
    verdicts = _audit(tmp_path, "Config.md", CONFIG, newer)
    by_value = {c: v for c, v in verdicts.items() if c.startswith("Setting ")}
    rate = by_value["Setting gui.spinner.rate: Default is 50"]
    assert rate.label == "stale" and rate.evidence_value == "180", rate
    assert by_value["Setting keybinding.universal.redo: Default is <c-z>"].label == "stale"
    assert by_value["Setting keybinding.universal.openDiffTool: Default is <c-t>"].label == "supported"
    assert by_value["Setting gui.scrollHeight: Default is 2"].label == "supported"
    assert by_value["Setting gui.mainBranches: Default is [master, main]"].label == "supported"  # written as a flow list now
