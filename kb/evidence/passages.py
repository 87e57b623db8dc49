"""Source versions cut into passages: sentence windows with offsets, and the tokens and
sentence keys that BM25 and the version alignment compare."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Sentences: the claim splitter's rules (abbreviations, decimals, versions), so claims and
# passages are cut the same way.
from kb.claims.text import INDEX_STOPWORDS, sentence_spans, stem_index, without_stray_underscores
from kb.records import Passage, SourceDoc, content_hash

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# a leading underscore that names something is part of the name: "layouts/_partials" is not
# "layouts/partials" (without_stray_underscores)
_KEY_TOKEN = re.compile(r"(?:(?<![^\W_])_+)?[^\W_]+", re.UNICODE)


def sentence_key(text: str) -> str:
    """A sentence as compared across versions (and a claim as written with them): case,
    punctuation and spacing ignored."""
    return " ".join(_KEY_TOKEN.findall(without_stray_underscores(text.lower())))


def tokenize(text: str) -> list[str]:
    return [stem_index(t) for t in _TOKEN.findall(text.lower()) if t not in INDEX_STOPWORDS]


# ---------------------------------------------------------------- passages


@dataclass
class _Span:
    start: int  # offsets into SourceDoc.text
    end: int
    text: str  # visible text
    section: tuple[str, ...] = ()
    command: bool = False  # a shell command of a code block (kb/ingest/commands.py)
    lead_in: str = ""  # a list item's: the sentence that introduces its list, as written


def _sentences_of(source: SourceDoc) -> list[_Span]:
    """The version's sentences in page order, then its shell commands (each one sentence): the
    commands come last so that prose windows and the alignment of prose across versions read the
    prose as they would without them, and commands align with commands."""
    out: list[_Span] = []
    commands: list[_Span] = []
    if source.blocks:
        for block in source.blocks:
            if block.kind == "heading" or not block.text.strip():
                continue
            command = block.kind == "command"
            for a, b in [(0, len(block.text))] if command else sentence_spans(block.text):
                if block.offsets and len(block.offsets) == len(block.text):
                    s, e = block.offsets[a], block.offsets[b - 1] + 1
                else:
                    s, e = block.start + a, block.start + b
                (commands if command else out).append(_Span(s, e, block.text[a:b], tuple(block.section), command, block.lead_in.strip()))
    else:
        out = [_Span(a, b, source.text[a:b]) for a, b in sentence_spans(source.text)]
    return out + commands


def passage_ranges(sents: list[_Span], window: int, stride: int) -> list[tuple[int, int]]:
    """Sentence ranges of a version's passages: windows over its prose, and each command a passage
    of its own (a command beside the prose it follows would read as part of that prose)."""
    prose = sum(1 for s in sents if not s.command)
    return windows(prose, window, stride) + [(i, i + 1) for i in range(prose, len(sents))]


def windows(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """``[start, end)`` sentence ranges of the windows over ``n`` sentences (the last one flush)."""
    if n <= 0:
        return []
    starts = list(range(0, max(1, n - window + 1), stride))
    if starts[-1] + window < n:
        starts.append(n - window)
    return [(i, min(n, i + window)) for i in starts]


def _passage(source: SourceDoc, group: list[_Span]) -> Passage:
    start, end = group[0].start, group[-1].end
    return Passage(
        passage_id=content_hash(f"{source.source_version}:{start}:{end}"),
        source_id=source.source_id,
        source_version=source.source_version,
        source_date=source.source_date,
        authority=source.authority,
        start=start,
        end=end,
        text=" ".join(s.text for s in group),
        title=source.title,
        source_rev=source.source_rev,
        source_kind=source.source_kind,
        deleted_in=source.deleted_in,
    )


def build_passages(source: SourceDoc, window: int = 3, stride: int = 2) -> list[tuple[Passage, list[_Span]]]:
    """Sentence windows of one source version, each with the sentences it is made of."""
    sents = _sentences_of(source)
    return [(_passage(source, sents[i:j]), sents[i:j]) for i, j in passage_ranges(sents, window, stride)]
