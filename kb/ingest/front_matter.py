"""YAML front matter: read safely (no aliases, anchors or tags; 64 KB at most) or refused."""

from __future__ import annotations

import re

import yaml

from kb.errors import ParseError
from kb.ingest.common import one_line

__all__ = ["FRONT_MATTER_MAX", "read_front_matter"]

FRONT_MATTER_MAX = 64 * 1024  # bytes of YAML we are willing to read

_FM_OPEN = re.compile(r"---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)


class _NoAliasSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases (alias bombs) outright."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise ParseError("front matter uses YAML aliases (refused: alias bombs)")
        if getattr(event, "anchor", None) is not None:
            raise ParseError("front matter uses YAML anchors (refused: alias bombs)")
        return super().compose_node(parent, index)


# libyaml's loader, ten times the pure-Python one's speed, for front matter that cannot hold an
# anchor, an alias or a tag (no & * !) and whose flow collections ("tags: [a, b]", most Hugo
# pages) nest at most FLOW_DEPTH deep, so that its recursion stays within what 64 KB of
# indentation allows. Anything else, and anything libyaml rejects, is read by
# _NoAliasSafeLoader, which refuses aliases and says what is wrong.
_C_SAFE_LOADER = getattr(yaml, "CSafeLoader", None)
_NEEDS_PYTHON_LOADER = re.compile(r"[&*!]")
_FLOW = re.compile(r"[\[\]{}]")
FLOW_DEPTH = 8


def _flow_depth(yaml_text: str) -> int:
    """How deep the brackets of the text nest (quotes not told apart: a bracket inside a string
    can only make it read deeper, and send the text to the Python loader)."""
    depth = deepest = 0
    for m in _FLOW.finditer(yaml_text):
        depth += 1 if m.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _load_front_matter(yaml_text: str):
    if (_C_SAFE_LOADER is not None and not _NEEDS_PYTHON_LOADER.search(yaml_text)
            and _flow_depth(yaml_text) <= FLOW_DEPTH):  # fmt: skip
        try:
            return yaml.load(yaml_text, Loader=_C_SAFE_LOADER)  # noqa: S506 (libyaml's SafeLoader)
        except Exception:  # noqa: BLE001 (read again below, for the Python loader's message)
            pass
    return yaml.load(yaml_text, Loader=_NoAliasSafeLoader)  # noqa: S506 (safe subclass)


def read_front_matter(text: str) -> tuple[dict, int]:
    """Return ``(meta, body_offset)``; ``({}, 0)`` when the text has no front matter.

    Front matter is a YAML mapping between a first line ``---`` and a line ``---`` (or ``...``).
    It is read with a safe loader that also refuses anchors/aliases, and is bounded to 64 KB.
    Raises ``ParseError`` for unsafe tags, aliases, oversized or malformed YAML, or a non-mapping.
    """
    start = 1 if text.startswith("\ufeff") else 0
    m = _FM_OPEN.match(text, start)
    if not m:
        return {}, 0
    window = text[m.end() : m.end() + FRONT_MATTER_MAX + 8]
    close = _FM_CLOSE.search(window)
    if close is None:
        if len(text) - m.end() > FRONT_MATTER_MAX:
            # either huge front matter or a document that merely starts with a rule
            if _FM_CLOSE.search(text, m.end()) is not None:
                raise ParseError(f"front matter larger than {FRONT_MATTER_MAX // 1024} KB")
        return {}, 0  # an opening rule with no closing one: not front matter
    yaml_text = window[: close.start()]
    if len(yaml_text.encode("utf-8")) > FRONT_MATTER_MAX:
        raise ParseError(f"front matter larger than {FRONT_MATTER_MAX // 1024} KB")
    body = m.end() + close.end()
    if body < len(text) and text[body] == "\n":
        body += 1
    try:
        meta = _load_front_matter(yaml_text)
    except ParseError:
        raise
    except yaml.constructor.ConstructorError as exc:
        tag = getattr(exc, "problem", "") or str(exc)
        raise ParseError(f"front matter has an unsafe or unknown YAML tag: {one_line(tag)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ParseError(f"malformed front matter{where}: {one_line(problem)}") from None
    except RecursionError:
        raise ParseError("front matter nests too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp such as 2024-13-45
        raise ParseError(f"malformed front matter: {one_line(exc)}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise ParseError(f"front matter is a {type(meta).__name__}, not a mapping")
    return meta, body
