"""A knowledge base of bad and hostile inputs, beside a few good demo pages (the fault suite's
`hostile_run`)."""

from __future__ import annotations

import os
import time
from datetime import date
from pathlib import Path

from faults.conftest import small_kb
from kb.config import DEMO_ROOT

TINY = 10_000
BIG_BYTES = 50_000_000
OVERSIZED_BYTES = 70 * 1024 * 1024  # over the default max_doc_bytes (64 MiB)
LOG_LINE = "2026-01-01T00:00:00Z INFO worker-17 processed job 4f3a2b1c in 123 ms status=ok\n"
UNDATED_MTIME = date(2025, 1, 15)
PWNED = "kbaudit-fault-pwned"


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\nThe Team plan keeps backups for 30 days.\n"


def build_hostile_kb(root: Path) -> tuple[Path, Path]:
    docs = small_kb(root)
    outside = root / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "secret.md").write_text("The launch code is 0000.\n")
    (outside / "folder" / "page.md").write_text("The Team plan keeps backups for 31 days.\n")
    w = lambda name, text: (docs / name).write_text(text, "utf-8")  # noqa: E731
    # binary and undecodable
    (docs / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (docs / "notes.txt").write_bytes(b"Backups run nightly.\x00\x00\x00")
    (docs / "latin1.md").write_bytes("Caf\xe9 opens at 9.".encode("latin-1"))
    # empty
    (docs / "empty.md").write_bytes(b"")
    w("blank.md", "  \n\n\t\n")
    w("front-matter-only.md", "---\ntitle: Nothing else\n---\n")
    # 50 MB: a pasted build log (one fenced block) under one line of prose; and a file over the limit
    with (docs / "big-log.md").open("w") as fh:
        fh.write("# Build log\n\nThe Team plan keeps backups for 30 days.\n\n```\n")
        fh.write(LOG_LINE * (BIG_BYTES // len(LOG_LINE)))
        fh.write("```\n")
    with (docs / "oversized.md").open("wb") as fh:  # sparse: no disk used, refused by its size
        fh.truncate(OVERSIZED_BYTES)
    # 10,000 tiny documents without check-worthy claims
    for i in range(TINY):
        folder = docs / "tiny" / f"d{i // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\nSee the handbook for details.\n")
    # links leaving the root, and one staying inside
    (docs / "escape.md").symlink_to(outside / "secret.md")
    (docs / "escape-folder").symlink_to(outside / "folder", target_is_directory=True)
    (docs / "inside-link.md").symlink_to(docs / "backups.md")
    # odd names
    w("with space.md", "The Enterprise plan keeps backups for 90 days.\n")
    w("ünïcødé 文档.md", "The Enterprise plan keeps backups for 90 days.\n")
    w("notes..v2.md", "The Enterprise plan keeps backups for 90 days.\n")
    w("it's.md", "The Enterprise plan keeps backups for 90 days.\n")
    w("..hidden.md", "The Enterprise plan keeps backups for 7 days.\n")
    # ids that look the same (NFC and NFD 'café'), and the same bytes under two names
    w("caf\u00e9.md", "The Team plan keeps backups for 30 days.\n")
    w("cafe\u0301.md", "The Team plan keeps backups for 30 days.\n")
    # hostile front matter
    w("pyobj.md", f"---\ntitle: !!python/object/apply:os.system ['touch {root / PWNED}']\n---\nThe Team plan keeps backups for 30 days.\n")
    w("bomb.md", _alias_bomb())
    w("huge-front-matter.md", "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(2000)) + "---\nBody.\n")
    # HTML with scripts, and names and fields that try to reach the HTML report
    w(
        "page.html",
        "<html><head><title>Backups</title><script>document.write('The Team plan keeps backups for 99 days.')"
        "</script></head><body><p>The Team plan keeps backups for 30 days.</p><img src=x onerror=alert(1)>"
        "<style>p{color:red}</style><noscript>The Team plan keeps backups for 98 days.</noscript></body></html>",
    )
    w(
        "<img src=x onerror=alert(1)>.md",
        '---\nowner: "<script>alert(1)</script>"\ntitle: "<b onmouseover=alert(2)>t</b>"\n---\nThe Team plan costs $25 per month.\n',
    )
    # claims for the undated and the future-dated sources
    w("starter.md", "The Starter plan includes 3 seats.\n\nThe Starter plan allows 12 projects.\n")

    sources = root / "sources"
    sources.mkdir()
    for path in (DEMO_ROOT / "sources").iterdir():
        (sources / path.name).write_bytes(path.read_bytes())
    (sources / "undated.md").write_text("---\nid: starter-seats\ntitle: Starter seats\n---\nThe Starter plan includes 3 seats.\n")
    stamp = time.mktime(UNDATED_MTIME.timetuple()) + 12 * 3600
    os.utime(sources / "undated.md", (stamp, stamp))
    (sources / "future.md").write_text("---\nid: starter-projects\npublished_at: 2030-01-01\n---\nThe Starter plan allows 12 projects.\n")
    for name in ("dup-a.md", "dup-b.md"):
        (sources / name).write_text("---\nid: seat-policy\npublished_at: 2025-03-01\n---\nSeats are billed monthly.\n")
    return docs, sources
