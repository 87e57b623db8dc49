from pathlib import Path

from kb.ingest.walk import ingest


def _write(root: Path, rel: str, data: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def test_bad_files_become_errors_and_good_ones_are_parsed(tmp_path: Path):
    kb = tmp_path / "kb"
    _write(kb, "good.md", "# Limits\n\nThe API allows 100 requests per minute.\n")
    _write(kb, "sub dir/ünïcode name.md", "The queue holds 50 jobs.\n")
    _write(kb, "binary.md", b"\x00\x01\x02PNG")
    _write(kb, "latin1.txt", "Caf\xe9".encode("latin-1"))
    _write(kb, "big.md", "x" * 2000)
    _write(kb, "image.png", b"\x89PNG")  # not a document type: not listed at all
    documents, errors = ingest(kb, max_bytes=1000)
    assert sorted(d.doc_id for d in documents) == ["good.md", "sub dir/ünïcode name.md"]
    reasons = {e.path: e.error for e in errors}
    assert set(reasons) == {"binary.md", "latin1.txt", "big.md"}
    assert "over the 1000-byte limit" in reasons["big.md"]


def test_ignore_file_front_matter_and_outside_symlinks(tmp_path: Path):
    kb = tmp_path / "kb"
    outside = tmp_path / "secret.md"
    outside.write_text("The root password is hunter2.\n")
    _write(kb, "keep.md", "Backups run every 6 hours.\n")
    _write(kb, "drafts/wip.md", "Backups run every 2 hours.\n")
    _write(kb, "optout.md", "---\nkbaudit: {ignore: true}\n---\nBackups run hourly.\n")
    _write(kb, ".kbauditignore", "drafts/\n")
    (kb / "link.md").symlink_to(outside)
    documents, errors = ingest(kb, max_bytes=1 << 20)
    assert [d.doc_id for d in documents] == ["keep.md"]
    assert [(e.path, "outside the KB root" in e.error) for e in errors] == [("link.md", True)]
