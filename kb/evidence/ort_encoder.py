"""The MiniLM's transformer run by ONNX Runtime instead of torch.

Same model, same vectors (cosine to torch's above 0.99999, checked on every export), about 1.5x
the texts per second on this CPU (docs/retrieval.md "ONNX Runtime"). Only the transformer
runs in ONNX Runtime: sentence-transformers still tokenises, and its own pooling and
normalisation modules run on the transformer's output, so a model's pooling configuration is
honoured as torch would honour it.

The export (``torch.onnx.export``) is made on first use and kept in a folder keyed by the model
id, written under a temporary name and renamed, so a crash never leaves half a model. A model
that cannot be exported, or whose export disagrees with torch, is run by torch, with one warning.
sentence-transformers' own ``backend="onnx"`` needs optimum-onnx, which pins transformers
below 4.58 (this project pins 5.24): hence the export here.

An export that passed the parity check is recorded beside it (``parity.json``: its size, time and
the ONNX Runtime version, and the size and time of the weights and tokenizer it was checked with). For a plain model (a Transformer, mean pooling, normalisation: the
bundled MiniLM) a later session with that record runs as :class:`LightEncoder`: the tokenizer's
own ``tokenizer.json``, ONNX Runtime and the pooling in numpy, without importing
sentence-transformers (and with it torch and transformers: seconds of every cold run).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import uuid
import warnings
from pathlib import Path

import numpy as np

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_PROBE = (
    "The default timeout is 30 seconds.",
    "Retries use exponential backoff, starting at one second and doubling up to a limit of 32 seconds.",
    "kbaudit re-verifies a knowledge base in batch.",
)
PARITY_MIN = 0.99999  # cosine of the ONNX vectors to torch's, on the probe texts
PARITY_RECORD = "parity.json"


class ExportError(RuntimeError):
    pass


def _export(st_model, target: Path) -> None:
    import torch

    transformer = st_model[0].auto_model.eval()
    names = [n for n in _INPUTS if n in st_model.preprocess(["probe"])]

    class _Hidden(torch.nn.Module):
        """The transformer's last hidden state, taking its inputs by name (positional order
        differs between transformers releases)."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return self.model(**dict(zip(names, args))).last_hidden_state

    probe = st_model.preprocess(["probe text"])
    export_module(_Hidden(transformer), tuple(probe[n] for n in names), names, ("hidden", {0: "batch", 1: "tokens"}), target)


def export_module(module, probe: tuple, names: list[str], output: tuple[str, dict], target: Path) -> None:
    """``torch.onnx.export`` of a module taking ``names`` (batch x tokens each) to ``target``,
    its one output named and its dynamic axes given by ``output``; written under a temporary
    name and renamed, so a crash never leaves half a model."""
    import torch

    # the exporter puts the module back in the mode it found it in, recursively: a wrapper left
    # in training mode would leave the model it wraps with dropout on for the torch path after
    module.eval()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{target.name}")
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {output[0]: output[1]}
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns about every data-dependent branch of the model; the parity check
        # after the export is what says whether the graph is faithful.
        warnings.simplefilter("ignore")
        # The TorchScript exporter: the dynamo one needs onnxscript, and this graph is plain.
        torch.onnx.export(
            module,
            probe,
            str(tmp),
            input_names=names,
            output_names=[output[0]],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, target)


def _session(path: Path, threads: int | None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    # 0: ONNX Runtime's own default, one thread per physical core (as torch's)
    options.intra_op_num_threads = threads or 0
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _stamp(path: Path) -> dict:
    """What the parity record holds of an export: a changed or rewritten file is checked again."""
    import onnxruntime as ort

    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "onnxruntime": ort.__version__}


def _model_stamp(*model_paths: Path | str | None) -> list | None:
    """What the parity record holds of the model it was checked against: the weights and
    tokenizer of each of its folders (name, size, content hash). An export folder is keyed by the
    model's configuration and its weights' sizes only, so retrained weights of the same shape
    would share the export; the hash tells them apart, while a copy of the same weights elsewhere
    (another install or checkout of the same release, with its own file times) is the same model
    and needs no second check."""
    folders = [Path(p) for p in model_paths if p is not None]
    if not folders:
        return None
    files = []
    for folder in folders:
        files += sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
        files += [f for f in (folder / "tokenizer.json",) if f.is_file()]
    return [[f.name, f.stat().st_size, _content_hash(str(f), f.stat().st_size, f.stat().st_mtime_ns)] for f in files]


@functools.lru_cache(maxsize=64)
def _content_hash(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of a file, once per process for a file as it is (size and time in the key)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def write_record(export: Path, checked: dict, model: list | None, **result: float) -> None:
    """Record that ``export`` (whose stamp was ``checked`` when this process opened it) passed
    the parity check against ``model``, with the check's figures; written whole, then renamed."""
    record = export.with_name(PARITY_RECORD)
    tmp = record.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{record.name}")
    try:
        if _stamp(export) != checked:
            return  # replaced since this process opened it (another process's export): not checked here
        tmp.write_text(json.dumps({**checked, "model": model, **result}), encoding="utf-8")
        os.replace(tmp, record)
    except OSError:  # a read-only cache: the next run checks again
        # on a read-only file system even removing a file that is not there fails (EROFS)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def read_record(export: Path, model: list | None) -> dict | None:
    """The parity record of ``export`` when it names this very file (size, time, ONNX Runtime
    version) and ``model``'s files as they are now; else None (then the export is checked again)."""
    try:
        record = json.loads(export.with_name(PARITY_RECORD).read_text("utf-8"))
        if {k: record.get(k) for k in ("size", "mtime_ns", "onnxruntime")} != _stamp(export):
            return None
    except (OSError, ValueError, AttributeError):  # no record, an unreadable or foreign one
        return None
    return record if record.get("model") == model else None  # else checked against other weights or another tokenizer


class _Batched:
    """Longest-first batches of an encoder's ``_batch`` (texts -> normalised rows)."""

    positions: int

    def _token_counts(self, texts: list[str]) -> list[int]:
        raise NotImplementedError

    def _batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        # Longest first by tokens, so a batch pads to similar lengths: characters (what
        # sentence-transformers sorts by) padded httpx's passages to 1.2x their tokens, and a
        # masked pad position changes no vector, so only the time changes.
        order = np.argsort([-n for n in self._token_counts(texts)], kind="stable")
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for s in range(0, len(texts), batch_size):
            idx = order[s : s + batch_size]
            vecs = self._batch([texts[i] for i in idx])
            if not out.shape[1]:  # the width is the model's: known after the first batch
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        return out


class OrtEncoder(_Batched):
    """``encode(texts, batch_size)``: L2-normalised float32 rows, as ``SentenceTransformer.encode``."""

    def __init__(self, st_model, export_dir: Path, threads: int | None = None, model_path: Path | str | None = None):
        if type(st_model[0]).__name__ != "Transformer":
            raise ExportError(f"the first module is {type(st_model[0]).__name__}, not a Transformer")
        self.st = st_model
        self.path = export_dir / "model.onnx"
        self.exported = False  # whether this encoder made the export (False: it found one)
        self.model_path = model_path
        try:
            # the file the session opens, as the record will name it: another process may replace it
            self._checked = _stamp(self.path)
            self.session = _session(self.path, threads)
        except Exception:  # noqa: BLE001 - missing or unreadable (a truncated copy): export it again
            try:
                _export(st_model, self.path)
                self._checked = _stamp(self.path)
                self.session = _session(self.path, threads)
            except Exception as exc:  # noqa: BLE001 - any exporter failure means: run it with torch
                raise ExportError(f"ONNX export failed: {exc}") from exc
            self.exported = True
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.positions = 0  # token positions run through the transformer, padding included
        agreement = self.parity()
        if agreement < PARITY_MIN:
            raise ExportError(f"the ONNX export disagrees with torch (cosine {agreement:.6f} < {PARITY_MIN})")
        self._record(agreement)

    def _record(self, agreement: float) -> None:
        write_record(self.path, self._checked, _model_stamp(self.model_path), cosine=agreement)

    def parity(self) -> float:
        """The lowest cosine between this encoder's and torch's vectors of the probe texts."""
        ours = self.encode(list(_PROBE))
        theirs = self.st.encode(list(_PROBE), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return float(np.min(np.sum(ours * theirs, axis=1)))

    def _batch(self, texts: list[str]) -> np.ndarray:
        import torch

        features = self.st.preprocess(texts)
        feed = {n: features[n].numpy().astype(np.int64) for n in self.inputs}
        self.positions += int(feed["input_ids"].size)
        (hidden,) = self.session.run(None, feed)
        features["token_embeddings"] = torch.from_numpy(hidden)
        for module in list(self.st)[1:]:
            features = module(features)
        vecs = features["sentence_embedding"].numpy()
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def _token_counts(self, texts: list[str]) -> list[int]:
        """Tokens per text as the model reads it (truncated to its maximum length)."""
        ids = self.st.tokenizer(texts, truncation=True, max_length=self.st.max_seq_length)["input_ids"]
        return [len(row) for row in ids]


def _plain_model(model_path: Path) -> int | None:
    """The maximum length of a model whose modules are a Transformer (cased, as its tokenizer
    says), mean pooling and normalisation, with a ``tokenizer.json``; None for any other."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((model_path / "modules.json").read_text("utf-8"))]
        pooling = json.loads((model_path / "1_Pooling" / "config.json").read_text("utf-8"))
        config = json.loads((model_path / "sentence_bert_config.json").read_text("utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modules != ["Transformer", "Pooling", "Normalize"] or modes != {"pooling_mode_mean_tokens"}:
        return None
    if config.get("do_lower_case") or not (model_path / "tokenizer.json").is_file():
        return None
    return int(config.get("max_seq_length") or 0) or None


class LightEncoder(_Batched):
    """The ONNX encoder of a plain model whose export passed the parity check, without
    sentence-transformers: ``tokenizer.json`` tokenises (as the model's fast tokenizer does),
    ONNX Runtime runs the transformer, numpy mean-pools and normalises."""

    def __init__(self, session, tokenizer, max_length: int):
        self.session, self.tokenizer, self.max_length = session, tokenizer, max_length
        self.inputs = [i.name for i in session.get_inputs()]
        self.exported = False
        self.positions = 0  # token positions run through the transformer, padding included

    @classmethod
    def open(cls, model_path: Path | str, export_dir: Path, threads: int | None = None) -> LightEncoder | None:
        """The light encoder, or None when the model is not plain or its export has no parity
        record that matches it (then OrtEncoder checks it, and records it)."""
        from tokenizers import Tokenizer

        path = export_dir / "model.onnx"
        max_length = _plain_model(Path(model_path))
        record = read_record(path, _model_stamp(model_path))
        if max_length is None or record is None or float(record.get("cosine", 0.0)) < PARITY_MIN:
            return None
        try:
            tokenizer = Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
            session = _session(path, threads)
        except Exception:  # noqa: BLE001 - unreadable files: the checked path instead
            return None
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.no_padding()
        return cls(session, tokenizer, max_length)

    def _token_counts(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts)]

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encoded)
        feed = {n: np.zeros((len(texts), width), dtype=np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encoded):
            n = len(e.ids)
            feed["input_ids"][row, :n] = e.ids
            feed["attention_mask"][row, :n] = e.attention_mask
            feed["token_type_ids"][row, :n] = e.type_ids
        self.positions += int(feed["input_ids"].size)
        (hidden,) = self.session.run(None, {n: feed[n] for n in self.inputs})
        mask = feed["attention_mask"][..., None].astype(np.float32)
        vecs = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)
