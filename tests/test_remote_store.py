"""Stores at an fsspec URL (kb/store/remote.py): memory:// and a real S3 API (moto on loopback), real
runs of the demo KB at depth D0 under the Prefect test harness, real DuckDB on fresh mirrors."""

from __future__ import annotations

import json
import secrets
import shutil
from datetime import date
from pathlib import Path

import duckdb
import fsspec
import pytest

from kb.config import DEMO_ROOT, ConfigError, Settings, load_settings
from kb.store.remote import RemoteError, RemoteLocked, RemoteStore
from tests.conftest import DEMO_TODAY

# A few demo pages: every stage runs, and a run takes seconds.
SMALL_DOCS = ("backups.md", "pricing.md", "rate-limits.md")


@pytest.fixture(scope="module")
def small_docs(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("kb") / "docs"
    docs.mkdir()
    for name in SMALL_DOCS:
        shutil.copy(DEMO_ROOT / "docs" / name, docs / name)
    return docs


def _settings(docs: Path, out: str, mirror: Path) -> Settings:
    return Settings(docs=docs, sources=[DEMO_ROOT / "sources"], out=out, mirror=mirror, depth="D0", today=date.fromisoformat(DEMO_TODAY))


def _memory_url() -> str:
    return f"memory://kbaudit-test-{secrets.token_hex(4)}/store"


def _clone(url: str) -> str:
    """A copy of a memory:// store at a new URL (object by object, as another bucket would hold it)."""
    new = _memory_url()
    fs, root = fsspec.core.url_to_fs(url)
    _, new_root = fsspec.core.url_to_fs(new)
    for path in fs.find(root):
        fs.pipe_file(new_root + path[len(root) :], fs.cat_file(path))
    return new


@pytest.fixture(scope="module")
def seeded(prefect_harness, small_docs, tmp_path_factory):
    """One run into a memory:// store: (url, its mirror, the run's row, a pristine copy's url).
    Tests that need a store with a run clone the pristine copy instead of running from scratch."""
    from flows.audit import audit

    url = _memory_url()
    mirror = tmp_path_factory.mktemp("seed") / "mirror"
    row = audit(_settings(small_docs, url, mirror))
    return url, mirror, row, _clone(url)


def _remote_runs(url: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(url)
    return sorted(p.rsplit("=", 1)[1] for p in fs.ls(f"{root}/runs", detail=False))


def _views(mirror: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(mirror / "kbaudit.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# ---- runs against memory:// -------------------------------------------------------------------
@pytest.mark.slow
def test_memory_url_second_run_on_a_fresh_mirror_pulls_and_is_incremental(seeded, small_docs, tmp_path):
    from flows.audit import audit

    url, _, first, _ = seeded  # the first run, into its own mirror
    assert _remote_runs(url) == [first["run_id"]]
    assert not (tmp_path / "mirror-2").exists()

    second = audit(_settings(small_docs, url, tmp_path / "mirror-2"))  # pulls runs and caches first
    assert second["reused"] > 0 and second["reused"] == second["checkworthy"]
    assert _remote_runs(url) == sorted([first["run_id"], second["run_id"]])
    rows, distinct = _views(tmp_path / "mirror-2", "SELECT count(*), count(DISTINCT claim_id) FROM latest_verdicts")[0]
    assert rows == distinct == second["checkworthy"] > 0
    assert _views(tmp_path / "mirror-2", "SELECT count(*) FROM runs")[0][0] == 2
    fs, root = fsspec.core.url_to_fs(url)
    names = {p[len(root) + 1 :] for p in fs.find(root)}
    assert any(n.startswith("cache/stages/") for n in names)
    assert not any(n.startswith((".staging", "kbaudit.duckdb")) or n == ".lock" for n in names)  # lease released


@pytest.mark.slow
def test_review_decision_through_a_url_is_pushed(seeded, tmp_path, monkeypatch):
    """`kbaudit review approve --out URL` pulls into its mirror, records, and pushes the decision."""
    from cli.main import main

    _, seed_mirror, _, pristine = seeded
    url = _clone(pristine)
    queued = _views(seed_mirror, "SELECT edit_id FROM review_queue ORDER BY edit_id")
    assert queued, "the small KB should queue at least one edit for review"
    monkeypatch.setenv("KBAUDIT_MIRROR", str(tmp_path / "reviewer"))
    assert main(["review", "approve", queued[0][0], "--out", url, "--reviewer", "ann"]) == 0
    fresh = tmp_path / "fresh"
    RemoteStore(url, fresh).pull()
    assert _views(fresh, "SELECT edit_id, decision, reviewer FROM review_decisions") == [(queued[0][0], "approve", "ann")]
    fs, root = fsspec.core.url_to_fs(url)
    assert not fs.exists(f"{root}/.lock")


@pytest.mark.slow
def test_runs_row_uploaded_last_so_a_failed_push_publishes_nothing_until_the_next_run(seeded, small_docs, tmp_path, monkeypatch):
    from fsspec.implementations.memory import MemoryFileSystem

    from flows.audit import audit

    _, _, first, pristine = seeded
    url = _clone(pristine)  # a store with one run; this test's mirror starts empty

    real_put = MemoryFileSystem.put_file
    uploaded = []

    def put_file(self, lpath, rpath, *args, **kwargs):
        if "/runs/run_id=" in rpath:
            raise PermissionError("Access Denied (injected)")
        uploaded.append(rpath)
        return real_put(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", put_file)
    with pytest.raises(RemoteError, match="committed in the local mirror .* next run"):
        audit(_settings(small_docs, url, tmp_path / "mirror"))
    monkeypatch.setattr(MemoryFileSystem, "put_file", real_put)

    mirror_runs = sorted(p.name.split("=", 1)[1] for p in (tmp_path / "mirror" / "runs").iterdir())
    assert len(mirror_runs) == 2  # committed locally
    failed = mirror_runs[1]
    assert any(f"/verdicts/run_id={failed}/" in p for p in uploaded)  # its rows went up...
    assert _remote_runs(url) == [first["run_id"]]  # ...its runs row did not

    fresh = tmp_path / "fresh"
    RemoteStore(url, fresh).pull()
    assert _views(fresh, "SELECT DISTINCT run_id FROM verdicts") == [(first["run_id"],)]
    assert not (fresh / "verdicts" / f"run_id={failed}").exists()  # unpublished rows are not pulled

    third = audit(_settings(small_docs, url, tmp_path / "mirror"))  # pushes what the remote lacks
    assert _remote_runs(url) == sorted([first["run_id"], failed, third["run_id"]])
    RemoteStore(url, fresh).pull()
    assert [r[0] for r in _views(fresh, "SELECT run_id FROM runs ORDER BY run_id")] == _remote_runs(url)
    assert len(_views(fresh, "SELECT DISTINCT run_id FROM verdicts")) == 3


# ---- a real S3 API ------------------------------------------------------------------------------
@pytest.fixture
def s3_endpoint(monkeypatch):
    """moto's S3 server on loopback; credentials and endpoint the way a user sets them (AWS_*)."""
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield endpoint
    server.stop()


@pytest.mark.slow
def test_s3_run_then_sql_on_a_fresh_mirror(prefect_harness, small_docs, s3_endpoint, tmp_path, monkeypatch, capsys):
    import s3fs

    from cli.main import main
    from flows.audit import audit

    s3 = s3fs.S3FileSystem(skip_instance_cache=True)
    s3.mkdir("kbaudit-bucket")
    row = audit(_settings(small_docs, "s3://kbaudit-bucket/kb", tmp_path / "mirror"))

    s3.invalidate_cache()
    keys = set(s3.find("kbaudit-bucket/kb"))
    assert f"kbaudit-bucket/kb/runs/run_id={row['run_id']}/part-0.parquet" in keys
    assert f"kbaudit-bucket/kb/verdicts/run_id={row['run_id']}/part-0.parquet" in keys
    assert any(k.startswith("kbaudit-bucket/kb/cache/") for k in keys)
    assert "kbaudit-bucket/kb/.lock" not in keys and not any("/.staging/" in k for k in keys)

    monkeypatch.setenv("KBAUDIT_MIRROR", str(tmp_path / "reader-mirror"))
    capsys.readouterr()
    code = main(["sql", "SELECT run_id, claims FROM runs", "--out", "s3://kbaudit-bucket/kb", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == [{"run_id": row["run_id"], "claims": row["claims"]}]
    assert (tmp_path / "reader-mirror" / "kbaudit.duckdb").is_file()


# ---- leases and settings (no run) ----------------------------------------------------------------
def test_a_live_lease_refuses_a_second_writer_and_a_stale_one_is_taken_over(tmp_path):
    url = _memory_url()
    holder = RemoteStore(url, tmp_path / "a")
    holder.acquire()
    with pytest.raises(RemoteLocked, match=r"another kbaudit writer holds the lease on memory://.*pid \d+"):
        RemoteStore(url, tmp_path / "b").acquire()
    holder.release()
    second = RemoteStore(url, tmp_path / "b")
    second.acquire()  # free again
    fs, root = fsspec.core.url_to_fs(url)
    fs.pipe_file(f"{root}/.lock", json.dumps({"host": "elsewhere", "pid": 1, "since": "2020-01-01T00:00:00+00:00"}).encode())
    third = RemoteStore(url, tmp_path / "c")
    third.acquire()  # older than lease_hours: taken over
    third.release()
    assert not fs.exists(f"{root}/.lock")


def test_url_settings_keep_a_local_mirror_and_survive_the_deployment_round_trip(tmp_path):
    settings = load_settings({"out": "memory://bucket/kb"}, cwd=tmp_path, environ={"KBAUDIT_MIRROR": str(tmp_path / "m")})
    assert settings.out_url == "memory://bucket/kb" and settings.out == tmp_path / "m"
    again = Settings.from_public_dict(json.loads(json.dumps(settings.public_dict())))
    assert (again.out_url, again.out) == (settings.out_url, settings.out)
    default = load_settings({"out": "memory://bucket/kb/"}, cwd=tmp_path, environ={})
    assert default.out.parent.name == "stores" and default.out_url == "memory://bucket/kb"
    assert load_settings({"out": f"file://{tmp_path}/store"}, cwd=tmp_path, environ={}).out == tmp_path / "store"
    assert load_settings({"out": f"file://{tmp_path}/store"}, cwd=tmp_path, environ={}).out_url is None


def test_a_mirror_folder_serves_one_url(tmp_path):
    RemoteStore(_memory_url(), tmp_path / "m").pull()
    with pytest.raises(ConfigError, match="belongs to memory://"):
        RemoteStore(_memory_url(), tmp_path / "m").pull()


def test_missing_backend_names_the_package_to_install(tmp_path, monkeypatch):
    real = fsspec.get_filesystem_class

    def without_s3(protocol):
        if protocol in ("s3", "s3a"):
            raise ImportError("Install s3fs to access S3")
        return real(protocol)

    monkeypatch.setattr(fsspec, "get_filesystem_class", without_s3)
    with pytest.raises(ConfigError, match=r"out: s3://bucket/kb needs the fsspec backend .*pip install 'kbaudit\[s3\]'"):
        load_settings({"out": "s3://bucket/kb"}, cwd=tmp_path, environ={})


def test_unknown_scheme_and_docs_urls_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown storage scheme 'nosuch'"):
        load_settings({"out": "nosuch://x"}, cwd=tmp_path, environ={})
    with pytest.raises(ConfigError, match="docs: URLs such as s3://b/kb are not supported yet"):
        load_settings({"docs": "s3://b/kb"}, cwd=tmp_path, environ={})
