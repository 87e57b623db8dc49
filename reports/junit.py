"""JUnit XML (`--format junit`): one test case per document, or per claim (`--junit-per-claim`).

A test case fails when it has a finding at level error or warning (reports.findings.level_for:
with --fail-on, exactly the labels it names); each failure carries the claim, its label, the
evidence and the owner, after the finding's ``PATH:LINE:COLUMN`` (as in the GitHub annotations).
Findings at level note (uncertain, removed, labels outside --fail-on) go to the case's
``system-out``, so they are visible without failing the suite. The suite's properties name the
commit the KB was read at (``kb.revision``), its tag and branch and, for a KB read from git, the
rev as the spec names it (``kb.rev``). Built with xml.etree, so every value is escaped and the
file is well-formed.
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

from reports.findings import Finding, Findings

FAILING = ("error", "warning")


def _text(f: Finding) -> str:
    return f"[{f.kind}] {f.message()}"


def _case(
    suite: ET.Element, findings: Findings, classname: str, name: str, file: str, found: list[Finding], owner: str | None
) -> tuple[int, int]:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, file=file, time="0")
    if owner:
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="owner", value=owner)
    failing = [f for f in found if f.level in FAILING]
    notes = [f for f in found if f.level not in FAILING]
    if failing:
        first = failing[0]
        message = f"{len(failing)} finding(s): " + ", ".join(sorted({f.kind for f in failing}))
        if len(failing) == 1:
            message = f"{first.kind}: {first.source_text.strip()[:200]}"
        failure = ET.SubElement(case, "failure", message=message, type=first.kind)
        failure.text = "\n\n".join(_where(f, findings) + _text(f) for f in failing)
    if notes:
        out = ET.SubElement(case, "system-out")
        out.text = "\n\n".join(_where(f, findings) + _text(f) for f in notes)
    return (1 if failing else 0), 1


def _timestamp(value) -> str:
    """ISO 8601 without a zone (the JUnit schema's form), in UTC."""
    if value is None:
        return ""
    if getattr(value, "tzinfo", None) is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="seconds")


def _where(f: Finding, findings: Findings) -> str:
    """PATH:LINE:COLUMN of the finding, PATH as reports.findings.Findings.path_of gives it."""
    path = findings.path_of(f.doc_id)
    return f"{path}:{f.region.start_line}:{f.region.start_column}: " if f.region else f"{path}: "


def to_xml(findings: Findings, per_claim: bool = False) -> ET.Element:
    root = ET.Element("testsuites", name="kbaudit")
    suite = ET.SubElement(
        root, "testsuite", name=f"kbaudit run {findings.run_id}", timestamp=_timestamp(findings.run.get("started_at")), hostname="kbaudit"
    )
    repo = findings.repository or {}
    if repo.get("revision"):  # the commit the KB was read at, with its tag and branch (SARIF's provenance)
        props = ET.SubElement(suite, "properties")
        for name, key in (("kb.revision", "revision"), ("kb.tag", "tag"), ("kb.branch", "branch"), ("kb.rev", "rev")):
            if repo.get(key):
                ET.SubElement(props, "property", name=name, value=str(repo[key]))
    by_doc: dict[str, list[Finding]] = {}
    for f in findings.findings:
        by_doc.setdefault(f.doc_id, []).append(f)
    owners = {d["doc_id"]: d.get("owner") for d in findings.documents}
    failures = tests = 0
    if per_claim:
        by_claim = {f.claim_id: f for f in findings.findings if f.claim_id}
        for c in findings.claims:
            f = by_claim.get(c["claim_id"])
            name = c["source_text"].strip() or c["claim_id"]
            n_fail, n = _case(suite, findings, c["doc_id"], name, findings.path_of(c["doc_id"]), [f] if f else [], owners.get(c["doc_id"]))
            failures, tests = failures + n_fail, tests + n
        for f in findings.findings:
            if f.kind == "removed":
                n_fail, n = _case(suite, findings, f.doc_id, f"page {f.doc_id}", findings.path_of(f.doc_id), [f], f.owner)
                failures, tests = failures + n_fail, tests + n
    else:
        doc_ids = [d["doc_id"] for d in sorted(findings.documents, key=lambda d: d["doc_id"])]
        doc_ids += sorted(d for d in by_doc if d not in owners)
        for doc_id in doc_ids:
            found = by_doc.get(doc_id, [])
            owner = owners.get(doc_id) or (found[0].owner if found else None)
            n_fail, n = _case(suite, findings, "kbaudit.documents", doc_id, findings.path_of(doc_id), found, owner)
            failures, tests = failures + n_fail, tests + n
    for element in (suite, root):
        element.set("tests", str(tests))
        element.set("failures", str(failures))
        element.set("errors", "0")
    suite.set("skipped", "0")
    return root


def render(findings: Findings, per_claim: bool = False) -> str:
    root = to_xml(findings, per_claim)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
