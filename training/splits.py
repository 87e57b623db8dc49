"""Deterministic validation splits shared by the verifier training and the benches.

The rule (also written into the training manifest, ``kb/verify/weights/manifest.json``):

* ``vitaminc``: a record is validation when ``bucket(page) < 15``, so whole Wikipedia pages go
  to one side: the validation part is page-disjoint from the training part.
* ``fever``: ``bucket(claim text)``, so both records of a repeated claim fall on one side.
* ``scifact_train``: ``bucket(str(claim id))``.

``bucket(key) = int(sha256("kbaudit-split-v1|" + dataset + "|" + key)[:8], 16) % 100``.
Roughly 15% of each set is validation. Everything else may be trained on; SciFact
``claims_dev.jsonl`` is never trained on (see ``training/train.py``).

A bench asks :func:`trained_on` (or compares :func:`file_fingerprint` with the manifest) to know
whether a file it reports on was trained on: if so only its validation part counts, otherwise
(an unseen file of the same format) all of it counts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kb.verify.model import MANIFEST as MANIFEST_NAME
from kb.verify.model import WEIGHTS_DIR

SPLIT_VERSION = "kbaudit-split-v1"
VALIDATION_PERCENT = 15
DATASETS = ("vitaminc", "fever", "scifact_train")
MANIFEST = WEIGHTS_DIR / MANIFEST_NAME

SPLIT_RULE = (
    f"validation iff int(sha256('{SPLIT_VERSION}|<dataset>|<key>')[:8], 16) % 100 < "
    f"{VALIDATION_PERCENT}; key: vitaminc -> record['page'] (page-disjoint), "
    "fever -> record['claim'] (stripped), scifact_train -> str(record['id'])"
)


def bucket(dataset: str, key: str) -> int:
    digest = hashlib.sha256(f"{SPLIT_VERSION}|{dataset}|{key}".encode()).hexdigest()
    return int(digest[:8], 16) % 100


def split_key(dataset: str, record: dict) -> str:
    if dataset == "vitaminc":
        return str(record.get("page", ""))
    if dataset == "fever":
        return str(record.get("claim", "")).strip()
    if dataset == "scifact_train":
        return str(record.get("id", ""))
    raise ValueError(f"unknown dataset {dataset!r}; expected one of {DATASETS}")


def is_validation(dataset: str, record: dict) -> bool:
    """True when ``record`` of ``dataset`` belongs to the held-out validation part."""
    return bucket(dataset, split_key(dataset, record)) < VALIDATION_PERCENT


def file_fingerprint(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes (how the manifest names the files trained on)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(path: str | Path | None = None) -> dict:
    p = Path(path) if path else MANIFEST
    if not p.exists():
        return {}
    return json.loads(p.read_text(encoding="utf-8"))


def trained_fingerprints(manifest: dict | None = None) -> dict[str, str]:
    """fingerprint -> dataset name, for every file the shipped verifier was trained on."""
    m = load_manifest() if manifest is None else manifest
    return {f["sha256"]: f["dataset"] for f in m.get("train_files", [])}


def trained_on(path: str | Path, manifest: dict | None = None) -> str | None:
    """The dataset name if the file at ``path`` was trained on (only its validation part may
    then be reported), else None (an unseen file: all of it counts)."""
    return trained_fingerprints(manifest).get(file_fingerprint(path))
