"""The shipped verifier's classifier run by ONNX Runtime instead of torch.

The same design as the MiniLM's (:mod:`kb.evidence.ort_encoder`): the classifier (the MiniLM
base with the shipped layers laid over it, :func:`kb.verify.model.load_shipped`) is exported
once with ``torch.onnx.export`` into ``$XDG_CACHE_HOME/kbaudit/onnx/<verifier key>/`` and
checked against torch in fp32 on :data:`PROBE`: the same argmax on every pair and calibrated
probabilities within :data:`PARITY_MAX_DIFF`. An export that passed is recorded beside it
(``parity.json``: the export's size and time, the ONNX Runtime version, and the size and time
of the base weights, ``tokenizer.json`` and ``verifier.safetensors`` it was checked with). A
later run with that record loads :class:`LightJudge`: the base model's ``tokenizer.json``
tokenises (as transformers' fast tokenizer does), ONNX Runtime runs the classifier, numpy
applies the temperature. Neither torch nor transformers is imported (about 5 s of a cold run).

ONNX Runtime runs in fp32. On a CPU with native bf16 the torch path autocasts to bf16 (what the
calibration was fitted in); fp32 moves probabilities by up to about 0.02 against it, and
docs/verifier-model.md "ONNX Runtime" gives what that did to labels. ``verifier_backend =
"torch"`` keeps the torch path; a custom model (``model_path``) always runs in torch.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kb.config import user_cache_dir
from kb.evidence.ort_encoder import ExportError, _model_stamp, _session, _stamp, export_module, read_record, write_record
from kb.log import logger
from kb.verify.model import MANIFEST, WEIGHTS_DIR, Calibrated, ModelJudge, base_model_path, cpu_has_bf16

_INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
# Pairs of every kind the verifier meets: supports, refutes, nei, numbers and units, a negation,
# code and options, non-ASCII text, a one-word side, and pairs long enough to be truncated
# (from either side, "longest_first"), in one batch so that padding is exercised too.
PROBE = (
    ("The default timeout is 30 seconds.", "The default timeout is 30 seconds."),
    ("The default timeout is 30 seconds.", "The default timeout is 5 seconds."),
    ("Retries use exponential backoff.", "Retries wait one second, then two, then four, doubling up to 32 seconds."),
    ("The server listens on port 8080.", "Logs are written to stderr unless a file is given."),
    ("HTTP/2 is not supported.", "HTTP/2 support is available with `pip install httpx[http2]`."),
    ("Use `--max-line-length=88` to change the limit.", "The line length defaults to 88 characters; set line-length in pyproject.toml."),
    ("Die Zeitüberschreitung beträgt 30 Sekunden.", "Le délai d'attente par défaut est de 30 secondes."),
    ("Python 3.8 is required.", "Requires Python >= 3.9 (3.8 reached its end of life in October 2024)."),
    ("Yes.", "No."),
    ("The cache is kept for 7 days. " * 12, "Entries older than a week are removed. " * 12),
    ("Plugins are loaded in alphabetical order.", "Plugins load in the order they are listed in the configuration file. " * 20),
    ("Every option can also be set through an environment variable prefixed with APP_. " * 20, "Options are read from app.toml."),
)
# The most a calibrated probability of the export may differ from torch's in fp32 on PROBE. Two
# fp32 runs of one graph differ by rounding only (summation order, fused kernels): on the
# shipped verifier about 1e-6. bf16 moves them by up to about 0.02, and a wrong graph (a head
# dropped, a mask ignored, positions shifted) by far more, so 1e-4 admits the first and
# refuses anything the labels could feel.
PARITY_MAX_DIFF = 1e-4


def export_dir(weights_dir: Path | None = None) -> Path:
    """One export per shipped artifact and base model, per machine."""
    from kb.evidence.embed import model_key

    manifest = json.loads(((weights_dir or WEIGHTS_DIR) / MANIFEST).read_text(encoding="utf-8"))
    return (
        user_cache_dir()
        / "onnx"
        / f"kbaudit-verifier-{manifest.get('artifact_sha256', '')[:12]}-{model_key(base_model_path(), default=True)}"
    )


def _model_files(weights_dir: Path | None) -> list | None:
    return _model_stamp(base_model_path(), weights_dir or WEIGHTS_DIR)


def _export(judge: ModelJudge, target: Path) -> None:
    import torch

    class _Logits(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits

    probe = judge.tokenizer(["a claim"], ["a sentence of evidence"], return_tensors="pt")
    export_module(_Logits(judge.model), tuple(probe[n] for n in _INPUTS), _INPUTS, ("logits", {0: "batch"}), target)


class LightJudge(Calibrated):
    """The shipped verifier in ONNX Runtime: ``probs``, ``judge``, ``token_counts`` and
    ``positions`` as :class:`kb.verify.model.ModelJudge`'s, batched the same way."""

    def __init__(self, session, tokenizer, manifest: dict, batch_size: int, path: Path):
        self.session, self.tokenizer, self.manifest, self.batch_size, self.path = session, tokenizer, manifest, batch_size, path
        self.temperature = float(manifest.get("calibration", {}).get("temperature", 1.0))
        self.columns = [0, 1, 2]
        self.model_id = f"kbaudit-verifier:{manifest.get('artifact_sha256', '')[:12]}"
        self.inputs = [i.name for i in session.get_inputs()]
        self.exported = False  # whether this process made the export (False: it found one)
        self.positions = 0  # token positions run through the model, padding included

    @classmethod
    def load(cls, path: Path, weights_dir: Path | None = None, batch_size: int = 32, max_length: int = 128, threads: int | None = None):
        from tokenizers import Tokenizer

        manifest = json.loads(((weights_dir or WEIGHTS_DIR) / MANIFEST).read_text(encoding="utf-8"))
        tokenizer = Tokenizer.from_file(str(base_model_path() / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=min(max_length, int(manifest.get("max_length", max_length))), strategy="longest_first")
        tokenizer.no_padding()
        return cls(_session(path, threads), tokenizer, manifest, batch_size, path)

    @classmethod
    def open(cls, weights_dir: Path | None = None, batch_size: int = 32, threads: int | None = None) -> LightJudge | None:
        """The light judge, or None when the export has no parity record that matches it and
        the weights as they are now (then :func:`checked_judge` checks it, and records it)."""
        path = export_dir(weights_dir) / "model.onnx"
        record = read_record(path, _model_files(weights_dir))
        if record is None or not record.get("argmax") or float(record.get("max_abs_diff", 1.0)) > PARITY_MAX_DIFF:
            return None
        try:
            return cls.load(path, weights_dir, batch_size, threads=threads)
        except Exception:  # noqa: BLE001 - unreadable files: the checked path instead
            return None

    def token_counts(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch([(str(c), str(e)) for c, e in pairs])]

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        n = len(pairs)
        out = np.zeros((n, 3), dtype=np.float32)
        if n == 0:
            return out
        encoded = self.tokenizer.encode_batch([(str(c), str(e)) for c, e in pairs])
        # shortest first, as ModelJudge: each batch pads little
        order = sorted(range(n), key=lambda i: len(encoded[i].ids))
        for s in range(0, n, self.batch_size):
            idx = order[s : s + self.batch_size]
            width = max(len(encoded[i].ids) for i in idx)
            feed = {k: np.zeros((len(idx), width), dtype=np.int64) for k in _INPUTS}
            for row, i in enumerate(idx):
                e, k = encoded[i], len(encoded[i].ids)
                feed["input_ids"][row, :k] = e.ids
                feed["attention_mask"][row, :k] = e.attention_mask
                feed["token_type_ids"][row, :k] = e.type_ids
            self.positions += int(feed["input_ids"].size)
            (out[idx],) = self.session.run(None, {k: feed[k] for k in self.inputs})
        return out


def checked_judge(torch_judge: ModelJudge, weights_dir: Path | None = None, threads: int | None = None) -> LightJudge:
    """The light judge of the export of ``torch_judge`` (fp32, the shipped weights), exported
    first when there is none or it cannot be opened, after the parity check, which is recorded.
    Raises ExportError when the export cannot be made or disagrees with torch."""
    path = export_dir(weights_dir) / "model.onnx"
    exported = False
    try:
        # the file ONNX Runtime opens, as the record will name it: another process may replace it
        checked = _stamp(path)
        light = LightJudge.load(path, weights_dir, torch_judge.batch_size, torch_judge.max_length, threads)
    except Exception:  # noqa: BLE001 - missing or unreadable (a truncated copy): export it again
        try:
            _export(torch_judge, path)
            checked = _stamp(path)
            light = LightJudge.load(path, weights_dir, torch_judge.batch_size, torch_judge.max_length, threads)
        except Exception as exc:  # noqa: BLE001 - any exporter failure means: judge with torch
            raise ExportError(f"ONNX export failed: {exc}") from exc
        exported = True
    light.exported = exported
    ours, theirs = light.probs(PROBE), torch_judge.probs(PROBE)
    light.positions = 0
    argmax = bool((ours.argmax(axis=1) == theirs.argmax(axis=1)).all())
    diff = float(np.abs(ours - theirs).max())
    if not argmax or diff > PARITY_MAX_DIFF:
        raise ExportError(f"the ONNX export disagrees with torch (argmax {'same' if argmax else 'differs'}, max difference {diff:.2e})")
    write_record(path, checked, _model_files(weights_dir), argmax=argmax, max_abs_diff=diff)
    return light


def load_judge(path: str | None = None, batch_size: int = 32, backend: str = "onnx"):
    """The verifier's model judge. The shipped verifier with backend "onnx": the light judge of a
    checked export when there is one (no torch, no transformers), else the torch model is loaded
    once to export and check it. Backend "torch", a custom ``path``, or an export that fails or
    disagrees: :class:`ModelJudge` (bf16 where the CPU has it natively)."""
    if path or backend == "torch":
        return ModelJudge(path=path, batch_size=batch_size)
    light = LightJudge.open(batch_size=batch_size)
    if light is not None:
        return light
    torch_judge = ModelJudge(batch_size=batch_size, precision="fp32")
    try:
        return checked_judge(torch_judge)
    except ExportError as exc:
        logger.warning("verifier: judging with torch: %s", exc)
        torch_judge.bf16 = cpu_has_bf16()  # what precision "auto" chooses
        return torch_judge
