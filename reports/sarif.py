"""SARIF 2.1.0 (`--format sarif`): one run, one rule per finding kind, one result per finding.

Locations: for a KB in a git repository (a folder in a work tree, or a KB read from git with
``git:REPO@REV:PATH``), ``artifactLocation.uri`` is the file's path relative to the repository
root, with ``uriBaseId`` ``SRCROOT``: ``originalUriBaseIds`` gives the repository root's file URI
and ``versionControlProvenance`` the commit the KB was read at (``revisionId``), with its tag
(``revisionTag``) and branch when it has them and, for a KB read from git, the rev as the spec
names it. Outside git the uri is relative to the KB folder, ``uriBaseId`` ``KBROOT``, the
folder's file URI. Regions are in Unicode code points (``columnKind``), 1-based, end column
exclusive, in the file as the run read it (for a KB read from git: at that commit). The drafted
edit is the result's ``fix``: one replacement of the claim's span in the same file. ``partialFingerprints`` carry
reports.findings.fingerprint (no run id), so a code-scanning tool keeps one alert per problem
across runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from reports.findings import KINDS, RULES, Finding, Findings, Region, _date

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "kbauditFinding/v1"
TOOL_URI = "https://github.com/kbaudit/kbaudit"


def _region(r: Region) -> dict:
    return {"startLine": r.start_line, "startColumn": r.start_column, "endLine": r.end_line, "endColumn": r.end_column}


def _artifact(f: Finding, findings: Findings) -> dict:
    if findings.repository is not None:
        return {"uri": findings.path_of(f.doc_id), "uriBaseId": "SRCROOT"}
    return {"uri": f.doc_id, "uriBaseId": "KBROOT"}


def _result(f: Finding, findings: Findings) -> dict:
    rule_index = KINDS.index(f.kind)
    location: dict = {"physicalLocation": {"artifactLocation": _artifact(f, findings)}}
    if f.region is not None:
        location["physicalLocation"]["region"] = _region(f.region)
    result: dict = {
        "ruleId": f.kind,
        "ruleIndex": rule_index,
        "level": f.level,
        "message": {"text": f.message()},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {
            "label": f.label,
            "confidence": f.confidence,
            "owner": f.owner,
            "ownerSource": f.owner_source,
            "docId": f.doc_id,
            "path": findings.path_of(f.doc_id),
            "claimId": f.claim_id,
            "claim": f.claim_text,
            "section": f.section,
            "change": f.change,
            "locationBasis": f.location_basis,
            "evidence": [
                {
                    "source": e.source_id,
                    "sourceVersion": e.source_version,
                    "rev": e.source_rev,
                    "date": _date(e.source_date),
                    "authority": e.authority,
                    "sentence": e.sentence,
                }
                for e in f.evidence
            ],
        },
    }
    if f.kind != "removed" and f.change:
        result["baselineState"] = "new"
    if f.fix is not None and f.fix.region is not None:
        result["fixes"] = [
            {
                "description": {
                    "text": (
                        f'Replace "{f.fix.old_text}" with "{f.fix.new_text}"'
                        if f.fix.new_text
                        else f'Delete "{f.fix.old_text}" (the newest sources no longer state it)'
                    )
                    + f" (kbaudit edit {f.fix.edit_id}, {f.fix.status})"
                },
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(f, findings),
                        "replacements": [{"deletedRegion": _region(f.fix.region), "insertedContent": {"text": f.fix.new_text}}],
                    }
                ],
            }
        ]
    return result


def _base_ids(findings: Findings) -> tuple[dict, list[dict]]:
    repo = findings.repository
    if repo is not None:
        base = {"SRCROOT": {"uri": Path(repo["root"]).as_uri() + "/"}}
        provenance = []
        if repo.get("revision"):
            item: dict = {
                "repositoryUri": repo.get("remote") or Path(repo["root"]).as_uri(),
                "revisionId": repo["revision"],
                "mappedTo": {"uriBaseId": "SRCROOT"},
            }
            if repo.get("tag"):
                item["revisionTag"] = repo["tag"]
            if repo.get("branch"):
                item["branch"] = repo["branch"]
            if repo.get("rev"):
                item["properties"] = {"rev": repo["rev"]}  # the rev as the KB's git: spec names it
            provenance.append(item)
        return base, provenance
    if findings.docs_root is not None:
        return {"KBROOT": {"uri": findings.docs_root.resolve().as_uri() + "/"}}, []
    return {}, []


def to_sarif(findings: Findings) -> dict:
    rules = [
        {
            "id": kind,
            "name": RULES[kind].name,
            "shortDescription": {"text": RULES[kind].short},
            "fullDescription": {"text": RULES[kind].help},
            "help": {"text": RULES[kind].help, "markdown": f"**{RULES[kind].short}**\n\n{RULES[kind].help}"},
            "defaultConfiguration": {
                "level": "error" if kind == "contradicted" else "warning" if kind in ("stale", "ungrounded-tool-claim") else "note"
            },
            "properties": {"tags": ["documentation", "fact-check"]},
        }
        for kind in KINDS
    ]
    base_ids, provenance = _base_ids(findings)
    run: dict = {
        "tool": {"driver": {"name": "kbaudit", "informationUri": TOOL_URI, "semanticVersion": _version(), "rules": rules}},
        "automationDetails": {"id": f"kbaudit/{findings.run_id}"},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, findings) for f in findings.findings],
        "properties": {"summary": findings.summary(), "failOn": list(findings.fail_on)},
    }
    if base_ids:
        run["originalUriBaseIds"] = base_ids
    if provenance:
        run["versionControlProvenance"] = provenance
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(findings: Findings) -> str:
    return json.dumps(to_sarif(findings), indent=2, ensure_ascii=False) + "\n"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("kbaudit")
    except Exception:
        return "0.1.0"
