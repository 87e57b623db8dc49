"""A store of one synthesised run of any size, for the scale benches (`bench report`, `bench review`).

An audit of tens of thousands of claims takes minutes to hours on a CPU, so these benches write
synthesised result rows instead: documents, claims, evidence, verdicts, edits and their details
of one complete run, through the store's own API (``Store.write_table``, ``Store.commit_run``),
so the views, the report and the review app read them exactly as they read an audit's rows.

The rows are shaped like a real audit's: about 95 claims a page (a 48-page wiki had 4,521), two
thirds of them check-worthy, five passages of evidence a claim drawn from a shared pool of source
passages (about 450 characters each, three or four sentences), the demo KB's vocabulary, inline
code in about one claim in six (Markdown backticks, or ``<code>`` in the HTML pages), and the
kinds of edit an audit drafts: a value swapped, a fact removed from the sources (the sentence
deleted), a time-sensitive claim past its freshness window (still true by the newest source), a
claim that needs a human rewrite. The same arguments give the same rows.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from pathlib import Path

from kb.config import DEMO_ROOT
from kb.records import content_hash
from kb.store import Store, new_run_id
from kb.verify.policy import AGED_ACTION, REMOVED_ACTION

CLAIMS_PER_DOC = 95
EVIDENCE_PER_CLAIM = 5
OWNERS = ("Platform", "Identity", "Billing", "Data Governance", "Reliability", "Developer Experience", "Security", None)
SOURCES = ("changelog", "api-reference", "pricing-page", "policy-security", "release-notes", "config-export", "support-policy")
CODE_WORDS = ("keyring", "subprocess", "kbaudit run", "max_retries", "--timeout", "config.toml", "PUT /v2/users", "TLS 1.3")


def _vocabulary() -> list[str]:
    words: set[str] = set()
    for path in sorted((DEMO_ROOT / "docs").glob("*.md")) + sorted((DEMO_ROOT / "sources").rglob("*")):
        if path.is_file():
            words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]{2,}", path.read_text("utf-8", errors="replace")))
    return sorted(words)


class _Text:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.words = _vocabulary()

    def sentence(self, lo: int = 10, hi: int = 22) -> tuple[str, str]:
        """A sentence as plain text, and its number (the slot an edit swaps)."""
        rng = self.rng
        words = [rng.choice(self.words) for _ in range(rng.randint(lo, hi))]
        number = str(rng.choice([rng.randint(2, 99), rng.randint(100, 5000)]))
        words.insert(rng.randint(1, len(words)), number)
        words[0] = words[0].capitalize()
        return " ".join(words) + ".", number

    def passage(self) -> list[str]:
        return [self.sentence(14, 24)[0] for _ in range(self.rng.randint(3, 4))]


def _with_code(text: str, rng: random.Random, html: bool) -> tuple[str, str]:
    """The sentence as written (with inline code markup) and as plain text."""
    word = rng.choice(CODE_WORDS)
    head, _, tail = text.partition(" ")
    plain = f"{word}: {head.lower()} {tail}"
    written = f"<code>{word}</code>: {head.lower()} {tail}" if html else f"`{word}`: {head.lower()} {tail}"
    return written, plain


def build_store(out: str | Path, claims: int, edits: int | None = None, seed: int = 0) -> dict[str, int]:
    """Write one complete run of ``claims`` claims into a new store at ``out``.

    ``edits``: how many of the check-worthy claims are findings with an edit waiting for review
    (default: a third of them, about what the demo KB's audit drafts); every one is ``queued``
    (or ``needs_rewrite``), so the review queue holds exactly that many. Returns the counts."""
    rng = random.Random(seed)
    text = _Text(seed)
    store = Store(out)
    run_id = new_run_id()
    now = dt.datetime.now(dt.UTC)
    today = now.date()
    n_docs = max(1, -(-claims // CLAIMS_PER_DOC))
    checkworthy = [i for i in range(claims) if i % 3 != 2]
    if edits is None:
        edits = len(checkworthy) // 3
    if edits > len(checkworthy):
        raise ValueError(f"{edits} edits need at least {edits * 3 // 2 + 1} claims")
    findings = set(rng.sample(checkworthy, edits))

    # the sources: a shared pool of passages, so claims about one topic share their evidence
    pool = []
    for p in range(max(50, claims // 4)):
        source = SOURCES[p % len(SOURCES)]
        version = content_hash(f"{source}-{p // 40}")
        date = today - dt.timedelta(days=rng.randint(5, 900))
        pool.append((content_hash(f"passage-{seed}-{p}"), source, version, date, text.passage()))

    documents, claim_rows, verdicts, evidence, edit_rows, details = [], [], [], [], [], []
    labels = {"supported": 0, "contradicted": 0, "stale": 0, "uncertain": 0}
    for d in range(n_docs):
        area = SOURCES[d % len(SOURCES)].split("-")[0]
        html = d % 5 == 4
        doc_id = f"{area}/{'reference' if d % 2 else 'guide'}-{d:05d}-{text.rng.choice(text.words)}.{'html' if html else 'md'}"
        version_id = content_hash(f"doc-{seed}-{d}")
        documents.append(
            {
                "doc_id": doc_id,
                "version_id": version_id,
                "title": " ".join(w.capitalize() for w in rng.sample(text.words, rng.randint(2, 5))),
                "owner": OWNERS[d % len(OWNERS)],
                "risk": ("high", "medium", "low", None)[d % 4],
                "bytes": 14_000,
                "format": "html" if html else "markdown",
                "status": "PARTIAL",
                "score": round(rng.uniform(0.4, 0.98), 3),
                "score_components": "{}",
            }
        )
        start = 0
        for i in range(d * CLAIMS_PER_DOC, min(claims, (d + 1) * CLAIMS_PER_DOC)):
            plain, number = text.sentence()
            written = plain
            if rng.random() < 1 / 6:
                written, plain = _with_code(plain, rng, html)
            claim_id = content_hash(f"claim-{seed}-{i}")
            worthy = i % 3 != 2
            claim_rows.append(
                {
                    "claim_id": claim_id,
                    "doc_id": doc_id,
                    "version_id": version_id,
                    "start": start,
                    "end": start + len(written),
                    "source_text": written,
                    "text": plain,
                    "checkworthy": worthy,
                    "reason": "states a value" if worthy else "no checkable fact",
                    "type": "numeric" if worthy else "other",
                    "risk": ("high", "medium", "low")[i % 3],
                    "time_sensitive": i % 7 == 0,
                    "freshness_days": 180 if i % 7 == 0 else None,
                    "requirements": ["source"],
                    "section": f"Section {i % 9 + 1}",
                }
            )
            start += len(written) + 2
            if not worthy:
                continue
            passages = rng.sample(pool, EVIDENCE_PER_CLAIM)
            kind = None
            if i in findings:
                kind = rng.choices(("changed", "removed", "still-true", "rewrite"), weights=(14, 2, 2, 2))[0]
                label = "stale" if kind in ("removed", "still-true") else rng.choice(("contradicted", "stale"))
            else:
                label = rng.choices(("supported", "uncertain"), weights=(69, 18))[0]
            labels[label] += 1
            ev_ids = []
            for rank, (passage_id, source, version, date, sentences) in enumerate(passages, 1):
                sentence = sentences[rng.randrange(len(sentences))]
                evidence_id = content_hash(f"{claim_id}-{passage_id}")
                ev_ids.append(evidence_id)
                evidence.append(
                    {
                        "evidence_id": evidence_id,
                        "claim_id": claim_id,
                        "rank": rank,
                        "passage_id": passage_id,
                        "source_id": source,
                        "source_version": version,
                        "source_date": date,
                        "authority": 0.9,
                        "passage": " ".join(sentences),
                        "sentence": sentence,
                        "score_bm25": round(12 - rank * 1.3, 3),
                        "score_dense": round(0.8 - rank * 0.05, 3),
                        "score_fused": round(0.7 - rank * 0.04, 3),
                        "receipt_id": content_hash(f"receipt-{evidence_id}"),
                        "section": None,
                        "removed_in": "v9" if kind == "removed" and rank == 1 else "",
                    }
                )
            top = passages[0]
            action = {
                "changed": "update to the newer value",
                "removed": f"{REMOVED_ACTION} v9: delete the sentence or rewrite it (review)",
                "still-true": AGED_ACTION,
                "rewrite": "human review",
            }.get(kind or "", "review by hand if it matters" if label == "uncertain" else None)
            new_number = str(int(number) + rng.randint(1, 9))
            verdicts.append(
                {
                    "claim_id": claim_id,
                    "label": label,
                    "confidence": round(rng.uniform(0.55, 0.99), 3),
                    "tier": "model",
                    "rationale": f"{top[1]} ({top[3].isoformat()}): " + ("entails the claim" if label == "supported" else label),
                    "gap_type": None if label == "supported" else "systemic",
                    "gap_severity": None if label == "supported" else "medium",
                    "action": action,
                    "evidence_ids": ev_ids[:1],
                    "claim_value": number if kind == "changed" else None,
                    "evidence_value": new_number if kind == "changed" else None,
                    "evidence_sentence": evidence[-EVIDENCE_PER_CLAIM]["sentence"],
                    "reused": False,
                }
            )
            if kind is None:
                continue
            old = written
            new = {"changed": old.replace(number, new_number, 1), "removed": ""}.get(kind, old)
            method = {"changed": "slot", "removed": "delete"}.get(kind, "none")
            edit_id = content_hash(f"edit-{claim_id}-{new}")
            score = round(rng.uniform(1.5, 8), 1)
            edit_rows.append(
                {
                    "edit_id": edit_id,
                    "claim_id": claim_id,
                    "doc_id": doc_id,
                    "base_version": version_id,
                    "start": claim_rows[-1]["start"],
                    "end": claim_rows[-1]["end"],
                    "old_text": old,
                    "new_text": new,
                    "risk": "high" if score >= 3 else "medium",
                    "status": "queued" if method != "none" else "needs_rewrite",
                    "reason": f"{label}: {action}",
                }
            )
            details.append(
                {
                    "edit_id": edit_id,
                    "claim_id": claim_id,
                    "doc_id": doc_id,
                    "method": method,
                    "label_before": label,
                    "confidence_before": verdicts[-1]["confidence"],
                    "label_after": "supported" if kind == "changed" else None,
                    "confidence_after": 0.93 if kind == "changed" else None,
                    "claim_value": number if kind == "changed" else None,
                    "evidence_value": new_number if kind == "changed" else None,
                    "evidence_sentence": verdicts[-1]["evidence_sentence"],
                    "evidence_source": f"{top[1]}@{top[2]}",
                    "evidence_date": top[3],
                    "evidence_authority": 0.9,
                    "evidence_key": content_hash(f"ek-{claim_id}"),
                    "proposal_key": content_hash(f"pk-{claim_id}-{new}"),
                    "risk_score": score,
                    "risk_factors": json.dumps({"claim risk": 1, "confidence": 0.5}),
                }
            )
    store.write_table(run_id, "documents", documents)
    store.write_table(run_id, "claims", claim_rows)
    store.write_table(run_id, "verdicts", verdicts)
    store.write_table(run_id, "evidence", evidence)
    store.write_table(run_id, "edits", edit_rows)
    store.write_table(run_id, "edit_details", details)
    store.commit_run(
        run_id,
        {
            "started_at": now,
            "finished_at": now,
            "status": "completed",
            "depth": "D1",
            "docs_root": str(Path(out) / "docs"),
            "sources_root": str(Path(out) / "sources"),
            "documents": n_docs,
            "claims": claims,
            "checkworthy": len(checkworthy),
            **labels,
            "reused": 0,
            "escalated": 0,
            "ingest_errors": 0,
            "edits": len(edit_rows),
            "seconds": 0.0,
            "scope": "full",
        },
    )
    return {"documents": n_docs, "claims": claims, "checkworthy": len(checkworthy), "edits": len(edit_rows)}
