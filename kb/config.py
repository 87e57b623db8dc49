"""The one configuration object.

Precedence, lowest to highest: built-in defaults, `kbaudit.toml` in the working folder (else
`[tool.kbaudit]` in `pyproject.toml`), `KBAUDIT_*` environment variables, command-line flags.
Secrets (the LLM API key) are read from the environment only and never serialised.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from kb.errors import ConfigError
from kb.records import LABELS
from kb.store import urls

DEPTHS = ("D0", "D1", "D2", "D3", "D4", "D5")
DEPTH_NAMES = {"fast": "D1", "standard": "D2", "strict": "D3", "audit": "D5"}
DEMO_ROOT = Path(__file__).parent / "demo"


@dataclass
class Settings:
    docs: Path | None = None  # None: the bundled demo KB
    sources: list[Path] = field(default_factory=list)
    out: Path = Path("kbaudit-out")  # the store folder; for a URL store, its local mirror
    out_url: str | None = None  # a remote store (fsspec URL, e.g. s3://bucket/kbaudit): kb/remote.py
    mirror: Path | None = None  # the mirror folder of a URL store; None: ~/.cache/kbaudit/stores/<hash>
    lease_hours: float = 6.0  # a URL store's writer lease older than this is taken over
    depth: str = "D1"
    full: bool = False
    apply: bool = False
    top_k: int = 5
    model_path: str | None = None  # a local CrossEncoder replacing the shipped verifier
    embed_model_path: str | None = None  # a local sentence-transformers model
    today: date | None = None  # pinned "now" for freshness checks; None: the real date
    max_doc_bytes: int = 64 * 1024 * 1024
    shard_size: int = 200  # documents per task batch
    task_runner: str = "thread"  # "thread"; "dask" (a local cluster); a scheduler: "tcp://host:8786" or "dask://tcp://host:8786"
    dask_workers: int = 2  # worker processes of the local dask cluster
    fail_on: tuple[str, ...] = ()
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)

    def __post_init__(self):
        # `out` given as a URL: remember it in `out_url` and work in the local mirror folder, so
        # that `out` is always a folder (file:// URLs are plain folders).
        if isinstance(self.out, str) and "://" in self.out:
            local = urls.local_path(self.out)
            if local is None:
                self.out_url = urls.check_url(self.out)
                local = Path(self.mirror) if self.mirror is not None else urls.default_mirror(self.out_url)
            self.out = local
        elif isinstance(self.out, str):
            self.out = Path(self.out)

    @property
    def docs_root(self) -> Path:
        return self.docs if self.docs is not None else DEMO_ROOT / "docs"

    @property
    def sources_roots(self) -> list[Path]:
        if self.sources:
            return list(self.sources)
        if self.docs is None:
            return [DEMO_ROOT / "sources"]
        return []

    @property
    def run_date(self) -> date:
        return self.today or date.today()

    def validate(self) -> "Settings":
        if self.depth in DEPTH_NAMES:
            self.depth = DEPTH_NAMES[self.depth]
        if self.depth not in DEPTHS:
            raise ConfigError(f"depth must be one of {', '.join(DEPTHS)} or {', '.join(DEPTH_NAMES)}; got {self.depth!r}")
        if not self.docs_root.is_dir():
            raise ConfigError(f"documents folder not found: {self.docs_root}")
        if not self.sources_roots:
            raise ConfigError("no sources given: pass --sources DIR (a folder, .jsonl or .parquet)")
        for src in self.sources_roots:
            if not src.exists():
                raise ConfigError(f"sources not found: {src}")
        if self.top_k < 1:
            raise ConfigError("top_k must be at least 1")
        self.task_runner = self.task_runner.strip()
        address = self.task_runner.removeprefix("dask://")
        if self.task_runner not in ("thread", "dask") and not re.fullmatch(r"(tcp|tls)://[^\s/:]+:\d+|[^\s/:]+:\d+", address):
            raise ConfigError(
                "task_runner must be thread, dask (a local dask cluster) or a dask scheduler address "
                f"such as tcp://host:8786 (or dask://tcp://host:8786); got {self.task_runner!r}"
            )
        if self.dask_workers < 1:
            raise ConfigError("dask_workers must be at least 1")
        bad = [label for label in self.fail_on if label not in LABELS]
        if bad:
            raise ConfigError(f"--fail-on takes labels from {', '.join(LABELS)}; got {', '.join(bad)}")
        return self

    def public_dict(self) -> dict:
        """Settings as JSON-able data, secrets left out (this is what the store records)."""
        data = {}
        for f in dataclasses.fields(self):
            if f.name == "llm_api_key":
                continue
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, list):
                value = [str(v) for v in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, date):
                value = value.isoformat()
            data[f.name] = value
        return data

    @classmethod
    def from_public_dict(cls, data: dict) -> "Settings":
        """Inverse of public_dict (a deployment passes settings as JSON); the API key comes
        from the environment again."""
        values = {k: _coerce(k, v) for k, v in data.items() if k in _FIELD_TYPES and k != "llm_api_key"}
        values["llm_api_key"] = os.environ.get("KBAUDIT_LLM_API_KEY") or None
        return cls(**values)

    def config_hash(self) -> str:
        keys = ("depth", "top_k", "model_path", "embed_model_path")
        public = self.public_dict()
        blob = json.dumps({k: public[k] for k in keys}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


_FIELD_TYPES = {f.name: f for f in dataclasses.fields(Settings)}


def _coerce(name: str, value):
    """Turn a TOML/env/flag value into the field's type, with a clear error."""
    if value is None:
        return None
    try:
        if name == "out" and "://" in str(value):
            # a store URL: checked here, split into out_url + mirror by Settings
            local = urls.local_path(str(value))
            return local if local is not None else urls.check_url(str(value))
        if name == "out_url":
            return urls.check_url(str(value))
        if name == "lease_hours":
            return float(value)
        if name in ("docs", "out", "mirror"):
            if "://" in str(value):
                raise ConfigError(
                    f"{name}: URLs such as {value} are not supported yet; mount the bucket as a folder "
                    "(the store needs atomic renames and a lock; see docs/operations.md)"
                )
            return Path(value)
        if name == "sources":
            items = value if isinstance(value, list) else str(value).split(os.pathsep)
            return [Path(v) for v in items if str(v)]
        if name in ("full", "apply"):
            if isinstance(value, bool):
                return value
            return str(value).strip().lower() in ("1", "true", "yes", "on")
        if name in ("top_k", "max_doc_bytes", "shard_size", "dask_workers"):
            return int(value)
        if name == "today":
            return value if isinstance(value, date) else date.fromisoformat(str(value))
        if name == "fail_on":
            items = value if isinstance(value, (list, tuple)) else str(value).split(",")
            return tuple(v.strip() for v in items if v.strip())
        return str(value)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad value for {name}: {value!r} ({exc})") from None


def _file_config(cwd: Path) -> dict:
    toml_path = cwd / "kbaudit.toml"
    try:
        if toml_path.is_file():
            return tomllib.loads(toml_path.read_text("utf-8"))
        pyproject = cwd / "pyproject.toml"
        if pyproject.is_file():
            return tomllib.loads(pyproject.read_text("utf-8")).get("tool", {}).get("kbaudit", {})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read configuration file: {exc}") from None
    return {}


def load_settings(flags: dict | None = None, cwd: Path | None = None, environ: dict | None = None) -> Settings:
    """Build the Settings from file, then environment, then flags (None flags are ignored)."""
    cwd = cwd or Path.cwd()
    environ = os.environ if environ is None else environ
    values: dict = {}
    for key, value in _file_config(cwd).items():
        key = key.replace("-", "_")
        if key == "llm_api_key":
            raise ConfigError("llm_api_key must come from the environment (KBAUDIT_LLM_API_KEY), not a file")
        if key not in _FIELD_TYPES:
            raise ConfigError(f"unknown setting in configuration file: {key}")
        values[key] = _coerce(key, value)
    for name in _FIELD_TYPES:
        env_value = environ.get(f"KBAUDIT_{name.upper()}")
        if env_value not in (None, ""):
            values[name] = _coerce(name, env_value)
    for key, value in (flags or {}).items():
        if value is None or key not in _FIELD_TYPES:
            continue
        values[key] = _coerce(key, value)
    return Settings(**values)
