"""Stores in object storage: any fsspec URL (``s3://bucket/prefix``, ``gcs://…``, ``memory://…``),
through a local mirror folder.

The store's guarantees rest on POSIX: a run is committed by renaming folders into place, and one
writer is enforced with ``flock``. Object stores have neither, so a remote store is worked on in a
local mirror (a plain store folder, ``Settings.out``) and synchronised around each command:

- ``pull``: before a run, report or review command, download what the remote has and the mirror
  lacks (run partitions, append-only tables, stage and embedding caches, ``keys/``); files of the
  same size are skipped; ``.staging``, ``.lock`` and ``kbaudit.duckdb`` never travel (the views
  are rebuilt in the mirror). The ``runs`` prefix is listed *before* everything else, and only
  runs seen there are downloaded, so a run still being pushed is never half-pulled.
- ``push``: after a run is committed in the mirror, upload what the remote lacks: every table's
  run partitions except ``runs`` first, then append-only files, keys and cache shards, and the
  ``runs/run_id=<id>/`` partitions LAST. The views (here and in any later pull) only show rows
  whose run has a ``runs`` row, so a reader never sees a run without all its rows, and a push
  that fails part-way leaves nothing visible; the next push uploads whatever is still missing.
- A writer lease: a ``.lock`` object with host, pid and time. Advisory only (object stores have
  no flock and this code does not rely on conditional writes): a writer refuses to start while a
  lease younger than ``lease_hours`` exists, and removes its own at the end.

Plain paths and ``file://`` URLs are local stores: no mirror, nothing here is used.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import socket
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kb.config import Settings, check_url, is_url, load_settings, scheme_of
from kb.errors import ConfigError, RemoteError, RemoteLocked, StoreError
from kb.log import logger
from kb.store import DB_FILE, Store
from kb.store.schema import APPEND_ONLY, RUN_TABLES

LEASE = ".lock"
MIRROR_MARK = ".remote"  # in the mirror: the URL it mirrors (one mirror, one remote store)
DEFAULT_LEASE_HOURS = 6.0
# Object stores write an object in one request (S3 PUT, or a multipart upload that appears only
# when completed; GCS and Azure the same; memory:// is a dict assignment): a reader sees the whole
# object or none of it, so files are written under their final name. Other backends (sftp, ftp,
# hdfs...) write a temporary name and move it into place.
ATOMIC_PUT = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oci", "memory")


# ---- which files travel ----------------------------------------------------------------------------
def _kind(rel: str) -> str | None:
    """What a store file is, for syncing: run / runs / append / keys / cache, or None (stays put)."""
    parts = rel.split("/")
    name = parts[-1]
    if name.endswith(".tmp") or name.startswith(".tmp"):
        return None
    if parts[0] in RUN_TABLES and len(parts) == 3 and parts[1].startswith("run_id=") and name.endswith(".parquet"):
        return "runs" if parts[0] == "runs" else "run"
    if parts[0] in APPEND_ONLY and len(parts) == 2 and name.endswith(".parquet"):
        return "append"
    if parts[0] in ("cache", "keys") and len(parts) > 1:
        return parts[0]
    return None


def _run_of(rel: str) -> str:
    return rel.split("/")[1].split("=", 1)[1]


# Upload order: a run's rows, then what is outside runs, then the runs rows that publish them.
PUSH_ORDER = ("run", "append", "keys", "cache", "runs")


@dataclass
class RemoteStore:
    """A remote store URL and the local mirror folder it is worked on in."""

    url: str
    local: Path
    lease_hours: float = DEFAULT_LEASE_HOURS
    _token: str | None = field(default=None, repr=False)

    def __post_init__(self):
        self.url = check_url(self.url)
        self.local = Path(self.local)
        self._fs = None

    # -- the filesystem ---------------------------------------------------------------------------
    @property
    def fs(self):
        """The fsspec filesystem. Options (endpoint, credentials) come from the backend's own
        configuration: for S3 the AWS_* variables (AWS_ENDPOINT_URL for MinIO and friends) or
        ~/.aws, and fsspec's FSSPEC_<SCHEME>_<OPTION> variables; none is stored by kbaudit."""
        if self._fs is None:
            import fsspec

            # A fresh instance: fsspec caches instances and their directory listings.
            self._fs, self._root = fsspec.core.url_to_fs(self.url, skip_instance_cache=True)
            self._root = self._root.rstrip("/")
        return self._fs

    def _remote(self, rel: str) -> str:
        _ = self.fs  # connecting sets self._root
        return f"{self._root}/{rel}"

    def listing(self, prefix: str = "") -> dict[str, int]:
        """Relative path -> size of the remote files under `prefix` (all when empty)."""
        fs = self.fs
        fs.invalidate_cache()
        base = self._root + ("/" + prefix if prefix else "")
        found = fs.find(base, detail=True)  # a missing prefix lists empty; a missing bucket raises
        start = len(self._root) + 1
        return {path[start:]: int(info.get("size") or 0) for path, info in found.items() if info.get("type", "file") == "file"}

    def _mark_mirror(self) -> None:
        """The mirror remembers its URL: a mirror folder reused for another store is refused."""
        mark = self.local / MIRROR_MARK
        if mark.is_file():
            owner = mark.read_text("utf-8").strip()
            if owner != self.url:
                raise ConfigError(
                    f"mirror folder {self.local} belongs to {owner}, not {self.url}; "
                    "set another mirror (KBAUDIT_MIRROR) or remove that folder"
                )
            return
        if self.local.is_dir() and any(p.name not in (LEASE, MIRROR_MARK) for p in self.local.iterdir()):
            raise ConfigError(
                f"mirror folder {self.local} already holds files that are not a mirror of {self.url}; "
                "point KBAUDIT_MIRROR at an empty or new folder"
            )
        self.local.mkdir(parents=True, exist_ok=True)
        mark.write_text(self.url + "\n", "utf-8")

    # -- pull ---------------------------------------------------------------------------------------
    def pull(self) -> int:
        """Download what the remote has and the mirror lacks; returns the number of files."""
        self._mark_mirror()
        try:
            # runs first: every run listed now had all its other files uploaded before its runs row.
            runs = {rel: size for rel, size in self.listing("runs").items() if _kind(rel) == "runs"}
            complete = {_run_of(rel) for rel in runs}
            files = {rel: size for rel, size in self.listing().items() if _kind(rel) not in (None, "runs")}
            files.update(runs)
            wanted = []
            for rel, size in files.items():
                kind = _kind(rel)
                if kind == "run" and _run_of(rel) not in complete:
                    continue  # a run still being pushed (or whose push failed): not yet published
                target = self.local / rel
                if target.is_file() and target.stat().st_size == size:
                    continue
                wanted.append((PUSH_ORDER.index(kind), rel))
            for _, rel in sorted(wanted):
                target = self.local / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".tmp-{secrets.token_hex(4)}-{target.name}")
                self.fs.get_file(self._remote(rel), str(tmp))
                if rel.startswith("keys/"):
                    os.chmod(tmp, 0o600)
                os.replace(tmp, target)
        except (ConfigError, StoreError):
            raise
        except Exception as exc:  # noqa: BLE001 - network, permissions, missing bucket: one clear line
            raise RemoteError(f"could not read the store at {self.url}: {_why(exc)}") from exc
        store = Store(self.local)
        if store.run_ids() and (wanted or not (self.local / DB_FILE).exists()):
            store.refresh_views()
        if wanted:
            logger.info("pulled %d file(s) from %s into the mirror %s", len(wanted), self.url, self.local)
        return len(wanted)

    # -- push ---------------------------------------------------------------------------------------
    def _local_files(self) -> dict[str, int]:
        complete = set(Store(self.local).run_ids())
        files = {}
        for path in self.local.rglob("*"):
            rel = path.relative_to(self.local).as_posix()
            kind = _kind(rel)
            if kind is None or not path.is_file():
                continue
            if kind == "run" and _run_of(rel) not in complete:
                continue  # never publish rows of a run that is not committed here
            files[rel] = path.stat().st_size
        return files

    def push(self, run_id: str | None = None) -> int:
        """Upload what the remote lacks, `runs` partitions last; returns the number of files.

        Cache files the mirror no longer has (merged shards) are removed from the remote.
        """
        what = f"run {run_id}" if run_id else "the store's changes"
        try:
            remote = self.listing()
            local = self._local_files()
            todo = sorted((PUSH_ORDER.index(_kind(rel)), rel) for rel, size in local.items() if remote.get(rel) != size)
            atomic = scheme_of(self.url) in ATOMIC_PUT
            for _, rel in todo:
                target = self._remote(rel)
                if atomic:
                    self.fs.put_file(str(self.local / rel), target)
                else:
                    folder, name = target.rsplit("/", 1)
                    tmp = f"{folder}/.tmp-{secrets.token_hex(4)}-{name}"  # never pulled (see _kind)
                    self.fs.put_file(str(self.local / rel), tmp)
                    self.fs.mv(tmp, target)
            stale = [rel for rel in remote if _kind(rel) == "cache" and rel not in local]
            for rel in stale:
                self.fs.rm_file(self._remote(rel))
        except Exception as exc:  # noqa: BLE001 - network, permissions, missing bucket
            raise RemoteError(
                f"pushing {what} to {self.url} failed ({_why(exc)}); {'it is' if run_id else 'they are'} "
                f"committed in the local mirror "
                f"{self.local}, and the next run (or review decision) pushes whatever the remote lacks"
            ) from exc
        logger.info("pushed %d file(s) of %s to %s", len(todo), what, self.url)
        return len(todo)

    # -- the writer lease ---------------------------------------------------------------------------
    def acquire(self) -> None:
        """Take the writer lease, or refuse with the holder (advisory: see the module notes)."""
        path = self._remote(LEASE)
        try:
            holder = self._read_lease()
            if holder is not None and self._live(holder):
                raise RemoteLocked(
                    f"another kbaudit writer holds the lease on {self.url} (host {holder.get('host')}, "
                    f"pid {holder.get('pid')}, since {holder.get('since')}); wait for it to finish. If it died, "
                    f"remove {self.url}/{LEASE}, or wait until the lease is {self.lease_hours:g} h old"
                )
            if holder is not None:
                logger.warning(
                    "taking over a stale lease on %s (host %s, pid %s, since %s)",
                    self.url,
                    holder.get("host"),
                    holder.get("pid"),
                    holder.get("since"),
                )
            token = secrets.token_hex(8)
            lease = {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "token": token,
                "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            self.fs.pipe_file(path, json.dumps(lease).encode("utf-8"))
            mine = self._read_lease()
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise RemoteError(f"could not take the writer lease on {self.url}: {_why(exc)}") from exc
        if not mine or mine.get("token") != token:  # another writer wrote its lease at the same moment
            raise RemoteLocked(f"another kbaudit writer took the lease on {self.url} at the same time; try again")
        self._token = token

    def release(self) -> None:
        if self._token is None:
            return
        try:
            holder = self._read_lease()
            if holder is not None and holder.get("token") == self._token:
                self.fs.rm_file(self._remote(LEASE))
        except Exception as exc:  # noqa: BLE001 - the lease expires on its own
            logger.warning(
                "could not remove the writer lease %s/%s (%s); it expires after %g h", self.url, LEASE, _why(exc), self.lease_hours
            )
        self._token = None

    def _read_lease(self) -> dict | None:
        self.fs.invalidate_cache()
        try:
            data = self.fs.cat_file(self._remote(LEASE))
        except FileNotFoundError:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return {"host": "?", "pid": "?", "since": "? (unreadable lease)"}

    def _live(self, holder: dict) -> bool:
        try:
            since = dt.datetime.fromisoformat(str(holder.get("since")))
        except ValueError:
            return True
        if dt.datetime.now(dt.UTC) - since > dt.timedelta(hours=self.lease_hours):
            return False
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return _pid_alive(holder["pid"])  # a writer on this host that died
        return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _why(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# ---- the entry points the flows and commands use ------------------------------------------------
def for_settings(settings: Settings) -> RemoteStore | None:
    """The remote store of a run's settings (None for a local store)."""
    if not settings.out_url:
        return None
    return RemoteStore(settings.out_url, settings.out, settings.lease_hours)


@contextmanager
def writing(store: Store, remote: RemoteStore | None):
    """A store opened for writing: its lock and, for a URL store, the writer lease and the mirror
    pulled up to date and checked. Runs and review commands both go through here; pushing what
    they wrote is theirs to do (a run pushes after its commit)."""
    store.lock()
    try:
        if remote is None:
            yield store
            return
        remote.acquire()
        try:
            remote.pull()
            store.check_files()
            yield store
        finally:
            remote.release()
    finally:
        store.unlock()


def resolve_out(out: str | Path) -> tuple[Path, RemoteStore | None]:
    """A command's --out: a local folder as is; a URL through the settings (mirror, lease hours)."""
    if not is_url(str(out)):
        return Path(out), None
    settings = load_settings({"out": str(out)})
    return settings.out, for_settings(settings)


def open_for_reading(out: str | Path) -> Path:
    """The folder a read-only command opens: for a URL, the mirror, pulled first."""
    root, remote = resolve_out(out)
    if remote is not None:
        remote.pull()
        if not Store(root).run_ids():
            raise ConfigError(f"no store at {remote.url} (no completed run there; run `kbaudit run --out {remote.url}` first)")
    return root
