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
"""

from __future__ import annotations

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
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex[:8]}-{target.name}")
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]}
    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns about every data-dependent branch of the model; the parity check
        # after the export is what says whether the graph is faithful.
        warnings.simplefilter("ignore")
        # The TorchScript exporter: the dynamo one needs onnxscript, and this graph is plain.
        torch.onnx.export(
            _Hidden(transformer),
            tuple(probe[n] for n in names),
            str(tmp),
            input_names=names,
            output_names=["hidden"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, target)


class OrtEncoder:
    """``encode(texts, batch_size)``: L2-normalised float32 rows, as ``SentenceTransformer.encode``."""

    def __init__(self, st_model, export_dir: Path, threads: int | None = None):
        import onnxruntime as ort
        import torch

        if type(st_model[0]).__name__ != "Transformer":
            raise ExportError(f"the first module is {type(st_model[0]).__name__}, not a Transformer")
        self.st = st_model
        self.path = export_dir / "model.onnx"
        self.exported = False  # whether this encoder made the export (False: it found one)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - missing or unreadable (a truncated copy): export it again
            try:
                _export(st_model, self.path)
                self.session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 - any exporter failure means: run it with torch
                raise ExportError(f"ONNX export failed: {exc}") from exc
            self.exported = True
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.positions = 0  # token positions run through the transformer, padding included
        agreement = self.parity()
        if agreement < PARITY_MIN:
            raise ExportError(f"the ONNX export disagrees with torch (cosine {agreement:.6f} < {PARITY_MIN})")

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
