"""The review app: routes, safety (token, CSRF, CSP, host check) and the store access it serialises.

Every store access of the app (reads and writes) runs under one lock of the process: DuckDB
refuses a read-only and a read-write connection to one file at once in the same process, and two
writers in one process would see each other's `flock` as a running audit. Between processes (two
app instances, a CLI reviewer, an audit) the store's write lock decides, as for the CLI.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import duckdb
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kb.correct import review
from kb.errors import ConfigError, StoreError, StoreLocked
from kb.evidence.receipts import verify_stored_evidence
from kb.store import Store
from kb.store.remote import open_for_reading, resolve_out, writing
from kb.verify.policy import AGED_ACTION, REMOVED_ACTION
from reports.export import document_text
from reports.html import highlight
from reports.queries import rows
from reports.textdiff import rich, text_diff

TOKEN_ENV = "KBAUDIT_REVIEW_TOKEN"
AUTH_COOKIE, CSRF_COOKIE, REVIEWER_COOKIE = "kbaudit_auth", "kbaudit_csrf", "kbaudit_reviewer"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
FACETS = ("kind", "owner", "risk", "label", "doc", "source", "age")
AGES = (1, 7, 30, 90)  # "waiting at least N days"
SORTS = {"risk": "riskiest first", "age": "oldest first", "doc": "by document", "score": "highest risk score"}
FLASH = {"approved": "Approved", "rejected": "Rejected", "bulk-approved": "Approved", "bulk-rejected": "Rejected"}
RISK_ORDER = {"high": 0, "medium": 1, "low": 2}
PAGE_SIZE = 100  # edits a queue page lists
FACET_SHOWN = 20  # values a facet lists before "more"
# What a reviewer decides differs by finding: a value to replace, a sentence to delete because its
# fact is gone from the sources, a claim the newest source still states but that is past its
# freshness window (re-confirm it, usually: reject the edit), a sentence to rewrite by hand.
KINDS = {"changed": "value changed", "removed": "removed", "still-true": "still true", "rewrite": "needs rewrite"}
KIND_HELP = {
    "changed": "the newest source gives another value: the edit replaces it",
    "removed": "the newest sources no longer state this fact: the edit deletes the sentence",
    "still-true": "the newest source still states it, but is older than the claim's freshness window: re-confirm it",
    "rewrite": "no single value to replace: rewrite the sentence from the evidence, or reject",
}
KIND_SQL = f"""CASE WHEN q.method = 'delete' OR starts_with(coalesce(v.action, ''), '{REMOVED_ACTION}') THEN 'removed'
                    WHEN coalesce(v.action, '') = '{AGED_ACTION}' THEN 'still-true'
                    WHEN q.state = 'needs_rewrite' OR q.old_text = q.new_text THEN 'rewrite'
                    ELSE 'changed' END"""
GROUPS = {"doc": ("doc_id", "page"), "kind": ("kind", "finding kind")}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host.strip("[]") in ("localhost", "::1"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def breakable(name: str) -> Markup:
    """A path, escaped, that may wrap after its separators but not inside a word."""
    return Markup(re.sub(r"([/_-])", r"\1<wbr>", str(escape(name))))


def _digest(secret: bytes, value: str) -> str:
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()


class ReviewApp:
    def __init__(self, out: str | Path, *, token: str | None = None, reviewer: str | None = None, verifier=None):
        self.out = str(out)
        self.root, self.remote = resolve_out(out)
        self.root = Path(open_for_reading(out)) if self.remote is not None else self.root
        if not (self.root / "kbaudit.duckdb").exists():
            raise ConfigError(f"no store at {self.root} (run `kbaudit run` first, or pass --out)")
        self.token = token or None
        self.reviewer = reviewer or review.default_reviewer()
        self.verifier = verifier  # None: the run's own verifier (kb.correct.review.run_verifier)
        self.secret = secrets.token_bytes(32)
        self._io = threading.Lock()
        self.verifying = threading.Lock()  # one verification at a time: the model is shared
        self._receipts: dict[str, list[str]] = {}
        self.templates = Environment(
            loader=PackageLoader("review_app", "templates"), autoescape=select_autoescape(default=True, default_for_string=True)
        )
        self.templates.filters["breakable"] = breakable
        self.templates.filters["rich"] = lambda raw: Markup(rich(raw or ""))

    # ---- store access ----------------------------------------------------------------------
    @contextmanager
    def reading(self):
        with self._io:
            yield Store(self.root)

    @contextmanager
    def writing(self):
        """The store opened for a decision or an apply, as `kbaudit review` opens it."""
        with self._io:
            with writing(Store(self.root), self.remote) as store:
                yield store
                if self.remote is not None:
                    self.remote.push()

    # ---- safety ----------------------------------------------------------------------------
    def auth_cookie(self) -> str:
        return _digest(self.secret, "auth:" + (self.token or ""))

    def authorised(self, request: Request) -> bool:
        if not self.token:
            return True
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and hmac.compare_digest(header[7:].strip().encode(), self.token.encode()):
            return True
        return hmac.compare_digest(request.cookies.get(AUTH_COOKIE, ""), self.auth_cookie())

    def csrf_for(self, request: Request) -> str:
        return _digest(self.secret, "csrf:" + request.state.csrf_cookie)

    async def form(self, request: Request):
        """The POSTed form, after the CSRF check (403 without the page's token)."""
        form = await request.form()
        cookie = request.cookies.get(CSRF_COOKIE)
        sent = str(form.get("csrf") or "")
        if not cookie or not sent or not hmac.compare_digest(sent, _digest(self.secret, "csrf:" + cookie)):
            raise HTTPException(403, "the form's CSRF token is missing or wrong: reload the page and try again")
        origin = request.headers.get("origin")
        if origin and origin != "null" and origin.split("://", 1)[-1] != request.headers.get("host"):
            raise HTTPException(403, f"request from another origin ({origin}) refused")
        return form

    def reviewer_of(self, request: Request) -> str:
        name = (request.cookies.get(REVIEWER_COOKIE) or "").strip()
        return name[:64] if name else self.reviewer

    # ---- pages -----------------------------------------------------------------------------
    def render(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        with self.reading() as store:
            writer = store.writer()
        context.setdefault("flash", None)
        page = self.templates.get_template(name).render(
            csrf=self.csrf_for(request), reviewer=self.reviewer_of(request), store=self.out, writer=writer, **context
        )
        return HTMLResponse(page, status_code=status)

    def _queue_frame(self, store: Store) -> pd.DataFrame:
        """The queue in `kbaudit review list` order, one query: what the list page needs of each edit."""
        if not store.run_ids():
            raise ConfigError(f"no completed run in {store.root} (run `kbaudit run` first)")
        frame = store.query(
            f"""SELECT q.edit_id, q.doc_id, q.title, q.owner, q.risk, q.risk_score, q.start, q.state, q.old_text,
                       q.new_text, coalesce(q.label_before, '(none)') AS label, q.evidence_source, q.token,
                       f.first_seen, {KIND_SQL} AS kind
                FROM (SELECT *, {review.STATE_TOKEN_SQL} AS token FROM review_queue) q
                LEFT JOIN (SELECT edit_id, min(happened_at) AS first_seen FROM edit_history WHERE origin = 'run' GROUP BY 1) f
                       ON f.edit_id = q.edit_id
                LEFT JOIN verdicts v ON v.run_id = q.run_id AND v.claim_id = q.claim_id
                ORDER BY {review.QUEUE_ORDER_SQL}"""
        )
        now = pd.Timestamp.now(tz="UTC")
        seen = pd.to_datetime(frame.first_seen, utc=True)
        frame["age_days"] = (now - seen).dt.days.fillna(0).astype(int)
        frame["source"] = [str(s).split("@", 1)[0] if isinstance(s, str) else "(none)" for s in frame.evidence_source]
        frame["owner"] = frame.owner.fillna("(no owner)")
        frame["doc"] = frame.doc_id
        return frame

    @staticmethod
    def _filtered(frame: pd.DataFrame, filters: dict[str, str], skip: str | None = None) -> pd.DataFrame:
        for facet, value in filters.items():
            if facet == skip or not value:
                continue
            if facet == "age":
                frame = frame.loc[frame.age_days >= int(value)]
            else:
                frame = frame.loc[frame[facet] == value]
        return frame

    def queue_data(self, params) -> dict:
        filters = {f: str(params.get(f) or "") for f in FACETS}
        if filters["age"] and not filters["age"].isdigit():
            filters["age"] = ""
        sort = params.get("sort") if params.get("sort") in SORTS else "risk"
        group = params.get("group") if params.get("group") in GROUPS else ""
        page = int(params["page"]) if str(params.get("page") or "").isdigit() and int(params["page"]) > 0 else 1
        with self.reading() as store:
            frame = self._queue_frame(store)
            accepted = store.query(
                "SELECT count(*) AS n FROM edit_state WHERE state IN ('auto', 'approved') AND run_id = (SELECT max(run_id) FROM runs)"
            ).n.iloc[0]
        counts = {}
        for facet in FACETS:
            rest = self._filtered(frame, filters, skip=facet)
            if facet == "age":
                counts[facet] = [(str(a), f"waiting {a}+ days", int((rest.age_days >= a).sum())) for a in AGES]
            elif facet == "kind":
                values = rest.kind.value_counts()
                counts[facet] = [(k, KINDS[k], int(values[k])) for k in KINDS if k in values]
            else:
                values = rest[facet].value_counts().sort_index() if not rest.empty else pd.Series(dtype=int)
                counts[facet] = [(str(v), str(v), int(n)) for v, n in values.items()]
        shown = self._filtered(frame, filters)
        if sort == "age":
            shown = shown.sort_values(["age_days", "doc_id", "start"], ascending=[False, True, True], kind="stable")
        elif sort == "doc":
            shown = shown.sort_values(["doc_id", "start"], kind="stable")
        elif sort == "score":
            shown = shown.sort_values(["risk_score", "doc_id"], ascending=[False, True], kind="stable")
        groups: dict[str, int] = {}
        if group:
            key = shown.doc_id if group == "doc" else shown.kind.map(list(KINDS).index)
            shown = shown.assign(_group=key).sort_values("_group", kind="stable").drop(columns="_group")
            groups = {str(k): int(n) for k, n in shown[GROUPS[group][0]].value_counts().items()}
        pages = max(1, -(-len(shown) // PAGE_SIZE))
        page = min(page, pages)
        first = (page - 1) * PAGE_SIZE
        window = shown.iloc[first : first + PAGE_SIZE]
        items = window.astype(object).where(window.notna(), None).to_dict(orient="records")
        previous = None
        for item in items:
            item["diff_html"] = text_diff(item["old_text"] or "", item["new_text"] or "")
            item["kind_text"] = KINDS[item["kind"]]
            value = str(item[GROUPS[group][0]]) if group else ""
            item["group_head"] = (value, KINDS.get(value, value), groups.get(value, 0)) if group and value != previous else None
            previous = value
        active = {k: v for k, v in filters.items() if v}
        view = {**active, **({"sort": sort} if sort != "risk" else {}), **({"group": group} if group else {})}

        def link(**change) -> str:  # the view with one thing changed, on its first page unless `page` is given
            query = {**view, **change}
            return "/?" + urlencode({k: v for k, v in query.items() if v and v != 1 and not (k == "sort" and v == "risk")})

        return {
            "items": items,
            "edit_ids": shown.edit_id.tolist(),
            "shown": len(shown),
            "total": len(frame),
            "filters": filters,
            "active": active,
            "counts": counts,
            "sort": sort,
            "sorts": SORTS,
            "group": group,
            "groups": GROUPS,
            "page": page,
            "pages": pages,
            "first": first + 1 if items else 0,
            "last": first + len(items),
            "link": link,
            "accepted": int(accepted),
            "query": urlencode(active),
        }

    def _receipt_problems(self, store: Store, run_id: str) -> list[str]:
        if run_id not in self._receipts:
            self._receipts[run_id] = verify_stored_evidence(store, run_id)
        return self._receipts[run_id]

    def edit_data(self, edit_id: str, query: str = "") -> dict:
        with self.reading() as store:
            row = review.show(store, edit_id)
            edit_id = row["edit_id"]
            token = store.query(f"SELECT {review.STATE_TOKEN_SQL} AS token FROM edit_state WHERE edit_id = ?", [edit_id]).token.iloc[0]
            params = [row["run_id"], row["claim_id"]]
            claim = (rows(store, "SELECT * FROM claims_history WHERE run_id = ? AND claim_id = ?", params) or [{}])[0]
            verdict = (rows(store, "SELECT * FROM verdicts WHERE run_id = ? AND claim_id = ?", params) or [{}])[0]
            evidence = rows(store, "SELECT * FROM evidence WHERE run_id = ? AND claim_id = ? ORDER BY rank", params)
            run = rows(store, "SELECT docs_root FROM runs WHERE run_id = ?", [row["run_id"]])[0]
            doc = (
                rows(store, "SELECT title, owner FROM documents_history WHERE run_id = ? AND doc_id = ?", [row["run_id"], row["doc_id"]])
                or [{}]
            )[0]
            problems = self._receipt_problems(store, row["run_id"])
            order = self._queue_frame(store)
        if query:  # the next edit in the same filtered view the reviewer came from
            order = self._filtered(order, {k: v[0] for k, v in parse_qs(query).items() if k in FACETS})
        ids = order.edit_id.tolist()
        later = ids[ids.index(edit_id) + 1 :] if edit_id in ids else ids
        deciding = set(verdict.get("evidence_ids") or [])
        for ev in evidence:
            ev["html"] = highlight(ev.get("passage") or "", ev.get("sentence") or "")
            ev["deciding"] = ev.get("evidence_id") in deciding or (
                ev.get("sentence") and ev.get("sentence") == row.get("evidence_sentence")
            )
            bad = [
                p
                for p in problems
                if (ev.get("receipt_id") and ev["receipt_id"] in p) or (ev.get("evidence_id") and ev["evidence_id"] in p)
            ]
            if bad:
                ev["receipt_status"], ev["receipt_detail"] = "not verified", bad[0]
            elif ev.get("receipt_id"):
                ev["receipt_status"], ev["receipt_detail"] = "verified", f"receipt {ev['receipt_id']}: signature and contents check"
            else:
                ev["receipt_status"], ev["receipt_detail"] = "no receipt", "this evidence row carries no retrieval receipt"
        text = document_text(run.get("docs_root"), row["doc_id"], row["base_version"])
        paragraph = None
        if text is not None:
            text = text[1:] if text.startswith("\ufeff") else text
            start, end = int(row["start"]), int(row["end"])
            if text[start:end] == row["old_text"]:
                left = text.rfind("\n\n", 0, start)
                right = text.find("\n\n", end)
                paragraph = {
                    "before": text[left + 2 if left >= 0 else 0 : start],
                    "claim": row["old_text"],
                    "after": text[end : right if right >= 0 else len(text)],
                }
        row.update(
            token=token,
            claim=claim,
            verdict=verdict,
            evidence=evidence,
            paragraph=paragraph,
            doc=doc,
            diff_html=text_diff(row["old_text"] or "", row["new_text"] or ""),
            draft_diff_html=text_diff(row["old_text"] or "", row.get("drafted_text") or ""),
            next_id=later[0] if later else None,
            query=query,
            decidable=row["state"] in review.REJECTABLE,
            approvable=row["state"] in review.APPROVABLE,
        )
        return row


def create_app(
    out: str | Path, *, token: str | None = None, reviewer: str | None = None, host: str = "127.0.0.1", verifier=None
) -> Starlette:
    ra = ReviewApp(out, token=token, reviewer=reviewer, verifier=verifier)

    def flash_of(params) -> str | None:
        """The line a redirect after a decision asks for; only known kinds, ids and counts (a
        link elsewhere cannot put words of its own on the page)."""
        kind, of, n = params.get("flash"), params.get("of", ""), params.get("n", "")
        if kind not in FLASH:
            return None
        if kind.startswith("bulk"):
            return f"{FLASH[kind]} {n} edit(s)" if n.isdigit() else None
        return f"{FLASH[kind]} {of}" if re.fullmatch(r"[0-9a-f]{6,64}", of) else None

    async def queue_page(request: Request):
        data = await run_in_threadpool(ra.queue_data, request.query_params)
        return ra.render(request, "queue.html", flash=flash_of(request.query_params), facet_shown=FACET_SHOWN, kind_help=KIND_HELP, **data)

    async def edit_page(request: Request):
        data = await run_in_threadpool(ra.edit_data, request.path_params["edit_id"], request.query_params.get("back", ""))
        return ra.render(request, "edit.html", e=data, flash=flash_of(request.query_params), check=None)

    def _after(edit_id: str, kind: str, back: str) -> RedirectResponse:
        data = ra.edit_data(edit_id, back)
        target = f"/edit/{data['next_id']}" if data["next_id"] else "/"
        query = {"flash": kind, "of": data["edit_id"]}
        if back and data["next_id"]:
            query["back"] = back
        return RedirectResponse(target + "?" + urlencode(query), status_code=303)

    async def decide(request: Request):
        form = await ra.form(request)
        edit_id, action = request.path_params["edit_id"], request.path_params["action"]
        reviewer, note, back = ra.reviewer_of(request), str(form.get("note") or ""), str(form.get("back") or "")
        expected = {edit_id: str(form.get("token") or "")}

        if action == "edit":
            text = str(form.get("text") or "")

            def verify_edited():
                # The verifier runs outside the store lock (seconds, the first time the model
                # loads): the page's state token is checked again when the approval is written.
                with ra.reading() as store:
                    full = review.resolve(store, edit_id)
                    review.check_unchanged(store, {full: expected[edit_id]})
                    claim, evidence = review.recheck_inputs(store, full, text)
                    run_id = store.query("SELECT run_id FROM edit_state WHERE edit_id = ?", [full]).run_id.iloc[0]
                    verifier, today = review.run_verifier(store, run_id)
                with ra.verifying:
                    verdict = (ra.verifier or verifier).verify([claim], {claim.claim_id: evidence}, today)[0]
                with ra.writing() as store:
                    written = review.record_edited(
                        store, full, text, verdict, reviewer=reviewer, note=note, origin="web", expected={full: expected[edit_id]}
                    )
                return full, verdict, written

            full, verdict, written = await run_in_threadpool(verify_edited)
            data = await run_in_threadpool(ra.edit_data, full, back)
            check = {
                "label": verdict.label,
                "confidence": verdict.confidence,
                "rationale": verdict.rationale,
                "accepted": bool(written),
                "text": str(form.get("text") or "").strip(),
            }
            return ra.render(
                request,
                "edit.html",
                status=200 if written else 422,
                e=data,
                check=check,
                flash="Approved with your text" if written else None,
            )

        if action not in ("approve", "reject"):
            raise HTTPException(404)

        def run():
            with ra.writing() as store:
                full = review.resolve(store, edit_id)
                review.decide(store, [full], action, reviewer=reviewer, note=note, origin="web", expected={full: expected[edit_id]})
            return _after(full, "approved" if action == "approve" else "rejected", back)

        return await run_in_threadpool(run)

    async def bulk(request: Request):
        form = await ra.form(request)
        action = str(form.get("action") or "")
        if action not in ("approve", "reject"):
            raise HTTPException(400, "bulk action must be approve or reject")
        expected = {}
        for item in form.getlist("item"):
            edit_id, _, token = str(item).partition(" ")
            expected[edit_id] = token
        if not expected:
            raise HTTPException(400, "no edits selected")

        def run():
            with ra.writing() as store:
                written = review.decide(
                    store,
                    list(expected),
                    action,
                    reviewer=ra.reviewer_of(request),
                    note=str(form.get("note") or ""),
                    origin="web",
                    expected=expected,
                )
            return len(written)

        n = await run_in_threadpool(run)
        back = str(form.get("back") or "")
        query = back + ("&" if back else "") + urlencode({"flash": f"bulk-{action}d".replace("rejectd", "rejected"), "n": n})
        return RedirectResponse("/?" + query, status_code=303)

    async def apply_page(request: Request):
        def plan():
            with ra.reading() as store:
                return review.apply_edits(store, dry_run=True, actor=ra.reviewer_of(request))

        outcomes = await run_in_threadpool(plan)
        return ra.render(request, "apply.html", outcomes=outcomes, done=False, diffs={o.doc_id: o.diff for o in outcomes})

    async def apply_now(request: Request):
        await ra.form(request)

        def run():
            with ra.writing() as store:
                return review.apply_edits(store, dry_run=False, actor=ra.reviewer_of(request))

        outcomes = await run_in_threadpool(run)
        return ra.render(request, "apply.html", outcomes=outcomes, done=True, diffs={})

    async def set_reviewer(request: Request):
        form = await ra.form(request)
        name = " ".join(str(form.get("reviewer") or "").split())[:64]
        back = str(form.get("back") or "/")
        response = RedirectResponse(back if back.startswith("/") and not back.startswith("//") else "/", status_code=303)
        if name:
            response.set_cookie(REVIEWER_COOKIE, name, httponly=True, samesite="strict", max_age=365 * 86400)
        return response

    async def error_page(request: Request, exc: Exception):
        if isinstance(exc, HTTPException):
            status, message = exc.status_code, exc.detail
        elif isinstance(exc, review.DecisionConflict):
            status, message = 409, f"Conflict: {exc}"
        elif isinstance(exc, StoreLocked):
            status, message = 423, f"The store is locked: {exc}. Nothing was recorded; try again when it has finished."
        elif isinstance(exc, ConfigError):
            status, message = 400, str(exc)
        elif isinstance(exc, (StoreError, duckdb.Error)):
            status, message = (
                503,
                f"The store cannot be read right now ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); reload in a moment.",
            )
        else:
            raise exc
        try:
            return ra.render(request, "message.html", status=status, message=message, code=status)
        except Exception:  # the store itself is unreadable: a plain page
            return Response(f"{status}: {message}\n", status_code=status, media_type="text/plain")

    class Safety(BaseHTTPMiddleware):
        async def dispatch(self, request: Request, call_next):
            cookie = request.cookies.get(CSRF_COOKIE)
            request.state.csrf_cookie = cookie or secrets.token_urlsafe(24)
            given = request.query_params.get("token")
            if ra.token and given is not None:
                if not hmac.compare_digest(given.encode(), ra.token.encode()):
                    response = Response("403: wrong token\n", status_code=403, media_type="text/plain")
                else:
                    rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                    response = RedirectResponse(request.url.path + ("?" + rest if rest else ""), status_code=303)
                    response.set_cookie(AUTH_COOKIE, ra.auth_cookie(), httponly=True, samesite="strict")
            elif not ra.authorised(request):
                response = Response(
                    "401: this review app needs its token: open the URL with ?token=TOKEN (or send Authorization: Bearer TOKEN)\n",
                    status_code=401,
                    media_type="text/plain",
                )
            else:
                response = await call_next(request)
            if not cookie:
                response.set_cookie(CSRF_COOKIE, request.state.csrf_cookie, httponly=True, samesite="strict")
            response.headers["Content-Security-Policy"] = CSP
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["Cache-Control"] = "no-store"
            return response

    async def no_icon(request: Request):
        return Response(status_code=204)

    static = Path(__file__).resolve().parent / "static"
    middleware = [Middleware(Safety)]
    if is_loopback(host):  # a page on another site resolving its name to 127.0.0.1 (DNS rebinding) is refused
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES)))
    app = Starlette(
        routes=[
            Route("/", queue_page),
            Route("/edit/{edit_id}", edit_page),
            Route("/edit/{edit_id}/{action}", decide, methods=["POST"]),
            Route("/bulk", bulk, methods=["POST"]),
            Route("/apply", apply_page),
            Route("/apply", apply_now, methods=["POST"]),
            Route("/reviewer", set_reviewer, methods=["POST"]),
            Route("/favicon.ico", no_icon),
            Mount("/static", StaticFiles(directory=static), name="static"),
        ],
        middleware=middleware,
        # Handled inside the middleware stack, so error pages get the same headers (CSP) as pages.
        exception_handlers={cls: error_page for cls in (HTTPException, ConfigError, StoreError, duckdb.Error)},
    )
    app.state.review = ra
    return app


def serve(out: str, host: str = "127.0.0.1", port: int = 8765, token: str | None = None, reviewer: str | None = None) -> int:
    import uvicorn

    token = token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"--host {host} is not a loopback address: give --token TOKEN (or set {TOKEN_ENV}) so only reviewers with it can decide"
        )
    app = create_app(out, token=token, reviewer=reviewer, host=host)
    shown = f"[{host}]" if ":" in host else host
    suffix = "?token=<the token>" if token else ""
    print(f"kbaudit review: serving {app.state.review.root} at http://{shown}:{port}/{suffix} (Ctrl-C to stop)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
    return 0
