"""The Chain-of-Verification reply of :mod:`kb.escalate.cove`: its five blocks, read by a tolerant
parser (blocks in any order, Markdown or bold headers, bullets or numbering, prose and code fences
around them, a reply written as one JSON object).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

STATUSES = ("verified-clean", "verified-with-corrections", "unverifiable")
BLOCKS = ("status", "questions", "answers", "discrepancies", "final")


@dataclass
class CoveReply:
    status: str | None = None
    questions: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    discrepancies: list[str] = field(default_factory=list)
    final: str = ""
    found: tuple[str, ...] = ()  # the blocks the reply had
    truncated: bool = False


_HEADER = re.compile(
    r"^\s*(?:>\s*)?(?:[-*•]\s+|\d{1,2}[.)]\s+)?(?:#{1,6}\s*)?(?:\*\*|__)?\s*"
    r"(status|verification\s+questions|questions|verification\s+answers|answers|answer|discrepancies|"
    r"final(?:\s+(?:text|answer|response|version))?|revised(?:\s+text)?)"
    r"\s*(?:\*\*|__)?\s*(?::|$)\s*(?:\*\*|__)?\s*(.*)$",
    re.IGNORECASE,
)
_ITEM = re.compile(r"^\s*(?:[-*•+]\s+|\(?\d{1,2}[.):]\s*|[QA]\d{1,2}\s*[.):]\s*)(.*)$")
_NONE = re.compile(r"^\W*(?:none|no discrepancies(?: found)?|n/?a|nothing)\W*$", re.IGNORECASE)


def _block_name(raw: str) -> str:
    raw = raw.lower()
    if raw.startswith("status"):
        return "status"
    if "question" in raw:
        return "questions"
    if raw.startswith("answer") or "answers" in raw:
        return "answers"
    if raw.startswith("discrepanc"):
        return "discrepancies"
    return "final"


_FENCE = re.compile(r"^\s*(?:```|~~~)[\w-]*\s*$")
_JSON_KEYS = {"status": "status", "questions": "questions", "verification_questions": "questions", "answers": "answers",
              "answer": "answers", "discrepancies": "discrepancies", "final": "final", "final_text": "final"}  # fmt: skip


def _json_blocks(text: str) -> dict[str, str] | None:
    """A reply written as one JSON object ({"status": ..., "answers": [...], ...}), as models in
    a JSON mode do: the same blocks, as text."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    out = {}
    for key, value in data.items():
        name = _JSON_KEYS.get(str(key).strip().lower().replace(" ", "_"))
        if name is None:
            continue
        if isinstance(value, list):
            value = "\n".join(f"{i}. {v}" if name != "discrepancies" else f"- {v}" for i, v in enumerate(value, 1))
            if name == "discrepancies" and not data[key]:
                value = "none"
        out[name] = str(value if value is not None else "").strip()
    return out if "status" in out else None


def split_blocks(text: str) -> dict[str, str]:
    """Header -> raw block text, whatever the order. A repeated header continues its block.
    Code fences are dropped, and prose before the first header or after a closing fence is
    ignored; a reply that is one JSON
    object with the block names as keys is read as well."""
    blocks: dict[str, list[str]] = {}
    current = None
    fenced = False
    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):
            if fenced and current is not None:
                current = None  # what follows a closing fence is prose about the reply, not a block
            fenced = not fenced
            continue
        m = _HEADER.match(line)
        if m:
            current = _block_name(m.group(1))
            blocks.setdefault(current, [])
            rest = m.group(2).strip().strip("*_").strip()
            if rest:
                blocks[current].append(rest)
            continue
        if current is not None:
            blocks[current].append(line)
    out = {k: "\n".join(v).strip() for k, v in blocks.items()}
    if "status" not in out:
        out = _json_blocks(text) or out
    return out


def items(block: str) -> list[str]:
    """Numbered or bulleted items; lines that do not start an item continue the previous one."""
    out: list[str] = []
    for line in block.split("\n"):
        if not line.strip():
            continue
        m = _ITEM.match(line)
        if m:
            out.append(m.group(1).strip())
        elif out:
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line.strip())
    return [x for x in out if x]


def parse_status(text: str) -> str | None:
    t = text.lower().replace("_", "-").replace(" ", "-")
    if "correction" in t or "discrepanc" in t:
        return "verified-with-corrections"
    if "unverifiable" in t or "insufficient" in t or "not-enough" in t or "cannot" in t:
        return "unverifiable"
    if "clean" in t:
        return "verified-clean"
    return None


def parse_reply(text: str, finish_reason: str | None = None) -> CoveReply:
    blocks = split_blocks(text or "")
    reply = CoveReply(found=tuple(b for b in BLOCKS if b in blocks), truncated=finish_reason == "length")
    if "status" in blocks:
        reply.status = parse_status(blocks["status"].split("\n")[0] if blocks["status"] else "")
    reply.questions = items(blocks.get("questions", ""))
    reply.answers = items(blocks.get("answers", ""))
    disc = [d for d in items(blocks.get("discrepancies", "")) if not _NONE.match(d)]
    reply.discrepancies = disc
    final = blocks.get("final", "").strip()
    reply.final = re.sub(r"^\s*(?:[-*•]\s+)", "", final).strip().strip('"“”').strip()
    return reply


def parse_answer(text: str) -> str:
    """A factored answer: the ANSWER block if there is one, else the whole reply."""
    blocks = split_blocks(text or "")
    body = blocks["answers"] if "answers" in blocks else (text or "")
    return " ".join(line.strip() for line in body.strip().split("\n") if line.strip())
