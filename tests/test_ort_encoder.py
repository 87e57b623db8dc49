"""The MiniLM in ONNX Runtime: the same vectors as torch on real text, one export per cache,
a damaged export made again, and the setting that chooses the backend."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kb.chain import make_retriever
from kb.config import DEMO_ROOT, Settings, load_settings
from kb.errors import ConfigError
from kb.evidence.embed import Embedder
from kb.evidence.ort_encoder import PARITY_RECORD, LightEncoder, OrtEncoder
from kb.evidence.sources import load_sources


def _demo_texts() -> list[str]:
    """Real paragraphs of the demo KB and its sources: lists, numbers, long and short lines."""
    texts = []
    for path in sorted((DEMO_ROOT / "docs").glob("*.md")) + sorted((DEMO_ROOT / "sources").glob("*.md")):
        texts += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts[:80]


def test_onnx_vectors_match_torch_and_the_export_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    texts = _demo_texts()
    assert len(texts) >= 40
    torch_vecs = Embedder(backend="torch").embed_uncached(texts)
    onnx = Embedder(cache_dir=tmp_path)
    onnx_vecs = onnx.embed_uncached(texts)
    assert isinstance(onnx.runner, OrtEncoder) and onnx.runner.exported
    export = tmp_path / "user-cache" / "kbaudit" / "onnx" / onnx.cache_dir.name / "model.onnx"  # type: ignore[union-attr]
    assert export.is_file()
    assert onnx_vecs.shape == torch_vecs.shape and onnx_vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx_vecs, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(onnx_vecs * torch_vecs, axis=1))) > 0.99999

    # Same neighbours: each text's nearest other text is the same under both backends.
    def nearest(v):
        sims = v @ v.T
        np.fill_diagonal(sims, -2)
        return sims.argmax(axis=1)

    assert (nearest(onnx_vecs) == nearest(torch_vecs)).all()

    # the export passed the check, and says so: the next session runs it without torch, the same vectors
    assert (export.parent / PARITY_RECORD).is_file()
    again = Embedder(cache_dir=tmp_path)
    mtime = export.stat().st_mtime_ns
    light = again.embed_uncached(texts)
    assert isinstance(again.runner, LightEncoder) and not again.runner.exported
    assert export.stat().st_mtime_ns == mtime
    assert np.allclose(light, onnx_vecs, atol=1e-6)


def test_batches_are_ordered_by_tokens_and_a_text_embeds_as_it_would_alone():
    texts = _demo_texts()
    encoder = Embedder().runner
    assert isinstance(encoder, (OrtEncoder, LightEncoder))
    before = encoder.positions  # the parity check's probes
    vecs = encoder.encode(texts, batch_size=16)
    fed = encoder.positions - before
    # a text's vector does not depend on the texts batched with it (pad positions are masked)
    alone = np.stack([encoder.encode([t], batch_size=16)[0] for t in texts[:24]])
    assert np.allclose(vecs[:24], alone, atol=1e-5)
    # ordered by characters, the same batches would have run more pad positions
    tokens = encoder._token_counts(texts)
    by_chars = np.argsort([-len(t) for t in texts], kind="stable")
    padded = sum(max(tokens[i] for i in by_chars[s : s + 16]) * len(by_chars[s : s + 16]) for s in range(0, len(texts), 16))
    assert fed == sum(sorted(tokens, reverse=True)[s] * len(tokens[s : s + 16]) for s in range(0, len(texts), 16)) < padded


def test_a_checked_export_runs_without_torch_in_a_new_process(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    text = "The default timeout is 30 seconds."
    checked = Embedder()
    vec = checked.embed_uncached([text])
    assert isinstance(checked.runner, OrtEncoder)  # the first load checks the export against torch
    probe = (
        "import sys; from kb.evidence.embed import Embedder; import numpy as np; e = Embedder(); "
        f"v = e.embed_uncached([{text!r}]); np.save(sys.argv[1], v); "
        "print(type(e.runner).__name__, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "v.npy")], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["LightEncoder", "False", "False"]
    assert np.allclose(np.load(tmp_path / "v.npy"), vec, atol=1e-6)
    # a changed export is not trusted on its record: the next session checks it again
    export = checked.runner.path
    os.utime(export, ns=(export.stat().st_atime_ns, export.stat().st_mtime_ns + 1))
    again = Embedder()
    again.embed_uncached(["another text"])
    assert isinstance(again.runner, OrtEncoder)


def test_a_damaged_export_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    first = Embedder(cache_dir=tmp_path)
    first.embed_uncached(["one text"])
    export = tmp_path / "user-cache" / "kbaudit" / "onnx" / first.cache_dir.name / "model.onnx"  # type: ignore[union-attr]
    export.write_bytes(export.read_bytes()[:4096])  # a copy cut short
    second = Embedder(cache_dir=tmp_path)
    vec = second.embed_uncached(["one text"])
    assert isinstance(second.runner, OrtEncoder) and second.runner.exported
    assert export.stat().st_size > 10 * 2**20
    assert float(vec[0] @ first.embed_uncached(["one text"])[0]) > 0.99999


def test_embed_backend_setting(tmp_path):
    assert Settings().embed_backend == "onnx"
    with pytest.raises(ConfigError, match="embed_backend must be one of onnx, torch; got 'tensorrt'"):
        Settings(embed_backend="tensorrt").validate()
    with pytest.raises(ConfigError, match="embed_backend must be one of"):
        Embedder(backend="cuda")
    settings = load_settings(cwd=tmp_path, environ={"KBAUDIT_EMBED_BACKEND": "torch"})
    assert settings.embed_backend == "torch"
    sources, errors = load_sources(DEMO_ROOT / "sources")
    assert sources and not errors
    retriever = make_retriever(sources, settings.replace(docs=DEMO_ROOT / "docs", sources=[DEMO_ROOT / "sources"]), Path(tmp_path))
    assert retriever.embedder.backend == "torch" and retriever.embedder.runner is retriever.embedder.model


def test_a_record_holds_for_the_weights_and_the_export_it_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    model = tmp_path / "minilm"
    shutil.copytree(Embedder().model_path, model)
    checked = Embedder(model_path=str(model))
    checked.embed_uncached(["The default timeout is 30 seconds."])
    assert isinstance(checked.runner, OrtEncoder)
    assert isinstance(Embedder(model_path=str(model)).runner, LightEncoder)
    # the same weights written again (another copy of the release, with its own file times)
    # are the same model: the record holds
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes())
    assert isinstance(Embedder(model_path=str(model)).runner, LightEncoder)
    # weights retrained in place, of the same shape: the same export folder, but the export was
    # checked against the old weights, so the next session checks it again (the last weight's
    # lowest byte changed: the old export still agrees with them, and is recorded again)
    data = bytearray(weights.read_bytes())
    data[-4] ^= 1
    weights.write_bytes(bytes(data))
    rechecked = Embedder(model_path=str(model))
    assert rechecked.model_id == checked.model_id
    runner = rechecked.runner
    assert isinstance(runner, OrtEncoder) and not runner.exported
    assert isinstance(Embedder(model_path=str(model)).runner, LightEncoder)
    # an export replaced after a session opened it is not recorded as the one that session checked
    os.utime(runner.path, ns=(runner.path.stat().st_atime_ns, runner.path.stat().st_mtime_ns + 1))
    runner._record(1.0)
    assert LightEncoder.open(model, runner.path.parent) is None
