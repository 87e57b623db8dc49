"""Normalisation and tokens for the rules tier: canonical text, word tokens, content words and
identifiers."""

import re
import unicodedata
from functools import lru_cache

from kb.claims.text import OVERLAP_STOPWORDS, stem_overlap, without_stray_underscores
from kb.verify.vocabulary import _NUM_WORDS, NEGATIONS

# ---------------------------------------------------------------------------------------------
# normalisation and tokens
# ---------------------------------------------------------------------------------------------

_QUOTES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\ufffd": " ",
        "\u2009": " ",
        "\u202f": " ",
        "`": "",
    }
)

# PTB escapes used by FEVER / VitaminC
_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_PTB_RE = re.compile("|".join(re.escape(k) for k in _PTB))


_EMPHASIS = re.compile(r"(?<![\w\\/])([*_]{1,2})(?=\w)(.+?)(?<=\w)\1(?!\w)")


def normalize(text: str) -> str:
    """Unicode-normalised text with plain quotes and dashes, markup backticks removed."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _PTB_RE.sub(lambda m: _PTB[m.group(0)], text)
    # emphasis markers come in pairs, opening before a word and closing after one; an underscore
    # inside a word or alone before one is part of a name ("request_id" is not "requestid", and
    # "layouts/_partials" is not "layouts/partials")
    text = _EMPHASIS.sub(r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


_CODE_CASE = re.compile(r"[\w$@.-]+")
_LOWER, _UPPER, _JOINT, _HUMP = re.compile(r"[a-z]"), re.compile(r"[A-Z]"), re.compile(r"[._]"), re.compile(r"[a-z][A-Z]")


@lru_cache(maxsize=65536)  # the rules ask this of every token of every pair: few distinct tokens
def is_code_case(tok: str) -> bool:
    """A token whose case is part of its name: camelCase (lower first, an upper later), or a
    snake/dotted name with an upper letter ("MAX_SIZE" folds: all upper; "tls.minVersion" keeps)."""
    tok = tok.strip(".-")
    if not _LOWER.search(tok) or not _UPPER.search(tok):
        return False
    return bool(_LOWER.match(tok)) or bool(_JOINT.search(tok) and _HUMP.search(tok))


@lru_cache(maxsize=65536)
def canonical(text: str) -> str:
    """Comparison key of a whole sentence: case, spacing and punctuation folded, except that a
    code identifier keeps its case ("requestID" is not "requestId"; prose words fold)."""
    t = without_stray_underscores(normalize(text))
    t = _CODE_CASE.sub(lambda m: m.group(0) if is_code_case(m.group(0)) else m.group(0).lower(), t)
    t = re.sub(r"[^\w%+=<>./:@-]+", " ", t)
    t = re.sub(r"(?<=\w)[.:]+(?=\s|$)", " ", t)  # sentence-final / trailing dots and colons
    return re.sub(r"\s+", " ", t).strip()


TOKEN_RE = re.compile(
    r"""
    (?:[<>]=?|~=|==|[\^~])?v?\d+(?:[.,]\d+)*(?:\.[xX*])?(?:[a-zA-Z]+\d*)*\+?   # numbers, versions, 60s, 3rd
    | --?[A-Za-z][\w.-]*(?:=[^\s,;)]+)?                                      # command-line flags
    | [A-Za-z_@][\w$@-]*(?:(?:\.|/|::|=|:(?=\w))[\w*$@"{}-]+)+[+]?             # dotted names, paths, Key=value
    | /[\w.-]+(?:/[\w.*-]+)*                                                 # absolute paths
    | [A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+                                # snake_case names: one token
    | [A-Za-z]+(?:-[A-Za-z0-9]+)+                                            # COVID-19, Keegan-Michael
    | [A-Za-z]+\d+[A-Za-z0-9]*                                               # sha256, utf8, ipv6: names, not numbers
    | [A-Za-z]+(?:'[a-z]+)?                                                  # words
    | \S
    """,
    re.VERBOSE,
)


@lru_cache(maxsize=20000)
def _word_tokens(text: str) -> tuple[str, ...]:
    return tuple(_tokenize(text))


def word_tokens(text: str) -> list[str]:
    return list(_word_tokens(text))


def _tokenize(text: str) -> list[str]:
    out: list[str] = []
    for t in TOKEN_RE.findall(normalize(text)):
        if len(t) > 2 and t.endswith(".") and not re.fullmatch(r"(?:[A-Za-z]\.)+", t):
            t = t[:-1]
            out.extend(_split_setting(t))
            out.append(".")
            continue
        if "-" in t and not t.startswith("-"):
            out.extend(_split_compound(t))
            continue
        out.extend(_split_setting(t))
    return out


def _split_compound(t: str) -> list[str]:
    parts = t.split("-")
    if len(parts) > 1 and all(p.lower() in _NUM_WORDS for p in parts):
        out = [parts[0]]
        for p in parts[1:]:
            out += ["-", p]
        return out  # thirty-one -> thirty - one (a number)
    return [t]


def _split_setting(t: str) -> list[str]:
    """``Default=0s`` -> ``Default``, ``=``, ``0s`` (flags such as ``--foo=bar`` stay whole)."""
    m = re.fullmatch(r"([A-Za-z][\w.]*)=(\S+)", t)
    if not m:
        return [t]
    return [m.group(1), "="] + TOKEN_RE.findall(m.group(2))


_ALNUM = re.compile(r"[a-z0-9]")


def content_words(tokens: list[str]) -> list[str]:
    out = []
    for t in tokens:
        lt = t.lower()
        if lt in OVERLAP_STOPWORDS or lt in NEGATIONS or not _ALNUM.search(lt):
            continue
        out.append(stem_overlap(lt))
    return out


@lru_cache(maxsize=65536)
def content_set(text: str) -> frozenset[str]:
    """The content words of a text as a set (cached: evidence sentences are compared with many
    claims)."""
    return frozenset(content_words(word_tokens(text)))


@lru_cache(maxsize=65536)
def is_identifier(tok: str) -> bool:
    """Technical identifier: flag, dotted/camel/snake name, path, Key=value, Func()."""
    if tok.isalpha() and (tok.islower() or tok[1:].islower()):
        return False
    if re.fullmatch(r"--?[A-Za-z][\w.-]*(=.*)?", tok):
        return True
    if re.search(r"[A-Za-z]", tok) and re.search(r"[./:=_$@]|::", tok.strip(".")):
        return True
    if re.fullmatch(r"[a-z]+[A-Z][A-Za-z0-9]*", tok):  # camelCase
        return True
    if re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+", tok):  # PascalCase with 2+ humps
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9_]{1,}", tok) and len(tok) >= 2:  # ACRONYM / ENV_VAR
        return True
    return False
