"""`kbaudit report --html FILE`: one self-contained HTML file for one run.

Inline CSS, inline JS and an inline SVG chart; no network, no external files. Every value that
comes from the store (document titles, claims, passages, owners, paths, errors) passes through
``esc`` (``html.escape``), so a document containing ``<script>`` shows as text. The page works
without JavaScript (drill-downs are ``<details>`` elements); the script only adds the label filter
and "expand all".
"""

from __future__ import annotations

import difflib
import html
import re
from collections import defaultdict

from kb.records import content_hash
from kb.store import Store
from reports import queries as q

COLORS = {"supported": "#2e7d32", "contradicted": "#c62828", "stale": "#ef6c00", "uncertain": "#6d6d6d"}
MAX_TREND_RUNS = 30


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def anchor(doc_id: str) -> str:
    """A safe fragment id for a document."""
    return "doc-" + re.sub(r"[^A-Za-z0-9_-]", "-", doc_id) + "-" + content_hash(doc_id, 6)


def highlight(passage: str, sentence: str) -> str:
    """The passage, escaped, with the aligned sentence in <mark> (the whole passage escaped if absent)."""
    i = passage.find(sentence) if sentence else -1
    if i < 0:
        return esc(passage) + (f'<div class="aligned">aligned: <mark>{esc(sentence)}</mark></div>' if sentence else "")
    return f"{esc(passage[:i])}<mark>{esc(sentence)}</mark>{esc(passage[i + len(sentence) :])}"


def word_diff(old: str, new: str) -> str:
    """old -> new as one line with <del>/<ins> around the changed words (all parts escaped)."""
    split = lambda s: re.findall(r"\s+|\w+|[^\w\s]", s)  # noqa: E731
    a, b = split(old), split(new)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(esc("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>")
    return "".join(out)


def trend_svg(trend: list[dict], current: str) -> str:
    """Stacked bars of claims per label, one bar per run (the newest MAX_TREND_RUNS)."""
    trend = trend[-MAX_TREND_RUNS:]
    width, height, pad, top = 640, 220, 40, 14
    if not trend:
        return '<svg id="trend" role="img" aria-label="no runs"></svg>'
    peak = max(max(sum(int(r[label] or 0) for label in q.LABELS) for r in trend), 1)
    step = (width - pad - 10) / len(trend)
    bar = max(min(step * 0.7, 48), 4)
    parts = [
        f'<svg id="trend" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height + 30}" role="img" '
        f'aria-label="claims per label across {len(trend)} runs">',
        f'<line x1="{pad}" y1="{top + height - pad}" x2="{width - 5}" y2="{top + height - pad}" stroke="#999"/>',
        f'<text x="{pad - 6}" y="{top + 4}" text-anchor="end" class="axis">{peak}</text>',
        f'<text x="{pad - 6}" y="{top + height - pad}" text-anchor="end" class="axis">0</text>',
    ]
    scale = (height - pad - top) / peak
    for i, r in enumerate(trend):
        x = pad + 5 + i * step
        y = top + height - pad
        for label in q.LABELS:
            n = int(r[label] or 0)
            if not n:
                continue
            h = n * scale
            y -= h
            parts.append(
                f'<rect class="bar bar-{label}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{COLORS[label]}">'
                f"<title>{esc(r['run_id'])}: {n} {label}</title></rect>"
            )
        mark = " current" if r["run_id"] == current else ""
        parts.append(
            f'<text class="axis run{mark}" x="{x + bar / 2:.1f}" y="{top + height - pad + 14}" text-anchor="middle">'
            f"{esc(r['night'] or r['run_id'][:8])}</text>"
        )
    for i, label in enumerate(q.LABELS):
        x = pad + i * 130
        parts.append(f'<rect x="{x}" y="{height + 12}" width="10" height="10" fill="{COLORS[label]}"/>')
        parts.append(f'<text x="{x + 14}" y="{height + 21}" class="axis">{label}</text>')
    parts.append("</svg>")
    return "".join(parts)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d1d1d;background:#fafafa}
header,main{max-width:1100px;margin:0 auto;padding:12px 20px}
header{border-bottom:1px solid #ddd;background:#fff;max-width:none}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:26px 0 8px}h3{font-size:15px;margin:18px 0 6px}
.meta{color:#555;font-size:12px}.meta span{margin-right:14px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:92px}
.card .n{font-size:22px;font-weight:600}.card .k{color:#555;font-size:12px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e5e5e5;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0;font-weight:600}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:#777}
.l-supported{background:#2e7d32}.l-contradicted{background:#c62828}.l-stale{background:#ef6c00}.l-uncertain{background:#6d6d6d}
.s-VERIFIED{background:#2e7d32}.s-CORRECTED{background:#1565c0}.s-PARTIAL{background:#ef6c00}
.s-UNCERTAIN{background:#6d6d6d}.s-FAILED{background:#c62828}.s-HUMAN_REVIEW_REQUIRED{background:#6a1b9a}
.score{display:inline-block;width:60px;height:8px;background:#eee;margin-right:6px;vertical-align:middle}
.score i{display:block;height:8px;background:#1565c0}
details.claim{background:#fff;border:1px solid #e0e0e0;border-radius:5px;margin:4px 0;padding:4px 10px}
details.claim summary{cursor:pointer}
details.claim .body{padding:6px 0 4px 12px;border-left:3px solid #eee;margin:6px 0}
.evidence{margin:6px 0;padding:6px 8px;background:#f7f7f7;border-radius:4px}
.evidence .src{font-size:12px;color:#444}
mark{background:#fff59d}del{background:#ffcdd2;text-decoration:line-through}ins{background:#c8e6c9;text-decoration:none}
.diff{font-family:ui-monospace,Menlo,monospace;font-size:12.5px;background:#fff;border:1px solid #ddd;padding:6px;white-space:pre-wrap}
.gap{color:#6a1b9a}.muted{color:#777}
.filters button{margin-right:6px;border:1px solid #bbb;background:#fff;border-radius:4px;padding:2px 8px;cursor:pointer}
.filters button.off{opacity:.4}
.hidden{display:none}
svg .axis{font-size:10px;fill:#555}svg .run.current{font-weight:700;fill:#000}
"""

JS = """
(function(){
  var off = {};
  document.querySelectorAll('.filters button[data-label]').forEach(function(b){
    b.addEventListener('click', function(){
      var l = b.getAttribute('data-label'); off[l] = !off[l]; b.classList.toggle('off', off[l]);
      document.querySelectorAll('details.claim').forEach(function(d){
        d.classList.toggle('hidden', !!off[d.getAttribute('data-label')]);
      });
    });
  });
  var all = document.getElementById('expand-all');
  if (all) all.addEventListener('click', function(){
    var open = all.getAttribute('data-open') !== '1';
    document.querySelectorAll('details.claim').forEach(function(d){ d.open = open; });
    all.setAttribute('data-open', open ? '1' : '0'); all.textContent = open ? 'collapse all' : 'expand all';
  });
  document.body.setAttribute('data-ready', '1');
})();
"""


def _badge(label: str | None, prefix: str = "l") -> str:
    if not label:
        return '<span class="badge">not checked</span>'
    return f'<span class="badge {prefix}-{esc(label)}">{esc(label)}</span>'


def _score(score) -> str:
    s = float(score or 0.0)
    return f'<span class="score"><i style="width:{max(0.0, min(s, 1.0)) * 100:.0f}%"></i></span>{s:.2f}'


def _claim_html(c: dict, evidence: list[dict], edits: list[dict]) -> str:
    label = c["label"] or "unchecked"
    parts = [
        f'<details class="claim" id="claim-{esc(c["claim_id"])}" data-label="{esc(label)}">',
        f"<summary>{_badge(c['label'])} {esc(c['source_text'])}</summary>",
        '<div class="body">',
    ]
    if c["text"] != c["source_text"]:
        parts.append(f'<div class="muted">checked as: {esc(c["text"])}</div>')
    if c["label"]:
        conf = f"{float(c['confidence']):.2f}" if c.get("confidence") is not None else "n/a"
        parts.append(f'<div class="verdict">{esc(c["tier"])} tier, confidence {conf}: {esc(c["rationale"])}</div>')
    if c.get("gap_type"):
        parts.append(
            f'<div class="gap">gap: {esc(c["gap_type"])} ({esc(c.get("gap_severity") or "n/a")})'
            f"{': ' + esc(c['action']) if c.get('action') else ''}</div>"
        )
    decided = set(c.get("evidence_ids") or [])
    for e in evidence:
        used = " (decided on)" if e["evidence_id"] in decided else ""
        date = e["source_date"].isoformat() if hasattr(e.get("source_date"), "isoformat") else (e.get("source_date") or "undated")
        parts.append(
            f'<div class="evidence" data-rank="{int(e["rank"])}"><div class="src">#{int(e["rank"])} '
            f"<b>{esc(e['source_id'])}</b>, {esc(date)}, score {float(e['score_fused'] or 0):.3f}{esc(used)}</div>"
            f'<div class="passage">{highlight(e["passage"] or "", e["sentence"] or "")}</div></div>'
        )
    if c["label"] and not evidence:
        parts.append('<div class="muted">no evidence retrieved</div>')
    for ed in edits:
        parts.append(
            f'<div class="edit">proposed edit <span class="badge">{esc(ed["status"])}</span> '
            f'risk {esc(ed["risk"])}: <span class="muted">{esc(ed["reason"])}</span>'
            f'<div class="diff">{word_diff(ed["old_text"] or "", ed["new_text"] or "")}</div></div>'
        )
    parts.append("</div></details>")
    return "".join(parts)


def render(store: Store, run_id: str | None = None) -> str:
    """The HTML report of one run (default: the newest) as a string."""
    run_id = q.resolve_run(store, run_id)
    run = q.run_row(store, run_id)
    docs = q.documents(store, run_id)
    claims = q.claims(store, run_id)
    evidence_by_claim: dict[str, list[dict]] = defaultdict(list)
    for e in q.evidence(store, run_id):
        evidence_by_claim[e["claim_id"]].append(e)
    edits_by_claim: dict[str, list[dict]] = defaultdict(list)
    for ed in q.edits(store, run_id):
        edits_by_claim[ed["claim_id"]].append(ed)
    changes = q.changes(store, run_id)
    counts = q.change_counts(changes)
    trend = q.label_trend(store, until=run_id)
    errors = q.ingest_errors(store, run_id)
    claims_by_doc: dict[str, list[dict]] = defaultdict(list)
    for c in claims:
        claims_by_doc[c["doc_id"]].append(c)

    label_n = {label: sum(1 for c in claims if c["label"] == label) for label in q.LABELS}
    cards = [("documents", run["documents"]), ("claims", run["claims"]), ("check-worthy", run["checkworthy"])]
    cards += [(label, label_n[label]) for label in q.LABELS]
    cards += [("edits", run["edits"]), ("ingest errors", run["ingest_errors"])]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        f"<title>kbaudit report {esc(run_id)}</title>",
        f"<style>{CSS}</style></head>",
        f'<body data-run="{esc(run_id)}">',
        f'<header><h1>kbaudit report</h1><div class="meta"><span>run <b id="run-id">{esc(run_id)}</b></span>'
        f"<span>depth {esc(run['depth'])}</span><span>started {esc(run['started_at'])}</span>"
        f"<span>{float(run['seconds'] or 0):.1f} s</span><span>documents: {esc(run['docs_root'])}</span>"
        f"<span>sources: {esc(run['sources_root'])}</span></div></header><main>",
        '<h2>Summary</h2><div class="cards" id="summary">',
        *[
            f'<div class="card" id="count-{esc(k.replace(" ", "-"))}" data-count="{int(v or 0)}"><div class="n">{int(v or 0)}</div>'
            f'<div class="k">{esc(k)}</div></div>'
            for k, v in cards
        ],
        "</div>",
        "<h2>Changes since the previous run</h2>",
        f'<p class="muted">against {esc(q.previous_run(store, run_id) or "no earlier run (every finding is new)")}</p>',
        '<div class="cards" id="changes">',
        *[
            f'<div class="card" id="change-{name}" data-count="{counts[name]}"><div class="n">{counts[name]}</div>'
            f'<div class="k">{name.replace("_", " ")}</div></div>'
            for name in q.CHANGES
        ],
        "</div>",
        "<h2>Labels across runs</h2>",
        trend_svg(trend, run_id),
        "<h2>Documents</h2>",
        '<table id="documents"><thead><tr><th>document</th><th>owner</th><th>risk</th><th>status</th><th>score</th>'
        + "".join(f"<th>{label}</th>" for label in q.LABELS)
        + "</tr></thead><tbody>",
    ]
    for d in docs:
        out.append(
            f'<tr class="doc" data-doc="{esc(d["doc_id"])}" data-status="{esc(d["status"])}">'
            f'<td><a href="#{anchor(d["doc_id"])}">{esc(d["doc_id"])}</a><div class="muted">{esc(d["title"])}</div></td>'
            f"<td>{esc(d['owner'] or '')}</td><td>{esc(d['risk'] or '')}</td>"
            f"<td>{_badge(d['status'], 's')}</td><td>{_score(d['score'])}</td>"
            + "".join(f"<td>{int(d[label] or 0)}</td>" for label in q.LABELS)
            + "</tr>"
        )
    out.append("</tbody></table>")
    pages = q.pages_due(store, run_id)
    out.append("<h2>Pages due for review</h2>")
    if pages:
        out.append(
            '<table id="pages-due"><thead><tr><th>document</th><th>owner</th><th>due</th><th>days overdue</th>'
            "<th>open findings</th></tr></thead><tbody>"
        )
        out += [
            f'<tr data-doc="{esc(p["doc_id"])}"><td><a href="#{anchor(p["doc_id"])}">{esc(p["doc_id"])}</a></td>'
            f"<td>{esc(p['owner'] or '')}</td><td>{esc(p['review_due'] or 'never reviewed')}</td>"
            f"<td>{esc(p['days_overdue'] if p['days_overdue'] is not None else '')}</td><td>{int(p['findings'] or 0)}</td></tr>"
            for p in pages
        ]
        out.append("</tbody></table>")
    else:
        out.append('<p class="muted" id="pages-due">none</p>')
    out.append(
        '<h2>Claims</h2><div class="filters">'
        + "".join(f'<button type="button" data-label="{label}">{label}</button>' for label in q.LABELS)
        + '<button type="button" id="expand-all">expand all</button></div>'
    )
    for d in docs:
        doc_claims = [c for c in claims_by_doc.get(d["doc_id"], []) if c["checkworthy"]]
        out.append(
            f'<section class="doc-claims" id="{anchor(d["doc_id"])}"><h3>{esc(d["doc_id"])} '
            f'<span class="muted">{esc(d["title"])}</span> {_badge(d["status"], "s")}</h3>'
        )
        if not doc_claims:
            out.append('<p class="muted">no check-worthy claims</p>')
        for c in doc_claims:
            out.append(_claim_html(c, evidence_by_claim.get(c["claim_id"], []), edits_by_claim.get(c["claim_id"], [])))
        out.append("</section>")
    if changes:
        out.append(
            '<h2>What changed</h2><table id="change-list"><thead><tr><th>change</th><th>document</th>'
            "<th>before</th><th>now</th><th>claim</th></tr></thead><tbody>"
        )
        for ch in changes:
            out.append(
                f"<tr><td>{esc(ch['change'])}</td><td>{esc(ch['doc_id'])}</td><td>{esc(ch['previous_label'] or '')}</td>"
                f"<td>{esc(ch['label'] or 'removed')}</td><td>{esc(ch['claim_text'])}</td></tr>"
            )
        out.append("</tbody></table>")
    out.append("<h2>Ingest errors</h2>")
    if errors:
        out.append('<table id="ingest-errors"><thead><tr><th>path</th><th>stage</th><th>error</th></tr></thead><tbody>')
        out += [f"<tr><td>{esc(e['path'])}</td><td>{esc(e['stage'])}</td><td>{esc(e['error'])}</td></tr>" for e in errors]
        out.append("</tbody></table>")
    else:
        out.append('<p class="muted" id="ingest-errors">none</p>')
    out.append(f"<script>{JS}</script></main></body></html>")
    return "\n".join(out)
