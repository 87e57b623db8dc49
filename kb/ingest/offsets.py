"""Offset maps: where each character of a block's plain text sits in the document.

A block's ``offsets`` give, for each character of its text, its offset in ``Document.text``.
They are stored as runs (``OffsetMap``) rather than one int per character: a 20 MB document
would otherwise need gigabytes. ``TextBuilder`` builds a block's text and its runs together.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import overload

__all__ = ["OffsetMap", "TextBuilder", "collapse_ws", "runs", "sub_map"]


class OffsetMap(Sequence[int]):
    """Maps each character of a block's text to its offset in the document, stored as runs.

    Run ``k`` says: text positions ``starts[k] ..`` map to document offsets ``docs[k] ..``,
    one for one, until the next run starts.
    """

    __slots__ = ("_starts", "_docs", "_len")

    def __init__(self, starts=(), docs=(), length: int = 0):
        self._starts = tuple(starts)
        self._docs = tuple(docs)
        self._len = length

    @classmethod
    def from_offsets(cls, offsets) -> OffsetMap:
        starts: list[int] = []
        docs: list[int] = []
        prev = None
        n = 0
        for i, off in enumerate(offsets):
            if prev is None or off != prev + 1:
                starts.append(i)
                docs.append(off)
            prev = off
            n = i + 1
        return cls(starts, docs, n)

    def __len__(self) -> int:
        return self._len

    def runs(self) -> tuple[list[int], list[int], int]:
        """(run starts in the text, their offsets in the document, length): what rebuilds the map."""
        return list(self._starts), list(self._docs), self._len

    def _at(self, i: int) -> int:
        k = bisect_right(self._starts, i) - 1
        return self._docs[k] + (i - self._starts[k])

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[int, ...]: ...
    def __getitem__(self, i: int | slice) -> int | tuple[int, ...]:
        if isinstance(i, slice):
            return tuple(self._at(j) for j in range(*i.indices(self._len)))
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("offset index out of range")
        return self._at(i)

    def __iter__(self):
        starts, docs, n = self._starts, self._docs, self._len
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else n
            yield from range(docs[k], docs[k] + (e - s))

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Document span ``[start, end)`` covering text characters ``i .. j-1``."""
        if j <= i:
            off = self[i] if i < self._len else (self[-1] + 1 if self._len else 0)
            return off, off
        return self[i], self[j - 1] + 1

    def __eq__(self, other):
        if isinstance(other, OffsetMap):
            return (self._len, self._starts, self._docs) == (other._len, other._starts, other._docs)
        if isinstance(other, (tuple, list)):
            return len(other) == self._len and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash((self._len, self._starts, self._docs))

    def __repr__(self):
        if self._len <= 12:
            return f"OffsetMap({tuple(self)})"
        return f"OffsetMap(len={self._len}, runs={len(self._starts)})"


class TextBuilder:
    """Builds a block's plain text together with its offset runs."""

    __slots__ = ("parts", "starts", "docs", "n")

    def __init__(self):
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.docs: list[int] = []
        self.n = 0

    def add(self, s: str, off: int) -> None:
        """Append ``s``, whose first character sits at document offset ``off`` (contiguous)."""
        if not s:
            return
        if not self.starts or self.docs[-1] + (self.n - self.starts[-1]) != off:
            self.starts.append(self.n)
            self.docs.append(off)
        self.parts.append(s)
        self.n += len(s)

    def add_synthetic(self, s: str, off: int) -> None:
        """Append ``s`` (a replacement such as a decoded entity); every char maps to ``off``."""
        for ch in s:
            self.starts.append(self.n)
            self.docs.append(off)
            self.parts.append(ch)
            self.n += 1

    def ends_with_space(self) -> bool:
        return bool(self.parts) and self.parts[-1][-1:].isspace()

    def build(self) -> tuple[str, OffsetMap]:
        text = "".join(self.parts)
        # strip surrounding whitespace, keeping the map aligned
        lead = len(text) - len(text.lstrip())
        trail = len(text) - len(text.rstrip())
        full = OffsetMap(self.starts, self.docs, self.n)
        if lead or trail:
            end = len(text) - trail
            text = text[lead:end]
            full = sub_map(full, lead, end)
        return text, full


def sub_map(m: OffsetMap, i: int, j: int) -> OffsetMap:
    if j <= i:
        return OffsetMap((), (), 0)
    starts, docs = m._starts, m._docs
    k0 = bisect_right(starts, i) - 1
    k1 = bisect_right(starts, j - 1) - 1
    ns = [0]
    nd = [docs[k0] + (i - starts[k0])]
    for k in range(k0 + 1, k1 + 1):
        ns.append(starts[k] - i)
        nd.append(docs[k])
    return OffsetMap(ns, nd, j - i)


# ---------------------------------------------------------------------------------------------


def runs(m: OffsetMap, n: int):
    """Yield (a, b) ranges of text positions whose offsets are contiguous."""
    starts = m._starts
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else n
        if b > a:
            yield a, b


_WS = re.compile(r"\s+")


def collapse_ws(text: str, omap: OffsetMap) -> tuple[str, OffsetMap]:
    """Collapse whitespace runs to one space (HTML rendering), keeping offsets aligned."""
    if "  " not in text and "\n" not in text and "\t" not in text and "\r" not in text:
        return text, omap
    out = TextBuilder()
    pos = 0
    for m in _WS.finditer(text):
        if m.start() > pos:
            _copy(out, text, omap, pos, m.start())
        out.add_synthetic(" ", omap[m.start()]) if text[m.start()] != " " else out.add(" ", omap[m.start()])
        pos = m.end()
    if pos < len(text):
        _copy(out, text, omap, pos, len(text))
    return out.build()


def _copy(out: TextBuilder, text: str, omap: OffsetMap, a: int, b: int) -> None:
    """Copy text[a:b] into ``out`` with its offsets, run by run."""
    starts = omap._starts
    k = bisect_right(starts, a) - 1
    i = a
    while i < b:
        run_end = starts[k + 1] if k + 1 < len(starts) else len(omap)
        j = min(b, run_end)
        out.add(text[i:j], omap[i])
        i = j
        k += 1
