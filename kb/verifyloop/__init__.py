"""VerifyLoop reports: one answer (or one KB document) verified claim by claim, with its trace.

Two producers share the report shape defined here and in ``kb/verifyloop/schemas/verifyloop-report.schema.json``:

- ``VerifyLoop(depth="D3").verify(task=..., answer=..., sources=..., tool_logs=...)`` verifies a
  single agent answer with the same stages as a KB audit (``split_claims`` over the answer parsed
  as a document, ``load_sources``, the ``Embedder`` + ``Retriever``, the ``Verifier``, the
  correction drafter) and returns a :class:`VerifyLoopReport`.
- ``reports/export.py`` builds the same shape for every document of a stored run.

No tool claim without a tool receipt: a sentence that says a tool, query, command, search or test
produced a result ("I ran the query and it returned 42 rows.") is not checked against the
sources; it must match an entry of the tool logs (same kind of tool, and every number the sentence
gives appears in that entry's output). No entry: problem ``missing_tool_receipt``; an entry of
that kind whose output disagrees: ``tool_result_mismatch``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kb.chain import run_audit, status_stage
from kb.claims.text import sentence_spans
from kb.config import DEPTH_NAMES, DEPTHS, Settings, load_settings
from kb.errors import ConfigError
from kb.ingest.parse import parse_document
from kb.records import Claim, Verdict, content_hash
from kb.verify.policy import verifyloop_status

SCHEMA_ID = "kbaudit/verifyloop-report/1"
REPORT_SCHEMA_FILE = "verifyloop-report.schema.json"
# VerifyLoop's status codes; kbaudit's document statuses map onto them (policy.verifyloop_status)
STATUSES = ("VERIFIED", "PARTIAL", "CORRECTED", "UNCERTAIN", "FAILED", "HUMAN_REVIEW_REQUIRED")
PROBLEMS = ("contradicted", "stale", "uncertain", "missing_tool_receipt", "tool_result_mismatch")


def load_schema(name: str = REPORT_SCHEMA_FILE) -> dict:
    """A JSON Schema shipped with the package (``kb/verifyloop/schemas/<name>``)."""
    return json.loads(resources.files("kb.verifyloop").joinpath("schemas", name).read_text("utf-8"))


# ---- tool claims -------------------------------------------------------------------------
_FIRST_PERSON_RUN = re.compile(
    r"\b(?:i|we)\s+(?:have\s+|had\s+|just\s+|then\s+|also\s+)?"
    r"(?:ran|run|executed|queried|called|invoked|searched|checked|tested|fetched|looked up|measured|"
    r"computed|benchmarked|grepped|profiled)\b",
    re.I,
)
_TOOL_NOUN = (
    r"(?:quer(?:y|ies)|sql|tool|command|script|api call|api request|request|search|lookup|"
    r"tests?|test suite|benchmark|job|function call|grep|logs?)"
)
_TOOL_RESULT = re.compile(
    rf"\b(?:the|this|that|my|our|a)\s+{_TOOL_NOUN}\s+(?:\w+\s+){{0,3}}?"
    r"(?:returned|returns|showed|shows|output|outputs|produced|yielded|found|finds|reported|reports|gave|gives|"
    r"passed|failed|listed|counted)\b",
    re.I,
)
# Kinds of tool, so that "the query" is matched against a SQL entry and not a web search.
TOOL_FAMILIES = {
    "sql": ("query", "queries", "queried", "sql", "select", "duckdb", "postgres", "database", "table", "rows"),
    "search": ("search", "searched", "lookup", "looked up", "grep", "grepped"),
    "test": ("test", "tests", "tested", "test suite", "pytest"),
    "http": ("api", "request", "endpoint", "http", "fetched", "curl"),
    "shell": ("command", "script", "shell", "bash", "executed"),
}
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def is_tool_claim(sentence: str) -> bool:
    return bool(_FIRST_PERSON_RUN.search(sentence) or _TOOL_RESULT.search(sentence))


def _families(text: str) -> set[str]:
    low = re.sub(r"[_\-./:]", " ", text.lower())  # "web_search", "sql.query" name their kind too
    return {family for family, words in TOOL_FAMILIES.items() if any(re.search(rf"\b{re.escape(w)}\b", low) for w in words)}


def _numbers(text: str) -> set[str]:
    out = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        out.add(value[:-2] if value.endswith(".0") else value)
    return out


def _output_numbers(output) -> set[str]:
    """Numbers an entry's output states, plus the length of any list it holds (a row count)."""
    numbers = _numbers(json.dumps(output, default=str) if not isinstance(output, str) else output)
    stack = [output]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            numbers.add(str(len(item)))
            stack.extend(item[:50])
        elif isinstance(item, dict):
            stack.extend(item.values())
    return numbers


@dataclass(frozen=True)
class ToolEntry:
    tool: str
    input: object
    output: object
    created_at: str | None = None
    entry_id: str = ""

    @property
    def receipt(self) -> dict:
        def digest(value) -> str:
            data = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            return hashlib.sha256(data.encode("utf-8")).hexdigest()

        return {
            "receipt_id": self.entry_id,
            "tool": self.tool,
            "input_hash": digest(self.input),
            "output_hash": digest(self.output),
            "created_at": self.created_at,
            "signature": None,
        }


def load_tool_logs(data) -> list[ToolEntry]:
    """Tool log entries from a path (JSON list, ``{"entries": [...]}`` or JSONL) or a list of dicts.

    Each entry needs a tool name (``tool`` or ``name``) and may give ``input`` (or ``args``,
    ``query``, ``command``), ``output`` (or ``result``) and ``created_at``.
    """
    if data is None:
        return []
    if isinstance(data, (str, Path)):
        text = Path(data).read_text("utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            try:
                data = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as exc:
                raise ValueError(f"tool logs are neither JSON nor JSON lines: {exc}") from None
    if isinstance(data, dict):
        data = data.get("entries", data.get("tool_logs", [data]))
    entries = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not (item.get("tool") or item.get("name")):
            raise ValueError(f"tool log entry {i} has no 'tool' name")
        tool = str(item.get("tool") or item.get("name"))
        inp = next((item[k] for k in ("input", "args", "arguments", "query", "command") if k in item), None)
        out = next((item[k] for k in ("output", "result", "response") if k in item), None)
        created = item.get("created_at") or item.get("timestamp")
        canonical = json.dumps({"tool": tool, "input": inp, "output": out, "created_at": created}, sort_keys=True, default=str)
        entries.append(ToolEntry(tool, inp, out, str(created) if created else None, str(item.get("id") or content_hash(canonical))))
    return entries


def check_tool_claim(sentence: str, entries: list[ToolEntry]) -> tuple[str, ToolEntry | None]:
    """``("supported", entry)``, ``("tool_result_mismatch", entry)`` or ``("missing_tool_receipt", None)``."""
    wanted = _families(sentence)
    numbers = _numbers(sentence)
    same_kind = [e for e in entries if not wanted or wanted & _families(f"{e.tool} {json.dumps(e.input, default=str)}")]
    for entry in same_kind:
        if numbers <= _output_numbers(entry.output):
            return "supported", entry
    if same_kind:
        return "tool_result_mismatch", same_kind[0]
    return "missing_tool_receipt", None


# ---- the report shape -----------------------------------------------------------------------
def _plain(value):
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return value.item()
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if tolist is not None:
        return tolist()
    return value


def _none_if_nan(value):
    try:
        if value != value:  # NaN
            return None
    except (TypeError, ValueError):
        pass
    return value


def _gap_of(claim_id: str, label: str, verdict: dict) -> dict:
    return {
        "claim_id": claim_id,
        "problem": label,
        "gap_type": verdict.get("gap_type") or ("systemic" if label == "uncertain" else "technical"),
        "severity": verdict.get("gap_severity") or ("high" if label == "contradicted" else "medium"),
        "action": verdict.get("action") or "",
        "detail": verdict.get("rationale") or "",
    }


def build_report(
    *,
    trace_id: str,
    subject: dict,
    answer: str | None,
    task: str | None,
    depth: str,
    status: str,
    score: float,
    score_components: dict,
    claims: list[dict],
    verdicts: list[dict],
    evidence: list[dict],
    receipts: list[dict],
    edits: list[dict],
    corrected_answer: str | None,
    tool_claims: Sequence[dict] = (),
) -> dict:
    """The VerifyLoop report for one answer or document, from store-shaped rows (plain dicts).

    ``tool_claims`` are claims decided against tool logs: dicts with ``claim_id``, ``text``,
    ``start``, ``end``, ``problem`` (None when supported) and ``receipt_id``.
    """
    # Long because the report is assembled field by field as its JSON schema lays it out.
    verdict_of = {v["claim_id"]: v for v in verdicts}
    claim_rows, gaps = [], []
    for c in claims:
        v = verdict_of.get(c["claim_id"])
        label = v["label"] if v else None
        claim_rows.append(
            {
                "claim_id": c["claim_id"],
                "kind": "source",
                "text": c["text"],
                "source_text": c.get("source_text") or c["text"],
                "start": int(c["start"]),
                "end": int(c["end"]),
                "type": c.get("type") or "factual",
                "risk": c.get("risk") or "low",
                "checkworthy": bool(c.get("checkworthy", True)),
                "label": label,
                "confidence": float(v["confidence"]) if v else None,
                "tier": v["tier"] if v else None,
                "rationale": (v.get("rationale") or "") if v else "",
                "evidence_ids": [str(e) for e in _plain(v.get("evidence_ids")) or []] if v else [],
                "tool_receipt_ids": [],
            }
        )
        if v and label and label != "supported":  # a label comes from a verdict
            gaps.append(_gap_of(c["claim_id"], label, v))
    for t in tool_claims:
        supported = t["problem"] is None
        claim_rows.append(
            {
                "claim_id": t["claim_id"],
                "kind": "tool",
                "text": t["text"],
                "source_text": t["text"],
                "start": int(t["start"]),
                "end": int(t["end"]),
                "type": "tool_result",
                "risk": "high",
                "checkworthy": True,
                "label": "supported" if supported else ("contradicted" if t["problem"] == "tool_result_mismatch" else "uncertain"),
                "confidence": 1.0,
                "tier": "tool_log",
                "rationale": t["rationale"],
                "evidence_ids": [],
                "tool_receipt_ids": [t["receipt_id"]] if t.get("receipt_id") else [],
            }
        )
        if not supported:
            gaps.append(
                {
                    "claim_id": t["claim_id"],
                    "problem": t["problem"],
                    "gap_type": "systemic" if t["problem"] == "missing_tool_receipt" else "technical",
                    "severity": "high",
                    "action": "attach the tool log entry that produced this result, or remove the claim"
                    if t["problem"] == "missing_tool_receipt"
                    else "re-run the tool and state the result it returned",
                    "detail": t["rationale"],
                }
            )
    claim_rows.sort(key=lambda r: (r["start"], r["claim_id"]))
    gaps.sort(key=lambda g: next(r["start"] for r in claim_rows if r["claim_id"] == g["claim_id"]))
    evidence_rows = [
        {
            "evidence_id": str(e["evidence_id"]),
            "claim_id": e["claim_id"],
            "rank": int(e["rank"]),
            "source_id": e["source_id"],
            "source_version": e.get("source_version") or "",
            "source_date": _plain(_none_if_nan(e.get("source_date"))),
            "passage": e.get("passage") or "",
            "sentence": e.get("sentence") or "",
            "score": float(e.get("score_fused") or 0.0),
            "receipt_id": e.get("receipt_id") or None,
        }
        for e in evidence
    ]
    return {
        "schema": SCHEMA_ID,
        "trace_id": trace_id,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "subject": subject,
        "task": task,
        "answer": answer,
        "verification_depth": depth,
        "status": verifyloop_status(status),
        "verification_score": round(float(score), 4),
        "score_components": {k: float(v) for k, v in (score_components or {}).items() if isinstance(v, (int, float))},
        "claims": claim_rows,
        "evidence": evidence_rows,
        "tool_receipts": [
            {k: _plain(_none_if_nan(r.get(k))) for k in ("receipt_id", "tool", "input_hash", "output_hash", "created_at", "signature")}
            for r in receipts
        ],
        "gaps": gaps,
        "corrections": [{k: e.get(k) for k in ("claim_id", "old_text", "new_text", "status", "reason")} for e in edits],
        "corrected_answer": corrected_answer,
    }


def apply_corrections(text: str, replacements: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping span replacements (later spans first); overlapping ones are skipped."""
    out, last = text, len(text) + 1
    for start, end, new in sorted(replacements, key=lambda r: r[0], reverse=True):
        if end > last:
            continue
        out = out[:start] + new + out[end:]
        last = start
    out = re.sub(r"[ \t]{2,}", " ", out)
    return re.sub(r" +([.,;:])", r"\1", out).strip()


# ---- single-answer verification ------------------------------------------------------------
@dataclass
class VerifyLoopReport:
    """The result of ``VerifyLoop.verify``: the main fields, plus the full report as ``data``."""

    status: str
    gaps: list[dict]
    corrected_answer: str | None
    score: float
    data: dict = field(repr=False)

    def to_dict(self) -> dict:
        return self.data


class VerifyLoop:
    """Verify one answer against a folder (or ``.jsonl``/``.parquet``) of dated sources."""

    def __init__(
        self,
        depth: str | None = None,
        today: dt.date | None = None,
        model_path: str | None = None,
        embed_model_path: str | None = None,
        cache_dir: Path | None = None,
        top_k: int | None = None,
        *,
        settings: Settings | None = None,
        cwd: Path | None = None,
    ):
        """``settings``: the settings to verify with; by default they are loaded as every command
        loads them (``kbaudit.toml`` or ``[tool.kbaudit]`` in ``cwd``, then ``KBAUDIT_*``), so the
        deep verifier's endpoint configured there is used. The other arguments win over both, as
        flags do; ``depth`` is D3 unless given here or in ``settings``."""
        flags = {"depth": depth, "today": today, "model_path": model_path, "embed_model_path": embed_model_path, "top_k": top_k}
        given = {k: v for k, v in flags.items() if v is not None}
        if settings is None:
            settings = load_settings({"depth": "D3", **given}, cwd=cwd)
        elif given:
            settings = settings.replace(**given)
        resolved = DEPTH_NAMES.get(settings.depth, settings.depth)
        if resolved not in DEPTHS:
            raise ConfigError(f"depth must be one of {', '.join(DEPTHS)}; got {settings.depth!r}")
        self.settings = settings.replace(depth=resolved) if resolved != settings.depth else settings
        self.depth = resolved
        self.cache_dir = cache_dir

    def verify(self, *, answer: str, sources, task: str | None = None, tool_logs=None) -> VerifyLoopReport:
        """Verify ``answer`` against ``sources`` (a folder, ``.jsonl`` or ``.parquet``, or a list of them).

        ``tool_logs``: a path (JSON list or JSON lines) or a list of dicts (see ``load_tool_logs``).
        """
        # The VerifyLoop protocol's steps in their order (trace, forward and backward checks, gaps, corrections).
        settings = self.settings
        entries = (
            tool_logs if isinstance(tool_logs, list) and all(isinstance(t, ToolEntry) for t in tool_logs) else load_tool_logs(tool_logs)
        )
        raw = answer.encode("utf-8")
        doc = parse_document(raw, "answer.md", "answer.md")
        # The answer has no title: a claim's subject must not be rewritten to one.
        doc = dataclasses.replace(doc, title="")
        trace_id = content_hash(f"{task or ''}|{doc.version_id}|{self.depth}")

        # Tool claims are sentences; source claims overlapping them are not checked against sources.
        tool_claims, tool_spans, used_entries = [], [], {}
        for start, end in sentence_spans(doc.text):
            sentence = doc.text[start:end]
            if not is_tool_claim(sentence):
                continue
            problem, entry = check_tool_claim(sentence, entries)
            if entry is not None:
                used_entries[entry.entry_id] = entry
            rationale = {
                "supported": f"matches tool log entry {entry.entry_id if entry else ''} ({entry.tool if entry else ''})",
                "tool_result_mismatch": f"tool log entry {entry.entry_id if entry else ''} ({entry.tool if entry else ''}) does not give the numbers this sentence states",
                "missing_tool_receipt": "claims a tool or query result, but no tool log entry of that kind exists",
            }[problem]
            tool_claims.append(
                {
                    "claim_id": content_hash(f"tool|{doc.version_id}|{start}|{sentence}"),
                    "text": sentence,
                    "start": start,
                    "end": end,
                    "problem": None if problem == "supported" else problem,
                    "receipt_id": entry.entry_id if entry and problem == "supported" else None,
                    "rationale": rationale,
                }
            )
            tool_spans.append((start, end))

        def overlaps_tool(c: Claim) -> bool:
            return any(c.start < e and s < c.end for s, e in tool_spans)

        roots = [sources] if isinstance(sources, (str, Path)) else list(sources)
        settings = settings.replace(sources=[Path(r) for r in roots])
        # The audit's own chain on a one-document KB: the same split, retrieval (signed), verify,
        # escalation by depth and corrections as `kbaudit run`.
        result = run_audit(settings, documents=[doc], keep_claim=lambda c: not overlaps_tool(c), cache_dir=self.cache_dir)
        claims, evidence, verdicts, edits = result.claims, result.evidence, result.verdicts, result.edits

        # Status and score over every decided claim, the tool claims included.
        tool_records = [
            (
                Claim(
                    claim_id=t["claim_id"],
                    doc_id=doc.doc_id,
                    version_id=doc.version_id,
                    start=t["start"],
                    end=t["end"],
                    source_text=t["text"],
                    text=t["text"],
                    type="tool_result",
                    risk="high",
                ),
                Verdict(
                    claim_id=t["claim_id"],
                    tier="tool_log",
                    confidence=1.0,
                    rationale=t["rationale"],
                    label="supported"
                    if t["problem"] is None
                    else ("contradicted" if t["problem"] == "tool_result_mismatch" else "uncertain"),
                    gap_type=None if t["problem"] is None else "systemic",
                    gap_severity=None if t["problem"] is None else "high",
                ),
            )
            for t in tool_claims
        ]
        status, score, components = status_stage([doc], claims + [c for c, _ in tool_records], verdicts + [v for _, v in tool_records])[
            doc.doc_id
        ]
        status = verifyloop_status(status)  # kbaudit's CORRECTABLE / EDITS_ACCEPTED: VerifyLoop's CORRECTED

        replacements = [(e.start, e.end, e.new_text) for e in edits if e.status != "needs_rewrite" and e.new_text != e.old_text]
        replacements += [(t["start"], t["end"], "") for t in tool_claims if t["problem"]]
        corrected = apply_corrections(doc.text, replacements) if replacements else None

        edit_rows = [dataclasses.asdict(e) for e in edits]
        edit_rows += [
            {
                "claim_id": t["claim_id"],
                "old_text": t["text"],
                "new_text": "",
                "status": "queued",
                "reason": f"{t['problem']}: removed from the corrected answer",
            }
            for t in tool_claims
            if t["problem"]
        ]
        data = build_report(
            trace_id=trace_id,
            subject={"kind": "answer", "doc_id": None, "version_id": doc.version_id, "title": None, "run_id": None},
            answer=answer,
            task=task,
            depth=self.depth,
            status=status,
            score=score,
            score_components=components,
            claims=[dataclasses.asdict(c) for c in claims],
            verdicts=[dataclasses.asdict(v) for v in verdicts],
            evidence=[{**dataclasses.asdict(e), "evidence_id": e.evidence_id} for items in evidence.values() for e in items],
            receipts=[e.receipt for e in used_entries.values()] + result.receipts,
            edits=edit_rows,
            corrected_answer=corrected,
            tool_claims=tool_claims,
        )
        return VerifyLoopReport(status=status, gaps=data["gaps"], corrected_answer=corrected, score=data["verification_score"], data=data)


__all__ = [
    "VerifyLoop",
    "VerifyLoopReport",
    "ToolEntry",
    "build_report",
    "check_tool_claim",
    "is_tool_claim",
    "load_schema",
    "load_tool_logs",
]
