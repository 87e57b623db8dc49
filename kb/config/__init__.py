"""The one settings object, `Settings`, with a section per stage that has knobs of its own.

Loaded once, by `load_settings`, lowest to highest precedence: built-in defaults, `kbaudit.toml`
in the working folder (else `[tool.kbaudit]` in `pyproject.toml`), `KBAUDIT_*` environment
variables, command-line flags. The types are the fields' type hints (pydantic validates and
converts every value, whatever its origin); the environment names follow from the field names
(`ENV_NAMES` lists the few older names that are kept); the `kbaudit run` flags are generated from
the fields that carry a `flag` (cli/main.py). Secrets (the LLM API key) are read from the
environment only and never serialised.

```toml
depth = "D2"
sources = ["sources"]
[claims]
min_words = 4
[escalate]
max_calls = 200
[escalate.cove]
questions = 2
[correct]
auto_accept = ["low", "medium"]
```
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kb.config import gitspec
from kb.config.gitspec import is_git_spec
from kb.config.urls import (  # re-exported: the store's URL rules are part of the settings' surface
    LOCAL_SCHEMES as LOCAL_SCHEMES,
)
from kb.config.urls import (
    PACKAGES as PACKAGES,
)
from kb.config.urls import (
    check_url as check_url,
)
from kb.config.urls import (
    default_mirror as default_mirror,
)
from kb.config.urls import (
    is_url as is_url,
)
from kb.config.urls import (
    local_path as local_path,
)
from kb.config.urls import (
    scheme_of as scheme_of,
)
from kb.config.urls import (
    user_cache_dir as user_cache_dir,
)
from kb.errors import ConfigError
from kb.records import LABELS, Claim

DEPTHS = ("D0", "D1", "D2", "D3", "D4", "D5")
DEPTH_NAMES = {"fast": "D1", "standard": "D2", "strict": "D3", "audit": "D5"}
DEMO_ROOT = Path(__file__).parent.parent / "demo"
RETRIEVAL_PATHS = ("static+minilm", "minilm")
EMBED_BACKENDS = ("onnx", "torch")
VERIFIER_BACKENDS = ("onnx", "torch")
ENV_PREFIX = "KBAUDIT_"


def _listing(value: Any) -> Any:
    """A comma-separated string (environment, flag) as a list; lists and tuples as they are."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Section(BaseModel):
    """A settings section: unknown keys are errors, values are validated on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# ---- sections -------------------------------------------------------------------------------
class ClaimSettings(Section):
    """`[claims]`: claim extraction. ``freshness_days`` is per claim type."""

    freshness_days: dict[str, int] = Field(
        default_factory=lambda: {
            "factual": 365,
            "numeric": 180,
            "temporal": 90,
            "comparative": 180,
            "causal": 365,
            "procedural": 365,
            "normative": 365,
            "speculative": 90,
        }
    )
    time_sensitive_days: int = 90  # a time-sensitive claim's window is at most this
    min_words: int = 3  # shorter units without a number or a lead-in are fragments
    split_coordination: bool = True
    # a safety valve for huge documents (~5,000 claims/s): beyond it split_claims raises
    # ClaimLimitError (an ingest_errors row) rather than silently truncating
    max_claims_per_doc: int = 200_000
    high_risk_words: tuple[str, ...] = ()  # extra domain words that make a claim high risk
    # check a code block's lead-in that names a value ("Check that Python is at least 3.10:"):
    # more changed facts found, at a precision well below the other findings' (docs/claims.md)
    code_lead_ins: bool = False

    _split_words = field_validator("high_risk_words", mode="before")(_listing)


class CoveSettings(Section):
    """`[escalate.cove]`: the Chain-of-Verification protocol of the deep verifier."""

    questions: int = Field(default=3, ge=1)  # verification questions per claim
    mode: str = Field(default="factored", pattern="^(factored|joint)$")
    rewrite: bool = True  # on a discrepancy, FINAL becomes the corrected text
    max_passages: int = 5  # retrieved passages shown to the verifier
    passage_chars: int = 1500  # each passage cut to this many characters
    quote_match: float = 90.0  # rapidfuzz partial_ratio a quote needs against some passage
    min_quote_chars: int = 8  # shorter quoted strings are not counted as quotes
    truncated_retry_factor: float = 2.0  # a reply cut at max_tokens is asked again once with this many times the tokens (0: never)
    shrink_on_context: bool = True  # a prompt over the context window is sent again once with half the evidence
    agreement: bool = True  # reject a grounded reply whose verdict its own quotes or final text contradict

    def calls_per_claim(self) -> int:
        return 1 if self.mode == "joint" else self.questions + 2

    def shrunk(self) -> CoveSettings:
        """Half the passages, each half as long (at least one passage of 200 characters)."""
        return self.model_copy(update={"max_passages": max(1, self.max_passages // 2), "passage_chars": max(200, self.passage_chars // 2)})


class RouteSettings(Section):
    """`[escalate]`: which claims go to the deep verifier (D3+), its budget and its endpoint's limits."""

    threshold: float = 0.8  # escalate below this calibrated confidence
    by_type: dict[str, float] = Field(default_factory=lambda: {"numeric": 0.85, "temporal": 0.85})
    by_risk: dict[str, float] = Field(default_factory=lambda: {"medium": 0.85, "high": 0.95})
    lesson_threshold: float = 0.95  # threshold for claims a lesson matches
    exclude_types: tuple[str, ...] = ("speculative", "normative")
    exclude_docs: tuple[str, ...] = ()  # fnmatch patterns on doc_id
    max_calls: int = 500
    max_tokens: int = 1_000_000  # tokens in + out
    max_seconds: float = 1800.0
    # the endpoint
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 1.0
    max_backoff: float = 30.0
    concurrency: int = 4
    max_tokens_per_call: int = 800
    # the protocol
    cove: CoveSettings = Field(default_factory=lambda: CoveSettings())
    # confidences given to accepted deep verdicts (the endpoint is not calibrated)
    llm_confidence: dict[str, float] = Field(default_factory=lambda: {"supported": 0.9, "contradicted": 0.85, "uncertain": 0.5})

    _split_lists = field_validator("exclude_types", "exclude_docs", mode="before")(_listing)

    def threshold_for(self, claim: Claim, lesson: bool = False) -> float:
        t = max(self.threshold, self.by_type.get(claim.type, 0.0), self.by_risk.get(claim.risk, 0.0))
        return max(t, self.lesson_threshold) if lesson else t

    def excluded(self, claim: Claim) -> str | None:
        if claim.type in self.exclude_types:
            return f"claim type {claim.type} is excluded"
        for pattern in self.exclude_docs:
            if fnmatch.fnmatch(claim.doc_id, pattern):
                return f"document matches excluded pattern {pattern}"
        return None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RouteSettings:
        """The `[escalate]` section from defaults and the environment only (no file)."""
        values = _env_values(os.environ if environ is None else environ)
        return _validated(Settings, {"escalate": values.get("escalate", {})}).escalate


class CorrectionSettings(Section):
    """`[correct]`: which drafted edits are accepted without a human, by risk points."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auto_accept: tuple[str, ...] = ("low",)  # edit risks accepted without a human
    high_at: float = 3.0  # risk points at or above which an edit is high risk
    medium_at: float = 1.5

    _split_risks = field_validator("auto_accept", mode="before")(_listing)


# ---- the settings object ------------------------------------------------------------------------
def _flag(help_text: str, flag: str | None = None, **extra: Any) -> dict:
    """Field metadata for a setting that `kbaudit run` takes as a flag (cli/main.py adds it)."""
    return {"description": help_text, "json_schema_extra": {"flag": flag or "", **extra}}


class Settings(Section):
    """Every setting of a run. Sections: `claims`, `escalate` (with `escalate.cove`), `correct`.

    The verifier's thresholds are not settings: they are calibrated with the shipped weights
    (kb/verify/weights/manifest.json) and move with them.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=False, arbitrary_types_allowed=True)

    docs: Path | str | None = Field(
        default=None, description="folder of KB documents (None: the bundled demo KB), or git:REPO@REV:PATH (read-only)"
    )
    # folders / .jsonl / .parquet (Path) and git:REPO[@REVS][:PATH] specs (str, kb/evidence/git_source.py)
    sources: list[Path | str] = Field(
        default_factory=list,
        **_flag("folder, .jsonl or .parquet of dated sources, or git:REPO[@REVS][:PATH] (repeatable; docs/sources.md)", action="append"),
    )
    out: Path = Field(
        default=Path("kbaudit-out"), **_flag("store folder, or a store URL such as s3://bucket/prefix (default ./kbaudit-out)")
    )
    out_url: str | None = None  # a remote store (fsspec URL, e.g. s3://bucket/kbaudit): kb/store/remote.py
    mirror: Path | None = None  # the mirror folder of a URL store; None: ~/.cache/kbaudit/stores/<hash>
    lease_hours: float = 6.0  # a URL store's writer lease older than this is taken over
    depth: str = Field(default="D1", **_flag("D0..D5 or fast/standard/strict/audit (default D1)"))
    full: bool = Field(default=False, **_flag("re-verify every claim", action="store_true"))
    apply: bool = Field(default=False, **_flag("write accepted edits to the KB files", action="store_true"))
    top_k: int = 5
    model_path: str | None = None  # a local CrossEncoder replacing the shipped verifier
    embed_model_path: str | None = None  # a local sentence-transformers model
    # "static+minilm" (the default): claims the newest corpus states as written are settled
    # without a model, a static model (the shipped one, or static_model_path) searches every
    # passage for the rest and the MiniLM scores each claim's top candidates; "minilm": the
    # MiniLM embeds every passage and every claim is searched and judged (docs/retrieval.md
    # "Two-stage dense search")
    retrieval_path: str = "static+minilm"
    static_model_path: str | None = None  # a model2vec folder or any local sentence-transformers model
    # "static+minilm": how many first-stage candidates per claim the MiniLM scores; 50 keeps the
    # cold run about 5x faster than "minilm", 150 matches its recall@10 at about 2-3x
    # (docs/retrieval.md "Candidates: speed against recall")
    rerank_candidates: int = 50
    # "onnx": the MiniLM's transformer runs in ONNX Runtime (same vectors, faster); "torch": as is
    embed_backend: str = "onnx"
    # "onnx": the shipped verifier's classifier runs in ONNX Runtime in fp32 once its export
    # passed the parity check (no torch, no transformers); "torch": in torch, bf16 where the CPU
    # has it natively (docs/verifier-model.md "ONNX Runtime"). A model_path always runs in torch.
    verifier_backend: str = "onnx"
    embed_cache_dir: Path | None = None  # one embedding cache shared by several stores; None: <out>/cache
    today: date | None = Field(default=None, **_flag("pin today's date (YYYY-MM-DD) for freshness checks"))
    max_doc_bytes: int = 64 * 1024 * 1024
    shard_size: int = 200  # documents per task batch
    task_runner: str = Field(
        default="thread",
        **_flag(
            "where the verify stage runs: thread (default: in this process), dask (a local dask cluster), "
            "or the address of a running dask scheduler (tcp://host:8786); needs pip install 'kbaudit[dask]'"
        ),
    )
    dask_workers: int = Field(default=2, **_flag("worker processes of the local dask cluster (default 2)"))
    fail_on: tuple[str, ...] = Field(default=(), **_flag("comma-separated labels that make the exit status 1"))
    min_confidence: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        **_flag("findings (stale, contradicted) below this confidence are reported uncertain: fewer, surer findings (default 0)"),
    )
    finding_calibration: str = Field(
        default="shipped",
        **_flag(
            "what a finding's confidence is calibrated on: shipped (judged documentation findings), none (the "
            "confidence of the judgement that decided it), or a JSON file that `kbaudit bench findings --fit` wrote",
            metavar="shipped|none|FILE",
        ),
    )
    changed_since: str | None = Field(
        default=None,
        **_flag(
            "PR mode: audit only the KB files changed since git revision REV (work tree included), plus, with a "
            "warm store, the documents whose evidence changed in the sources (docs/ci.md)",
            metavar="REV",
        ),
    )
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = Field(default=None, repr=False, exclude=True)  # environment only, never serialised
    claims: ClaimSettings = Field(default_factory=lambda: ClaimSettings())
    escalate: RouteSettings = Field(default_factory=lambda: RouteSettings())
    correct: CorrectionSettings = Field(default_factory=lambda: CorrectionSettings())

    @model_validator(mode="before")
    @classmethod
    def _store_url(cls, data: Any) -> Any:
        """`out` given as a URL: remember it in `out_url` and work in the local mirror folder, so
        that `out` is always a folder (file:// URLs are plain folders)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        out = data.get("out")
        if isinstance(out, str) and is_url(out):
            local = local_path(out)
            if local is None:
                data["out_url"] = check_url(out)
                mirror = data.get("mirror")
                local = Path(mirror) if mirror is not None else default_mirror(data["out_url"])
            data["out"] = local
        elif data.get("out_url"):
            data["out_url"] = check_url(str(data["out_url"]))
        for name in ("docs", "mirror"):
            value = data.get(name)
            if isinstance(value, str) and is_url(value):
                raise ConfigError(
                    f"{name}: URLs such as {value} are not supported yet; mount the bucket as a folder "
                    "(the store needs atomic renames and a lock; see docs/operations.md)"
                )
        return data

    @field_validator("sources", mode="before")
    @classmethod
    def _source_list(cls, value: Any) -> Any:
        if isinstance(value, str) and is_git_spec(value):
            value = [value]  # one git spec: its PATH may hold the path separator ':'
        elif isinstance(value, (str, Path)):  # the environment: os.pathsep-separated
            value = [item for item in str(value).split(os.pathsep) if item]
        return [_source_item(v, None) for v in value] if isinstance(value, (list, tuple)) else value

    @field_validator("docs", mode="before")
    @classmethod
    def _docs_value(cls, value: Any) -> Any:
        if isinstance(value, str) and is_git_spec(value):
            _git_call(gitspec.parse_spec, value)
            return value
        return Path(value) if isinstance(value, str) else value

    @property
    def docs_from_git(self) -> bool:
        return is_git_spec(self.docs)

    _split_labels = field_validator("fail_on", mode="before")(_listing)

    @property
    def docs_root(self) -> Path | str:
        return self.docs if self.docs is not None else DEMO_ROOT / "docs"

    @property
    def docs_folder(self) -> Path:
        """The KB folder on disk; a KB read from git has none, and what needs one is refused."""
        if self.docs_from_git:
            raise ConfigError(f"this needs a KB folder on disk; {self.docs} is read from git")
        return Path(self.docs_root)

    @property
    def sources_roots(self) -> list[Path | str]:
        if self.sources:
            return list(self.sources)
        if self.docs is None:
            return [DEMO_ROOT / "sources"]
        return []

    @property
    def run_date(self) -> date:
        return self.today or date.today()

    def for_run(self) -> Settings:
        """These settings with the run's date fixed: every stage of a run (and every shard of a
        sharded one) judges freshness against the same day, even across midnight."""
        return self if self.today is not None else self.replace(today=date.today())

    def validate(self) -> Settings:  # type: ignore[override]  # the run's checks, not pydantic's deprecated classmethod
        """Checks that need the file system or several fields; returns self (depth names resolved)."""
        if self.depth in DEPTH_NAMES:
            self.depth = DEPTH_NAMES[self.depth]
        if self.depth not in DEPTHS:
            raise ConfigError(f"depth must be one of {', '.join(DEPTHS)} or {', '.join(DEPTH_NAMES)}; got {self.depth!r}")
        if self.docs_from_git:
            if self.apply:
                raise ConfigError(
                    f"--apply cannot write to a KB read from git ({self.docs}): it is audited read-only; "
                    "run on a work tree folder to apply edits"
                )
            _git_call(gitspec.check, str(self.docs))
        elif not Path(self.docs_root).is_dir():
            raise ConfigError(f"documents folder not found: {self.docs_root}")
        if not self.sources_roots:
            raise ConfigError("no sources given: pass --sources DIR (a folder, .jsonl or .parquet, or git:REPO[@REVS][:PATH])")
        for src in self.sources_roots:
            if is_git_spec(src):
                _git_call(gitspec.check, src)
            elif not Path(src).exists():
                raise ConfigError(f"sources not found: {src}")
        if self.top_k < 1:
            raise ConfigError("top_k must be at least 1")
        if self.rerank_candidates < 1:
            raise ConfigError(f"rerank_candidates must be at least 1; got {self.rerank_candidates}")
        if self.retrieval_path not in RETRIEVAL_PATHS:
            raise ConfigError(f"retrieval_path must be one of {', '.join(RETRIEVAL_PATHS)}; got {self.retrieval_path!r}")
        if self.embed_backend not in EMBED_BACKENDS:
            raise ConfigError(f"embed_backend must be one of {', '.join(EMBED_BACKENDS)}; got {self.embed_backend!r}")
        if self.verifier_backend not in VERIFIER_BACKENDS:
            raise ConfigError(f"verifier_backend must be one of {', '.join(VERIFIER_BACKENDS)}; got {self.verifier_backend!r}")
        if self.static_model_path and not Path(self.static_model_path).is_dir():
            raise ConfigError(f"static_model_path is not a folder: {self.static_model_path}")
        self.task_runner = self.task_runner.strip()
        address = self.task_runner.removeprefix("dask://")
        if self.task_runner not in ("thread", "dask") and not re.fullmatch(r"(tcp|tls)://[^\s/:]+:\d+|[^\s/:]+:\d+", address):
            raise ConfigError(
                "task_runner must be thread, dask (a local dask cluster) or a dask scheduler address "
                f"such as tcp://host:8786 (or dask://tcp://host:8786); got {self.task_runner!r}"
            )
        if self.finding_calibration not in ("shipped", "none") and not Path(self.finding_calibration).expanduser().is_file():
            raise ConfigError(f"finding_calibration must be shipped, none or a calibration file; no such file: {self.finding_calibration}")
        if self.dask_workers < 1:
            raise ConfigError("dask_workers must be at least 1")
        if self.changed_since is not None:
            self.changed_since = self.changed_since.strip()
            if not self.changed_since:
                raise ConfigError("--changed-since needs a git revision (a branch, tag or commit)")
            if self.docs is None:
                raise ConfigError("--changed-since needs DOCS: a KB folder inside a git work tree (the bundled demo is not one)")
        bad = [label for label in self.fail_on if label not in LABELS]
        if bad:
            raise ConfigError(f"--fail-on takes labels from {', '.join(LABELS)}; got {', '.join(bad)}")
        return self

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated like any other value)."""
        return _validated(
            Settings, {**self.model_dump(exclude={"llm_api_key"}), **changes, "llm_api_key": changes.get("llm_api_key", self.llm_api_key)}
        )

    def public_dict(self) -> dict:
        """Settings as JSON-able data, secrets left out (this is what the store records)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_public_dict(cls, data: dict) -> Settings:
        """Inverse of public_dict (a deployment passes settings as JSON); the API key comes
        from the environment again."""
        values = {k: v for k, v in data.items() if k in cls.model_fields and k != "llm_api_key"}
        values["llm_api_key"] = os.environ.get("KBAUDIT_LLM_API_KEY") or None
        return _validated(cls, values)

    def config_hash(self) -> str:
        keys = ("depth", "top_k", "model_path", "embed_model_path", "retrieval_path", "static_model_path", "rerank_candidates")
        public = self.public_dict()
        blob = json.dumps({k: public[k] for k in keys}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ---- loading ---------------------------------------------------------------------------------
# Environment names other than KBAUDIT_<FIELD> / KBAUDIT_<SECTION>_<FIELD>, kept from earlier releases.
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "KBAUDIT_LLM_EXCLUDE_TYPES": ("escalate", "exclude_types"),
    "KBAUDIT_LLM_EXCLUDE_DOCS": ("escalate", "exclude_docs"),
    "KBAUDIT_LLM_MAX_CALLS": ("escalate", "max_calls"),
    "KBAUDIT_LLM_MAX_TOKENS": ("escalate", "max_tokens"),
    "KBAUDIT_LLM_MAX_SECONDS": ("escalate", "max_seconds"),
    "KBAUDIT_LLM_TIMEOUT": ("escalate", "timeout"),
    "KBAUDIT_LLM_RETRIES": ("escalate", "max_retries"),
    "KBAUDIT_LLM_CONCURRENCY": ("escalate", "concurrency"),
    "KBAUDIT_LLM_MAX_TOKENS_PER_CALL": ("escalate", "max_tokens_per_call"),
    "KBAUDIT_LLM_QUESTIONS": ("escalate", "cove", "questions"),
    "KBAUDIT_LLM_MODE": ("escalate", "cove", "mode"),
    "KBAUDIT_LLM_REWRITE": ("escalate", "cove", "rewrite"),
}
# Settings the environment does not give as KBAUDIT_<NAME> (out_url is derived from out).
NOT_FROM_ENV = {"out_url", "docs"}


def _env_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """KBAUDIT_<PATH> -> field path, for every scalar field of the model and its sections."""
    names: dict[str, tuple[str, ...]] = {}
    for name, info in model.model_fields.items():
        path = (*prefix, name)
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names.update(_env_paths(annotation, path))
        elif not prefix and name in NOT_FROM_ENV:
            continue
        else:
            names[ENV_PREFIX + "_".join(path).upper()] = path
    return names


def _put(tree: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _threshold_pairs(raw: str) -> dict:
    """KBAUDIT_ESCALATE_THRESHOLDS="type:numeric=0.9,risk:high=0.97" -> by_type / by_risk entries."""
    out: dict = {}
    for part in _listing(raw):
        key, _, value = part.partition("=")
        kind, _, name = key.partition(":")
        if kind not in ("type", "risk") or not name:
            raise ConfigError(f"bad value for KBAUDIT_ESCALATE_THRESHOLDS: expected type:NAME=VALUE or risk:NAME=VALUE, got {part!r}")
        try:
            out.setdefault(f"by_{kind}", {})[name] = float(value)
        except ValueError:
            raise ConfigError(f"bad value for KBAUDIT_ESCALATE_THRESHOLDS: {part!r} (not a number)") from None
    return out


def _env_values(environ: Mapping[str, str]) -> dict:
    values: dict = {}
    names = {**_env_paths(Settings), **ENV_NAMES}
    for env_name, path in names.items():
        raw = environ.get(env_name)
        if raw in (None, ""):
            continue
        if path[-1] in ("freshness_days", "by_type", "by_risk", "llm_confidence"):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raise ConfigError(f'bad value for {env_name}: {raw!r} (a JSON object, e.g. {{"numeric": 0.9}})') from None
        _put(values, path, raw)
    pairs = environ.get("KBAUDIT_ESCALATE_THRESHOLDS")
    if pairs:
        for field_name, entries in _threshold_pairs(pairs).items():
            defaults = RouteSettings.model_fields[field_name].get_default(call_default_factory=True)
            _put(values, ("escalate", field_name), {**defaults, **values.get("escalate", {}).get(field_name, {}), **entries})
    return values


def _merge(base: dict, override: Mapping) -> dict:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def _valid_keys(model: type[BaseModel], path: tuple[str, ...]) -> list[str]:
    for key in path:
        info = model.model_fields.get(key)
        if info is None or not (isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)):
            break
        model = info.annotation
    return list(model.model_fields)


def _validated(model: type[BaseModel], values: dict) -> Any:
    """`model` from `values`, every problem a one-line ConfigError naming the setting."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = tuple(str(p) for p in error["loc"])
        name = ".".join(path)
        if error["type"] == "extra_forbidden":
            valid = _valid_keys(model, path[:-1])
            nearest = difflib.get_close_matches(path[-1], valid, n=1)
            hint = f"; did you mean {'.'.join((*path[:-1], nearest[0]))}?" if nearest else f"; valid keys: {', '.join(valid)}"
            raise ConfigError(f"unknown setting {name}{hint}") from None
        raise ConfigError(f"bad value for {name}: {error.get('input')!r} ({error['msg']})") from None


def _git_call(fn, value):
    try:
        return fn(value)
    except gitspec.GitSpecError as exc:
        raise ConfigError(str(exc)) from None


def _source_item(value, base: Path | None):
    """One sources entry: a git: spec stays a string, a [[sources]] table becomes one, else a Path."""
    if isinstance(value, dict):
        if "git" not in value and set(value) == {"path"}:
            return Path(value["path"]) if base is None else base / value["path"]
        return _git_call(lambda v: gitspec.spec_from_table(v, base), value)
    if is_git_spec(str(value)):
        _git_call(gitspec.parse_spec, str(value))
        return str(value)
    return Path(value)


def _file_config(cwd: Path) -> tuple[dict, str]:
    toml_path = cwd / "kbaudit.toml"
    try:
        if toml_path.is_file():
            return tomllib.loads(toml_path.read_text("utf-8")), str(toml_path)
        pyproject = cwd / "pyproject.toml"
        if pyproject.is_file():
            return tomllib.loads(pyproject.read_text("utf-8")).get("tool", {}).get("kbaudit", {}), f"{pyproject} [tool.kbaudit]"
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read configuration file: {exc}") from None
    return {}, ""


def _dashes_to_underscores(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {str(k).replace("-", "_"): _dashes_to_underscores(v) for k, v in tree.items()}
    return tree


def load_settings(flags: dict | None = None, cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """The Settings from file, then environment, then flags (None flags are ignored)."""
    cwd = cwd or Path.cwd()
    environ = os.environ if environ is None else environ
    file_values, file_name = _file_config(cwd)
    file_values = _dashes_to_underscores(file_values)
    if isinstance(file_values.get("sources"), list):  # [[sources]] tables resolve against the file's folder
        file_values["sources"] = [_source_item(v, cwd) for v in file_values["sources"]]
    if "llm_api_key" in file_values:
        raise ConfigError("llm_api_key must come from the environment (KBAUDIT_LLM_API_KEY), not a file")
    try:
        _validated(Settings, file_values)  # a file's problem is named with the file
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {file_name})") from None
    values = _merge(file_values, _env_values(environ))
    values = _merge(values, {k: v for k, v in (flags or {}).items() if v is not None})
    values["llm_api_key"] = environ.get("KBAUDIT_LLM_API_KEY") or None
    return _validated(Settings, values)
