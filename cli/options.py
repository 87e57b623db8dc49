"""Command-line flags generated from the settings object (kb.config.Settings), never by hand."""

from __future__ import annotations

import argparse
import types
from collections.abc import Iterable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from kb.config import Settings
from kb.errors import UsageError

P = TypeVar("P", bound=BaseModel)


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
        # metavar only when declared: a store_true action takes no metavar argument at all
        options: dict[str, Any] = {"metavar": str(extra["metavar"])} if "metavar" in extra else {}
        parser.add_argument(flag, dest=name, action=str(extra.get("action", "store")), default=None, help=info.description, **options)
        names.append(name)
    parser.set_defaults(setting_flags=names)
    return names


def flag_values(args: argparse.Namespace) -> dict:
    """The settings given as flags (None for those left out), for kb.config.load_settings."""
    return {name: getattr(args, name) for name in getattr(args, "setting_flags", [])}


def params_arguments(parser: argparse.ArgumentParser, params: type[BaseModel]) -> None:
    """Flags for a bench's or the trainer's typed parameters: one per field, `--field-name`,
    help from the field's description; a bool field is a switch, a Literal field takes one of
    its values (argparse `choices`), an int or float field is parsed as one, a list field is a
    flag given once per item. A field whose `json_schema_extra` has `const` is a flag whose value
    may be left out (`--git` alone means `const`), with the `metavar` given there. A value
    argparse cannot take is its usage error (exit 2, before anything runs), as for a flag
    written by hand."""
    for name, info in params.model_fields.items():
        flag = "--" + name.replace("_", "-")
        kind = _without_none(info.annotation)
        if kind is bool:
            parser.add_argument(flag, dest=name, action="store_true", default=None, help=info.description)
            continue
        options: dict[str, Any] = {}
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if "const" in extra:
            options.update(nargs="?", const=extra["const"])
        if "metavar" in extra:
            options["metavar"] = str(extra["metavar"])
        if get_origin(kind) is list:
            options["action"] = "append"
            kind = (get_args(kind) or (str,))[0]
        if get_origin(kind) is Literal:
            choices = get_args(kind)
            options["choices"] = choices
            value_types = {type(c) for c in choices}
            if len(value_types) == 1 and value_types <= {int, float}:
                options["type"] = value_types.pop()
        elif kind in (int, float):
            options["type"] = kind
        parser.add_argument(flag, dest=name, default=None, required=info.is_required(), help=info.description, **options)


def _without_none(annotation: Any) -> Any:
    """`X | None` (or Optional[X]) -> X; any other annotation as it is."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def params_from(args: argparse.Namespace, params: type[P]) -> P:
    """The typed parameters from parsed flags (a flag left out takes the field's default)."""
    values = {name: getattr(args, name) for name in params.model_fields if getattr(args, name, None) is not None}
    try:
        return params.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise UsageError(f"bad value for --{str(error['loc'][0]).replace('_', '-')}: {error.get('input')!r} ({error['msg']})") from None
