"""`kbaudit review list|show|approve|reject|import|apply|serve`: the human review queue
(kb.correct.review); `serve` is the same queue in the browser (review_app)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

from cli.output import print_json
from cli.report import OUT_HELP, with_pd_options
from kb.config import ConfigError
from kb.correct import git as gitfix
from kb.correct import review
from kb.correct.review import write_atomic
from kb.records import RISKS
from kb.store import Store
from kb.store.remote import open_for_reading, resolve_out, writing

LIST_COLUMNS = ["edit_id", "risk", "state", "doc_id", "old_text", "new_text", "owner"]


def _store(args):
    """The store to read (no lock): --out, or for a store URL its mirror, pulled."""

    store = Store(open_for_reading(args.out))
    if not store.root.is_dir():
        raise ConfigError(f"no store at {store.root} (run `kbaudit run` first, or pass --out)")
    return store


@contextmanager
def _writing(args):
    """The store opened for a command that records decisions or edits (kb.store.remote.writing); for a
    store URL, what the command appended is pushed afterwards."""

    root, remote = resolve_out(args.out)
    if remote is None and not root.is_dir():
        raise ConfigError(f"no store at {root} (run `kbaudit run` first, or pass --out)")
    with writing(Store(root), remote) as store:
        if remote is not None and not store.run_ids():
            raise ConfigError(f"no store at {remote.url} (no completed run there; run `kbaudit run --out {remote.url}` first)")
        yield store
        if remote is not None:
            remote.push()


def cmd_list(args) -> int:
    frame = review.queue(_store(args), risk=args.risk, doc=args.doc)
    if args.json:
        print(frame.to_json(orient="records", date_format="iso", default_handler=str))
    elif frame.empty:
        print("review queue is empty")
    else:
        with_pd_options(lambda: print(frame[LIST_COLUMNS].to_string(index=False)))
        print(f"\n{len(frame)} edit(s) waiting for review")
    return 0


def cmd_show(args) -> int:
    row = review.show(_store(args), args.edit)
    if args.json:
        print_json(row)
        return 0
    for key in (
        "edit_id",
        "doc_id",
        "state",
        "risk",
        "risk_score",
        "risk_factors",
        "label_before",
        "label_after",
        "evidence_source",
        "evidence_date",
        "evidence_sentence",
        "reason",
    ):
        print(f"{key:<18}{row.get(key)}")
    print()
    print(row["diff"] or "(no change: needs a human rewrite)")
    print("history:")
    for step in row["history"]:
        print(f"  {step['happened_at']}  {step['state']:<14}{step.get('actor') or step.get('origin') or ''}  {step.get('note') or ''}")
    return 0


def _decide(args, decision: str) -> int:
    with _writing(args) as store:
        rows = review.decide(store, args.edits, decision, reviewer=args.reviewer, note=args.note or "")
    for row in rows:
        print(f"{row['decision']}d {row['edit_id']} ({row['reviewer']})".replace("rejectd", "rejected"))
    return 0


def cmd_approve(args) -> int:
    return _decide(args, "approve")


def cmd_reject(args) -> int:
    return _decide(args, "reject")


def cmd_import(args) -> int:
    with _writing(args) as store:
        rows = review.import_decisions(store, args.file, reviewer=args.reviewer)
    counts = {d: sum(r["decision"] == d for r in rows) for d in ("approve", "reject")}
    print(f"imported {len(rows)} decision(s): {counts['approve']} approved, {counts['reject']} rejected")
    return 0


def _git_change(args) -> int:
    """--patch FILE / --branch NAME: the accepted edits as a diff or a commit (kb.correct.git)."""
    store = _store(args)
    if args.patch is not None:
        text, change = gitfix.patch(store, args.docs)
        if text and args.patch == "-":
            print(text, end="")
        elif text:
            target = Path(args.patch).resolve()
            if not target.parent.is_dir():
                raise ConfigError(f"cannot write the patch: folder {target.parent} does not exist")
            write_atomic(target, text.encode("utf-8"))
    else:
        change = gitfix.branch(store, args.branch, args.docs)
    if args.json:
        print(
            json.dumps(
                {
                    "edits": change.edits,
                    "commit": change.commit,
                    "branch": args.branch,
                    "patch": args.patch,
                    "outcomes": [{k: v for k, v in o.__dict__.items() if k != "diff"} for o in change.outcomes],
                },
                indent=2,
                default=str,
            ),
            file=sys.stderr if args.patch == "-" else sys.stdout,
        )
        return 0
    report = sys.stderr if args.patch == "-" else sys.stdout  # keep stdout a clean patch
    for o in change.outcomes:
        if o.status == "conflicted":
            print(f"{'conflicted':<20}{o.doc_id}  {len(o.edit_ids)} edit(s)  {o.reason} (left out)", file=report)
    if not change.files:
        print("nothing to apply" + ("; no patch written" if args.patch is not None else "; no branch created"), file=report)
    elif args.patch is not None:
        where = "to stdout" if args.patch == "-" else f"to {args.patch}"
        print(f"wrote {change.edits} edit(s) in {len(change.files)} file(s) {where} (git apply it; no KB file was changed)", file=report)
    else:
        print(
            f"committed {change.edits} edit(s) in {len(change.files)} file(s) on new branch {args.branch} "
            f"({(change.commit or '')[:12]}); the work tree and the checked-out branch are unchanged",
            file=report,
        )
    return 0


def cmd_apply(args) -> int:
    if args.patch is not None or args.branch is not None:
        if args.dry_run:
            raise ConfigError("--dry-run does not go with --patch or --branch (neither writes a KB file)")
        return _git_change(args)
    if args.dry_run:
        outcomes = review.apply_edits(_store(args), args.docs, dry_run=True, actor=args.reviewer)
    else:
        with _writing(args) as store:
            outcomes = review.apply_edits(store, args.docs, dry_run=False, actor=args.reviewer)
    if args.json:
        print(json.dumps([o.__dict__ for o in outcomes], indent=2, default=str))
        return 0
    for o in outcomes:
        verb = {"would_apply": "would apply", "recovered": "applied (recovered)"}.get(o.status, o.status)
        print(f"{verb:<20}{o.doc_id}  {len(o.edit_ids)} edit(s)  {o.reason}")
        if args.dry_run and o.diff:
            print(o.diff)
    if not outcomes:
        print("nothing to apply")
    return 0


def cmd_serve(args) -> int:
    from review_app import serve  # why: the web app's imports (~2 s) only for `review serve`

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {args.port}")
    return serve(args.out, host=args.host, port=args.port, token=args.token, reviewer=args.reviewer)


def register(sub) -> None:
    review = sub.add_parser("review", help="the human review queue: list, show, approve, reject, import, apply, serve")
    review_sub = review.add_subparsers(dest="review_command", required=True)

    def command(name: str, func, help_text: str, *, decides: bool = False):
        parser = review_sub.add_parser(name, help=help_text)
        parser.add_argument("--out", default="kbaudit-out", help=OUT_HELP)
        if decides:
            parser.add_argument("--reviewer", help="who decides (default: the login name)")
        parser.set_defaults(func=func)
        return parser

    p = command("list", cmd_list, "edits waiting for a human, riskiest first")
    p.add_argument("--risk", choices=RISKS)
    p.add_argument("--doc", help="only this document (its path relative to the KB root)")
    p.add_argument("--json", action="store_true")

    p = command("show", cmd_show, "one edit: evidence, risk, diff and history")
    p.add_argument("edit", help="edit id (or a unique prefix of 6+ characters)")
    p.add_argument("--json", action="store_true")

    p = command("approve", cmd_approve, "approve edits", decides=True)
    p.add_argument("edits", nargs="+", metavar="EDIT")
    p.add_argument("--note", default="")

    p = command("reject", cmd_reject, "reject edits (they are not proposed again unless the evidence changes)", decides=True)
    p.add_argument("edits", nargs="+", metavar="EDIT")
    p.add_argument("--note", required=True, help="why (required)")

    p = command("import", cmd_import, "decisions from a CSV or Parquet file of edit_id, decision, note", decides=True)
    p.add_argument("file")

    p = command("apply", cmd_apply, "write approved and auto-accepted edits to the KB files", decides=True)
    p.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    p.add_argument("--docs", help="the KB folder (default: the newest run's)")
    git = p.add_mutually_exclusive_group()
    git.add_argument(
        "--patch", metavar="FILE", help="write the edits as one unified diff for `git apply` (- for stdout); no KB file is changed"
    )
    git.add_argument(
        "--branch",
        metavar="NAME",
        help="commit the edits on a new git branch NAME of the KB's repository, "
        "based on HEAD; the work tree and the checked-out branch are not changed",
    )
    p.add_argument("--json", action="store_true")

    p = command("serve", cmd_serve, "the review queue in the browser (a local web app)", decides=True)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    p.add_argument("--token", help="access token the browser must present (default: $KBAUDIT_REVIEW_TOKEN); required off loopback")
