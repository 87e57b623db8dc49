"""Content-addressed stage results, persisted under the store's `cache/` folder.

Each stage result is kept under a key that hashes everything it depends on (the input text,
the code version of the stage, the evidence set...). That one mechanism gives both
incremental runs (an unchanged claim's key is found, its verdict reused) and resume after a
crash (batches that finished before the crash were written here, so the next run finds them).

Values are JSON of the records in `kb.records` (never pickle: the cache lives beside data a
reviewer may copy around); a stage may give its own text codec (the retrieval stage keeps a
claim's verdict digest and each evidence row's canonical receipt line,
`kb.evidence.receipts.encode_evidence`, and reads the text back undecoded with
`get_encoded_many`). Each `put` appends one Parquet shard written atomically; the shards are
merged when there are many.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import secrets
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from kb import records

MAX_SHARDS = 32


def code_version(*modules) -> str:
    """Hash of the source files of the given modules: changes whenever their code changes."""
    digest = hashlib.sha256()
    for module in modules:
        path = getattr(module, "__file__", None)
        if path and os.path.exists(path):
            digest.update(Path(path).read_bytes())
        digest.update(getattr(module, "__name__", "").encode())
    return digest.hexdigest()[:16]


def key_of(*parts: Any) -> str:
    """A cache key: the hash of the parts as JSON, keys sorted, anything else (a date, a path) as
    its str. orjson, not json: a rerun makes a key per claim for each stage, and json.dumps was
    most of their cost. Keys are only ever compared with keys this function made: a value stored
    in a run's tables (the corpus fingerprint) has a digest of its own that does not change."""
    blob = orjson.dumps(parts, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(blob).hexdigest()[:32]


# ---- record codec ----------------------------------------------------------------------
def _encode(value):
    if dataclasses.is_dataclass(value):
        return {"__type__": type(value).__name__, **{f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, dt.date):
        return {"__date__": value.isoformat()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


_NESTED = (dict, list)


@cache
def _record_type(name: str) -> tuple[type, dict[str, bool]]:
    """A record class by name, and for each of its fields whether it holds a tuple (JSON gives
    a list back). Looked up once per class: a cached stage holds tens of thousands of records."""
    cls = getattr(records, name)
    return cls, {f.name: "tuple" in str(f.type) for f in dataclasses.fields(cls)}


def _decode(value):
    if isinstance(value, dict):
        if "__date__" in value:
            return dt.date.fromisoformat(value["__date__"])
        if "__type__" in value:
            cls, tuple_fields = _record_type(value["__type__"])
            kwargs = {}
            for name, raw in value.items():
                if name == "__type__" or name not in tuple_fields:
                    continue
                if type(raw) in _NESTED:  # most fields are strings and numbers: kept as they are
                    raw = _decode(raw)
                    if tuple_fields[name] and isinstance(raw, list):
                        raw = tuple(raw)
                kwargs[name] = raw
            return cls(**kwargs)
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dumps(value) -> str:
    return json.dumps(_encode(value), separators=(",", ":"))


def loads(text: str):
    try:
        parsed = orjson.loads(text)  # twice as fast as json.loads on a rerun's cached verdicts
    except orjson.JSONDecodeError:  # NaN or Infinity, which json.dumps writes and orjson rejects
        parsed = json.loads(text)
    return _decode(parsed)


class ResultCache:
    """A key -> value map for one stage, persisted as Parquet shards.

    Several processes may write to one folder at once (the shards of a sharded run, the workers
    of a Dask run): every write is a new uniquely named file, and merging deletes only the shards
    this instance read or wrote, so it never drops what another process wrote meanwhile."""

    def __init__(self, folder: Path | None, namespace: str, codec: tuple[Callable[[Any], str], Callable[[str], Any]] | None = None):
        """``codec``: (encode, decode) of this stage's values, for a stage whose values have a
        cheaper text form than the generic record JSON; default ``dumps``/``loads``."""
        self.folder = Path(folder) / namespace if folder is not None else None
        self._encode, self._decode = codec or (dumps, loads)
        self._data: dict[str, str] | None = None
        self._mine: set[str] = set()  # shard file names whose entries are all in self._data

    def _load(self) -> dict[str, str]:
        if self._data is None:
            self._data = {}
            if self.folder is not None and self.folder.is_dir():
                for shard in sorted(self.folder.glob("*.parquet")):
                    try:
                        table = pq.read_table(shard)
                    except (OSError, pa.ArrowInvalid):
                        shard.unlink(missing_ok=True)  # a torn shard from a crash: drop it, recompute
                        continue
                    self._data.update(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
                    self._mine.add(shard.name)
        return self._data

    def __len__(self) -> int:
        return len(self._load())

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        data = self._load()
        decode = self._decode
        return {k: decode(data[k]) for k in keys if k in data}

    def get_encoded_many(self, keys: list[str]) -> dict[str, str]:
        """The stored text of the keys that are cached, not decoded (for a caller that decodes
        only the values it turns out to need)."""
        data = self._load()
        return {k: data[k] for k in keys if k in data}

    def put_many(self, items: dict[str, Any]) -> None:
        if not items:
            return
        encoded = {k: self._encode(v) for k, v in items.items()}
        self._load().update(encoded)
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write_shard(list(encoded), list(encoded.values()))
        if len(list(self.folder.glob("*.parquet"))) > MAX_SHARDS:
            merged = set(self._mine)
            data = self._load()
            self._mine = {self._write_shard(list(data), list(data.values()))}
            for name in merged:
                (self.folder / name).unlink(missing_ok=True)

    def _write_shard(self, keys: list[str], values: list[str]) -> str:
        assert self.folder is not None  # callers return early without a folder
        name = f"{dt.datetime.now(dt.UTC).strftime('%Y%m%dT%H%M%S%f')}-{secrets.token_hex(3)}.parquet"
        tmp = self.folder / (name + ".tmp")
        pq.write_table(pa.table({"key": keys, "value": values}), tmp)
        os.replace(tmp, self.folder / name)
        self._mine.add(name)
        return name

    def cached(self, keys: list[str], compute: Callable[[list[int]], list[Any]]) -> tuple[list[Any], int]:
        """Values for `keys`: cached ones loaded, the rest computed (by index) and stored.

        Returns the values in key order and how many were reused.
        """
        found = self.get_many(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            computed = compute(missing)
            fresh = {keys[i]: value for i, value in zip(missing, computed)}
            self.put_many(fresh)
            found.update(fresh)
        return [found[k] for k in keys], len(keys) - len(missing)
