"""``still_stated``: the sentence of the newest corpus that states an older one nearly as written,
compared only with keys of a length that can reach the threshold."""

from __future__ import annotations

import random
from types import SimpleNamespace

from rapidfuzz import fuzz, process

from kb.evidence.passages import sentence_key
from kb.evidence.versions import STILL_STATED, SourceVersions

NEWEST = [
    "The server listens on port 8080 by default.",
    "Set the timeout option to change how long a request may take.",
    "Logs are written to the standard error stream.",
    "The cache is cleared when the configuration changes.",
    "A build fails when a page links to a missing file.",
    "Use the verbose flag to print every step of the build.",
    "The server listens on port 8081 by default.",  # as like the first as any other one
    "Themes are installed from the package index.",
    "Hi.",
    "Each worker handles one request at a time and then waits for the next one in the queue.",
]


def _versions(asked: list[str]) -> SourceVersions:
    """A SourceVersions whose newest corpus is NEWEST; the sentences asked about come after it."""
    versions = SourceVersions()
    versions.sentences = [SimpleNamespace(text=t) for t in [*NEWEST, *asked]]
    exact: dict[str, list[int]] = {}
    keys = [sentence_key(t) for t in NEWEST]
    for i, key in enumerate(keys):
        exact.setdefault(key, []).append(i)
    versions._current = (exact, keys, list(range(len(NEWEST))))
    versions._by_length = None
    return versions


def _over_every_key(text: str) -> int | None:
    keys = [sentence_key(t) for t in NEWEST]
    key = sentence_key(text)
    if key in keys:
        return keys.index(key)
    found = process.extractOne(key, keys, scorer=fuzz.ratio, processor=None, score_cutoff=STILL_STATED)
    return None if found is None else found[2]


def test_a_sentence_nearly_as_written_is_found_and_another_one_is_not():
    asked = [
        "The server listens on port 8080 by default",  # punctuation only
        "Logs are written to the standard error stream",
        "Set the timeout option to change how long each request may take.",  # a word added
        "The cache is emptied whenever the settings change.",  # reworded: not nearly as written
    ]
    versions = _versions(asked)
    found = [versions.still_stated(len(NEWEST) + i) for i in range(len(asked))]
    assert found == [0, 2, 1, None]


def test_of_equally_close_sentences_the_first_in_corpus_order_is_taken():
    versions = _versions(["The server listens on port 8089 by default."])
    assert versions.still_stated(len(NEWEST)) == 0  # 8080 and 8081 are one character away alike


def test_the_length_window_finds_what_a_search_over_every_key_finds():
    rng = random.Random(3)
    asked = []
    for _ in range(400):
        chars = list(rng.choice(NEWEST))
        for _ in range(rng.randint(0, max(1, len(chars) // 4))):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 and at < len(chars):
                del chars[at]
            else:
                chars.insert(at, rng.choice("abcde xyz"))
        asked.append("".join(chars))
    versions = _versions(asked)
    found = [versions.still_stated(len(NEWEST) + i) for i in range(len(asked))]
    assert found == [_over_every_key(t) for t in asked]
    assert sum(f is not None for f in found) > 100 and sum(f is None for f in found) > 50  # both kinds were asked
