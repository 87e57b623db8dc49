"""Snapshots of a Retriever's index (the BM25 matrices, the static vectors) on disk, named by
everything they were built from, so a rerun against the same corpus reads them back."""

from __future__ import annotations

import functools
import hashlib
import os
import uuid
from importlib.metadata import version
from pathlib import Path

import numpy as np

from kb.claims import text as claim_text
from kb.evidence import bm25, passages
from kb.log import logger

SNAPSHOT_FORMAT = 1  # bump when the snapshot's arrays change meaning
SNAPSHOTS_KEPT = 3


@functools.cache
def _code_hash() -> str:
    """The code a snapshot's arrays come from (the retriever, passages, BM25, the tokeniser): a
    snapshot built by other code is not read back."""
    h = hashlib.sha256(Path(__file__).with_name("retrieve.py").read_bytes())
    for module in (passages, bm25, claim_text):
        h.update(Path(str(module.__file__)).read_bytes())
    return h.hexdigest()[:16]


def snapshot_path(index_cache: Path, params: tuple, texts: list[str], sentences: list[str]) -> Path:
    """The snapshot file for an index: a hash of the indexed texts, the sentences, the index's
    parameters and this code."""
    h = hashlib.sha256()
    h.update(repr((SNAPSHOT_FORMAT, *params, _code_hash(), version("bm25s"))).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\0")
    for sent in sentences:
        h.update(sent.encode("utf-8"))
        h.update(b"\1")
    return index_cache / "index" / f"{h.hexdigest()[:32]}.npz"


def write_snapshot(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Written whole or not at all (a temporary file renamed into place)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{path.name}")
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)  # pyright: ignore[reportArgumentType]  # the keys are ours (p_*, s_*, static), never savez's own allow_pickle
        os.replace(tmp, path)
        # Older corpora's snapshots: only the newest few are worth their disk.
        for old in sorted(path.parent.glob("*.npz"), key=lambda f: f.stat().st_mtime)[:-SNAPSHOTS_KEPT]:
            old.unlink(missing_ok=True)
    except OSError as exc:  # a read-only or full cache costs the next run a rebuild, nothing more
        logger.warning("index snapshot not written to %s: %s", path.parent, exc)
