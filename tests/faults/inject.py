"""`kbaudit` with a fault injected, for the fault suite's child processes.

    python tests/faults/inject.py run DOCS --sources ... --out ...

``KBAUDIT_FAULT`` picks the fault; each prints a ``FAULT-POINT <name>`` line (flushed) when the
run reaches it, so the test can act at a known place instead of guessing with sleeps:

- ``stall-in-retrieval``: the retrieval stage starts, announces itself and stalls (the test
  sends SIGKILL).
- ``stall-in-commit``: the store commit stalls after moving three of the run's tables into
  place, before the ``runs`` row (the test sends SIGKILL).
- ``hold-before-commit:FILE``: the run stalls before its store commit, holding the store lock,
  until FILE exists.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def _announce(name: str) -> None:
    print(f"FAULT-POINT {name}", flush=True)


def _install(fault: str) -> None:
    if fault == "stall-in-retrieval":
        import kb.chain.stages

        def stalled(*args, **kwargs):
            _announce("retrieval")
            time.sleep(600)
            raise SystemExit(99)

        kb.chain.stages.make_retriever = stalled
    elif fault == "stall-in-commit":
        real = os.replace
        moved = []

        def replace(src, dst, *args, **kwargs):
            real(src, dst, *args, **kwargs)
            if ".staging" in str(src) and ".staging" not in str(dst) and "run_id=" in str(dst):
                moved.append(dst)
                if len(moved) == 3:
                    _announce("commit")
                    time.sleep(600)

        os.replace = replace
    elif fault.startswith("hold-before-commit:"):
        import kb.store

        flag = Path(fault.split(":", 1)[1])
        real_commit = kb.store.Store.commit_run

        def commit_run(self, run_id, runs_row):
            _announce("before-commit")
            while not flag.exists():
                time.sleep(0.1)
            return real_commit(self, run_id, runs_row)

        kb.store.Store.commit_run = commit_run
    elif fault:
        raise SystemExit(f"unknown KBAUDIT_FAULT {fault!r}")


if __name__ == "__main__":
    _install(os.environ.get("KBAUDIT_FAULT", ""))
    from cli.main import main

    sys.exit(main(sys.argv[1:]))
