"""`kbaudit review serve`, driven in real headless Chromium (selenium + Debian's chromedriver).

One real audit of a copy of the demo KB (through the flow and the real verifier) builds the store;
`kbaudit review serve` runs as a real server in its own process on a free loopback port. The
browser loads the queue, filters, opens edits, approves, rejects, edits-then-approves and applies;
the test then reads the store with DuckDB and the KB files from disk. Plain HTTP requests (httpx)
check what a browser would not send: a POST without the CSRF token, two reviewers posting at
once, decisions while another process holds the store's lock, and the token a server needs.

A second store holds 5,000 pending edits (bench/synthetic.py, written through the store's API in
seconds): the queue pages, fits a 1,280-pixel window and shows inline code as code. A third is a
clean audit of the demo KB, served the way a user serves it (`--out kbaudit-out`): the README's
screenshot (docs/images/review-app.png) is taken from it, written only with
KBAUDIT_UPDATE_SCREENSHOT=1. KBAUDIT_SCREENSHOTS=DIR saves screenshots of the other pages to DIR.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

import httpx
import pytest

from kb.config import DEMO_ROOT
from reports.textdiff import plain
from tests.conftest import store_sql

ROOT = Path(__file__).resolve().parent.parent
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM = Path("/usr/bin/chromium")
# Shown as text, never run: a document title and owner from front matter.
XSS_TITLE = "<script>document.body.dataset.xss='script'</script><img src=x onerror=\"document.body.dataset.xss='img'\">SLA"
XSS_OWNER = "<b onmouseover=alert(1)>Reliability</b>"

needs_browser = pytest.mark.skipif(
    not CHROMEDRIVER.exists() or not CHROMIUM.exists(),
    reason="headless Chromium is not installed (/usr/bin/chromedriver; apt-get install chromium chromium-driver)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(out: Path | str, *extra: str, env: dict | None = None, cwd: Path = ROOT) -> tuple[subprocess.Popen, str, Path]:
    port = _free_port()
    log = Path(tempfile.mkstemp(prefix="kbaudit-review-serve-", suffix=".log")[1])
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "review", "serve", "--out", str(out), "--port", str(port), *extra],
            cwd=cwd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), **(env or {})},
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"review serve exited {proc.returncode}: {log.read_text()}")
        try:
            httpx.get(base + "/static/app.css", timeout=2)
            return proc, base, log
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"review serve did not answer within 90 s: {log.read_text()}")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def demo(prefect_harness, tmp_path_factory):
    """A real audit of a copy of the demo KB whose SLA page has a title and owner that are HTML."""
    from flows.audit import audit
    from kb.config import Settings
    from tests.conftest import DEMO_TODAY

    base = tmp_path_factory.mktemp("review-app")
    shutil.copytree(DEMO_ROOT / "docs", base / "docs")
    shutil.copytree(DEMO_ROOT / "sources", base / "sources")
    sla = base / "docs" / "sla.md"
    text = sla.read_text("utf-8")
    text = text.replace("title: Service Level Agreement Summary", "title: '" + XSS_TITLE.replace("'", "''") + "'")
    text = text.replace("owner: Reliability", "owner: '" + XSS_OWNER + "'")
    sla.write_text(text, "utf-8")
    out = base / "out"
    settings = Settings(docs=base / "docs", sources=[base / "sources"], out=out, today=date.fromisoformat(DEMO_TODAY))
    audit(settings)
    return base / "docs", out


@pytest.fixture(scope="module")
def server(demo):
    docs, out = demo
    proc, base, log = _serve(out, "--reviewer", "ann")
    try:
        yield base
    finally:
        _stop(proc)
        log.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def browser():
    if not CHROMEDRIVER.exists() or not CHROMIUM.exists():
        pytest.skip("headless Chromium is not installed (/usr/bin/chromedriver; apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="kbaudit-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _shot(driver, name: str) -> None:
    folder = os.environ.get("KBAUDIT_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / name))


def _wait(driver, condition, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _goes(driver, action, timeout: float = 180) -> None:
    """Do what loads a new page (a click, a key), and wait until the new page has replaced the
    old one (reading elements as soon as the address changes can find the old page's)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions

    old = driver.find_element(By.TAG_NAME, "html")
    action()
    _wait(driver, _gone(old, expected_conditions.staleness_of(old)), timeout)
    _wait(driver, lambda d: d.execute_script("return document.readyState") == "complete", timeout)


def _gone(old, stale):
    """``staleness_of(old)``, also when Chromium answers the check of an element of a page it is
    tearing down with "Node with given id does not belong to the document" (a WebDriver error
    that is not a stale-element error): that element has left the document too."""
    from selenium.common.exceptions import WebDriverException

    def condition(driver) -> bool:
        try:
            return stale(driver)
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise

    return condition


def _rows(driver) -> list:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#queue tbody tr")


def _csp_violations(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]


# ---- in the browser ------------------------------------------------------------------------
@needs_browser
def test_queue_filters_sort_and_the_edit_page(demo, server, browser):
    from selenium.webdriver.common.by import By

    docs, out = demo
    queued = store_sql(out, "SELECT edit_id, risk, doc_id, owner FROM review_queue")
    assert len(queued) >= 10
    browser.get(server + "/")
    assert len(_rows(browser)) == len(queued)
    assert browser.find_element(By.ID, "count").text.startswith(f"{len(queued)} of {len(queued)}")

    # The HTML title and owner are text on the page; none of it ran.
    assert XSS_TITLE in browser.find_element(By.TAG_NAME, "body").text
    assert XSS_OWNER in browser.find_element(By.TAG_NAME, "body").text
    assert browser.execute_script("return document.body.dataset.xss") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#queue img, #queue b, main script")

    # Filter: risk = high; the facet's count is the number of rows shown, all of them high.
    high = sum(r[1] == "high" for r in queued)
    link = browser.find_element(By.CSS_SELECTOR, "#facet-risk a[data-value='high']")
    facet_count = int(link.find_element(By.XPATH, "following-sibling::span").text)
    _goes(browser, link.click)
    assert "risk=high" in browser.current_url
    assert facet_count == high == len(_rows(browser))
    assert {r.find_element(By.CSS_SELECTOR, ".risk").text for r in _rows(browser)} == {"high"}
    # Counts per filter follow the other filters: the owner facet now counts high-risk edits only.
    owner_counts = {
        a.get_attribute("data-value"): int(a.find_element(By.XPATH, "following-sibling::span").text)
        for a in browser.find_elements(By.CSS_SELECTOR, "#facet-owner a[data-value]")
    }
    expected = {}
    for _e, risk, _d, owner in queued:
        if risk == "high":
            expected[owner or "(no owner)"] = expected.get(owner or "(no owner)", 0) + 1
    assert owner_counts == expected
    # Two filters at once, then sort by document.
    doc = sorted(r[2] for r in queued if r[1] == "high")[0]
    _goes(browser, browser.find_element(By.CSS_SELECTOR, f"#facet-doc a[data-value='{doc}']").click)
    assert "doc=" in browser.current_url
    assert len(_rows(browser)) == sum(r[1] == "high" and r[2] == doc for r in queued)
    browser.get(server + "/?sort=doc")
    shown = [r.find_element(By.CSS_SELECTOR, "code").text for r in _rows(browser)]
    assert shown == sorted(shown) and len(shown) == len(queued)

    # Keyboard: j selects the first row, o opens it.
    browser.get(server + "/")
    first = _rows(browser)[0].get_attribute("data-edit")
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    assert "current" in _rows(browser)[0].get_attribute("class")
    _goes(browser, lambda: browser.find_element(By.TAG_NAME, "body").send_keys("o"))
    assert f"/edit/{first}" in browser.current_url

    # The edit page: claim in its paragraph, the diff, evidence with source, version, date and
    # receipt status, the gap and the rationale.
    edit_id, old, new, doc_id, sentence = store_sql(
        out, "SELECT edit_id, old_text, new_text, doc_id, evidence_sentence FROM edit_state WHERE edit_id = ?", [first]
    )[0]
    assert browser.find_element(By.ID, "edit-id").text == edit_id
    paragraph = browser.find_element(By.ID, "paragraph")
    assert paragraph.find_element(By.TAG_NAME, "mark").text == plain(old).strip()  # the text, not its markup
    assert old in (docs / doc_id).read_text("utf-8")
    diff = browser.find_element(By.ID, "diff")
    if old != new:
        assert diff.find_elements(By.TAG_NAME, "del") and diff.find_elements(By.TAG_NAME, "ins")
        assert "".join(i.text for i in diff.find_elements(By.TAG_NAME, "ins")) in plain(new)
    evidence = browser.find_elements(By.CSS_SELECTOR, "article.ev")
    stored = store_sql(
        out,
        "SELECT source_id, source_version, source_date FROM evidence e JOIN edit_state s "
        "ON e.claim_id = s.claim_id AND e.run_id = s.run_id WHERE s.edit_id = ? ORDER BY rank",
        [edit_id],
    )
    assert len(evidence) == len(stored) > 0
    meta = evidence[0].find_element(By.CSS_SELECTOR, ".meta").text
    assert stored[0][0] in meta and stored[0][1] in meta and str(stored[0][2]) in meta
    assert {e.find_element(By.CSS_SELECTOR, ".receipt").text for e in evidence} == {"receipt verified"}
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "article.ev mark")]
    assert sentence in marks
    gap_type, rationale = store_sql(
        out,
        "SELECT v.gap_type, v.rationale FROM verdicts v JOIN edit_state s "
        "ON v.claim_id = s.claim_id AND v.run_id = s.run_id WHERE s.edit_id = ?",
        [edit_id],
    )[0]
    assert browser.find_element(By.ID, "rationale").text == rationale
    assert (gap_type or "none recorded") in browser.find_element(By.ID, "gap").text

    # The XSS document's own page: title and owner as text there too.
    sla = store_sql(out, "SELECT edit_id FROM review_queue WHERE doc_id = 'sla.md' LIMIT 1")
    assert sla, "the SLA page has an edit in the queue"
    browser.get(f"{server}/edit/{sla[0][0]}")
    assert browser.find_element(By.ID, "doc-title").text == XSS_TITLE
    assert XSS_OWNER in browser.find_element(By.CSS_SELECTOR, ".docline").text
    assert browser.execute_script("return document.body.dataset.xss") is None
    assert not _csp_violations(browser), "the pages need no inline script or style"


@needs_browser
def test_approve_reject_edit_then_approve_and_apply(demo, server, browser):
    from selenium.webdriver.common.by import By

    docs, out = demo
    queue = store_sql(out, "SELECT edit_id, doc_id, old_text, new_text FROM review_queue WHERE state = 'queued' ORDER BY edit_id")
    backup = next(r for r in queue if r[1] == "backups.md" and "every 4 hours" in r[3])
    others = [r for r in queue if r[1] != backup[1]]
    approve, reject = others[0], next(r for r in others if r[1] != others[0][1])
    before = {p.name: p.read_text("utf-8") for p in docs.glob("*.md")}

    # Approve with the keyboard ("a").
    browser.get(f"{server}/edit/{approve[0]}")
    _goes(browser, lambda: browser.find_element(By.TAG_NAME, "body").send_keys("a"))
    assert "flash=approved" in browser.current_url
    assert browser.find_element(By.ID, "flash").text == f"Approved {approve[0]}"

    # Reject with a note ("r" focuses the note).
    browser.get(f"{server}/edit/{reject[0]}")
    browser.find_element(By.TAG_NAME, "body").send_keys("r")
    note = browser.switch_to.active_element
    assert note.get_attribute("id") == "reject-note"
    note.send_keys("the wiki is right: <b>checked</b> with the team")
    _goes(browser, browser.find_element(By.ID, "reject").click)
    assert "flash=rejected" in browser.current_url

    # Edit, then approve: a text the evidence refutes is refused with the verifier's reading...
    browser.get(f"{server}/edit/{backup[0]}")
    box = browser.find_element(By.ID, "edit-text")
    box.clear()
    box.send_keys("Database backups are taken every 12 hours.")
    _goes(browser, browser.find_element(By.ID, "edit-approve").click)
    assert browser.find_element(By.ID, "check-label").text in ("contradicted", "stale", "uncertain")
    assert "Not approved" in browser.find_element(By.ID, "check").text
    assert browser.find_element(By.ID, "state").text == "queued"
    # ... and one it supports is approved, with what the verifier concluded.
    mine = "Database backups are taken every 4 hours."
    box = browser.find_element(By.ID, "edit-text")
    box.clear()
    box.send_keys(mine)
    _goes(browser, browser.find_element(By.ID, "edit-approve").click)
    assert browser.find_elements(By.CSS_SELECTOR, "#check.ok")
    assert browser.find_element(By.ID, "check-label").text == "supported"
    assert browser.find_element(By.ID, "state").text == "approved"
    _shot(browser, "review-app-verified.png")

    # Apply: the preview lists the documents, the button writes them.
    browser.get(server + "/apply")
    planned = {r.find_element(By.TAG_NAME, "code").text for r in browser.find_elements(By.CSS_SELECTOR, "#outcomes tbody tr")}
    assert {approve[1], backup[1]} <= planned
    assert {p.name: p.read_text("utf-8") for p in docs.glob("*.md")} == before, "the preview writes nothing"
    _goes(browser, browser.find_element(By.ID, "apply").click)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Applied"
    statuses = {r.find_elements(By.TAG_NAME, "td")[1].text for r in browser.find_elements(By.CSS_SELECTOR, "#outcomes tbody tr")}
    assert statuses == {"applied"}

    # The store: the same append-only decision rows the CLI writes, and the apply steps.
    decisions = {
        r[0]: r[1:] for r in store_sql(out, "SELECT edit_id, decision, reviewer, note, origin, new_text, check_label FROM review_decisions")
    }
    assert decisions[approve[0]] == ("approve", "ann", "", "web", None, None)
    assert decisions[reject[0]] == ("reject", "ann", "the wiki is right: <b>checked</b> with the team", "web", None, None)
    assert decisions[backup[0]] == ("approve", "ann", "", "web", mine, "supported")
    states = dict(store_sql(out, "SELECT edit_id, state FROM edit_state"))
    assert states[approve[0]] == states[backup[0]] == "applied" and states[reject[0]] == "rejected"
    # The KB files on disk.
    after = {p.name: p.read_text("utf-8") for p in docs.glob("*.md")}
    assert mine in after["backups.md"] and backup[2] not in after["backups.md"]
    assert approve[3] in after[approve[1]] and approve[2] not in after[approve[1]]
    assert reject[2] in after[reject[1]]
    written = dict(store_sql(out, "SELECT doc_id, version_id FROM applied_versions"))
    from kb.records import content_hash

    assert all(content_hash((docs / d).read_bytes()) == v for d, v in written.items())

    # Applied edits take no decision, and a second apply applies nothing twice.
    browser.get(f"{server}/edit/{backup[0]}")
    assert browser.find_element(By.ID, "state").text == "applied"
    assert not browser.find_elements(By.ID, "approve-form")
    browser.get(server + "/apply")
    assert browser.find_elements(By.ID, "nothing")


@needs_browser
def test_bulk_reject_of_a_filtered_set(demo, server, browser):
    from selenium.webdriver.common.by import By

    docs, out = demo
    doc = store_sql(out, "SELECT doc_id FROM review_queue GROUP BY 1 HAVING count(*) >= 2 ORDER BY 1 LIMIT 1")[0][0]
    ids = {r[0] for r in store_sql(out, "SELECT edit_id FROM review_queue WHERE doc_id = ?", [doc])}
    total = store_sql(out, "SELECT count(*) FROM review_queue")[0][0]
    browser.get(f"{server}/?doc={doc}")
    assert {r.get_attribute("data-edit") for r in _rows(browser)} == ids
    form = browser.find_element(By.ID, "bulk-reject")
    form.find_element(By.NAME, "note").send_keys("this page is being rewritten")
    _goes(browser, form.find_element(By.TAG_NAME, "button").click)
    assert "flash=bulk-rejected" in browser.current_url
    assert browser.find_element(By.ID, "flash").text == f"Rejected {len(ids)} edit(s)"
    assert browser.find_elements(By.ID, "empty")
    rows = store_sql(out, "SELECT edit_id, decision, note FROM review_decisions WHERE note = 'this page is being rewritten'")
    assert {r[0] for r in rows} == ids and {r[1] for r in rows} == {"reject"}
    assert store_sql(out, "SELECT count(*) FROM review_queue")[0][0] == total - len(ids)


@needs_browser
def test_a_locked_store_is_shown_and_refuses_decisions(demo, server, browser):
    from selenium.webdriver.common.by import By

    docs, out = demo
    edit_id = store_sql(out, "SELECT edit_id FROM review_queue WHERE state = 'queued' LIMIT 1")[0][0]
    client = httpx.Client(base_url=server)
    page = client.get(f"/edit/{edit_id}").text
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from kb.store import Store; s = Store(sys.argv[1]); s.lock(); print('locked', flush=True); time.sleep(600)",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        browser.get(server + "/")
        banner = browser.find_element(By.ID, "locked").text
        assert f"pid {holder.pid}" in banner and "decisions and apply fail" in banner
        count = store_sql(out, "SELECT count(*) FROM review_decisions")[0][0]
        response = client.post(f"/edit/{edit_id}/approve", data=_form(page))
        assert response.status_code == 423 and "locked" in response.text
        assert store_sql(out, "SELECT count(*) FROM review_decisions")[0][0] == count
    finally:
        holder.kill()
        holder.wait(timeout=20)
    browser.get(server + "/")
    assert not browser.find_elements(By.ID, "locked")
    assert client.post(f"/edit/{edit_id}/approve", data=_form(page)).status_code == 303


# ---- over plain HTTP -----------------------------------------------------------------------
def _form(page: str, form_id: str = "approve-form") -> dict:
    """The hidden fields of one form of a page (the CSRF token, the edit's state token)."""
    block = re.search(rf'<form[^>]*id="{form_id}".*?</form>', page, re.S).group(0)
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', block))


def test_a_post_without_the_csrf_token_is_refused(demo, server):
    docs, out = demo
    edit_id = store_sql(out, "SELECT edit_id FROM review_queue WHERE state = 'queued' LIMIT 1")[0][0]
    count = store_sql(out, "SELECT count(*) FROM review_decisions")[0][0]
    client = httpx.Client(base_url=server)
    page = client.get(f"/edit/{edit_id}")
    assert "script-src 'self'" in page.headers["content-security-policy"] and "unsafe-inline" not in page.headers["content-security-policy"]
    fields = _form(page.text)
    no_token = {k: v for k, v in fields.items() if k != "csrf"}
    assert client.post(f"/edit/{edit_id}/approve", data=no_token).status_code == 403
    assert client.post(f"/edit/{edit_id}/approve", data={**fields, "csrf": "0" * 64}).status_code == 403
    # A token from another browser's page does not fit this browser's cookie.
    other = httpx.Client(base_url=server)
    assert other.post(f"/edit/{edit_id}/approve", data=fields).status_code == 403
    assert client.post("/apply", data={}).status_code == 403
    assert store_sql(out, "SELECT count(*) FROM review_decisions")[0][0] == count


def test_two_reviewers_deciding_one_edit_at_once_one_gets_a_conflict(demo, server):
    docs, out = demo
    edit_id = store_sql(out, "SELECT edit_id FROM review_queue WHERE state = 'queued' ORDER BY edit_id DESC LIMIT 1")[0][0]
    count = store_sql(out, "SELECT count(*) FROM review_decisions WHERE edit_id = ?", [edit_id])[0][0]
    first, second = httpx.Client(base_url=server), httpx.Client(base_url=server)
    forms = [_form(first.get(f"/edit/{edit_id}").text), _form(second.get(f"/edit/{edit_id}").text, "reject-form")]
    results, start = {}, threading.Barrier(2)

    def post(name, client, path, data):
        start.wait()
        results[name] = client.post(path, data=data)

    threads = [
        threading.Thread(target=post, args=("approve", first, f"/edit/{edit_id}/approve", forms[0])),
        threading.Thread(target=post, args=("reject", second, f"/edit/{edit_id}/reject", {**forms[1], "note": "not this one"})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    codes = sorted(r.status_code for r in results.values())
    assert codes == [303, 409], {k: (r.status_code, r.text[:300]) for k, r in results.items()}
    loser = next(r for r in results.values() if r.status_code == 409)
    assert "Conflict" in loser.text and "reload" in loser.text
    rows = store_sql(out, "SELECT decision FROM review_decisions WHERE edit_id = ?", [edit_id])
    assert len(rows) == count + 1
    winner = next(k for k, r in results.items() if r.status_code == 303)
    assert rows[-1][0] == winner


def test_a_server_off_loopback_needs_a_token(demo):
    docs, out = demo
    env = {k: v for k, v in os.environ.items() if k != "KBAUDIT_REVIEW_TOKEN"}
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "review", "serve", "--out", str(out), "--host", "0.0.0.0", "--port", str(_free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--token" in lines[0] and "KBAUDIT_REVIEW_TOKEN" in lines[0], proc.stderr

    # With a token (here from the environment, on loopback): nothing without it, all with it.
    server, base, log = _serve(out, env={"KBAUDIT_REVIEW_TOKEN": "s3cret-token"})
    try:
        assert httpx.get(base + "/").status_code == 401
        assert httpx.get(base + "/?token=wrong").status_code == 403
        client = httpx.Client(base_url=base)
        entry = client.get("/?token=s3cret-token")
        assert entry.status_code == 303 and "token" not in entry.headers["location"]
        assert client.get("/").status_code == 200
        assert httpx.get(base + "/", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
    finally:
        _stop(server)
        log.unlink(missing_ok=True)


# ---- at scale, and the README's screenshot ---------------------------------------------------
SCALE_EDITS = 5000
NARROW = (1280, 900)


def _fits(driver) -> bool:
    return driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


def _whole_parts(name: str, lines: list[str]) -> bool:
    """The lines a name wrapped into are the name, broken only after a / _ or -."""
    at = 0
    for line in lines:
        if name[at : at + len(line)] != line:
            return False
        at += len(line)
        if at < len(name) and name[at - 1] not in "/_-":
            return False
    return at == len(name)


@pytest.fixture(scope="module")
def big_queue(tmp_path_factory):
    from bench.synthetic import build_store

    out = tmp_path_factory.mktemp("review-scale") / "out"
    counts = build_store(out, claims=2 * SCALE_EDITS, edits=SCALE_EDITS)
    assert counts["edits"] == SCALE_EDITS
    proc, base, log = _serve(out)
    try:
        yield out, base
    finally:
        _stop(proc)
        log.unlink(missing_ok=True)


@pytest.fixture
def narrow(browser):
    browser.set_window_size(*NARROW)
    try:
        yield browser
    finally:
        browser.set_window_size(1400, 1000)


@needs_browser
def test_a_queue_of_5000_edits_pages_fits_1280_pixels_and_shows_code_as_code(big_queue, narrow):
    from selenium.webdriver.common.by import By

    from review_app.app import PAGE_SIZE

    out, base = big_queue
    browser = narrow
    browser.get(base + "/")
    assert browser.execute_script("return window.innerWidth") <= NARROW[0]
    assert browser.find_element(By.ID, "count").text.startswith(f"{SCALE_EDITS} of {SCALE_EDITS}")
    first = [r.get_attribute("data-edit") for r in _rows(browser)]
    assert len(first) == PAGE_SIZE
    assert _fits(browser), "the queue is wider than the window"
    # Inline code is code: <code> elements in the changes, and no markup shown as text.
    assert browser.find_elements(By.CSS_SELECTOR, "#queue td.change code")
    changes = " ".join(td.text for td in browser.find_elements(By.CSS_SELECTOR, "#queue td.change"))
    assert "<code>" not in changes and "</code>" not in changes and "`" not in changes
    assert "&lt;code" not in browser.page_source
    # Document names wrap between their parts, never inside one: each line of a name is whole.
    names = {r[0]: r[1] for r in store_sql(out, "SELECT edit_id, doc_id FROM review_queue")}
    for row in _rows(browser)[:20]:
        lines = row.find_element(By.CSS_SELECTOR, "td.doc code").text.split("\n")
        assert _whole_parts(names[row.get_attribute("data-edit")], lines), lines

    # Pages: next, then the last one; every edit once across the pages seen.
    _goes(browser, browser.find_element(By.CSS_SELECTOR, ".pager a.next").click)
    assert "page=2" in browser.current_url
    second = [r.get_attribute("data-edit") for r in _rows(browser)]
    assert len(second) == PAGE_SIZE and not set(first) & set(second)
    assert f"edits {PAGE_SIZE + 1}–{2 * PAGE_SIZE} of {SCALE_EDITS}" in browser.find_element(By.CSS_SELECTOR, ".pager").text
    pages = -(-SCALE_EDITS // PAGE_SIZE)
    browser.get(f"{base}/?page={pages}")
    assert len(_rows(browser)) == SCALE_EDITS - (pages - 1) * PAGE_SIZE
    assert not browser.find_elements(By.CSS_SELECTOR, ".pager a.next")

    # Grouped by finding kind: a heading per kind; removed and still-true findings look different.
    browser.get(base + "/")
    _goes(browser, browser.find_element(By.CSS_SELECTOR, "a[data-group='kind']").click)
    assert "group=kind" in browser.current_url and _fits(browser)
    heads = browser.find_elements(By.CSS_SELECTOR, "#queue tr.group-head")
    assert heads and "value changed" in heads[0].text
    kinds = dict(
        (k, n)
        for k, n in (
            (a.get_attribute("data-value"), int(a.find_element(By.XPATH, "following-sibling::span").text))
            for a in browser.find_elements(By.CSS_SELECTOR, "#facet-kind a[data-value]")
        )
    )
    assert set(kinds) == {"changed", "removed", "still-true", "rewrite"} and sum(kinds.values()) == SCALE_EDITS
    colours = {}
    for kind in ("removed", "still-true"):
        browser.get(f"{base}/?kind={kind}")
        rows = _rows(browser)
        assert len(rows) == min(kinds[kind], PAGE_SIZE) and {r.get_attribute("data-kind") for r in rows} == {kind}
        badge = rows[0].find_element(By.CSS_SELECTOR, ".kind")
        colours[kind] = badge.value_of_css_property("background-color")
        assert badge.text == {"removed": "removed", "still-true": "still true"}[kind]
    assert colours["removed"] != colours["still-true"]
    browser.get(f"{base}/?kind=removed")
    removed = _rows(browser)[0]
    assert removed.find_elements(By.CSS_SELECTOR, "td.change del") and not removed.find_elements(By.CSS_SELECTOR, "td.change ins")

    # Grouped by page, and an edit's own page: both fit too.
    browser.get(base + "/?group=doc&page=7")
    assert browser.find_elements(By.CSS_SELECTOR, "#queue tr.group-head") and _fits(browser)
    code_edit = next(e for e, old in store_sql(out, "SELECT edit_id, old_text FROM review_queue") if "<code>" in old)
    browser.get(f"{base}/edit/{code_edit}")
    assert browser.find_elements(By.CSS_SELECTOR, "#paragraph code, #diff code") and _fits(browser)
    shown = browser.find_element(By.ID, "paragraph").text + browser.find_element(By.ID, "diff").text
    assert "<code>" not in shown and "</code>" not in shown  # the text box keeps the source, markup and all


@pytest.fixture(scope="module")
def clean_demo(prefect_harness, tmp_path_factory):
    """The demo KB's audit as a user runs it: `kbaudit run` in a folder, the store in ./kbaudit-out."""
    from flows.audit import audit
    from kb.config import Settings
    from tests.conftest import DEMO_TODAY

    base = tmp_path_factory.mktemp("review-demo")
    settings = Settings(
        docs=DEMO_ROOT / "docs", sources=[DEMO_ROOT / "sources"], out=base / "kbaudit-out", today=date.fromisoformat(DEMO_TODAY)
    )
    audit(settings)
    proc, url, log = _serve("kbaudit-out", "--reviewer", "ann", cwd=base)
    try:
        yield base / "kbaudit-out", url
    finally:
        _stop(proc)
        log.unlink(missing_ok=True)


@needs_browser
def test_the_demo_queue_fits_1280_pixels_and_is_the_readme_screenshot(clean_demo, narrow):
    """KBAUDIT_UPDATE_SCREENSHOT=1 writes the page to docs/images/review-app.png (README, docs/review.md)."""
    from selenium.webdriver.common.by import By

    out, base = clean_demo
    browser = narrow
    browser.get(base + "/")
    queued = store_sql(out, "SELECT count(*) FROM review_queue")[0][0]
    assert len(_rows(browser)) == queued > 10
    assert _fits(browser)
    assert browser.find_element(By.CSS_SELECTOR, "header .store").text == "kbaudit-out"
    assert "pytest" not in browser.find_element(By.TAG_NAME, "body").text
    browser.get(base + "/?group=doc")
    assert _fits(browser)
    browser.get(base + "/")
    if os.environ.get("KBAUDIT_UPDATE_SCREENSHOT") == "1":
        browser.save_screenshot(str(ROOT / "docs" / "images" / "review-app.png"))


def test_bench_review_prints_the_first_page_time(tmp_path, capsys):
    from cli.main import main

    assert main(["bench", "review", "--edits", "250", "--json", str(tmp_path / "r.json")]) == 0
    figures = json.loads((tmp_path / "r.json").read_text())
    assert figures["edits"] == 250 and 0 < figures["first_page_seconds"] < 30 and figures["page_bytes"] > 10_000
    assert "first_page_seconds" in capsys.readouterr().out
