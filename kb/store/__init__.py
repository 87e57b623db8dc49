"""The store: append-only Parquet tables per run, plus a DuckDB file of views over them.

Layout under the output folder::

    <table>/run_id=<id>/part-0.parquet   one partition per completed run
    .staging/<id>/<table>/part-0.parquet a run being written (invisible to readers)
    kbaudit.duckdb                       views over the tables
    .lock                                held by the run that is writing
    cache/                               embeddings and model outputs by content hash

A run becomes visible only when complete: every table is written to staging, each table
folder is renamed into place, and the ``runs`` partition goes last. Views only show rows
whose run has a ``runs`` row, so a crash part-way through the renames leaves nothing visible.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import functools
import json
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kb.errors import ConfigError, StoreDamaged, StoreLocked
from kb.errors import StoreError as StoreError  # re-exported: `from kb.store import StoreError` predates kb.errors
from kb.log import logger
from kb.records import as_row, content_hash, field_names, is_record
from kb.store.schema import APPEND_ONLY, RUN_TABLES, SCHEMAS
from kb.store.views import view_sql

DB_FILE = "kbaudit.duckdb"
WRITE_CHUNK = 20_000  # rows per Parquet row group when staging a table


def _chunks(rows: Iterable, size: int):
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def new_run_id(now: dt.datetime | None = None) -> str:
    """Sortable by time, unique across concurrent starts."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def rows_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A query's rows as dicts, NaN/NaT/NA as None (valid JSON, and `is None` tests hold)."""
    cleaned = frame.astype(object).where(frame.notna(), None)
    return cast(list[dict[str, Any]], cleaned.to_dict(orient="records"))


def to_arrow(table: str, rows: Iterable) -> pa.Table:
    """Records (dataclasses or dicts) to an Arrow table with the table's schema.

    Keys that the schema does not have are dropped; missing ones become null. A column that a
    record type has as a property (``Evidence.evidence_id``) is read from it."""
    schema = SCHEMAS[table]
    column = _column_reader(rows if isinstance(rows, list) else list(rows))
    columns = {name: pa.array(column(name), type=schema.field(name).type) for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def _column_reader(rows: list):
    """``name -> that column's values``. Rows of one record type are read from their instance
    dicts, with no per-row dict built (a run stages tens of thousands of evidence rows)."""
    first = type(rows[0]) if rows else None
    if first is not None and is_record(rows[0]) and all(type(r) is first for r in rows):
        fields = set(field_names(rows[0]))
        instance_dicts = [r.__dict__ for r in rows]

        def column(name: str) -> list:
            if name in fields:
                return [d[name] for d in instance_dicts]
            if isinstance(getattr(first, name, None), property):
                return [getattr(r, name) for r in rows]
            return [None] * len(rows)

        return column
    dicts = [as_row(r) if is_record(r) else cast(Mapping[str, Any], r) for r in rows]
    return lambda name: [d.get(name) for d in dicts]


@functools.cache
def _schemas_fingerprint() -> str:
    return content_hash("\n".join(f"{name}: {schema.to_string()}" for name, schema in sorted(SCHEMAS.items())))


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._lock_fd: int | None = None

    # ---- writing a run -------------------------------------------------------------
    def lock(self) -> None:
        """Take the store's write lock, or refuse at once with the holder's pid."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLocked(f"another kbaudit run is writing to {self.root} (pid {holder}); wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd
        try:
            self.check_files()
        except StoreDamaged:
            self.unlock()
            raise

    def damaged_files(self) -> list[tuple[Path, str]]:
        """Published Parquet files whose footer cannot be read, with the reason (one line)."""
        bad = []
        for table in SCHEMAS:
            folder = self.root / table
            for path in sorted(folder.rglob("*.parquet")) if folder.is_dir() else []:
                try:
                    pq.read_metadata(path)
                except (OSError, pa.ArrowException) as exc:
                    bad.append((path, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__))
        return bad

    def check_files(self) -> None:
        """Refuse to write to a store with a damaged file: the views could not be rebuilt, so a
        run would be committed and then reported as failed (or a decision recorded, then refused)."""
        bad = self.damaged_files()
        if bad:
            path, why = bad[0]
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise StoreDamaged(
                f"store is damaged: {path} is not a readable Parquet file ({why}){more}; "
                "restore it from a backup or move it out of the store, then run again"
            )

    def writer(self) -> str | None:
        """The pid of the process holding the write lock (a running audit, a review command), or
        None when it is free. A probe: a shared lock taken and dropped at once, never waited on."""
        if self._lock_fd is not None:
            return str(os.getpid())
        try:
            fd = os.open(self.root / ".lock", os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def staging(self, run_id: str) -> Path:
        return self.root / ".staging" / run_id

    def clear_stale_staging(self) -> list[str]:
        """Remove what runs that never completed left (the lock is held, so none is live): their
        staging folders, and the partitions of a run whose commit stopped before its `runs` row
        (invisible to the views, but read by anyone opening the Parquet files directly)."""
        base = self.root / ".staging"
        removed = []
        if base.is_dir():
            for child in base.iterdir():
                shutil.rmtree(child, ignore_errors=True)
                removed.append(child.name)
        complete = set(self.run_ids())
        for table in RUN_TABLES:
            folder = self.root / table
            for partition in sorted(folder.glob("run_id=*")) if folder.is_dir() else []:
                run_id = partition.name.split("=", 1)[1]
                if run_id not in complete:
                    shutil.rmtree(partition, ignore_errors=True)
                    if run_id not in removed:
                        removed.append(run_id)
        return removed

    def write_table(self, run_id: str, table: str, rows: Iterable, part: str = "part-0") -> int:
        """Stage one part of a run's table (shards of one run write parts of their own).

        ``rows``: records or dicts, or an Arrow table with the table's columns. Rows are converted
        and written in row groups of WRITE_CHUNK, so a table of a few hundred thousand evidence
        rows never exists as Python dicts and Arrow columns all at once."""
        folder = self.staging(run_id) / table
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{part}.parquet.tmp"
        written = 0
        with pq.ParquetWriter(tmp, SCHEMAS[table]) as writer:
            if isinstance(rows, pa.Table):  # already columns (the evidence a rerun read back)
                data = cast(pa.Table, rows).select(SCHEMAS[table].names).cast(SCHEMAS[table])
                writer.write_table(data, row_group_size=WRITE_CHUNK)
                written = data.num_rows
            else:
                for chunk in _chunks(rows, WRITE_CHUNK):
                    data = to_arrow(table, chunk)
                    writer.write_table(data)
                    written += data.num_rows
            if not written:
                writer.write_table(to_arrow(table, []))
        os.replace(tmp, folder / f"{part}.parquet")
        return written

    def stage_counts(self, run_id: str, part: str, counts: dict) -> None:
        """A shard's summary counts, beside its staged tables (the parent reads them to commit)."""
        folder = self.staging(run_id) / "counts"
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{part}.json.tmp"
        tmp.write_text(json.dumps(counts, sort_keys=True), encoding="utf-8")
        os.replace(tmp, folder / f"{part}.json")

    def staged_counts(self, run_id: str) -> list[dict]:
        folder = self.staging(run_id) / "counts"
        return [json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    def append_table(self, table: str, rows: Iterable, refresh: bool = True) -> Path:
        """Append rows outside any run (e.g. review decisions): one new file, written atomically."""
        data = to_arrow(table, rows)
        folder = self.root / table
        folder.mkdir(parents=True, exist_ok=True)
        name = f"part-{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%f')}-{secrets.token_hex(3)}.parquet"
        tmp = folder / (name + ".tmp")
        pq.write_table(data, tmp)
        os.replace(tmp, folder / name)
        if refresh:
            self.refresh_views()
        return folder / name

    def has_appended_rows(self, table: str) -> bool:
        """Whether an append-only table holds a row, its empty schema files aside (read from the
        files' footers: a rerun asks before querying views over every run). A file whose footer
        cannot be read counts as rows, so the query that follows meets it."""
        folder = self.root / table
        if not folder.is_dir():
            return False
        for path in folder.glob("*.parquet"):
            try:
                if pq.read_metadata(path).num_rows:
                    return True
            except (OSError, pa.ArrowInvalid):
                return True
        return False

    def commit_run(self, run_id: str, runs_row: dict) -> None:
        """Move every staged table into place, then the runs row: the run is now visible."""
        self.write_table(run_id, "runs", [runs_row])
        staged = self.staging(run_id)
        missing = [t for t in RUN_TABLES if not (staged / t).is_dir()]
        for table in missing:
            if table != "runs":
                self.write_table(run_id, table, [])
        for table in [t for t in RUN_TABLES if t != "runs"] + ["runs"]:
            target = self.root / table / f"run_id={run_id}"
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / table, target)
        shutil.rmtree(staged, ignore_errors=True)
        self._refresh_after_commit()

    # ---- reading -------------------------------------------------------------------
    def run_ids(self) -> list[str]:
        folder = self.root / "runs"
        if not folder.is_dir():
            return []
        return sorted(p.name.split("=", 1)[1] for p in folder.iterdir() if p.name.startswith("run_id="))

    def _glob(self, table: str) -> str:
        if table in APPEND_ONLY:
            return str((self.root / table / "*.parquet").resolve())
        return str((self.root / table / "run_id=*" / "*.parquet").resolve())

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        db = self.root / DB_FILE
        if not db.exists():
            raise ConfigError(f"no store at {self.root} (run `kbaudit run` first, or pass --out)")
        if self._views_elsewhere(db):
            self.refresh_views()
        return duckdb.connect(str(db), read_only=read_only)

    def _views_elsewhere(self, db: Path) -> bool:
        """True when the views read another folder's files: the store was copied or moved (a
        restored backup), and its views still name the old, absolute paths; or when they were
        made by a kbaudit without the `full_runs` view that the current views build on."""
        try:
            con = duckdb.connect(str(db), read_only=True)
            try:
                row = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'runs'").fetchone()
                full = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'full_runs'").fetchone()
            finally:
                con.close()
        except duckdb.Error:
            return False
        here = str(self.root.resolve()).replace("'", "''")
        return row is not None and (f"'{here}/runs/" not in row[0] or not (full and full[0]))

    def _schema_files(self) -> None:
        """An empty file with the current schema in each append-only table: every view has a file
        to read from the first run on, and a column added to a table later (read with
        union_by_name) exists for the views even in a store whose rows were all written before."""
        for table in APPEND_ONLY:
            schema = SCHEMAS[table]
            path = self.root / table / f"part-schema-{content_hash(schema.to_string(), 12)}.parquet"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".tmp")
                pq.write_table(to_arrow(table, []), tmp)
                os.replace(tmp, path)

    def refresh_views(self) -> None:
        """(Re)create the DuckDB views; paths are absolute so the file works from any folder."""
        self._make_views(self._view_statements())

    def _view_statements(self) -> list[str]:
        if not self.run_ids():
            return []
        self._schema_files()
        return view_sql(self._glob, self._runs_have_scope())

    def _make_views(self, statements: list[str], mark: str | None = None) -> None:
        """Run the view statements. ``mark``, set on the ``runs`` view once all are made, says
        which statements and table schemas made them (``_refresh_after_commit``)."""
        con = duckdb.connect(str(self.root / DB_FILE))
        try:
            for statement in statements:
                con.execute(statement)
            if mark is not None and statements:
                con.execute(f"COMMENT ON VIEW runs IS '{mark}'")
        finally:
            con.close()
        logger.debug("refreshed views in %s", self.root / DB_FILE)

    def _refresh_after_commit(self) -> None:
        """The views after a commit; skipped when the last commit's refresh made these very
        statements under these schemas. The views read their files by glob when queried, so a new
        run's files (written with the same schemas) are in them already; making them again reads
        every Parquet file's schema, a cost that grows with each run the store keeps."""
        statements = self._view_statements()
        mark = content_hash("\n".join([_schemas_fingerprint(), *statements]))
        if statements and self._views_mark() == mark:
            return
        self._make_views(statements, mark)

    def _views_mark(self) -> str | None:
        db = self.root / DB_FILE
        if not db.exists():
            return None
        con = duckdb.connect(str(db), read_only=True)
        try:
            found = con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'runs' AND NOT internal").fetchall()
        except duckdb.Error:
            return None
        finally:
            con.close()
        return found[0][0] if found else None

    def _runs_have_scope(self) -> bool:
        """Whether some runs file has the `scope` column (a store written by an older kbaudit has none)."""
        glob = self._glob("runs").replace("'", "''")
        con = duckdb.connect()
        try:
            found = con.execute(f"SELECT count(*) FROM parquet_schema('{glob}') WHERE name = 'scope'").fetchone()
        finally:
            con.close()
        return bool(found and found[0])

    def query(self, sql: str, params: list | None = None) -> pd.DataFrame:
        con = self.connect(read_only=True)
        try:
            return con.execute(sql, params or []).df()
        finally:
            con.close()
