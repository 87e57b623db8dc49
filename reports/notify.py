"""The run notification: summary, new findings per owner and pages due, as a webhook payload.

``KBAUDIT_NOTIFY_URL`` (environment only: it is a secret) turns it on; ``KBAUDIT_NOTIFY_FORMAT``
is ``slack`` (default: ``text`` + Block Kit ``blocks``, what a Slack incoming webhook takes) or
``json`` (the data below, for any other receiver). ``KBAUDIT_NOTIFY_TIMEOUT`` (seconds, default
5) and ``KBAUDIT_NOTIFY_RETRIES`` (default 2) bound the wait. "New" findings are those whose
claim changed label into contradicted / stale / uncertain in this run (the claim_changes
macro), plus removed pages.
"""

from __future__ import annotations

import datetime as dt

from kb.config import ConfigError
from kb.store import Store
from reports import findings as model
from reports import webhook

FORMATS = ("slack", "json")
MAX_PER_OWNER = 10  # findings listed per owner in a Slack section (the rest are counted)
MAX_OWNERS = 40  # Slack allows 50 blocks a message
SECTION_LIMIT = 2900  # Slack's section text limit is 3000 characters


def settings_from(environ) -> dict | None:
    """url, format, timeout, retries from the environment; None when no URL is set."""
    url = (environ.get("KBAUDIT_NOTIFY_URL") or "").strip()
    if not url:
        return None
    fmt = (environ.get("KBAUDIT_NOTIFY_FORMAT") or "slack").strip().lower()
    if fmt not in FORMATS:
        raise ConfigError(f"KBAUDIT_NOTIFY_FORMAT must be one of {', '.join(FORMATS)}; got {fmt!r}")
    try:
        timeout = float(environ.get("KBAUDIT_NOTIFY_TIMEOUT") or webhook.DEFAULT_TIMEOUT)
        retries = int(environ.get("KBAUDIT_NOTIFY_RETRIES") or webhook.DEFAULT_RETRIES)
    except ValueError:
        raise ConfigError("KBAUDIT_NOTIFY_TIMEOUT must be seconds and KBAUDIT_NOTIFY_RETRIES a whole number") from None
    if timeout <= 0 or retries < 0:
        raise ConfigError("KBAUDIT_NOTIFY_TIMEOUT must be above 0 and KBAUDIT_NOTIFY_RETRIES 0 or more")
    bad = webhook.check_url(url)
    if bad:
        raise ConfigError(f"KBAUDIT_NOTIFY_URL {bad}")
    return {"url": url, "format": fmt, "timeout": timeout, "retries": retries}


def _finding(f: model.Finding, found: model.Findings) -> dict:
    e = f.evidence[0] if f.evidence else None
    return {
        "kind": f.kind,
        "label": f.label,
        "level": f.level,
        "path": found.path_of(f.doc_id),
        "doc_id": f.doc_id,
        "line": f.region.start_line if f.region else None,
        "column": f.region.start_column if f.region else None,
        "claim": f.source_text.strip(),
        "confidence": f.confidence,
        "change": f.change,
        "evidence": {"source": e.source_id, "date": model._date(e.source_date), "sentence": e.sentence} if e else None,
        "fix": {"old": f.fix.old_text, "new": f.fix.new_text, "edit_id": f.fix.edit_id} if f.fix else None,
        "fingerprint": f.fingerprint,
        "detail": f.detail or None,
    }


def _page(p: dict) -> dict:
    return {
        "doc_id": p["doc_id"],
        "title": p["title"],
        "owner": p["owner"],
        "review_due": p["review_due"].isoformat() if p["review_due"] else None,
        "days_overdue": p["days_overdue"],
        "findings": p["findings"],
    }


def json_payload(found: model.Findings) -> dict:
    owners = found.by_owner(only_new=True)
    due: dict[str, list[dict]] = {}
    for p in found.pages_due:
        due.setdefault(p["owner"] or "(no owner)", []).append(_page(p))
    names = sorted(set(owners) | set(due), key=lambda o: (o == "(no owner)", o))
    return {
        "event": "kbaudit.run",
        "summary": found.summary(),
        "owners": [
            {"owner": o, "new_findings": [_finding(f, found) for f in owners.get(o, [])], "pages_due": due.get(o, [])} for o in names
        ],
    }


def _mrkdwn(value) -> str:
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int = SECTION_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_payload(found: model.Findings) -> dict:
    data = json_payload(found)
    s = data["summary"]
    headline = (
        f"kbaudit run {s['run_id']}: {s['contradicted']} contradicted, {s['stale']} stale, {s['uncertain']} uncertain "
        f"of {s['checkworthy']} claims; {s['new_findings']} new finding(s), {s['pages_due']} page(s) due for review"
    )
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(f"kbaudit run {s['run_id']}", 150)}},
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": (
                    f"*{s['documents']}* documents, *{s['checkworthy']}* check-worthy claims: "
                    f"*{s['contradicted']}* contradicted, *{s['stale']}* stale, *{s['uncertain']}* uncertain, "
                    f"*{s['supported']}* supported.\n*{s['new_findings']}* new finding(s); *{s['pages_due']}* page(s) due for review."
                ),
            },
        },
    ]
    owners = data["owners"]
    for entry in owners[:MAX_OWNERS]:
        lines = [f"*{_mrkdwn(entry['owner'])}*: {len(entry['new_findings'])} new finding(s), {len(entry['pages_due'])} page(s) due"]
        for f in entry["new_findings"][:MAX_PER_OWNER]:
            where = f"{f['path']}:{f['line']}" if f["line"] else f["path"]
            line = f"• `{_mrkdwn(where)}` *{f['kind']}*: {_mrkdwn(f['claim'])[:300]}"
            if f["evidence"]:
                line += f"\n    _{_mrkdwn(f['evidence']['source'])} ({f['evidence']['date']})_: {_mrkdwn(f['evidence']['sentence'])[:300]}"
            lines.append(line)
        if len(entry["new_findings"]) > MAX_PER_OWNER:
            lines.append(f"…and {len(entry['new_findings']) - MAX_PER_OWNER} more")
        for p in entry["pages_due"][:MAX_PER_OWNER]:
            lines.append(f"• review due: `{_mrkdwn(p['doc_id'])}` since {p['review_due'] or 'never reviewed'}")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _clip("\n".join(lines))}})
    if len(owners) > MAX_OWNERS:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"…and {len(owners) - MAX_OWNERS} more owner(s)"}})
    blocks.append(
        {"type": "context", "elements": [{"type": "mrkdwn", "text": _mrkdwn(f"depth {s['depth']} · `kbaudit report --run {s['run_id']}`")}]}
    )
    return {"text": headline, "blocks": blocks}


def notify_run(store: Store, run_id: str, environ) -> dict | None:
    """Send the notification of a committed run; the `notifications` row to append (None: not
    configured). Never raises for a bad environment or a failed send: the row says what happened."""
    try:
        config = settings_from(environ)
    except ConfigError as exc:
        return {
            "run_id": run_id,
            "status": "failed",
            "format": None,
            "target": None,
            "attempts": 0,
            "error": str(exc),
            "sent_at": dt.datetime.now(dt.UTC),
            "describe": f"notification not sent: {exc}",
        }
    if config is None:
        return None
    found = model.load(store, run_id)
    payload = slack_payload(found) if config["format"] == "slack" else json_payload(found)
    outcome = webhook.post(config["url"], payload, timeout=config["timeout"], retries=config["retries"])
    owners = {f.owner or "(no owner)" for f in found.findings if f.change or f.kind == "removed"}
    return {
        "run_id": run_id,
        "status": outcome.status,
        "format": config["format"],
        "target": outcome.target,
        "attempts": outcome.attempts,
        "http_status": outcome.http_status,
        "error": outcome.error,
        "findings": sum(1 for f in found.findings if f.change or f.kind == "removed"),
        "owners": len(owners),
        "seconds": outcome.seconds,
        "sent_at": outcome.sent_at,
        "describe": outcome.describe(),
    }
