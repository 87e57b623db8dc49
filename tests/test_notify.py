"""The post-commit webhook notification, against a real HTTP server on 127.0.0.1 that the tests
start: success, 500 then success (retried), 400 (not retried), down, slow (timeout), and in two
real runs of the demo KB: a Slack payload with the new findings per owner and the pages due,
then a run whose webhook is down and is committed all the same.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kb.store import Store
from reports import queries as q
from reports import webhook
from reports.notify import notify_run
from tests.conftest import DEMO_TODAY

SECRET_PATH = "/services/T0KB/B0AUDIT/s3cr3t-t0ken-9f8e7d"


class Hook:
    """A webhook receiver: answers each request with the next (status, delay) of `script`
    (the last one repeats) and records what it received."""

    def __init__(self):
        self.script: list[tuple[int, float]] = [(200, 0.0)]
        self.received: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.received.append({"path": self.path, "body": json.loads(body), "type": self.headers.get("Content-Type")})
                status, delay = hook.script.pop(0) if len(hook.script) > 1 else hook.script[0]
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the client gave up (timeout)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}{SECRET_PATH}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def hook():
    server = Hook()
    yield server
    server.close()


def down_url() -> str:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{SECRET_PATH}"


# ---- reports.webhook.post -------------------------------------------------------------------------------
def test_success(hook):
    hook.script, hook.received = [(200, 0.0)], []
    outcome = webhook.post(hook.url, {"text": "hello"})
    assert (outcome.status, outcome.attempts, outcome.http_status, outcome.error) == ("sent", 1, 200, None)
    assert hook.received == [{"path": SECRET_PATH, "body": {"text": "hello"}, "type": "application/json"}]
    assert outcome.target == f"http://127.0.0.1:{hook.server.server_port}" and SECRET_PATH not in outcome.describe()


def test_500_then_success_is_retried_with_backoff(hook):
    hook.script, hook.received = [(500, 0.0), (503, 0.0), (200, 0.0)], []
    waits = []
    outcome = webhook.post(hook.url, {"text": "x"}, retries=2, backoff=0.25, sleep=waits.append)
    assert (outcome.status, outcome.attempts, outcome.http_status) == ("sent", 3, 200)
    assert waits == [0.25, 0.5] and len(hook.received) == 3


def test_500_every_time_fails_after_the_retries(hook):
    hook.script, hook.received = [(500, 0.0)], []
    outcome = webhook.post(hook.url, {"text": "x"}, retries=1, sleep=lambda s: None)
    assert (outcome.status, outcome.attempts, outcome.error) == ("failed", 2, "HTTP 500")


def test_400_is_not_retried(hook):
    hook.script, hook.received = [(400, 0.0), (200, 0.0)], []
    outcome = webhook.post(hook.url, {"text": "x"}, retries=3, sleep=lambda s: None)
    assert (outcome.status, outcome.attempts, outcome.http_status) == ("failed", 1, 400) and len(hook.received) == 1


def test_down():
    url = down_url()
    waits = []
    outcome = webhook.post(url, {"text": "x"}, retries=2, backoff=0.1, sleep=waits.append)
    assert (outcome.status, outcome.attempts, outcome.http_status) == ("failed", 3, None)
    assert outcome.error.startswith("ConnectError") and SECRET_PATH not in outcome.error
    assert waits == [0.1, 0.2]


def test_slow_times_out(hook):
    hook.script, hook.received = [(200, 1.5)], []
    outcome = webhook.post(hook.url, {"text": "x"}, timeout=0.3, retries=1, sleep=lambda s: None)
    assert (outcome.status, outcome.attempts, outcome.error) == ("failed", 2, "timed out after 0.3 s")
    assert len(hook.received) == 2


@pytest.mark.parametrize("url, why", [("ftp://example.com/x", "must be an http:// or https:// URL"), ("not a url", "must be an http")])
def test_bad_url_is_not_sent(url, why):
    outcome = webhook.post(url, {})
    assert outcome.status == "failed" and outcome.attempts == 0 and why in outcome.error


# ---- after a real run ------------------------------------------------------------------------------
class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def runs(prefect_harness, hook, tmp_path_factory):
    from flows.audit import audit
    from kb.config import DEMO_ROOT, Settings

    root = tmp_path_factory.mktemp("notify-demo")
    docs = root / "docs"
    shutil.copytree(DEMO_ROOT / "docs", docs)
    page = docs / "pricing.md"
    page.write_text(page.read_text("utf-8").replace("---\n", "---\nreview_interval: 90d\n", 1), "utf-8")
    out = root / "out"
    settings = Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, today=dt.date.fromisoformat(DEMO_TODAY))
    logs = Collect()
    logging.getLogger("kbaudit").addHandler(logs)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("KBAUDIT_NOTIFY_URL", hook.url)
            mp.delenv("KBAUDIT_NOTIFY_FORMAT", raising=False)
            hook.script, hook.received = [(500, 0.0), (200, 0.0)], []
            first = audit(settings)
            slack = list(hook.received)
            rates = docs / "rate-limits.md"
            rates.write_text(rates.read_text("utf-8").replace("allows 600 requests", "allows 900 requests"), "utf-8")
            mp.setenv("KBAUDIT_NOTIFY_URL", down_url())
            mp.setenv("KBAUDIT_NOTIFY_FORMAT", "json")
            mp.setenv("KBAUDIT_NOTIFY_RETRIES", "1")
            second = audit(settings)
    finally:
        logging.getLogger("kbaudit").removeHandler(logs)
    return {"out": out, "first": first["run_id"], "second": second["run_id"], "slack": slack, "logs": logs.lines, "root": root}


@pytest.mark.slow
def test_slack_payload_after_the_run(runs):
    assert [r["path"] for r in runs["slack"]] == [SECRET_PATH, SECRET_PATH]  # 500, then retried
    body = runs["slack"][-1]["body"]
    store = Store(runs["out"])
    counts = q.run_row(store, runs["first"])
    assert body["text"].startswith(f"kbaudit run {runs['first']}: {counts['contradicted']} contradicted, {counts['stale']} stale")
    assert body["blocks"][0] == {"type": "header", "text": {"type": "plain_text", "text": f"kbaudit run {runs['first']}"}}
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    owners = q.rows(
        store,
        """SELECT coalesce(d.owner, '(no owner)') AS owner, count(*) AS n FROM claim_changes(?, NULL) c
                              JOIN documents_history d ON d.doc_id = c.doc_id AND d.run_id = ? GROUP BY 1""",
        [runs["first"], runs["first"]],
    )
    assert len(owners) > 5
    for row in owners:  # every owner with new findings has a section with their count
        assert any(s.startswith(f"*{row['owner']}*: {row['n']} new finding(s)") for s in sections), row
    revenue = next(s for s in sections if s.startswith("*Revenue Operations*"))
    assert "1 page(s) due" in revenue and "review due: `pricing.md` since 2024-04-21" in revenue
    assert "`pricing.md:" in revenue and "_pricing-" in revenue  # location and evidence source
    assert all(len(s) <= 3000 for s in sections) and len(body["blocks"]) <= 50


@pytest.mark.slow
def test_outcomes_are_recorded_and_the_url_is_never_stored(runs, hook):
    store = Store(runs["out"])
    assert store.run_ids() == [runs["first"], runs["second"]]  # the run with its webhook down is committed
    rows = q.rows(store, "SELECT * FROM notifications ORDER BY sent_at")
    assert [(r["run_id"], r["status"], r["format"], r["attempts"], r["http_status"]) for r in rows] == [
        (runs["first"], "sent", "slack", 2, 200),
        (runs["second"], "failed", "json", 2, None),
    ]
    assert rows[0]["target"] == f"http://127.0.0.1:{hook.server.server_port}"
    assert rows[1]["error"].startswith("ConnectError") and rows[0]["findings"] > 0 and rows[1]["findings"] == 1
    assert any(
        "notification to http://127.0.0.1:" in line and "failed after 2 attempt(s)" in line and "the run is committed" in line
        for line in runs["logs"]
    )
    secret = SECRET_PATH.rsplit("/", 1)[1].encode()
    leaked = [p for p in runs["out"].rglob("*") if p.is_file() and secret in p.read_bytes()]
    assert leaked == [] and not any(secret.decode() in line for line in runs["logs"])


@pytest.mark.slow
def test_json_payload_and_bad_environment(runs, hook, capsys):
    store = Store(runs["out"])
    hook.script, hook.received = [(200, 0.0)], []
    row = notify_run(store, runs["second"], {"KBAUDIT_NOTIFY_URL": hook.url, "KBAUDIT_NOTIFY_FORMAT": "json"})
    assert row["status"] == "sent"
    body = hook.received[0]["body"]
    assert body["event"] == "kbaudit.run" and body["summary"]["run_id"] == runs["second"]
    new = [f for o in body["owners"] for f in o["new_findings"]]
    assert [(f["doc_id"], f["kind"], f["change"]) for f in new] == [("rate-limits.md", "contradicted", "new_contradiction")]
    assert "900 requests" in new[0]["claim"] and new[0]["evidence"]["source"] and new[0]["line"] > 0
    due = [p for o in body["owners"] for p in o["pages_due"]]
    assert [(p["doc_id"], p["review_due"]) for p in due] == [("pricing.md", "2024-04-21")]
    bad = notify_run(store, runs["second"], {"KBAUDIT_NOTIFY_URL": hook.url, "KBAUDIT_NOTIFY_FORMAT": "xml"})
    assert bad["status"] == "failed" and "KBAUDIT_NOTIFY_FORMAT must be one of slack, json" in bad["error"]
    assert notify_run(store, runs["second"], {}) is None  # not configured: nothing sent, nothing recorded

    from cli.main import main

    capsys.readouterr()
    assert main(["report", "--out", str(runs["out"]), "--run", runs["second"]]) == 0
    text = capsys.readouterr().out
    assert "notification: failed (json, http://127.0.0.1:" in text and SECRET_PATH not in text
