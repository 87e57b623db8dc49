"""A project's default configuration written as a YAML code block, read as a table of settings.

Configuration references often print the whole default configuration as one commented YAML block
under a heading such as "Default" ("## Default", "The default configuration is as follows:").
Each of its settings is a fact a release can change (``gui.scrollHeight: 2`` becoming ``3``, a
setting dropped), but as a code block it is neither prose nor a shell command, so none of it was
read. Here each setting whose value stands on one line becomes a row ``key.path | value`` under the
headers ``Setting`` and ``Default``: claims and passages alike, so a release's rows pair with an
older release's by setting, as any table's rows do. The comments describe the settings and are
left out: they are reworded far more often than the values change.
"""

from __future__ import annotations

import re

import yaml

from kb.ingest.offsets import OffsetMap, TextBuilder

__all__ = ["DEFAULT_SETTINGS_HEADERS", "announces_defaults", "is_yaml", "setting_rows"]

DEFAULT_SETTINGS_HEADERS = ("Setting", "Default")
# a heading that is the defaults' own: "Default", "Defaults", "Default configuration"
_DEFAULTS_HEADING = re.compile(r"^\s*(?:the\s+)?defaults?(?:\s+(?:config(?:uration)?|settings|values|options))?\s*$", re.I)
# a lead-in that presents what follows as the defaults: "The default theme used by PDM is as
# follows:", "Every option and its default value:", "If unset this defaults to:"
_DEFAULTS_LEAD = re.compile(
    r"\b(?:the|its|their|our|these|following)\s+defaults?\b|\bdefaults?\s+(?:are|is)\b|\bdefaults\s+to\s*:\s*$", re.I
)
# ... but not one that tells how to change a default ("By default, X is off. To enable it, set:")
# or calls what follows an example ("An example configuration for the default syntax:"): either
# leads into a value other than the default
_CHANGES_IT = re.compile(
    r"\bby\s+default\b|\b(?:set|change|override|enable|disable|customi[sz]e|configured?|turn|instead|examples?|sample)\b", re.I
)
_YAML_LANGUAGES = frozenset({"yaml", "yml"})
MAX_VALUE_CHARS = 120  # a longer value is a script or a template, not a setting's value


def is_yaml(language: str) -> bool:
    return language in _YAML_LANGUAGES


def announces_defaults(heading: str, lead_in: str) -> bool:
    """Whether the block's own heading names the defaults ("## Default") or the paragraph just
    before it, ending in a colon, presents what follows as the defaults ("The default theme used by
    PDM is as follows:") rather than as a way to change one ("By default, Hatch respects the
    `.gitignore`. Set `ignore-vcs` to `true` to disable this behavior:")."""
    if _DEFAULTS_HEADING.match(heading):
        return True
    lead = lead_in.strip()
    return lead.endswith(":") and bool(_DEFAULTS_LEAD.search(lead)) and not _CHANGES_IT.search(lead)


def setting_rows(code: list[tuple[str, int]]) -> list[tuple[str, OffsetMap]]:
    """Each one-line setting of a YAML block (its lines with their document offsets) as a row
    text ``key.path | value`` with its offset map; [] for a block that is not a YAML mapping."""
    source = "\n".join(line for line, _ in code)
    try:
        root = yaml.compose(source, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    rows: list[tuple[str, OffsetMap]] = []
    walked: set[int] = set()  # an alias names a mapping already read: read once (no loop, no blow-up)

    def offset(mark) -> int:
        return code[mark.line][1] + mark.column

    def one_line_scalars(node: yaml.SequenceNode) -> list[str] | None:
        items = [source[n.start_mark.index : n.end_mark.index].strip() for n in node.value
                 if isinstance(n, yaml.ScalarNode) and n.start_mark.line == n.end_mark.line]  # fmt: skip
        if not items or len(items) != len(node.value) or sum(map(len, items)) > MAX_VALUE_CHARS:
            return None
        return items

    def add_row(path: tuple[str, ...], key: yaml.Node, value: yaml.Node, written: str, as_written: bool) -> None:
        """``written`` maps to the value's place: character by character where the block writes
        it so (``as_written``), else all of it to where the value starts (a list rewritten)."""
        at = offset(value.start_mark)
        out = TextBuilder()
        out.add_synthetic(".".join(path), offset(key.start_mark))
        out.add_synthetic(" | ", at)
        (out.add if as_written else out.add_synthetic)(written, at)
        rows.append(out.build())

    def walk(node: yaml.MappingNode, path: tuple[str, ...]) -> None:
        if id(node) in walked:
            return
        walked.add(id(node))
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            here = (*path, key.value)
            if isinstance(value, yaml.MappingNode) and not value.flow_style:
                walk(value, here)
                continue
            if isinstance(value, yaml.SequenceNode) and not value.flow_style:
                items = one_line_scalars(value)
                if items is not None:  # a list of plain values, one per line: the value as a flow list
                    add_row(here, key, value, f"[{', '.join(items)}]", as_written=False)
                continue  # a list of structures (custom commands, pagers): examples, not one value
            if value.start_mark.line != value.end_mark.line:
                continue  # a value over several lines (a template, a script)
            written = source[value.start_mark.index : value.end_mark.index].strip()
            if written and len(written) <= MAX_VALUE_CHARS:
                add_row(here, key, value, written, as_written=True)

    walk(root, ())
    return rows
