"""How the command line prints results (shared by every command module)."""

from __future__ import annotations

import json

from kb.records import LABELS


def print_json(data) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def format_summary(row: dict) -> str:
    lines = [
        f"kbaudit run {row['run_id']} ({row['depth']}): {row['documents']} documents, "
        f"{row['claims']} claims ({row['checkworthy']} check-worthy), {row['ingest_errors']} ingest errors",
        "",
        f"{'label':<14}{'claims':>7}",
        *[f"{label:<14}{int(row[label]):>7}" for label in LABELS],
        "",
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
