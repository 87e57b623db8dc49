"""Synthetic (claim, evidence, label) pairs built from plain sentences.

The way FactCC and MiniCheck build factual-consistency data: take a real sentence as the
evidence and rewrite it into a claim whose relation to the evidence is known by construction.

* refutes: number, date/year, version, unit, entity, flag and identifier swaps; negation
  insertion/removal; comparator flips ("more than" <-> "less than"); antonyms
  ("enabled" <-> "disabled").
* nei: a claim taken from a nearby (same passage) or unrelated sentence; a claim that keeps the
  sentence but the evidence drops the clause carrying a fact; a comparator bound that the
  evidence cannot decide ("more than 30" against "more than 23").
* supports: the sentence itself or a paraphrase-preserving rewrite (light synonym/phrase
  rewrites), a sub-clause, the sentence with a trailing clause dropped, a weaker comparator
  bound ("more than 20" against "more than 23").

Every transformation returns ``None`` when it does not apply, so a generator can try another.
Nothing here reads files: callers pass sentences (see :func:`sentences_from_text`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence

from kb.claims.text import split_at_stops

SUPPORTS, REFUTES, NEI = "supports", "refutes", "nei"
PAIR_LABELS = (SUPPORTS, REFUTES, NEI)  # a synthetic pair's label (not a verdict: kb.records.LABELS)

_NUM = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)(?!\.\d)")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-4]\d)\b")
_VERSION = re.compile(r"\b[vV]?(\d+)\.(\d+)(?:\.(\d+))?\b")
_FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")
_IDENT = re.compile(r"`([^`\s]{2,40})`|\b([a-z]+(?:_[a-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]+)+)\b")
_CAP = re.compile(r"(?<!^)(?<![.!?] )\b([A-Z][a-z]+(?: [A-Z][a-z]+)*)\b")

UNITS = [
    ("KB", "MB"),
    ("MB", "GB"),
    ("GB", "TB"),
    ("milliseconds", "seconds"),
    ("seconds", "minutes"),
    ("minutes", "hours"),
    ("hours", "days"),
    ("days", "weeks"),
    ("weeks", "months"),
    ("months", "years"),
    ("kilometres", "miles"),
    ("kilometers", "miles"),
    ("km", "mi"),
    ("percent", "points"),
    ("meters", "feet"),
    ("kg", "lb"),
    ("million", "billion"),
    ("thousand", "million"),
    ("bytes", "bits"),
    ("requests", "connections"),
]
COMPARATORS = [
    ("more than", "less than"),
    ("at least", "at most"),
    ("over", "under"),
    ("above", "below"),
    ("greater than", "smaller than"),
    ("higher than", "lower than"),
    ("before", "after"),
    ("earlier than", "later than"),
    ("larger than", "smaller than"),
    ("exceeds", "falls short of"),
    ("maximum", "minimum"),
    ("up to", "at least"),
]
ANTONYMS = [
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("true", "false"),
    ("allowed", "forbidden"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("supported", "unsupported"),
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("increases", "decreases"),
    ("first", "last"),
    ("won", "lost"),
    ("win", "lose"),
    ("public", "private"),
    ("synchronous", "asynchronous"),
    ("sync", "async"),
    ("start", "end"),
    ("started", "ended"),
    ("open", "closed"),
    ("inclusive", "exclusive"),
    ("always", "never"),
    ("all", "none"),
    ("accepts", "rejects"),
    ("accepted", "rejected"),
    ("include", "exclude"),
    ("includes", "excludes"),
    ("included", "excluded"),
    ("male", "female"),
    ("born", "died"),
    ("north", "south"),
    ("east", "west"),
    ("largest", "smallest"),
    ("highest", "lowest"),
    ("oldest", "youngest"),
    ("older", "newer"),
    ("before", "after"),
    ("success", "failure"),
    ("deprecated", "recommended"),
    ("secure", "insecure"),
    ("local", "remote"),
    ("upper", "lower"),
    ("ascending", "descending"),
    ("read-only", "writable"),
    ("lowercase", "uppercase"),
    ("client", "server"),
    ("input", "output"),
]
NEGATABLE = [
    (r"\bis\b", "is not"),
    (r"\bare\b", "are not"),
    (r"\bwas\b", "was not"),
    (r"\bwere\b", "were not"),
    (r"\bcan\b", "cannot"),
    (r"\bwill\b", "will not"),
    (r"\bshould\b", "should not"),
    (r"\bmust\b", "must not"),
    (r"\bhas been\b", "has not been"),
    (r"\bhas\b", "does not have"),
    (r"\bhave\b", "do not have"),
    (r"\bsupports\b", "does not support"),
    (r"\brequires\b", "does not require"),
    (r"\ballows\b", "does not allow"),
    (r"\buses\b", "does not use"),
    (r"\bincludes\b", "does not include"),
]
UNNEGATE = [
    (r"\bis not\b", "is"),
    (r"\bare not\b", "are"),
    (r"\bwas not\b", "was"),
    (r"\bwere not\b", "were"),
    (r"\bcannot\b", "can"),
    (r"\bcan't\b", "can"),
    (r"\bwill not\b", "will"),
    (r"\bwon't\b", "will"),
    (r"\bdoes not\b", "does"),
    (r"\bdoesn't\b", "does"),
    (r"\bdo not\b", "do"),
    (r"\bdon't\b", "do"),
    (r"\bnever\b", "always"),
    (r"\bisn't\b", "is"),
    (r"\baren't\b", "are"),
    (r"\bnot\b", ""),
    (r"\bno longer\b", "still"),
]
PARAPHRASES = [
    (r"\bin order to\b", "to"),
    (r"\bis able to\b", "can"),
    (r"\bare able to\b", "can"),
    (r"\bapproximately\b", "about"),
    (r"\bapproximately\b", "around"),
    (r"\bbegan\b", "started"),
    (r"\bstarted\b", "began"),
    (r"\bpurchased\b", "bought"),
    (r"\bfilm\b", "movie"),
    (r"\bmovie\b", "film"),
    (r"\butilizes\b", "uses"),
    (r"\buses\b", "makes use of"),
    (r"\bdefault\b", "default value"),
    (r"\bby default\b", "unless configured otherwise"),
    (r"\bhowever\b", "but"),
    (r"\bmoreover\b", "also"),
    (r"\bdirectory\b", "folder"),
    (r"\bfolder\b", "directory"),
    (r"\bsettings\b", "options"),
    (r"\boptions\b", "settings"),
    (r"\bcreated\b", "made"),
    (r"\bcommences\b", "starts"),
    (r"\bassists\b", "helps"),
    (r"\bobtain\b", "get"),
    (r"\bprovides\b", "offers"),
    (r"\bOne can\b", "You can"),
    (r"\bwhich is\b", "that is"),
    (r"\bdied\b", "passed away"),
    (r"\bUnited States\b", "US"),
]
_CLAUSE_CUT = re.compile(r",\s+(?:which|who|where|while|and|but|although|as|with|including|since)\b|\s+\(|;\s+|\s+-\s+")

# ---------------------------------------------------------------------------------------------
# sentence extraction


def sentences_from_text(text: str, min_words: int = 6, max_words: int = 45) -> list[str]:
    """Plain prose sentences of a Markdown/RST/text document (code blocks, tables, HTML,
    headings and link-only lines dropped)."""
    out: list[str] = []
    in_code = False
    para: list[str] = []

    def flush() -> None:
        if para:
            chunk = " ".join(para)
            for s in split_at_stops(chunk):
                s = _clean(s)
                n = len(s.split())
                if min_words <= n <= max_words and _prose_like(s):
                    out.append(s)
            para.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```") or line.startswith("~~~"):
            in_code = not in_code
            flush()
            continue
        if in_code or raw.startswith("    ") or raw.startswith("\t"):
            flush()
            continue
        if (
            not line
            or line.startswith(("#", "|", "<", "..", ">>>", "$ ", "=", "-" * 3, "*" * 3))
            or re.match(r"^[A-Z][\w-]*: ", line)
            and len(line.split()) < 8
            or line.endswith("::")
        ):
            flush()
            continue
        line = re.sub(r"^([-*+]|\d+\.)\s+", "", line)
        para.append(line)
    flush()
    return out


def _clean(s: str) -> str:
    s = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", s)
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)
    s = re.sub(r"<[^>]+>", "", s)
    s = re.sub(r"\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)", "", s)
    s = re.sub(r":\w+:`([^`]*)`", r"`\1`", s)
    s = s.replace("``", "`")
    return re.sub(r"\s+", " ", s).strip()


def _prose_like(s: str) -> bool:
    letters = sum(c.isalpha() for c in s)
    if letters < 0.6 * len(s) or "http" in s or s.count("`") % 2:
        return False
    return s[0].isupper() or s[0] in "`\"'("


# ---------------------------------------------------------------------------------------------
# helpers


def _sub_once(pattern: str, repl: str, s: str, rng: random.Random, flags: int = 0) -> str | None:
    matches = list(re.finditer(pattern, s, flags))
    if not matches:
        return None
    m = rng.choice(matches)
    out = s[: m.start()] + repl + s[m.end() :]
    return re.sub(r"\s{2,}", " ", out).strip()


def _swap_pairs(s: str, pairs: Sequence[tuple[str, str]], rng: random.Random) -> str | None:
    options = []
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            for m in re.finditer(r"\b" + re.escape(x) + r"\b", s, flags=re.I):
                options.append((m, y))
    if not options:
        return None
    m, y = rng.choice(options)
    found = m.group(0)
    if found[:1].isupper():
        y = y[:1].upper() + y[1:]
    return s[: m.start()] + y + s[m.end() :]


def _format_like(orig: str, value: float) -> str:
    if "," in orig:
        return f"{int(round(value)):,}"
    if "." in orig:
        decimals = len(orig.split(".")[1])
        return f"{value:.{decimals}f}"
    return str(int(round(value)))


def _other_number(orig: str, rng: random.Random) -> str:
    v = float(orig.replace(",", ""))
    for _ in range(10):
        r = rng.random()
        if v == 0:
            new = rng.choice([1, 2, 5, 10, 30, 60, 100])
        elif r < 0.3:
            new = v + rng.choice([-3, -2, -1, 1, 2, 3, 5, 10]) * (1 if v >= 10 or "." not in orig else 0.1)
        elif r < 0.6:
            new = v * rng.choice([0.5, 2, 3, 10, 0.1, 1.5, 4, 5])
        else:
            new = v * rng.uniform(0.2, 5)
        if new < 0 and v >= 0:
            continue
        out = _format_like(orig, new)
        if out != orig and float(out.replace(",", "")) != v:
            return out
    return _format_like(orig, v + 1)


# ---------------------------------------------------------------------------------------------
# refutes


def swap_number(s: str, rng: random.Random) -> str | None:
    nums = [m for m in _NUM.finditer(s) if not _YEAR.fullmatch(m.group(1))]
    if not nums:
        return None
    m = rng.choice(nums)
    return s[: m.start(1)] + _other_number(m.group(1), rng) + s[m.end(1) :]


def swap_year(s: str, rng: random.Random) -> str | None:
    years = list(_YEAR.finditer(s))
    if not years:
        return None
    m = rng.choice(years)
    y = int(m.group(1)) + rng.choice([-10, -5, -3, -2, -1, 1, 2, 3, 5, 10])
    return s[: m.start(1)] + str(y) + s[m.end(1) :]


def bump_version(s: str, rng: random.Random) -> str | None:
    vs = [m for m in _VERSION.finditer(s) if not _YEAR.fullmatch(m.group(1) or "")]
    if not vs:
        return None
    m = rng.choice(vs)
    parts = [p for p in m.groups() if p is not None]
    i = rng.randrange(len(parts))
    delta = rng.choice([1, 1, 2, -1]) if int(parts[i]) > 0 else rng.choice([1, 2])
    parts[i] = str(int(parts[i]) + delta)
    for j in range(i + 1, len(parts)):
        parts[j] = "0"
    prefix = m.group(0)[0] if m.group(0)[0] in "vV" else ""
    return s[: m.start()] + prefix + ".".join(parts) + s[m.end() :]


def swap_unit(s: str, rng: random.Random) -> str | None:
    return _swap_pairs(s, UNITS, rng)


def flip_comparator(s: str, rng: random.Random) -> str | None:
    return _swap_pairs(s, COMPARATORS, rng)


def swap_antonym(s: str, rng: random.Random) -> str | None:
    return _swap_pairs(s, ANTONYMS, rng)


def negate(s: str, rng: random.Random) -> str | None:
    """Insert a negation, or remove one the sentence has."""
    for pat, repl in UNNEGATE:
        if re.search(pat, s, flags=re.I):
            out = _sub_once(pat, repl, s, rng, flags=re.I)
            return out if out and out != s else None
    opts = [(p, r) for p, r in NEGATABLE if re.search(p, s)]
    if not opts:
        return None
    pat, repl = rng.choice(opts)
    return _sub_once(pat, repl, s, rng)


def swap_entity(s: str, rng: random.Random, pool: Sequence[str]) -> str | None:
    ents = [m for m in _CAP.finditer(s) if m.start() > 0]
    if not ents or not pool:
        return None
    m = rng.choice(ents)
    for _ in range(5):
        new = rng.choice(pool)
        if new.lower() != m.group(1).lower() and new not in s:
            return s[: m.start(1)] + new + s[m.end(1) :]
    return None


def swap_flag(s: str, rng: random.Random, pool: Sequence[str]) -> str | None:
    flags = list(_FLAG.finditer(s))
    if not flags:
        return None
    m = rng.choice(flags)
    old = m.group(1)
    cands = [f for f in pool if f != old and f.startswith("--") == old.startswith("--")]
    if cands and rng.random() < 0.7:
        new = rng.choice(cands)
    else:
        body = old.lstrip("-")
        new = (
            old[: len(old) - len(body)]
            + rng.choice(["no-", "disable-", "enable-", "skip-", ""])
            + (body if rng.random() < 0.5 else body[::-1][:3] + body)
        )
    if new == old:
        return None
    return s[: m.start(1)] + new + s[m.end(1) :]


def swap_identifier(s: str, rng: random.Random, pool: Sequence[str]) -> str | None:
    ids = list(_IDENT.finditer(s))
    if not ids or not pool:
        return None
    m = rng.choice(ids)
    g = 1 if m.group(1) else 2
    old = m.group(g)
    for _ in range(5):
        new = rng.choice(pool)
        if new != old and new not in s:
            return s[: m.start(g)] + new + s[m.end(g) :]
    return None


# ---------------------------------------------------------------------------------------------
# supports


def paraphrase(s: str, rng: random.Random) -> str | None:
    opts = [(p, r) for p, r in PARAPHRASES if re.search(p, s)]
    out = s
    if opts:
        rng.shuffle(opts)
        for p, r in opts[: rng.randint(1, 2)]:
            out = _sub_once(p, r, out, rng) or out
    m = re.match(r"^(In|On|By|During|After|Since|As of|Before) ([^,]{3,40}), (.+?)([.!?]?)$", out)
    if m and rng.random() < 0.7:  # move a fronted adverbial to the end
        rest = m.group(3)
        out = rest[:1].upper() + rest[1:] + " " + m.group(1).lower() + " " + m.group(2) + (m.group(4) or ".")
    return out if out != s else None


def drop_trailing_clause(s: str, rng: random.Random) -> str | None:
    cuts = [m for m in _CLAUSE_CUT.finditer(s) if len(s[: m.start()].split()) >= 5]
    if not cuts:
        return None
    m = rng.choice(cuts)
    head = s[: m.start()].rstrip(" ,;")
    if re.search(r"\b(and|or|but|the|a|an|of|to|in|on|at|by|with|for|from)$", head, flags=re.I):
        return None
    return head + "." if not head.endswith((".", "!", "?")) else head


def sub_clause(s: str, rng: random.Random) -> str | None:
    """The main clause of a coordination ("A and B" -> "A") or the part before a comma."""
    parts = re.split(r"\s*,?\s+and\s+(?=[a-z]+ed\b|[a-z]+s\b|is\b|was\b|has\b)|;\s+", s)
    if len(parts) > 1 and len(parts[0].split()) >= 5:
        return parts[0].rstrip(" ,") + "."
    return drop_trailing_clause(s, rng)


# ---------------------------------------------------------------------------------------------
# nei


def comparator_bound(s: str, rng: random.Random) -> tuple[str, str] | None:
    """From "more than 23 million": a claim "more than 20 million" (supports), "more than 30
    million" (nei) or "less than 20 million" (refutes). Returns (claim, label)."""
    m = re.search(
        r"\b(more than|over|at least|above|less than|under|at most|below|fewer than) "
        r"(\d+(?:\.\d+)?)\b",
        s,
    )
    if not m:
        return None
    comp, num = m.group(1), m.group(2)
    v = float(num)
    if v == 0:
        return None
    lower = comp in ("more than", "over", "at least", "above")
    lo, hi = _format_like(num, v * rng.uniform(0.4, 0.9)), _format_like(num, v * rng.uniform(1.2, 3))
    if lo == num or hi == num:
        return None
    r = rng.random()
    if lower:
        if r < 0.34:
            return s[: m.start(2)] + lo + s[m.end(2) :], SUPPORTS
        if r < 0.67:
            return s[: m.start(2)] + hi + s[m.end(2) :], NEI
        return s[: m.start(1)] + "less than " + lo + s[m.end(2) :], REFUTES
    if r < 0.34:
        return s[: m.start(2)] + hi + s[m.end(2) :], SUPPORTS
    if r < 0.67:
        return s[: m.start(2)] + lo + s[m.end(2) :], NEI
    return s[: m.start(1)] + "more than " + hi + s[m.end(2) :], REFUTES


def missing_clause(s: str, rng: random.Random) -> tuple[str, str] | None:
    """Claim = the full sentence, evidence = the sentence without its fact-bearing trailing
    clause: the claim says more than the evidence. Returns (claim, evidence)."""
    short = drop_trailing_clause(s, rng)
    if not short:
        return None
    dropped = s[len(short) - 1 :]
    if not re.search(r"\d|[A-Z][a-z]|--|`", dropped):
        return None
    return s, short


REFUTE_FUNCS = {
    "number": swap_number,
    "year": swap_year,
    "version": bump_version,
    "unit": swap_unit,
    "comparator": flip_comparator,
    "antonym": swap_antonym,
    "negation": negate,
}
POOL_FUNCS = {"entity": swap_entity, "flag": swap_flag, "identifier": swap_identifier}
SUPPORT_FUNCS = {"paraphrase": paraphrase, "drop_clause": drop_trailing_clause, "sub_clause": sub_clause}


def refute(s: str, rng: random.Random, pools: Mapping[str, Sequence[str]] | None = None) -> tuple[str, str] | None:
    """A contradicting rewrite of ``s``: (claim, transformation name) or None."""
    pools = pools or {}
    names = list(REFUTE_FUNCS) + list(POOL_FUNCS)
    # Slot swaps first when the sentence has the slot: they are what drifts in docs.
    rng.shuffle(names)
    for name in names:
        if name in REFUTE_FUNCS:
            out = REFUTE_FUNCS[name](s, rng)
        else:
            out = POOL_FUNCS[name](s, rng, pools.get(name, ()))
        if out and _norm(out) != _norm(s):
            return out, name
    return None


def support(s: str, rng: random.Random) -> tuple[str, str]:
    names = list(SUPPORT_FUNCS)
    rng.shuffle(names)
    for name in names:
        out = SUPPORT_FUNCS[name](s, rng)
        if out and _norm(out) != _norm(s):
            return out, name
    return s, "copy"


def _norm(s: str) -> str:
    return re.sub(r"\W+", " ", s.lower()).strip()


def build_pools(sentences: Iterable[str]) -> dict[str, list[str]]:
    ents: set[str] = set()
    flags: set[str] = set()
    idents: set[str] = set()
    for s in sentences:
        for m in _CAP.finditer(s):
            if m.start() > 0 and len(m.group(1)) > 3:
                ents.add(m.group(1))
        for m in _FLAG.finditer(s):
            if len(m.group(1)) > 3:
                flags.add(m.group(1))
        for m in _IDENT.finditer(s):
            idents.add(m.group(1) or m.group(2))
    return {"entity": sorted(ents), "flag": sorted(flags), "identifier": sorted(idents)}


def generate(
    passages: Sequence[Sequence[str]],
    n: int,
    seed: int = 0,
    mix: tuple[float, float, float] = (0.35, 0.40, 0.25),
) -> list[tuple[str, str, str, str]]:
    """``n`` synthetic pairs (claim, evidence, label, transformation) from ``passages`` (lists of
    sentences that belong together: nearby sentences give hard NEI pairs).

    ``mix`` = share of (supports, refutes, nei). Deterministic for a given seed and input."""
    rng = random.Random(seed)
    flat = [(i, j) for i, p in enumerate(passages) for j in range(len(p))]
    if not flat:
        return []
    pools = build_pools(s for p in passages for s in p)
    out: list[tuple[str, str, str, str]] = []
    tries = 0
    while len(out) < n and tries < n * 20:
        tries += 1
        i, j = rng.choice(flat)
        s = passages[i][j]
        r = rng.random()
        if r < mix[0]:
            claim, how = support(s, rng)
            if how == "copy" and rng.random() < 0.7:
                continue  # keep identical copies a minority
            # sometimes the evidence is the claim inside its neighbour context
            out.append((claim, s, SUPPORTS, how))
        elif r < mix[0] + mix[1]:
            res = refute(s, rng, pools)
            if not res:
                continue
            claim, how = res
            if rng.random() < 0.2:  # the perturbed sentence as evidence, the original as claim
                out.append((s, claim, REFUTES, how))
            else:
                out.append((claim, s, REFUTES, how))
        else:
            k = rng.random()
            if k < 0.35 and len(passages[i]) > 1:
                j2 = rng.choice([x for x in range(len(passages[i])) if x != j])
                out.append((passages[i][j2], s, NEI, "nearby"))
            elif k < 0.55:
                i2, j2 = rng.choice(flat)
                if i2 == i:
                    continue
                out.append((passages[i2][j2], s, NEI, "unrelated"))
            elif k < 0.8:
                res = missing_clause(s, rng)
                if not res:
                    continue
                out.append((res[0], res[1], NEI, "missing_clause"))
            else:
                res = comparator_bound(s, rng)
                if not res:
                    continue
                out.append((res[0], s, res[1], "comparator_bound"))
    return out
