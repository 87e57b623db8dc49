"""The words the slot extractors read: negations, number words and ordinals, scales, months,
units, currencies, comparators before and after a number, and software hints."""

import re

NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot can't don't doesn't didn't isn't
    aren't wasn't weren't won't wouldn't shouldn't couldn't hasn't haven't hadn't without
    n't""".split()
)

_NUM_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip
_SCALES = {
    "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "mn": 1e6, "bn": 1e9,
    "lakh": 1e5, "crore": 1e7, "lakhs": 1e5, "crores": 1e7,
}  # fmt: skip
MONTHS = {
    m: i + 1
    for i, ms in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in ms
}  # fmt: skip

# unit -> (dimension, factor to the base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("percent", 1), "percent": ("percent", 1), "pct": ("percent", 1),
    "ns": ("duration", 1e-9), "us": ("duration", 1e-6), "µs": ("duration", 1e-6),
    "ms": ("duration", 1e-3), "millisecond": ("duration", 1e-3), "milliseconds": ("duration", 1e-3),
    "s": ("duration", 1), "sec": ("duration", 1), "secs": ("duration", 1),
    "second": ("duration", 1), "seconds": ("duration", 1),
    "m": ("duration", 60), "min": ("duration", 60), "mins": ("duration", 60),
    "minute": ("duration", 60), "minutes": ("duration", 60),
    "h": ("duration", 3600), "hr": ("duration", 3600), "hrs": ("duration", 3600),
    "hour": ("duration", 3600), "hours": ("duration", 3600),
    "d": ("duration", 86400), "day": ("duration", 86400), "days": ("duration", 86400),
    "week": ("duration", 604800), "weeks": ("duration", 604800),
    "month": ("duration", 2629800), "months": ("duration", 2629800),
    "year": ("duration", 31557600), "years": ("duration", 31557600),
    "b": ("size", 1), "byte": ("size", 1), "bytes": ("size", 1),
    "kb": ("size", 1e3), "mb": ("size", 1e6), "gb": ("size", 1e9), "tb": ("size", 1e12),
    "kib": ("size", 1024), "mib": ("size", 1024**2), "gib": ("size", 1024**3),
    "tib": ("size", 1024**4), "k": ("count", 1e3),
    "km": ("length", 1e3), "mi": ("length", 1609.34), "miles": ("length", 1609.34),
    "mile": ("length", 1609.34), "kilometres": ("length", 1e3), "kilometers": ("length", 1e3),
    "metres": ("length", 1), "meters": ("length", 1), "ft": ("length", 0.3048),
    "feet": ("length", 0.3048), "cm": ("length", 0.01), "mm": ("length", 0.001),
    "kg": ("mass", 1), "g": ("mass", 1e-3), "lb": ("mass", 0.4536), "lbs": ("mass", 0.4536),
    "tonnes": ("mass", 1e3), "tons": ("mass", 907.2),
    "mhz": ("frequency", 1e6), "ghz": ("frequency", 1e9), "hz": ("frequency", 1),
    "rpm": ("rate", 1), "rps": ("rate", 1), "qps": ("rate", 1),
}  # fmt: skip
_CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "usd": "USD", "eur": "EUR",
             "dollars": "USD", "euros": "EUR", "pounds": "GBP"}  # fmt: skip

_GT = ("more than", "over", "above", "greater than", "exceeding", "in excess of", "upwards of",
       "higher than", "larger than", "bigger than", "longer than")  # fmt: skip
_GE = ("at least", "no less than", "no fewer than", "a minimum of", "minimum of", "not less than")
_LT = ("less than", "under", "below", "fewer than", "lower than", "smaller than", "shorter than")
_LE = ("at most", "up to", "no more than", "a maximum of", "maximum of", "not more than", "capped at",
       "limited to", "a limit of", "limit of", "a cap of", "cap of")  # fmt: skip
# "The maximum upload size is 10 GB", "the limit is 50 projects": a bound named before its
# verb is the same kind of statement as "up to 10 GB" (bound words pair with each other)
_BOUND_NAMED = re.compile(
    r"\b(?:(maximum|max|limit|cap|ceiling|upper bound)|(minimum|min|lower bound))\b"
    r"(?:\s+[\w-]+){0,2}\s+(?:is|are|was|were|of|at|to|=|:)$"
)
_APPROX = ("about", "approximately", "around", "roughly", "nearly", "almost", "some", "circa",
           "close to", "an estimated", "estimated", "over the", "c.")  # fmt: skip
_AFTER_GE = ("or more", "or later", "or newer", "or higher", "or above", "or greater", "and up", "and higher",
             "and above", "and later", "and newer", "or over")  # fmt: skip
_AFTER_LE = ("or less", "or fewer", "or earlier", "or older", "or lower", "or below", "and below")
# "Averaged over 7 critics": the count of raters a score is averaged across, not "more than 7"
_RATERS = frozenset(("critics", "reviewers", "reviews", "ratings", "votes", "users", "judges", "respondents"))

SOFTWARE_HINTS = frozenset(
    """python node node.js nodejs go golang java jdk kubernetes k8s helm docker traefik ruby rust
    php perl npm pip django rails react angular vue postgres postgresql mysql redis ubuntu debian
    centos rhel windows macos ios android linux kernel gcc clang llvm cuda tls http api
    version versions v release releases black pytest numpy pandas""".split()
)
