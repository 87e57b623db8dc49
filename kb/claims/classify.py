"""Check-worthiness, type, risk, time sensitivity and evidence hints of a claim for
:mod:`kb.claims.split`, all by transparent rules.
"""

from __future__ import annotations

import re

from kb.claims.units import _first_verb_index, _Unit
from kb.config import ClaimSettings
from kb.records import Block

_LOWER = 0  # patterns marked _LOWER are matched against lowercased text (3x faster than re.I)

_QUESTION = re.compile(r"\?[\"')\]]*$")
IMPERATIVE_VERBS = frozenset(
    """
    run install use click see open set add remove type enter go check ensure note read call create configure
    select copy paste visit contact follow try avoid do don't please make download upload restart start stop
    update upgrade replace edit change delete pass press choose navigate log sign refer consult keep put
    export import define write specify provide include run, build deploy verify clone fork submit email
    tap enable disable increase reduce review pin lock unlock wait save ask tell message ping join find look
    learn get give bring send share report mention
    """.split()
)
_OPINION = re.compile(
    r"\b(?:i think|i believe|we think|we believe|in my opinion|in our opinion|imho|i feel|we feel|"
    r"love|awesome|amazing|great|wonderful|beautiful|delightful|excellent|fantastic|terrible|awful|"
    r"we(?:'re| are) (?:excited|proud|happy|thrilled)|hopefully|arguably|best-in-class|world-class|"
    r"easy to use|a joy|favorite|favourite|elegant|cool)\b",
    _LOWER,
)
# An instruction that names a number, a version, a flag or a technical name states a fact that
# drifts ("Keep in mind that the provider only supports v0.3.0", "Pass the escaped pem in the
# X-Forwarded-Tls-Client-Cert header", 'write the entry under a "Preview changes" heading'): it is
# checked like a statement.
_CHECKABLE_VALUE = re.compile(
    r"\d"  # a number or a version
    r"|(?<![\w-])--?[A-Za-z][\w-]*"  # a command-line flag
    r"|\b[a-z]+[A-Z]\w*"  # camelCase
    r"|\b[A-Z]\w*(?:-[A-Z]\w*){2,}"  # a header name (X-Forwarded-For)
    r"|[\"“][^\"”\n]{2,60}[\"”]"  # a quoted name (a heading, a menu entry, a label)
    r"|\b[A-Za-z]\w*_\w+"  # snake_case (an option or label name)
    r"|\b[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]+)+"  # a dotted name or a file name (pyproject.toml)
)
# a code span as written ("Deploy with `npx acme-cli publish dist`"): a command, option or path
_CODE_SPAN = re.compile(r"`[^`\n]*[A-Za-z][^`\n]*`")
_ADDRESS = re.compile(r"\S+@\S+|\b\w+://\S+")  # "contact us at ...", "visit https://...": not a fact
_WORDS = re.compile(r"\w+")
_GREETING = re.compile(
    r"^(?:welcome|hello|hi|hey|greetings|thanks|thank you|cheers|happy \w+|good (?:morning|afternoon|evening)|"
    r"congratulations|enjoy|have fun|best regards|regards|we hope you|hope you|good luck)\b",
    re.I,
)
# a lead-in that introduces steps: its items are instructions ("To install: 1. Run ...")
_STEPS_LEAD = re.compile(
    r"\b(?:steps?|to (?:install|set up|setup|configure|enable|upgrade|deploy|get started|start|reset|fix|"
    r"connect|run|use|create|update|remove|uninstall)|how to|follow(?:ing)? (?:these|the) (?:steps|instructions)|"
    r"do the following|instructions|procedure|checklist|you (?:need|have|must|should) to)\b"
)
_CONDITION = re.compile(r"^(?:if|when|whenever|once|after|before|to|in case)\b[^,]{1,120},\s+", re.I)
_NOTE_PREFIX = re.compile(r"^(?:note|nb|n\.b\.|important|warning|caution|tip|fyi)\s*[:,-]\s*(?:that\s+)?", re.I)
_ANSWER_PREFIX = re.compile(r"^(?:yes|no|yep|nope|sure|correct)\s*[,:;.!-]\s+(?=\S)", re.I)
_NOTE_THAT = re.compile(r"^(?:note|remember) that\s+", re.I)

_SPECULATIVE = re.compile(
    r"\b(?:may(?!\s+\d)|might|could|possibly|probably|likely|unlikely|perhaps|expected to|expects? to|plans? to|planned|"
    r"is going to|are going to|will (?:likely|probably|soon)|roadmap|intends? to|aims? to|should (?:soon|eventually))\b",
    _LOWER,
)
_NORMATIVE = re.compile(
    r"\b(?:must|must not|shall|should|should not|required|requires? that|mandatory|not allowed|prohibited|"
    r"forbidden|is not permitted|are not permitted|may not|need to|needs to|have to|has to|is expected to|"
    r"are expected to|policy requires|are required|is required)\b",
    _LOWER,
)
_PROCEDURAL = re.compile(
    r"^(?:to\s+\w+[^,]{0,80},|first\b|then\b|next\b|finally\b|step \d+)|\b(?:by running|by clicking|"
    r"you can (?:run|use|install|configure|click|set|enable)|is done by|are done by|steps? (?:is|are)|"
    r"the process|workflow|then run|followed by)\b",
    _LOWER,
)
_CAUSAL = re.compile(
    r"\b(?:because|due to|caused by|causes|cause|leads? to|led to|results? in|resulted in|as a result|"
    r"therefore|thus|hence|so that|, so|prevents?|prevented|thanks to|owing to|in order to|triggers?|triggered|"
    r"for (?:\w+ ){0,2}reasons?)\b",
    _LOWER,
)
_SUPERLATIVE = re.compile(
    r"\b(?:the\s+(?!latest\b|last\b|best\s+practice\b|rest\b|test\b|west\b|contest\b|interest\b|request\b|"
    r"manifest\b|digest\b|guest\b|forest\b|harvest\b|suggest\b|honest\b|modest\b|nest\b|quest\b)"
    r"\w+est|(?<!at )most\s+\w+|(?<!at )least\s+\w+|best|worst|fewest|only\s+(?:one|provider|tool|service|vendor|company)|"
    r"number one|#1|leading|unmatched|unrivaled|unrivalled)\b",
    _LOWER,
)
_COMPARATIVE = re.compile(
    r"\b(?:\w+er than|more \w+ than|less \w+ than|better|worse|faster|slower|cheaper|larger|smaller|"
    r"higher|lower|outperforms?|compared (?:to|with)|versus|vs\.?|twice as|than (?:any|all|other))\b",
    _LOWER,
)
_COMPARATOR_NUM = re.compile(r"\b(?:more|less|\w+er)\s+than\s+[$€£]?\d", _LOWER)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_CALENDAR_DATE = re.compile(
    r"\b(?:(?:19|20)\d\d-\d\d(?:-\d\d)?|\d{1,2}(?:st|nd|rd|th)?\s+"
    + _MONTH
    + r"\.?(?:\s+(?:19|20)\d\d)?|"
    + _MONTH
    + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+(?:19|20)\d\d)?)\b",
    re.I,
)
_DATE = re.compile(
    r"\b(?:(?:19|20)\d\d-\d\d(?:-\d\d)?|(?:in|since|until|before|after|by|from|as of|of|on|during|early|late|mid|"
    r"end of|q[1-4])\s+(?:(?:19|20)\d\d)|" + _MONTH + r"\.?\s+(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?(?:19|20)\d\d|"
    r"\d{1,2}\s+" + _MONTH + r"\s+(?:19|20)\d\d|(?:19|20)\d\d)\b",
    _LOWER,
)
_TEMPORAL_WORDS = re.compile(
    r"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|since|until|deprecated|sunset|end[- ]of[- ]life|eol|released|launched|founded|"
    r"established|ago|yesterday|tomorrow|today|tonight|(?:introduced|added|removed|shipped)\s+in\s+v?\d|"
    r"(?:last|next|this|previous|coming)\s+(?:year|month|week|quarter)|(?:last|next|previous|coming)\s+"
    r"(?:release|version|sprint))\b",
    _LOWER,
)
_TIME_SENSITIVE = re.compile(
    r"\b(?:currently|current(?!\s+(?:working\s+)?(?:directory|folder|dir|path|file|user|request|response|context|process|"
    r"session|shell|thread|page|tab|window|node|namespace|cluster|branch|module|package|project|workspace|"
    r"environment|scope|line|cell|element|route|locale|selection|test|value|state)s?\b)|latest|newest|most recent|now|nowadays|today|these days|at the moment|at present|"
    r"presently|as of|recently|upcoming|soon|so far|to date|yet|still|anymore|no longer|"
    r"(?:last|next|this|coming|past)\s+(?:year|month|week|quarter|few (?:days|weeks|months|years))|"
    r"\d+\s+(?:days?|weeks?|months?|years?)\s+ago|ago|yesterday|tomorrow|up[- ]to[- ]date|"
    r"at the time of writing|right now|trending|in beta|in preview|beta|preview)\b",
    _LOWER,
)
_NUMBER = re.compile(
    r"(?<![\w.-])(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:%|percent|ms|s\b|sec|seconds?|minutes?|"
    r"hours?|days?|weeks?|months?|years?|gb|mb|kb|tb|gib|mib|k\b|m\b|million|billion|thousand|x\b|times|"
    r"req/s|rps|qps|users|customers|regions|requests|per\b)|\b(?:two|three|four|five|six|seven|eight|nine|"
    r"ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|double|twice|"
    r"triple|one\s+(?:second|minute|hour|day|week|month|year|quarter)s?)\b|\d[\d,]*(?:\.\d+)?)(?![\w.-]*\d)",
    re.I,
)
_CALCULATION = re.compile(
    r"\b(?:total|in total|sum|combined|per cent|percent|percentage|ratio|"
    r"grew|growth|increased|decreased|dropped|rose|fell|doubled|tripled|halved|twice as|times (?:more|faster|"
    r"larger|cheaper)|\d+x)\b|%",
    _LOWER,
)
_TOOL_RESULT = re.compile(
    r"\b(?:according to (?:our|the)(?:\s+[\w-]+){0,2}?\s+(?:dashboard|logs?|metrics|monitoring|analytics|query|"
    r"report|benchmark|tests?)|(?:benchmark|test suite|test|query|dashboard|profiler|scan|audit|monitoring|load test)s?\s+"
    r"(?:show|shows|showed|returns?|returned|reports?|reported|found|finds|measured|passed|pass)|"
    r"measured|benchmarked|in our (?:tests?|benchmarks?)|(?:sql|query) returns|uptime (?:was|is|of)|"
    r"p(?:50|90|95|99) latency|test coverage|coverage is)\b",
    _LOWER,
)
HIGH_RISK = re.compile(
    r"\b(?:secur\w*|vulnerab\w*|cve-\d+|exploit\w*|password\w*|credential\w*|secret\w*|token\w*|encrypt\w*|"
    r"decrypt\w*|auth\w*|2fa|mfa|sso|permission\w*|access control|firewall\w*|breach\w*|"
    r"pric\w*|cost\w*|fee\w*|billing|bill|invoice\w*|payment\w*|refund\w*|charge\w*|discount\w*|subscription\w*|"
    r"legal\w*|law\w*|contract\w*|liabilit\w*|warrant\w*|indemn\w*|licen[cs]\w*|terms of service|"
    r"complian\w*|gdpr|hipaa|soc ?2|pci(?:[- ]dss)?|iso ?27001|ccpa|regulat\w*|audit\w*|"
    r"medical|medic\w*|dos(?:e|age)\w*|patient\w*|clinical|diagnos\w*|treatment\w*|drug\w*|"
    r"pii|personal data|privacy|data retention|retention|gdpr|sla|uptime|guarantee\w*|"
    r"safety|emergency|delet\w* (?:data|account)s?)\b",
    _LOWER,
)
_CURRENCY = re.compile(r"[$€£¥]\s?\d")
_POLICY_DOC = re.compile(r"\b(?:polic(?:y|ies)|terms|legal|compliance|security|handbook|sla|agreement)\b", re.I)

GENERIC_HEADINGS = frozenset(
    """
    overview introduction intro installation install usage use pricing price prices limits limitations faq faqs
    features feature configuration config setup getting started requirements security notes note summary
    details background support troubleshooting about contents changelog history examples example reference
    api reference quickstart quick start tutorial guide how it works architecture design status roadmap
    known issues caveats billing plans availability performance compliance privacy glossary contact
    """.split()
)


_UNITLESS = re.compile(r"[\d,.]+")
_WORD_BEFORE_NUM = re.compile(r"([\w.+#-]+)[ \t]*$")
_IDENT_WORDS = frozenset(
    "version versions v python node java go release build step sev severity level tier http iso rfc status code "
    "port error errors option article section chapter page line issue ticket extension ext room floor number no "
    "model type".split()
)


_QUANTITY_LEADS = frozenset(
    "about over under around nearly almost only exactly roughly approximately up some just more less fewer with "
    "in at by for to from within after before every each all top".split()
)


def _has_quantity(text: str) -> bool:
    """True if ``text`` states a quantity (not a date, a version or an identifier such as TLS 1.2)."""
    if any(ch.isdigit() for ch in text):
        text = _CALENDAR_DATE.sub(" ", text)  # "on 12 February 2024" holds no quantity
    for m in _NUMBER.finditer(text):
        tok = m.group(0)
        if not _UNITLESS.fullmatch(tok):
            return True  # a unit, a currency, a percentage or a number word
        if re.fullmatch(r"(?:19|20)\d\d", tok):
            continue  # a year: temporal, not a quantity
        if m.start() > 0 and text[m.start() - 1] in "-_/v":
            continue  # AES-256, v2, path/3
        if "version" in text[max(0, m.start() - 25) : m.start()].lower():
            continue  # "Minimum version is 10"
        wb = _WORD_BEFORE_NUM.search(text, max(0, m.start() - 40), m.start())
        if wb:
            word = wb.group(1)
            if word.lower() in _IDENT_WORDS or (word[:1].isupper() and word.lower() not in _QUANTITY_LEADS):
                continue  # "TLS 1.2", "Windows 10", "HTTP 429"
        return True
    return False


_PERMISSION = re.compile(
    r"\b(?:employees|engineers|users|staff|customers|contractors|vendors|members|admins|administrators|"
    r"you|managers|visitors|guests)\s+may\b",
    _LOWER,
)


def classify(text: str, is_policy: bool = False) -> tuple[str, bool, str, tuple[str, ...]]:
    """(type, time_sensitive, risk, requirement hints) for a claim's text, by rules."""
    low = text.lower()
    time_sensitive = _TIME_SENSITIVE.search(low) is not None
    has_number = _has_quantity(text)
    superlative = _SUPERLATIVE.search(low) is not None
    normative = _NORMATIVE.search(low) is not None
    if _PERMISSION.search(low):
        ctype = "normative"
    elif not normative and _SPECULATIVE.search(low):
        ctype = "speculative"
    elif normative:
        ctype = "normative"
    elif _PROCEDURAL.search(low):
        ctype = "procedural"
    elif _CAUSAL.search(low):
        ctype = "causal"
    elif superlative or (_COMPARATIVE.search(low) and not _COMPARATOR_NUM.search(low) and "%" not in text):
        ctype = "comparative"
    elif time_sensitive or _TEMPORAL_WORDS.search(low) or (not has_number and _DATE.search(low)):
        # a date alone makes a claim temporal; a quantity dated by a year ("grew 35% in 2023") is numeric
        ctype = "temporal"
    elif has_number:
        ctype = "numeric"
    else:
        ctype = "factual"
    if HIGH_RISK.search(low) or _CURRENCY.search(text) or (is_policy and has_number):
        risk = "high"
    elif ctype in ("normative", "numeric") or (has_number and ctype != "factual"):
        risk = "medium"
    else:
        risk = "low"
    hints: list[str] = []
    if ctype == "comparative" or superlative:
        hints.append("comparison_set")
    if has_number and _CALCULATION.search(low):
        hints.append("calculation")
    if _TOOL_RESULT.search(low):
        hints.append("tool_receipt")
    return ctype, time_sensitive, risk, tuple(hints)


def _states_a_value(text: str, raw: str) -> bool:
    """Whether a unit names something a release can change: a number or version, a flag, a name
    written as code (camelCase, snake_case, a code span) or a quoted name."""
    return _CHECKABLE_VALUE.search(_ADDRESS.sub(" ", text)) is not None or _CODE_SPAN.search(raw) is not None


def _checkworthy(
    text: str, block: Block, unit: _Unit, settings: ClaimSettings, raw: str = "", leads_items: bool = True
) -> tuple[bool, str]:
    """(check-worthy, why not). ``raw`` is the unit as written in the document (markup kept);
    ``leads_items``: a unit ending in a colon is the lead-in of the list or table that follows
    (each of its items is read with it), not of a code block or of nothing."""
    stripped = text.strip()
    if block.kind == "command":
        return True, ""  # a shell step: its program, subcommand, flags and URLs are the facts
    if block.kind == "heading":
        # a heading is structure unless it makes a statement ("Version 1 was retired in 2023")
        words = stripped.split()
        if len(words) < 4 or _QUESTION.search(stripped) or _first_verb_index(words) <= 0:
            return False, "heading"
    if not stripped:
        return False, "empty"
    if _QUESTION.search(stripped):
        return False, "question"
    if (
        stripped.endswith(":")
        and unit.kind not in ("item", "cell")
        and (leads_items or not settings.code_lead_ins or not _states_a_value(stripped[:-1], raw))
    ):
        # a list's lead-in is checked with each item it is attached to; before a code block, "Run
        # the following:" states nothing of its own, while "pip can search PyPI using the pip
        # search command:" or "check that Python is at least 3.10:" names what it says
        return False, "lead-in (attached to the items that follow)"
    if _GREETING.match(stripped):
        return False, "greeting"
    body = stripped
    steps = False
    if unit.has_context and ": " in body:
        lead, body = body.split(": ", 1)
        steps = unit.kind != "cell" and _STEPS_LEAD.search(lead.lower()) is not None
        if unit.kind == "cell" and _WORDS.findall(lead.lower()) == _WORDS.findall(body.lower()):
            # a cell that repeats its row's key states nothing of it: an emoji table's "top" links
            return False, "cell repeats its row's key"
    cond = _CONDITION.match(body)
    if cond:  # "If the connection drops, restart the app." -> look at the main clause
        body = body[cond.end() :]
    first = re.split(r"[\s,]+", body.lstrip("*_`\"'(["), maxsplit=1)[0].lower()
    instruction = ((not unit.has_context or steps) and (first in IMPERATIVE_VERBS or first in ("don't", "never", "always"))
                   and not (first in ("use", "set", "keep", "add") and re.match(r"^\w+s\b", body)))  # fmt: skip
    instruction = instruction or re.match(r"^(?:you (?:should|can|must|may|need to)|please|let's|let us)\b", body, re.I)
    if instruction and not _states_a_value(body, raw):
        return False, "instruction"
    if _OPINION.search(stripped.lower()):
        return False, "opinion"
    words = stripped.split()
    if len(words) < settings.min_words and not unit.has_context and not _has_quantity(stripped):
        return False, "fragment (no complete statement)"
    if not any(ch.isalpha() for ch in stripped):
        return False, "no text"
    return True, ""
