"""GitHub Actions workflow commands (`--format github`): one annotation per finding.

``::error file=PATH,line=L,col=C,endLine=L2,endColumn=C2,title=TITLE::MESSAGE`` (``warning`` and
``notice`` for the other levels). PATH is relative to the repository root when the KB is in a
git repository (what the runner resolves against the workspace), else to the KB root. Escaping
follows GitHub's runner: in the message ``%`` ``\\r`` ``\\n`` become ``%25`` ``%0D`` ``%0A``; in
property values ``:`` and ``,`` also become ``%3A`` ``%2C``.
"""

from __future__ import annotations

from reports.findings import RULES, Finding, Findings

COMMAND = {"error": "error", "warning": "warning", "note": "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, findings: Findings) -> str:
    props = [("file", findings.path_of(f.doc_id))]
    if f.region is not None:
        props += [
            ("line", f.region.start_line),
            ("col", f.region.start_column),
            ("endLine", f.region.end_line),
            ("endColumn", f.region.end_column),
        ]
    owner = f" (owner: {f.owner})" if f.owner else ""
    props.append(("title", f"kbaudit {f.kind}{owner}: {RULES[f.kind].short}"))
    rendered = ",".join(f"{k}={escape_property(str(v))}" for k, v in props)
    return f"::{COMMAND[f.level]} {rendered}::{escape_data(f.message())}"


def render(findings: Findings) -> str:
    lines = [annotation(f, findings) for f in findings.findings]
    s = findings.summary()
    lines.append(
        f"kbaudit run {findings.run_id}: {s['contradicted']} contradicted, {s['stale']} stale, "
        f"{s['uncertain']} uncertain of {s['checkworthy']} check-worthy claims; {len(findings.findings)} annotation(s)"
    )
    return "\n".join(lines) + "\n"
