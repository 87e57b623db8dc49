"""The `kbaudit` command line.

Exit status: 0 success; 1 findings at or above --fail-on; 2 usage or configuration error;
3 the run itself failed. --json never changes the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import signal
import sys
import threading
from pathlib import Path

from cli.env import QUIET_LOGGERS, prepare_environment
from cli.options import flag_values, params_arguments, params_from, settings_flags
from cli.output import add_format_arguments, chosen_format, dumps_json, format_summary, print_json, render_findings, write_output
from kb import progress
from kb.config import load_settings
from kb.errors import ConfigError, KbauditError, StoreError, UsageError
from kb.evidence.embed import STATIC_DIR, build_static_embedder
from kb.ingest.git import open_kb_repo
from kb.store import Store
from training import train

# Progress of the long stages on stderr (one listener however often main() runs in a process).
CONSOLE = progress.Console()

# Command groups that live in their own modules; each has `register(subparsers)`.
COMMAND_MODULES: tuple[str, ...] = ("cli.report", "cli.review", "cli.serve")

BENCHES = {
    "demo": "bench.demo",
    "claims": "bench.claims",
    "retrieval": "bench.retrieval",
    "labels": "bench.labels",
    "drift": "bench.drift",
    "speed": "bench.speed",
    "deep": "bench.deep",
    "pr": "bench.pr",
    "git": "bench.gitload",
    "findings": "bench.findings",
    "parse": "bench.parse_fidelity",
    "nights": "bench.nights",
    "dask": "bench.dask_scale",
    "review": "bench.review",
    "report": "bench.report",
}


# ---- commands ----------------------------------------------------------------------------
def cmd_run(args) -> int:
    flags = {**flag_values(args), "docs": args.docs}
    settings = load_settings(flags).validate()
    fmt = chosen_format(args)  # a bad --format / --output combination: exit 2 before the run
    if settings.changed_since:  # a bad revision or folder: one line before any flow starts
        open_kb_repo(settings.docs_root, "--changed-since").resolve(settings.changed_since)
        if args.shards and args.shards > 1:
            raise ConfigError("--changed-since audits a few documents in one process; it does not take --shards")

    from flows.audit import audit, audit_sharded, with_task_runner  # why: Prefect (~2 s) only for `run`, not every command

    audit_flow = with_task_runner(audit, settings)  # --task-runner dask without prefect-dask: exit 2 here
    if settings.task_runner != "thread" and not args.verbose:
        logging.getLogger("distributed").setLevel(logging.WARNING)  # the cluster's start/stop chatter

    # The flows get the settings without secrets: Prefect records flow parameters in its
    # database, and the run reads the API key from the environment again.
    if args.shards and args.shards > 1:
        row = audit_sharded(settings.public_dict(), shards=args.shards, deployment=args.deployment)
    elif args.deployment:
        raise ConfigError("--deployment needs --shards N (N > 1)")
    else:
        row = audit_flow(settings.public_dict())
    mirror = f"{settings.out_url}, mirrored in " if settings.out_url else ""
    text = format_summary(row) + f"\nstore: {mirror}{settings.out} (open {settings.out / 'kbaudit.duckdb'} with DuckDB)"
    if fmt == "text":
        rendered = text + "\n"
    elif fmt == "json":
        rendered = dumps_json(row) + "\n"
    else:
        rendered = render_findings(Store(settings.out), row["run_id"], fmt, settings.fail_on, args.junit_per_claim)
    if args.output:
        write_output(args.output, rendered)
        print(text)
    else:
        sys.stdout.write(rendered)
    findings = sum(int(row[label]) for label in settings.fail_on)
    return 1 if findings else 0


def cmd_bench(args) -> int:
    module = args.bench_module
    metrics = module.run(params_from(args, module.Params))
    for name, value in metrics.items():
        print(f"{name:<32}{value:>12.4f}" if isinstance(value, float) else f"{name:<32}{value!s:>12}")
    if args.json:
        Path(args.json).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    return 0


def cmd_train(args) -> int:
    metrics = train.run(params_from(args, train.Params))
    print_json(metrics)
    return 0


def cmd_build_embedder(args) -> int:
    if args.pca_dims < 2:
        raise ConfigError("--pca-dims must be at least 2")
    if args.source and not Path(args.source).is_dir():
        raise ConfigError(f"--source is not a folder: {args.source}")
    manifest = build_static_embedder(Path(args.out) if args.out else STATIC_DIR, source=args.source, pca_dims=args.pca_dims)
    print_json(manifest)
    return 0


# ---- parser ------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbaudit", description="Re-verify a knowledge base against its sources.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="audit a KB folder (no DOCS: the bundled demo KB)")
    run.add_argument("docs", nargs="?", help="folder of KB documents, or git:REPO@REV:PATH (audited read-only)")
    settings_flags(run)
    run.add_argument("--shards", type=int, help="split the documents by hash into N shards, committed as one run")
    run.add_argument("--deployment", help="run each shard as a flow run of this deployment (e.g. audit-shard/kbaudit-shard) on a work pool")
    run.add_argument("--json", action="store_true", help="print the run summary as JSON (--format json)")
    add_format_arguments(run)
    run.set_defaults(func=cmd_run)

    train = sub.add_parser("train-verifier", help="train the offline verifier model")
    try:
        params_arguments(train, importlib.import_module("training.train").Params)
    except ImportError:
        pass
    train.set_defaults(func=cmd_train)

    build = sub.add_parser(
        "build-embedder",
        help="distil the static first-stage embedding model from the MiniLM (offline, a few minutes)",
    )
    build.add_argument(
        "--out", help="model folder to write (default: the one shipped in the package, kb/evidence/weights/minilm-static-256)"
    )
    build.add_argument("--source", help="a local sentence-transformers model to distil (default: the bundled MiniLM)")
    build.add_argument("--pca-dims", type=int, default=256, help="dimensions kept by PCA (default 256)")
    build.set_defaults(func=cmd_build_embedder)

    bench = sub.add_parser("bench", help="benchmarks that print figures")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    for name, module_name in BENCHES.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        sub_parser = bench_sub.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else None)
        params_arguments(sub_parser, module.Params)  # every bench takes typed parameters (a pydantic model)
        sub_parser.add_argument("--json", help="write the metrics to this file as one JSON object")
        sub_parser.set_defaults(func=cmd_bench, bench_module=module)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    prepare_environment()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    progress.add_listener(CONSOLE)
    progress.reset_interrupt()
    in_main = threading.current_thread() is threading.main_thread()
    previous_sigint = signal.signal(signal.SIGINT, progress.on_sigint) if in_main else None
    try:
        return args.func(args)
    except (UsageError, StoreError) as exc:  # the reason is the whole message
        print(f"kbaudit: error: {_one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kbaudit: interrupted; the store is unchanged", file=sys.stderr)
        return 3
    except Exception as exc:  # the run itself failed: one line, then the trace for debugging
        logging.getLogger("kbaudit").debug("run failed", exc_info=True)
        print(f"kbaudit: {args.command} failed: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, KbauditError) else 3
    finally:
        if previous_sigint is not None:
            signal.signal(signal.SIGINT, previous_sigint)


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


if __name__ == "__main__":
    sys.exit(main())
