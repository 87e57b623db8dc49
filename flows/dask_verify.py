"""The verify stage fanned out over a dask cluster (`--task-runner dask` or a scheduler address).

Only verification fans out. Retrieval stays in the flow's process: `retrieve_stage` builds one
index over all sources (BM25 and passage embeddings) before it can search, so a chunk per worker
would rebuild the whole index on every worker, and the retrieval batch is signed as one receipt.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections import Counter
from collections.abc import Iterator, Mapping

from prefect import get_client, task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

from kb.chain import VerifyBatch, verify_stage
from kb.config import Settings
from kb.errors import ConfigError
from kb.log import logger
from kb.records import Claim, Evidence, Verdict

# Claims per chunk sent to one worker.
CHUNK = 512


def task_runner_for(settings: Settings):
    """The Prefect task runner `settings.task_runner` names; None for "thread" (the flows' own)."""
    if settings.task_runner == "thread":
        return None
    try:
        # an optional extra: kbaudit[dask]. Imported from the package itself, so that a missing or
        # blocked prefect_dask raises here even when its submodule was imported before.
        from prefect_dask import DaskTaskRunner  # pyright: ignore[reportPrivateImportUsage]  # prefect_dask re-exports it without __all__
    except ImportError:
        raise ConfigError(
            f"task runner {settings.task_runner!r} needs prefect-dask, which is not installed: pip install 'kbaudit[dask]'"
        ) from None
    if settings.task_runner == "dask":  # a temporary local cluster, one single-threaded process per worker
        return DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1, "processes": True})
    return DaskTaskRunner(address=settings.task_runner.removeprefix("dask://"))


def with_task_runner(flow_, settings: Settings):
    """`flow_` with the task runner the settings ask for: the @flow decorators fix the thread
    runner, so a run that wants dask is started as `with_task_runner(audit, settings)(...)`."""
    runner = task_runner_for(settings)
    return flow_ if runner is None else flow_.with_options(task_runner=runner)


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
    """The verify stage for one chunk of check-worthy claims on a dask worker. Returns the
    verdicts and where they were computed, which the flow logs."""
    return verify_stage(chunk.claims, chunk.evidence, settings), worker_name()


def worker_name() -> str:
    """The dask worker running this code (its address) and its process id; else host and pid."""
    try:
        from distributed import get_worker  # installed with prefect-dask

        return f"{get_worker().address} pid {os.getpid()}"
    except (ImportError, ValueError):
        return f"{socket.gethostname()} pid {os.getpid()}"


@contextlib.contextmanager
def remote_verification(settings: Settings, tag: str = "") -> Iterator[tuple[VerifyBatch | None, int]]:
    """``(verify_batch, batch_size)`` for `kb.chain.run_audit`: ``(None, 512)`` with the thread runner.

    With dask, each batch of uncached claims goes out in waves of about two chunks per worker
    (at most 512 claims a chunk), each chunk a `verify-chunk` task; the verdict cache is read and
    written by the chain in the flow's process (workers need no shared filesystem), one wave at a
    time (resume). A verdict depends on its claim and evidence only, so the verdicts, gathered in
    claim order, are the thread runner's.
    """
    if settings.task_runner == "thread":
        yield None, CHUNK
        return
    from prefect_dask import DaskTaskRunner  # pyright: ignore[reportPrivateImportUsage]  # checked by task_runner_for before the flow started

    with contextlib.ExitStack() as stack:
        context = FlowRunContext.get()
        if context is not None and isinstance(context.task_runner, DaskTaskRunner):
            dask = context.task_runner
        else:
            # Started without with_task_runner() (a deployment runs the flow with its decorator's
            # thread runner): a cluster (or the scheduler connection) for this run only.
            started = task_runner_for(settings)
            assert started is not None  # settings.task_runner is not thread here
            dask = stack.enter_context(started)
        if settings.task_runner == "dask":
            slots = settings.dask_workers
        else:  # an existing scheduler: two chunks per worker thread
            slots = sum(dask.client.nthreads().values())  # pyright: ignore[reportAttributeAccessIssue]  # distributed types the sync/async Client API as a coroutine
            if not slots:
                logger.warning("%sthe dask scheduler at %s has no workers yet; the verify tasks wait for one", tag, dask.address)
        slots = max(slots, 1)
        remote = settings.replace(llm_api_key=None)  # verification needs no secret: keep it off the wire
        workers: Counter = Counter()
        sent = [0, 0]  # claims sent out, check-worthy claims of the run

        def verify_on_workers(batch: list[Claim], evidence: Mapping[str, list[Evidence]]) -> list[Verdict]:
            size = -(-len(batch) // min(len(batch), 2 * slots))
            chunks = [batch[i : i + size] for i in range(0, len(batch), size)]
            with _api_for_workers(settings, tag):
                futures = [
                    # what `verify_chunk_task.submit(...)` does with the flow's own task runner
                    dask.submit(
                        verify_chunk_task,
                        {
                            "chunk": VerifyChunk(chunk, {c.claim_id: evidence[c.claim_id] for c in chunk if c.claim_id in evidence}),
                            "settings": remote,
                        },
                    )
                    for chunk in chunks
                ]
            verdicts = []
            for future in futures:
                chunk_verdicts, worker = future.result()
                verdicts += chunk_verdicts
                workers[worker] += 1
            sent[0] += len(batch)
            sent[1] = len(evidence)  # one entry per check-worthy claim
            return verdicts

        yield verify_on_workers, 2 * slots * CHUNK
        if workers:
            logger.info(
                "%s[4/6] verify: %d of %d claims in %d chunks on %d dask worker(s): %s",
                tag,
                sent[0],
                sent[1],
                sum(workers.values()),
                len(workers),
                ", ".join(f"{w} ({n} chunks)" for w, n in sorted(workers.items())),
            )


@contextlib.contextmanager
def _api_for_workers(settings: Settings, tag: str):
    """The workers report their task runs to the Prefect API in the context each task carries.
    With no PREFECT_API_URL this flow runs on an ephemeral server that the context does not name,
    and each worker would start a server of its own: name this one."""
    if get_current_settings().api.url:
        yield
        return
    with get_client(sync_client=True) as client:
        url = str(client.api_url)
    if settings.task_runner != "dask":
        logger.warning(
            "%sno PREFECT_API_URL: dask workers on other machines cannot reach this run's Prefect "
            "server at %s; set PREFECT_API_URL to a server they can reach",
            tag,
            url,
        )
    with temporary_settings(updates={PREFECT_API_URL: url}):
        yield
