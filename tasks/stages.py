"""Thin Prefect tasks over the core stages in `kb.chain`. Each works on a batch."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from kb import chain as pipeline
from kb.config import Settings
from kb.records import Claim, Document, Evidence, Verdict


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_task(settings: Settings, shard: tuple[int, int] = (0, 1)):
    return pipeline.ingest_stage(settings, shard)


@task(name="split-claims", cache_policy=NO_CACHE)
def split_task(documents: list[Document], caches: pipeline.Caches):
    return pipeline.split_stage(documents, caches)


@task(name="load-sources", cache_policy=NO_CACHE)
def sources_task(settings: Settings):
    return pipeline.sources_stage(settings)


@task(name="retrieve", cache_policy=NO_CACHE)
def retrieve_task(sources, claims: list[Claim], settings: Settings, caches: pipeline.Caches, run_id: str, cache_dir: Path, key_dir: Path):
    evidence, reused = pipeline.retrieve_stage(sources, claims, settings, caches, cache_dir)
    stamped, receipt = pipeline.sign_evidence(run_id, evidence, key_dir)
    return stamped, receipt, reused


@task(name="verify", cache_policy=NO_CACHE)
def verify_task(claims: list[Claim], evidence: dict[str, list[Evidence]], settings: Settings, caches: pipeline.Caches):
    return pipeline.verify_stage(claims, evidence, settings, caches)


class VerifyChunk:
    """The claims of one verify chunk and their evidence, sent to a dask worker.

    An opaque object (not a list, dict or dataclass), so Prefect passes it through without
    walking every record for futures, as `quote()` does in-process: a quote() does not survive
    dask's serialisation (it arrives as a bare tuple; prefect-dask issue #43).
    """

    __slots__ = ("claims", "evidence")

    def __init__(self, claims: list[Claim], evidence: dict[str, list[Evidence]]):
        self.claims = claims
        self.evidence = evidence

    def __getstate__(self):
        return self.claims, self.evidence

    def __setstate__(self, state):
        self.claims, self.evidence = state


@task(name="verify-chunk", cache_policy=NO_CACHE)
def verify_chunk_task(chunk: VerifyChunk, settings: Settings):
    """The verify stage for one chunk of check-worthy claims on a dask worker (flows/audit.py fans
    the chunks out and keeps the verdict cache). Returns the verdicts and where they were
    computed, which the flow logs."""
    return pipeline.verify_stage(chunk.claims, chunk.evidence, settings), worker_name()


def worker_name() -> str:
    """The dask worker running this code (its address) and its process id; else host and pid."""
    try:
        from distributed import get_worker

        return f"{get_worker().address} pid {os.getpid()}"
    except (ImportError, ValueError):
        return f"{socket.gethostname()} pid {os.getpid()}"


@task(name="escalate", cache_policy=NO_CACHE)
def escalate_task(claims: list[Claim], evidence, verdicts: list[Verdict], settings: Settings, lessons):
    return pipeline.escalate_stage(claims, evidence, verdicts, settings, lessons)


@task(name="correct", cache_policy=NO_CACHE)
def correct_task(documents: list[Document], claims: list[Claim], verdicts: list[Verdict], evidence, settings: Settings, suppressed):
    return pipeline.correct_stage(documents, claims, verdicts, evidence, settings, suppressed)


@task(name="apply-edits", cache_policy=NO_CACHE)
def apply_task(store, docs_root: Path):
    from kb.correct.review import apply_edits

    return apply_edits(store, docs_root, actor="kbaudit run --apply")


@task(name="document-status", cache_policy=NO_CACHE)
def status_task(documents: list[Document], claims: list[Claim], verdicts: list[Verdict]):
    return pipeline.status_stage(documents, claims, verdicts)


@task(name="stage-tables", cache_policy=NO_CACHE)
def stage_task(store, run_id: str, result: pipeline.AuditResult, part: str):
    return pipeline.stage_tables(store, run_id, result, part)
