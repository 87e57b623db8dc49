"""`kbaudit report --html FILE`: one self-contained HTML file for one run.

Inline CSS, inline JS and an inline SVG chart; no network, no external files. The summary, the
documents, the pages due, the changes and the ingest errors are HTML; every value from the store
(document titles, claims, passages, owners, paths, errors) passes through ``esc``
(``html.escape``), so a document containing ``<script>`` shows as text.

The drill-down (each claim with its verdict, evidence and proposed diff) is data: one JSON
object, gzip-compressed and base64-encoded as the text of a hidden ``<div id="report-data">``
(not a script element: the page's one script is its own). The script decompresses it with
``DecompressionStream`` and builds a document's claims the first time its section is opened
(``#all`` in the address opens every one), putting the text into the page as text nodes only,
never as markup. Passages that several claims retrieved are stored once. What a file would not
hold at wiki scale is left out, and the page names the command that shows it: beyond
``MAX_CLAIMS_PER_DOC`` claims a document or ``MAX_CLAIMS`` in all (findings are kept first),
beyond ``MAX_EVIDENCE`` passages a finding (one a supported claim), ``MAX_DOCUMENTS`` rows of the
documents table and ``MAX_CHANGES`` of the changes. Without JavaScript the page shows the summary
and the tables.
"""

from __future__ import annotations

import base64
import difflib
import gzip
import html
import json
import re
import shlex
from collections import defaultdict

from kb.records import content_hash
from kb.store import Store
from reports import queries as q
from reports.textdiff import diff_runs, plain, segments

COLORS = {"supported": "#2e7d32", "contradicted": "#c62828", "stale": "#ef6c00", "uncertain": "#6d6d6d"}
MAX_TREND_RUNS = 30
MAX_CLAIMS = 20_000  # claims the drill-down embeds in all (findings first)
MAX_CLAIMS_PER_DOC = 300  # claims a document's drill-down embeds (findings first)
MAX_EVIDENCE = 3  # passages a finding's drill-down embeds (best rank first); a supported claim's: 1
MAX_DOCUMENTS = 2_000  # rows of the documents table (lowest score first beyond it)
MAX_CHANGES = 500  # rows of the "what changed" table (the rest: the command it names)
LABEL_ORDER = {"contradicted": 0, "stale": 1, "uncertain": 2, "supported": 3}


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
.s-VERIFIED{background:#2e7d32}.s-CORRECTED,.s-CORRECTABLE{background:#1565c0}.s-EDITS_ACCEPTED{background:#00838f}.s-PARTIAL{background:#ef6c00}
.s-UNCERTAIN{background:#6d6d6d}.s-FAILED{background:#c62828}.s-HUMAN_REVIEW_REQUIRED{background:#6a1b9a}
.score{display:inline-block;width:60px;height:8px;background:#eee;margin-right:6px;vertical-align:middle}
.score i{display:block;height:8px;background:#1565c0}
details.doc-claims>summary{cursor:pointer}details.doc-claims>summary h3{display:inline}
details.doc-claims{margin:10px 0}.left-out code,.muted code{font-size:12px;word-break:break-all}
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
  var off = {}, data = null, body = document.body;
  function node(tag, cls, text){
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function text(parent, value){ parent.appendChild(document.createTextNode(String(value))); }
  function runs(parent, segs){
    if (typeof segs === 'string') { text(parent, segs); return; }
    segs.forEach(function(s){ if (s[1]) parent.appendChild(node('code', null, s[0])); else text(parent, s[0]); });
  }
  function badge(label){
    return label ? node('span', 'badge l-' + label, label) : node('span', 'badge', 'not checked');
  }
  function evidence(e){
    var box = node('div', 'evidence'), src = node('div', 'src'), passage = node('div', 'passage');
    box.setAttribute('data-rank', e[0]);
    text(src, '#' + e[0] + ' '); src.appendChild(node('b', null, e[1]));
    text(src, ', ' + e[2] + ', score ' + e[3].toFixed(3) + (e[4] ? ' (decided on)' : ''));
    var p = data.passages[e[5]];
    if (e[6] >= 0) {
      text(passage, p.slice(0, e[6])); passage.appendChild(node('mark', null, p.slice(e[6], e[6] + e[7])));
      text(passage, p.slice(e[6] + e[7]));
    } else {
      text(passage, p);
      if (e[7]) { var al = node('div', 'aligned', 'aligned: '); al.appendChild(node('mark', null, e[7])); passage.appendChild(al); }
    }
    box.appendChild(src); box.appendChild(passage);
    return box;
  }
  function claim(c){
    var label = c[1] || 'unchecked', d = node('details', 'claim'), s = node('summary'), b = node('div', 'body');
    d.id = 'claim-' + c[0]; d.setAttribute('data-label', label);
    if (off[label]) d.classList.add('hidden');
    s.appendChild(badge(c[1])); text(s, ' '); runs(s, c[2]); d.appendChild(s);
    if (c[3] !== null) b.appendChild(node('div', 'muted', 'checked as: ' + c[3]));
    if (c[1]) b.appendChild(node('div', 'verdict', c[4] + ' tier, confidence ' + c[5] + ': ' + c[6]));
    if (c[7]) b.appendChild(node('div', 'gap', 'gap: ' + c[7][0] + ' (' + (c[7][1] || 'n/a') + ')' + (c[7][2] ? ': ' + c[7][2] : '')));
    c[8].forEach(function(e){ b.appendChild(evidence(e)); });
    if (c[10]) {
      var more = node('div', 'muted', c[10] + ' more passage(s): ');
      more.appendChild(node('code', null, data.evidence_sql.replace('CLAIM', c[0]))); b.appendChild(more);
    }
    if (c[1] && !c[8].length) b.appendChild(node('div', 'muted', 'no evidence retrieved'));
    c[9].forEach(function(ed){
      var w = node('div', 'edit', 'proposed edit '), diff = node('div', 'diff');
      w.appendChild(node('span', 'badge', ed[0])); text(w, ' risk ' + ed[1] + ': '); w.appendChild(node('span', 'muted', ed[2]));
      ed[3].forEach(function(r){
        var inner = r[2] ? node('code', null, r[1]) : document.createTextNode(r[1]);
        if (r[0] === '=') { diff.appendChild(inner); return; }
        var wrap = node(r[0] === '-' ? 'del' : 'ins'); wrap.appendChild(inner); diff.appendChild(wrap);
      });
      w.appendChild(diff); b.appendChild(w);
    });
    d.appendChild(b);
    return d;
  }
  function fill(section){
    if (!data || section.getAttribute('data-filled')) return;
    var doc = data.docs[+section.getAttribute('data-doc-index')], box = section.querySelector('.claims');
    if (!doc.claims.length) box.appendChild(node('p', 'muted', 'no check-worthy claims'));
    doc.claims.forEach(function(c){ box.appendChild(claim(c)); });
    if (doc.omitted) {
      var note = node('p', 'muted left-out', doc.omitted + ' more claim(s) of this document are not in this file: ');
      note.appendChild(node('code', null, doc.more[0])); text(note, ' (or the edits: ');
      note.appendChild(node('code', null, doc.more[1])); text(note, ')'); box.appendChild(note);
    }
    section.setAttribute('data-filled', '1');
  }
  var sections = Array.prototype.slice.call(document.querySelectorAll('details.doc-claims'));
  sections.forEach(function(s){ s.addEventListener('toggle', function(){ if (s.open) fill(s); }); });
  function reveal(){
    var id = decodeURIComponent(location.hash.slice(1));
    if (id === 'all') { sections.forEach(function(s){ fill(s); s.open = true; }); return; }
    var t = id && document.getElementById(id);
    if (t && t.classList.contains('doc-claims')) { fill(t); t.open = true; return; }
    if (data && id.indexOf('claim-') === 0) {  // a claim: open its document, then the claim
      var cid = id.slice(6);
      data.docs.forEach(function(doc, i){
        if (!doc.claims.some(function(c){ return c[0] === cid; })) return;
        fill(sections[i]); sections[i].open = true;
        var c = document.getElementById(id);
        if (c) { c.open = true; c.scrollIntoView(); }
      });
    }
  }
  window.addEventListener('hashchange', reveal);
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
    sections.forEach(function(s){ if (open) fill(s); s.open = open; });
    document.querySelectorAll('details.claim').forEach(function(d){ d.open = open; });
    all.setAttribute('data-open', open ? '1' : '0'); all.textContent = open ? 'collapse all' : 'expand all';
  });
  var packed = document.getElementById('report-data');
  try {
    var raw = atob(packed.textContent.trim()), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    new Response(stream).text().then(function(json){
      data = JSON.parse(json);
      sections.forEach(function(s){ if (s.open) fill(s); });
      reveal();
      body.setAttribute('data-ready', '1');
    }).catch(function(err){ body.setAttribute('data-error', String(err)); });
  } catch (err) {
    body.setAttribute('data-error', String(err));
  }
})();
"""


def _badge(label: str | None, prefix: str = "l") -> str:
    if not label:
        return '<span class="badge">not checked</span>'
    return f'<span class="badge {prefix}-{esc(label)}">{esc(label)}</span>'


def _score(score) -> str:
    s = float(score or 0.0)
    return f'<span class="score"><i style="width:{max(0.0, min(s, 1.0)) * 100:.0f}%"></i></span>{s:.2f}'


def _segments(raw: str):
    """A span as JSON: its plain text, or runs of [text, 1 if code else 0]."""
    runs = segments(raw or "")
    if all(not code for _, code in runs):
        return "".join(text for text, _ in runs)
    return [[text, int(code)] for text, code in runs]


def _sql(query: str, out: str) -> str:
    """The `kbaudit sql` command line for a query (double-quoted when that needs no escapes)."""
    quoted = f'"{query}"' if not re.search(r'["$`\\!]', query) else shlex.quote(query)
    return f"kbaudit sql {quoted} --out {shlex.quote(out)}"


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class _Passages:
    """Passages stored once, however many claims retrieved them."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.texts: list[str] = []

    def add(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.texts)
            self.texts.append(text)
        return self.index[text]


def _claim_data(c: dict, evidence: list[dict], edits: list[dict], passages: _Passages) -> list:
    shown = _segments(c["source_text"])
    checked_as = c["text"] if c["text"] != (shown if isinstance(shown, str) else plain(c["source_text"] or "")) else None
    decided = set(c.get("evidence_ids") or [])
    ev = []
    for e in evidence:
        date = e["source_date"].isoformat() if hasattr(e.get("source_date"), "isoformat") else (e.get("source_date") or "undated")
        passage, sentence = e["passage"] or "", e["sentence"] or ""
        at = passage.find(sentence) if sentence else -1
        ev.append(
            [
                int(e["rank"]),
                e["source_id"],
                str(date),
                round(float(e["score_fused"] or 0), 3),
                int(e["evidence_id"] in decided),
                passages.add(passage),
                at,
                len(sentence) if at >= 0 else sentence,
            ]
        )
    more = max(0, int(evidence[0]["passages"]) - len(evidence)) if evidence else 0
    gap = [c["gap_type"], c.get("gap_severity"), c.get("action")] if c.get("gap_type") else 0
    conf = f"{float(c['confidence']):.2f}" if c.get("confidence") is not None else "n/a"
    fixes = [[ed["status"], ed["risk"], ed["reason"], diff_runs(ed["old_text"] or "", ed["new_text"] or "")] for ed in edits]
    return [c["claim_id"], c["label"], shown, checked_as, c["tier"], conf, c["rationale"], gap, ev, fixes, more]


def _drilldown(store: Store, run_id: str, docs: list[dict], claims_by_doc: dict[str, list[dict]]) -> tuple[str, dict]:
    """The drill-down data of every document (gzip + base64 of its JSON) and how much was left out."""
    evidence_by_claim: dict[str, list[dict]] = defaultdict(list)
    for e in q.evidence(store, run_id, per_claim=MAX_EVIDENCE, per_supported=1):
        evidence_by_claim[e["claim_id"]].append(e)
    edits_by_claim: dict[str, list[dict]] = defaultdict(list)
    for ed in q.edits(store, run_id):
        edits_by_claim[ed["claim_id"]].append(ed)
    out = str(store.root)
    passages = _Passages()
    entries = []
    left_out = {"claims": 0, "documents": 0}
    # findings first, then in the pages' order: at most MAX_CLAIMS_PER_DOC a document, MAX_CLAIMS in all
    ranked = []
    for n, d in enumerate(docs):
        worthy = [c for c in claims_by_doc.get(d["doc_id"], []) if c["checkworthy"]]
        order = sorted(range(len(worthy)), key=lambda i: (LABEL_ORDER.get(worthy[i]["label"], 4), i))
        ranked += [(LABEL_ORDER.get(worthy[i]["label"], 4), n, i) for i in order[:MAX_CLAIMS_PER_DOC]]
    keep = {(n, i) for _, n, i in sorted(ranked)[:MAX_CLAIMS]}
    for n, d in enumerate(docs):
        worthy = [c for c in claims_by_doc.get(d["doc_id"], []) if c["checkworthy"]]
        kept = [c for i, c in enumerate(worthy) if (n, i) in keep]
        entry: dict = {
            "claims": [
                _claim_data(c, evidence_by_claim.get(c["claim_id"], []), edits_by_claim.get(c["claim_id"], []), passages) for c in kept
            ]
        }
        if len(kept) < len(worthy):
            left_out["claims"] += len(worthy) - len(kept)
            left_out["documents"] += 1
            entry["omitted"] = len(worthy) - len(kept)
            entry["more"] = [
                _sql(
                    "SELECT c.start, v.label, c.source_text, v.rationale FROM claims_history c JOIN verdicts v "
                    f"ON v.claim_id = c.claim_id AND v.run_id = c.run_id WHERE c.run_id = {_quote(run_id)} "
                    f"AND c.doc_id = {_quote(d['doc_id'])} AND c.checkworthy ORDER BY c.start",
                    out,
                ),
                f"kbaudit review serve --out {shlex.quote(out)}",
            ]
        entries.append(entry)
    data = {
        "docs": entries,
        "passages": passages.texts,
        "evidence_sql": _sql(
            f"SELECT * FROM evidence WHERE run_id <= {_quote(run_id)} AND claim_id = 'CLAIM' ORDER BY run_id DESC, rank", out
        ),
    }
    packed = gzip.compress(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), 9, mtime=0)
    return base64.b64encode(packed).decode("ascii"), left_out


def render(store: Store, run_id: str | None = None) -> str:
    """The HTML report of one run (default: the newest) as a string."""
    run_id = q.resolve_run(store, run_id)
    run = q.run_row(store, run_id)
    docs = q.documents(store, run_id)
    claims = q.claims(store, run_id)
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
    if len(docs) > MAX_DOCUMENTS:  # the lowest scores, in the table's order
        lowest = {d["doc_id"] for d in sorted(docs, key=lambda d: float(d["score"] or 0))[:MAX_DOCUMENTS]}
        hidden, docs = len(docs) - MAX_DOCUMENTS, [d for d in docs if d["doc_id"] in lowest]
    else:
        hidden = 0
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
    if hidden:
        every = _sql(f"SELECT * FROM documents_history WHERE run_id = {_quote(run_id)} ORDER BY score", str(store.root))
        out.append(
            f'<p class="muted" id="documents-left-out">{hidden} more document(s), with higher scores, are not in this file '
            f"(at most {MAX_DOCUMENTS}, lowest score first): <code>{esc(every)}</code></p>"
        )
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
    packed, left_out = _drilldown(store, run_id, docs, claims_by_doc)
    out.append(
        '<h2>Claims</h2><div class="filters">'
        + "".join(f'<button type="button" data-label="{label}">{label}</button>' for label in q.LABELS)
        + '<button type="button" id="expand-all">expand all</button></div>'
        '<noscript><p class="muted">The claims, their evidence and the proposed edits are shown with JavaScript; '
        f"without it: <code>{esc(_sql('SELECT * FROM claims', str(store.root)))}</code>.</p></noscript>"
    )
    if left_out["claims"]:
        out.append(
            f'<p class="muted" id="left-out">{left_out["claims"]} claim(s) of {left_out["documents"]} document(s) are not in this '
            f"file (at most {MAX_CLAIMS_PER_DOC} a document and {MAX_CLAIMS} in all, findings first; {MAX_EVIDENCE} "
            "passages a finding, one a supported claim): each such document names the command that lists the rest.</p>"
        )
    for i, d in enumerate(docs):
        worthy = sum(1 for c in claims_by_doc.get(d["doc_id"], []) if c["checkworthy"])
        out.append(
            f'<details class="doc-claims" id="{anchor(d["doc_id"])}" data-doc-index="{i}"><summary><h3>{esc(d["doc_id"])} '
            f'<span class="muted">{esc(d["title"])}</span> {_badge(d["status"], "s")} '
            f'<span class="muted">{worthy} check-worthy claim(s)</span></h3></summary><div class="claims"></div></details>'
        )
    if changes:
        out.append(
            '<h2>What changed</h2><table id="change-list"><thead><tr><th>change</th><th>document</th>'
            "<th>before</th><th>now</th><th>claim</th></tr></thead><tbody>"
        )
        for ch in changes[:MAX_CHANGES]:
            out.append(
                f"<tr><td>{esc(ch['change'])}</td><td>{esc(ch['doc_id'])}</td><td>{esc(ch['previous_label'] or '')}</td>"
                f"<td>{esc(ch['label'] or 'removed')}</td><td>{esc(ch['claim_text'])}</td></tr>"
            )
        out.append("</tbody></table>")
        if len(changes) > MAX_CHANGES:
            previous = q.previous_run(store, run_id)
            every = _sql(f"SELECT * FROM claim_changes({_quote(run_id)}, {_quote(previous) if previous else 'NULL'})", str(store.root))
            out.append(
                f'<p class="muted" id="changes-left-out">{len(changes) - MAX_CHANGES} more change(s) are not in this file '
                f"(the first {MAX_CHANGES} are): <code>{esc(every)}</code></p>"
            )
    out.append("<h2>Ingest errors</h2>")
    if errors:
        out.append('<table id="ingest-errors"><thead><tr><th>path</th><th>stage</th><th>error</th></tr></thead><tbody>')
        out += [f"<tr><td>{esc(e['path'])}</td><td>{esc(e['stage'])}</td><td>{esc(e['error'])}</td></tr>" for e in errors]
        out.append("</tbody></table>")
    else:
        out.append('<p class="muted" id="ingest-errors">none</p>')
    out.append(f'<div id="report-data" data-encoding="gzip+base64" hidden>{packed}</div>')
    out.append(f"<script>{JS}</script></main></body></html>")
    return "\n".join(out)
