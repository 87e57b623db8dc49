"""How the command line prints results (shared by every command module)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kb.config import ConfigError
from kb.records import LABELS
from reports import findings as model
from reports import github, junit, sarif


def print_json(data) -> None:
    print(dumps_json(data))


def dumps_json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


def format_summary(row: dict) -> str:
    lines = [
        f"kbaudit run {row['run_id']} ({row['depth']}): {row['documents']} documents, "
        f"{row['claims']} claims ({row['checkworthy']} check-worthy), {row['ingest_errors']} ingest errors",
        "",
        f"{'label':<14}{'claims':>7}",
        *[f"{label:<14}{int(row[label]):>7}" for label in LABELS],
        "",
        *_scope_lines(row),
        f"verdicts reused: {row['reused']} of {row['checkworthy']}" + _reasons(row.get("redo_reasons")),
        f"edits drafted: {row['edits']}",
        *[f"note: {note}" for note in json.loads(row.get("notes") or "[]")],
        f"seconds: {float(row['seconds']):.1f}",
    ]
    return "\n".join(lines)


def _reasons(raw) -> str:
    reasons = json.loads(raw) if isinstance(raw, str) and raw else {}
    if not reasons:
        return ""
    return "; verified again: " + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))


# ---- --format / --output (kbaudit run, kbaudit report) ------------------------------------
FORMATS = ("text", "json", "sarif", "github", "junit")


def add_format_arguments(parser) -> None:
    parser.add_argument("--format", choices=FORMATS, help="output format (default text; --json is --format json)")
    parser.add_argument("--output", metavar="FILE", help="write the chosen format to FILE (stdout then gets the text summary)")
    parser.add_argument("--junit-per-claim", action="store_true", help="JUnit: one test case per claim (default: per document)")


def chosen_format(args):
    """The format the flags ask for, checked before any work: a usage error (exit 2) otherwise."""
    fmt = args.format or ("json" if args.json else "text")
    if args.json and fmt != "json":
        raise ConfigError(f"--json is --format json; it cannot be combined with --format {fmt}")
    if args.junit_per_claim and fmt != "junit":
        raise ConfigError("--junit-per-claim needs --format junit")
    if args.output:
        target = Path(args.output)
        if target.is_dir():
            raise ConfigError(f"--output {args.output} is a folder; give a file name")
        parent = target.parent if str(target.parent) else Path(".")
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"--output {args.output}: {parent} is not a folder")
        probe = parent
        while not probe.exists():
            probe = probe.parent
        if not os.access(probe, os.W_OK):
            raise ConfigError(f"--output {args.output}: {probe} is not writable")
    return fmt


def render_findings(store, run_id: str, fmt: str, fail_on, per_claim: bool = False) -> str:
    """A run's findings (read back from the store) in one of the CI formats."""
    found = model.load(store, run_id, tuple(fail_on))
    if fmt == "sarif":
        return sarif.render(found)
    if fmt == "github":
        return github.render(found)
    if fmt == "junit":
        return junit.render(found, per_claim)
    raise ValueError(f"not a findings format: {fmt}")


def write_output(path: str, text: str) -> None:
    """Write atomically (a reader never sees half a SARIF file)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, target)


def _scope_lines(row: dict) -> list[str]:
    """A --changed-since run: which documents it audited and which were deleted."""
    if row.get("scope") != "changed":
        return []
    audited, deleted = list(row.get("documents_audited") or []), list(row.get("documents_deleted") or [])
    return [
        f"changed since {row.get('changed_since')}: {len(audited)} document(s) audited" + (f": {', '.join(audited)}" if audited else ""),
        f"deleted since {row.get('changed_since')}: {', '.join(deleted) if deleted else 'none'}",
        "",
    ]
