"""Command-line flags generated from the settings object (kb.config.Settings), never by hand."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from kb.config import Settings


def settings_flags(parser: argparse.ArgumentParser, only: Iterable[str] | None = None) -> list[str]:
    """Add a flag for every setting that declares one (or those in `only`); returns their names.

    A flag left out parses as None, so the file and the environment still apply."""
    wanted = set(only) if only is not None else None
    names = []
    for name, info in Settings.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if "flag" not in extra or (wanted is not None and name not in wanted):
            continue
        flag = str(extra["flag"] or "--" + name.replace("_", "-"))
        parser.add_argument(flag, dest=name, action=str(extra.get("action", "store")), default=None, help=info.description)
        names.append(name)
    parser.set_defaults(setting_flags=names)
    return names


def flag_values(args: argparse.Namespace) -> dict:
    """The settings given as flags (None for those left out), for kb.config.load_settings."""
    return {name: getattr(args, name) for name in getattr(args, "setting_flags", [])}
