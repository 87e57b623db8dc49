"""Split parsed documents into atomic, self-contained claims (see ``docs/claims.md``).

Entry point: ``split_claims(doc, settings=None) -> list[Claim]``.

Per block of prose: sentences (robust to abbreviations, decimals, versions, URLs, e-mail
addresses, initials) -> atomic units (clauses joined by ";", coordinated predicates,
"Lead: a, b, c" enumerations, list items with their lead-in, table cells with their headers)
-> a self-contained rewrite (leading pronouns and "this service"/"the tool" resolved to the
subject of the section) -> check-worthiness, type, risk, time sensitivity, freshness window
and evidence requirements, all by transparent rules.

Everything is regex and table driven and linear in the input; no model is loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.claims.text import sentence_spans
from kb.config import ClaimSettings
from kb.errors import ClaimLimitError
from kb.ingest.offsets import OffsetMap
from kb.records import Block, Claim, Document, content_hash

__all__ = ["ClaimLimitError", "ClaimSettings", "split_claims", "classify"]

_LOWER = 0  # patterns marked _LOWER are matched against lowercased text (3x faster than re.I)


# ---------------------------------------------------------------------------------------------
# atomic units


@dataclass
class _Unit:
    start: int  # span in block text
    end: int
    text: str  # the rewritten, self-contained text before pronoun resolution
    note: str = ""  # why this unit was rewritten
    kind: str = "sentence"  # sentence | clause | item | cell | heading
    has_context: bool = False  # a lead-in or header was attached


_SEMI = re.compile(r";\s+")
_COLON_LIST = re.compile(r"^(?P<lead>[^:]{2,80}?):\s+(?P<items>.+?)[.]?$")
_LIST_SEP = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_AND = re.compile(r",\s+(?:and\s+)?|\s+and\s+")

VERB_WORDS = frozenset(
    """
    is are was were has have had does did can will would may might must should shall
    supports support supported serves served runs ran uses used offers offered provides provided
    requires required stores stored includes included handles handled sends sent returns returned
    launched released added removed deprecated costs cost charges charged allows allowed lets
    keeps kept writes wrote reads read creates created accepts accepted rejects rejected
    processes processed caches cached retries retried encrypts encrypted logs logged exposes
    exposed enables enabled disables disabled limits limited blocks blocked ships shipped
    runs checks checked builds built deploys deployed scales scaled takes took makes made
    gives gave needs needed replaced replaces grew grows became becomes contains contained
    covers covered expires expired renews renewed applies applied starts started ends ended
    operates operated hosts hosted owns owned employs employed reached reaches moved moves
    opened opens closed closes migrated lasts lasted receives received happens happened
    splits labels verifies re-verifies detects finds marks generates produces answers publishes queues signs
    excludes contains lists shows displays links points remains stays resets syncs increases decreases
    """.split()
)
# base forms: a right conjunct may start with one when the subject is plural ("Builds run ... and take ...")
BASE_VERBS = frozenset(
    """
    run take use support serve offer provide require store include handle send return cost charge allow keep
    write read create accept reject process cache retry expose enable disable limit block ship check build
    deploy scale make give need replace cover expire renew apply start end operate host own employ reach
    move open close last receive happen get are were have do exclude contain list show display link point
    return accept expire remain stay become grow fall rise drop increase decrease reset sync
    """.split()
)
_ADVERBS = frozenset("now also still currently often usually then always never typically automatically".split())
_PRONOUN_SUBJECTS = re.compile(
    r"^(?P<pro>(?:it|they|this|these|that)(?:\s+(?:service|tool|api|product|feature|library|app|application|"
    r"system|module|endpoint|plugin|platform|component|package|server|cli|sdk|"
    r"database|guide|policy|integration|pipeline))?|"
    r"the\s+(?:service|tool|api|product|library|app|application|platform|package|cli|sdk))\b",
    re.I,
)
_POSSESSIVE = re.compile(r"^(?P<pro>its|their)\b", re.I)


def _first_verb_index(words: list[str]) -> int:
    """Index of the first word that looks like the main verb (a lexicon plus -ed forms), or -1."""
    for i, w in enumerate(words):
        if i == 0:
            continue  # the subject comes first ("Builds run ...": "Builds" is a noun here)
        lw = w.lower().strip(",")
        if lw in VERB_WORDS or (i > 0 and lw in BASE_VERBS and words[i - 1].lower() not in _DETERMINERS):
            return i
        if i > 0 and lw.endswith("ed") and lw.isalpha() and len(lw) > 4 and w[0].islower():
            return i
    return -1


_PARTICIPLES = frozenset("read kept built sent made given written taken shown known run set put held paid sold done".split())
_PARTICIPLE = re.compile(r"^(?:\w+ed|\w+en|read|kept|built|sent|made|given|taken|shown|known|run|set|put|held|paid|sold|done)$")
_DETERMINERS = frozenset("a an the this that these those each every any some no our your their its my".split())


_MAX_COORD_CHARS = 600  # longer "sentences" are lists or run-ons: not split on "and"
_MAX_ENUM_CHARS = 2000
_MAX_COORD_DEPTH = 6
MAX_CLAIM_CHARS = 600  # a claim longer than this is not one fact a reader checks at once
_CLAUSE_BOUNDARY = re.compile(r"[,;:] | \| | [-–—] ")


def _clause_subject(words: list[str]) -> tuple[str, int]:
    """(subject, verb index) of a clause's words, or ("", -1)."""
    vi = _first_verb_index(words)
    if vi <= 0:
        return "", -1
    subject = " ".join(words[:vi])
    if len(subject) > 80 or "," in subject or any(w.lower() in ("and", "or") for w in words[:vi]):
        return "", -1
    return subject, vi


_AUX = frozenset("is are was were has have had can cannot will would must should shall may might do does did".split())


def _bracketed(text: str) -> list[bool]:
    """For each position of ``text``: whether it sits inside round or square brackets. A clause
    or an item is never cut there: "(e.g., if we deprecate X in 3.9, we remove it in 5.0)" is
    one aside, and cutting at its comma leaves two claims whose brackets never close."""
    inside = [False] * (len(text) + 1)
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
        inside[i + 1] = depth > 0
    return inside


def _split_coordination(text: str, start: int) -> list[tuple[int, int, str]]:
    """Split coordinated facts; [] when there is nothing to split.

    "X launched in 2019 and serves 40 regions" -> "X launched in 2019" + "X serves 40 regions"
    (a shared subject is copied); "Buckets are private and access must be enabled" -> two
    independent clauses (each with its own subject).
    """
    cuts: list[tuple[int, int, str]] = []  # (left end, right start, prefix for the right part)
    piece_start = 0
    first_and = text.find(" and ")
    head = text[:first_and].split() if first_and != -1 else []
    subject, vi = _clause_subject(head)
    prefix_subject = subject
    verb = head[vi].lower() if vi > 0 else ""
    if verb in ("is", "are", "was", "were") and vi + 1 < len(head) and _PARTICIPLE.match(head[vi + 1].lower()):
        prefix_subject = f"{subject} {head[vi]}"  # "Results are written ... and read" -> "Results are read"
    inside = _bracketed(text)
    for m in _AND.finditer(text):
        if len(cuts) >= _MAX_COORD_DEPTH:
            break
        if inside[m.start()]:
            continue
        left_words = text[piece_start : m.start()].split()
        after_words = text[m.end() : m.end() + 200].split()
        if len(after_words) < 2 or len(left_words) < 2:
            continue
        first = after_words[0].lower().strip(",")
        if first in _ADVERBS and len(after_words) > 2:
            first = after_words[1].lower().strip(",")
        rsubj, rvi = _clause_subject(after_words[:8])
        own_subject = bool(rsubj) and 1 <= rvi <= 3 and after_words[rvi].lower() in _AUX
        if subject and not own_subject:
            plural = verb in BASE_VERBS or not verb.endswith("s")
            looks_verb = (
                first in VERB_WORDS
                or (plural and first in BASE_VERBS)
                or (
                    m.group(0).startswith(",")
                    and not plural
                    and first.endswith("s")
                    and not first.endswith("ss")
                    and first.isalpha()
                    and after_words[0][:1].islower()  # "Secrets, Endpoints and ...": a list
                )
            )
            has_predicate = len(left_words) - vi >= 2 if piece_start == 0 and vi > 0 else True
            if looks_verb and has_predicate:
                prefix = prefix_subject
                if first in VERB_WORDS - _PARTICIPLES and prefix != subject:
                    prefix = subject  # "are kept and can be ..." -> no auxiliary copied
                cuts.append((m.start(), m.end(), prefix))
                piece_start = m.end()
                continue
        # an independent clause: its own subject and verb right after "and"
        if piece_start == 0 and vi <= 0:
            continue
        if not rsubj or not 1 <= rvi <= 4:
            continue
        if rsubj.split()[0].lower() in ("in", "on", "at", "with", "for", "to", "from", "by", "of", "its", "their"):
            continue
        cuts.append((m.start(), m.end(), ""))
        piece_start = m.end()
        subject = prefix_subject = rsubj
        verb = after_words[rvi].lower()
    if not cuts:
        return []
    out: list[tuple[int, int, str]] = []
    pos = 0
    prefix = ""
    for left_end, right_start, next_prefix in cuts:
        piece = text[pos:left_end]
        out.append((start + pos, start + left_end, f"{prefix} {piece}" if prefix else piece))
        pos, prefix = right_start, next_prefix
    piece = text[pos:]
    out.append((start + pos, start + len(text), f"{prefix} {piece}" if prefix else piece))
    return out


def _units_for_sentence(text: str, s: int, e: int, settings: ClaimSettings) -> list[_Unit]:
    sent = text[s:e]
    units: list[_Unit] = []
    # "A; B" -> two clauses (each with its own subject)
    parts: list[tuple[int, int]] = []
    pos = 0
    inside = _bracketed(sent)
    for m in _SEMI.finditer(sent):
        if inside[m.start()]:
            continue
        left = sent[pos : m.start()]
        if len(left[-200:].split()) >= 3 and len(sent[m.end() : m.end() + 200].split()) >= 3:
            parts.append((pos, m.start()))
            pos = m.end()
    parts.append((pos, len(sent)))
    for a, b in parts:
        piece = sent[a:b]
        ps = s + a
        # "Lead: a, b and c" -> one claim per item
        cm = _COLON_LIST.match(piece) if ":" in piece and "://" not in piece and len(piece) <= _MAX_ENUM_CHARS else None
        if cm:
            items_text = cm.group("items")
            items = _enumeration(items_text)
            if len(items) >= 2:
                lead = cm.group("lead").strip()
                base = ps + cm.start("items")
                for ia, ib in items:
                    item = items_text[ia:ib]
                    units.append(_Unit(base + ia, base + ib, f"{lead}: {item}", "lead-in attached", "item", True))
                continue
        if settings.split_coordination and " and " in piece and len(piece) <= _MAX_COORD_CHARS:
            coord = _split_coordination(piece, ps)
            if coord:
                for cs, ce, ct in coord:
                    ct = ct.rstrip(" ,;")
                    units.append(_Unit(cs, ce, ct, "coordinated fact split", "clause"))
                continue
        if len(piece) > MAX_CLAIM_CHARS:
            for ca, cb in _chunks(piece):
                units.append(_Unit(ps + ca, ps + cb, piece[ca:cb], "run-on cut at a clause boundary", "clause"))
            continue
        units.append(_Unit(ps, ps + len(piece), piece))
    return units


def _chunks(piece: str) -> list[tuple[int, int]]:
    """A run-on "sentence" (a list of a hundred names, a licence clause) cut into claims of at
    most MAX_CLAIM_CHARS: at the last clause boundary outside brackets that fits, else at a space."""
    inside = _bracketed(piece)
    out: list[tuple[int, int]] = []
    pos = 0
    while len(piece) - pos > MAX_CLAIM_CHARS:
        window = piece[pos : pos + MAX_CLAIM_CHARS]
        end = nxt = -1
        for m in _CLAUSE_BOUNDARY.finditer(window):
            if m.start() > MAX_CLAIM_CHARS // 4 and not inside[pos + m.start()]:
                # "a, b": the comma stays with its clause; "a | b", "a - b": the separator goes
                end, nxt = m.start() + (1 if window[m.start()] in ",;:" else 0), m.end()
        if end <= 0:
            end = nxt = window.rfind(" ")
        if end <= 0:
            end = nxt = MAX_CLAIM_CHARS
        out.append((pos, pos + len(window[:end].rstrip())))
        pos += nxt
        while pos < len(piece) and piece[pos].isspace():
            pos += 1
    out.append((pos, len(piece)))
    return [(a, b) for a, b in out if b > a]


def _enumeration(items_text: str) -> list[tuple[int, int]]:
    """Spans of short comma/and-separated items, or [] if the text is not a plain enumeration."""
    stripped = items_text.rstrip(". ")
    spans: list[tuple[int, int]] = []
    pos = 0
    inside = _bracketed(stripped)
    for m in _LIST_SEP.finditer(stripped):
        if inside[m.start()]:
            continue
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(stripped)))
    spans = [(a, b) for a, b in spans if b > a and stripped[a:b].strip()]
    if len(spans) < 2:
        return []
    for a, b in spans:
        words = stripped[a:b].split()
        if len(words) > 4 or any(w.lower() in VERB_WORDS for w in words):
            return []
    return spans


# ---------------------------------------------------------------------------------------------
# classification

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


def _checkworthy(text: str, block: Block, unit: _Unit, settings: ClaimSettings, raw: str = "") -> tuple[bool, str]:
    """(check-worthy, why not). ``raw`` is the unit as written in the document (markup kept)."""
    stripped = text.strip()
    if block.kind == "heading":
        # a heading is structure unless it makes a statement ("Version 1 was retired in 2023")
        words = stripped.split()
        if len(words) < 4 or _QUESTION.search(stripped) or _first_verb_index(words) <= 0:
            return False, "heading"
    if not stripped:
        return False, "empty"
    if _QUESTION.search(stripped):
        return False, "question"
    if stripped.endswith(":") and unit.kind not in ("item", "cell"):
        return False, "lead-in (attached to the items that follow)"
    if _GREETING.match(stripped):
        return False, "greeting"
    body = stripped
    steps = False
    if unit.has_context and ": " in body:
        lead, body = body.split(": ", 1)
        steps = unit.kind != "cell" and _STEPS_LEAD.search(lead.lower()) is not None
    cond = _CONDITION.match(body)
    if cond:  # "If the connection drops, restart the app." -> look at the main clause
        body = body[cond.end() :]
    first = re.split(r"[\s,]+", body.lstrip("*_`\"'(["), maxsplit=1)[0].lower()
    instruction = ((not unit.has_context or steps) and (first in IMPERATIVE_VERBS or first in ("don't", "never", "always"))
                   and not (first in ("use", "set", "keep", "add") and re.match(r"^\w+s\b", body)))  # fmt: skip
    instruction = instruction or re.match(r"^(?:you (?:should|can|must|may|need to)|please|let's|let us)\b", body, re.I)
    if instruction and not _CHECKABLE_VALUE.search(_ADDRESS.sub(" ", body)) and not _CODE_SPAN.search(raw):
        return False, "instruction"
    if _OPINION.search(stripped.lower()):
        return False, "opinion"
    words = stripped.split()
    if len(words) < settings.min_words and not unit.has_context and not _has_quantity(stripped):
        return False, "fragment (no complete statement)"
    if not any(ch.isalpha() for ch in stripped):
        return False, "no text"
    return True, ""


# ---------------------------------------------------------------------------------------------
# self-contained rewrite

_TITLE_SUFFIX = re.compile(
    r"\s*(?:[-:|–—]\s*)?\b(?:faq|faqs|guide|user guide|docs|documentation|handbook|manual|overview|reference|"
    r"readme|release notes|notes|introduction|tutorial|wiki)\s*$",
    re.I,
)


def _named_subject(noun: str, block: Block, doc: Document) -> str:
    """The entity "this service" / "the tool" refers to: a heading naming such a thing, else the title."""
    for heading in reversed(block.section):
        h = heading.strip().rstrip(":")
        if noun and noun.lower() in h.lower() and h.lower() not in GENERIC_HEADINGS and len(h.split()) <= 6:
            return h
    title = doc.title.strip()
    if noun and noun.lower() in title.lower().split():
        return title  # "This policy" in "Security Policy"
    stripped = _TITLE_SUFFIX.sub("", title).strip()
    return stripped or title


_DUMMY_IT = re.compile(
    r"^it\s+(?:is|was|will\s+be|would\s+be|may\s+be|can\s+be|seems|appears)\s+(?:not\s+)?(?:\w+ly\s+)?\w+\s+(?:to|that)\b",
    re.I,
)
_PRONOUNS = frozenset("it they this that these those he she we you i its their there here".split())


def _subject_of(text: str) -> str:
    """The subject noun phrase of a simple sentence ("The main repository is ..." -> "The main repository")."""
    words = text.split()
    vi = _first_verb_index(words[:12])
    if not 1 <= vi <= 6:
        return ""
    subj = words[:vi]
    first = subj[0].lower()
    if first in _PRONOUNS or any(w.endswith((",", ":", ";")) for w in subj):
        return ""
    if not (subj[0][:1].isupper() or subj[0][:1].isdigit()):
        return ""
    return " ".join(subj)


def _resolve(text: str, antecedent: str, named) -> tuple[str, str]:
    """Replace a leading pronoun / "this service" with its referent; returns (text, note).

    Bare pronouns ("It", "They", "Its") take the subject of the previous statement in the same
    section (else the document title); "this service" / "the tool" take the entity named by a
    heading or the title (``named(noun)``).
    """
    m = _PRONOUN_SUBJECTS.match(text)
    if m and m.group("pro")[:2].isupper():
        m = None  # "IT plans ..." is the IT department, not a pronoun
    if m:
        pro = m.group("pro")
        words = pro.lower().split()
        rest = text[m.end() :]
        if len(words) == 1:
            if words[0] in ("this", "that", "these"):
                return text, ""  # "This is ..." refers to a whole situation, not a name
            if _DUMMY_IT.match(text):
                return text, ""  # "It is recommended to ...": "it" stands for what follows
            if rest.startswith("'"):
                return text, ""
            subject = antecedent or named("")
        else:
            subject = named(words[-1])
        if not subject or subject.lower() == pro.lower():
            return text, ""
        return f"{subject}{rest}", f"rewritten: '{pro}' -> '{subject}'"
    m = _POSSESSIVE.match(text)
    if m:
        subject = antecedent or named("")
        if subject:
            poss = f"{subject}'" if subject.endswith("s") else f"{subject}'s"
            return f"{poss}{text[m.end() :]}", f"rewritten: '{m.group('pro')}' -> '{poss}'"
    return text, ""


# ---------------------------------------------------------------------------------------------
# main entry point

_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _block_units(block: Block, settings: ClaimSettings, lead_in: str = "") -> list[_Unit]:
    text = block.text
    if block.kind == "heading":
        return [_Unit(0, len(text), text, kind="heading")]
    if block.kind == "table_row":
        return _table_units(block)
    units: list[_Unit] = []
    for s, e in sentence_spans(text):
        units.extend(_units_for_sentence(text, s, e, settings))
    if block.kind == "list_item" and lead_in:
        lead = lead_in.strip().rstrip(":").strip()
        for u in units:
            u.text = f"{lead}: {u.text}"
            u.has_context = True
            u.note = u.note or "lead-in attached"
    return units


def _table_units(block: Block) -> list[_Unit]:
    text = block.text
    cells: list[tuple[int, int]] = []
    pos = 0
    while True:
        k = text.find(" | ", pos)
        if k == -1:
            cells.append((pos, len(text)))
            break
        cells.append((pos, k))
        pos = k + 3
    headers = list(block.headers)
    units: list[_Unit] = []
    if not cells:
        return units
    key_s, key_e = cells[0]
    key = text[key_s:key_e].strip()
    key_header = headers[0] if headers else ""
    if len(cells) == 1:
        return [_Unit(key_s, key_e, key, kind="cell")]
    for idx, (s, e) in enumerate(cells[1:], start=1):
        value = text[s:e].strip()
        if not value or value in ("-", "—", "–", "n/a", "N/A"):
            continue
        header = headers[idx] if idx < len(headers) else ""
        subject = f"{key_header} {key}".strip() if key_header else key
        claim = f"{subject}: {header} is {value}" if header else f"{subject}: {value}"
        units.append(_Unit(s, e, claim, "table row with headers", "cell", True))
    return units


_MAX_CLAIM_CHARS = 2000


def _span(block: Block, i: int, j: int) -> tuple[int, int]:
    """Document span of block text ``[i, j)``; works for an OffsetMap or a plain tuple of offsets."""
    offsets = block.offsets
    if isinstance(offsets, OffsetMap):
        return offsets.span(i, j)
    if len(offsets) != len(block.text) or not offsets:
        return block.start, block.end  # a hand-made block without offsets: the whole block
    return offsets[i], offsets[j - 1] + 1


MAX_SETTING_WORDS = 4
MAX_KEYED_SETTING_WORDS = 12  # "Default: ["clover", "json", "lcov", "text"]"
MAX_OPTION_HEADING_WORDS = 6  # "automock [boolean]", "poll_interval (duration)"
# one code-like word: "peerCertURI", "tls.minVersion", "max_line_length" (not "Archiving")
_OPTION_NAME = re.compile(r"(?=\w*[a-z][A-Z]|[\w.\[\]-]*[._\[-])[A-Za-z_][\w.\[\]-]*[A-Za-z0-9_\]]")
# the field names option references state their facts under, in every format: VitePress bullets
# ("- **Type:** `boolean`"), Docusaurus lines ("Default: `false`"), "**Type**: string"
_SETTING_KEY = re.compile(
    r"^(?:type|types|default|default value|defaults to|required|optional|values|possible values|allowed values|"
    r"accepted values|valid values|range|unit|units|env|environment variable|since|added in|deprecated|kind|format)"
    r"\s*(?::|=)\s*\S",
    re.I,
)
SETTING_NOTE = "setting read with its option"  # Claim.reason of such a line; the verifier keys on it


def keyed_setting_line(line: str) -> bool:
    """A field line of an option reference ("Type: boolean", "Default: 1m")."""
    line = line.strip()
    return len(line.split()) <= MAX_KEYED_SETTING_WORDS and _SETTING_KEY.match(line) is not None


def setting_line(line: str) -> bool:
    """A line that states an option's facts without naming the option: short and not a
    sentence ("Optional, Default=0s"), or a field line ("Default: `false`")."""
    line = line.strip()
    if keyed_setting_line(line):
        return True
    return len(line.split()) <= MAX_SETTING_WORDS and len(sentence_spans(line)) == 1 and not line.endswith((".", "!", "?"))


def _setting_lead(prev: Block | None, block: Block) -> str:
    """The option a short setting line is read with: reference pages name an option in a line
    of its own ("transport.respondingTimeouts.readTimeout:") or a heading of its own
    ("#### `peerCertURI`", "### `bail` [number | boolean]") and state its facts in the next
    lines ("Optional, Default=0s", "- **Default:** `0`", "Type: string"), which alone say
    nothing of which option they are about. (A definition list's term and definition parse as
    one paragraph, "poll_timeout : Default 5s", which names its option already.)"""
    if prev is None or block.kind not in ("paragraph", "list_item") or not setting_line(block.text):
        return ""
    line = block.text.strip()
    keyed = keyed_setting_line(line)
    if block.kind == "list_item" and (block.lead_in or not keyed):
        return ""  # an ordinary list: its lead-in is its context
    lead = prev.text.strip()
    if block.kind == "paragraph" and prev.kind == "paragraph" and prev.section == block.section and lead.endswith(":"):
        return lead.rstrip(":").strip()
    heading = block.section[-1] if block.section else ""
    if prev.kind == "heading" and block.section[-1:] == (prev.text,) and _OPTION_NAME.fullmatch(lead):
        return lead
    # a field line names its kind of fact itself: the heading above it is the option, also after
    # the option's other field lines ("Type: ..." then "Default: ...")
    if keyed and heading and len(heading.split()) <= MAX_OPTION_HEADING_WORDS and (
            prev.kind == "heading" or prev.section == block.section):  # fmt: skip
        return heading
    return ""


def setting_option(claim: Claim) -> str:
    """The option a setting line was read with (what :func:`split_claims` put before its text),
    "" for any other claim."""
    if claim.reason != SETTING_NOTE:
        return ""
    return claim.text[: len(claim.text) - len(claim.source_text)].rstrip(": ")


def split_claims(doc: Document, settings: ClaimSettings | None = None) -> list[Claim]:
    """Atomic, self-contained claims of ``doc`` with spans into ``doc.text``."""
    # One pass over the blocks on purpose: lead-ins, headings and the last named subject carry from block to block.
    settings = settings or ClaimSettings()
    if doc.ignore:
        return []
    is_policy = bool(_POLICY_DOC.search(" ".join((doc.title, doc.doc_id, *doc.tags))))
    extra_risk = (
        re.compile(r"\b(?:" + "|".join(map(re.escape, settings.high_risk_words)) + r")\b", re.I) if settings.high_risk_words else None
    )
    seen: dict[tuple[str, str], int] = {}
    antecedent = ""
    last_section = None
    resolved: dict[str, str] = {}  # lead-in sentence as written -> as rewritten
    claims: list[Claim] = []
    prev_block: Block | None = None
    for block in doc.blocks:
        section = " > ".join(block.section)
        if block.kind == "heading" or section != last_section:
            antecedent = ""
            last_section = section

        def named(noun: str, block=block) -> str:
            return _named_subject(noun, block, doc)

        lead = block.lead_in
        if lead:  # the lead-in as it was rewritten when it was read, so items are self-contained too
            lead = resolved.get(lead.strip()) or _resolve(lead, antecedent, named)[0]
        units = _block_units(block, settings, lead)
        setting = _setting_lead(prev_block, block)
        if setting:
            for u in units:
                u.text, u.has_context, u.note = f"{setting}: {u.text}", True, SETTING_NOTE
        prev_block = block

        for unit in units:
            if unit.end <= unit.start:
                continue
            src_text = block.text[unit.start : unit.end]
            text = unit.text.strip()
            note = unit.note
            if not unit.has_context:
                am = _ANSWER_PREFIX.match(text)
                if am:  # "Yes, a sandbox mirrors production." -> the statement itself
                    text = text[am.end()].upper() + text[am.end() + 1 :]
                text, rnote = _resolve(text, antecedent, named)
                note = rnote or note
                if src_text.rstrip().endswith(":"):
                    resolved[src_text.strip()] = text
                antecedent = _subject_of(text) or antecedent
            nt = _NOTE_PREFIX.sub("", text) if _NOTE_PREFIX.match(text) else _NOTE_THAT.sub("", text)
            if nt != text and nt:
                text = nt[0].upper() + nt[1:]
            start, end = _span(block, unit.start, unit.end)
            if len(text) > _MAX_CLAIM_CHARS:
                checkworthy, reason = False, f"too long to be one claim ({len(text)} characters)"
            else:
                checkworthy, reason = _checkworthy(text, block, unit, settings, doc.text[start:end])
            if block.kind == "heading" and not checkworthy:
                ctype, ts, risk, hints = "factual", False, "low", ()
            else:
                ctype, ts, risk, hints = classify(text[:_MAX_CLAIM_CHARS], is_policy)
            if extra_risk is not None and extra_risk.search(text):
                risk = "high"
            if doc.risk in ("low", "medium", "high"):
                risk = doc.risk
            fresh = settings.freshness_days.get(ctype, 365)
            if ts:
                fresh = min(fresh, settings.time_sensitive_days)
            if checkworthy:
                reqs = ["source_passage"]
                if ts:
                    reqs.append(f"fresh_source:{fresh}d")
                reqs.extend(hints)
                requirements = tuple(dict.fromkeys(reqs))
            else:
                requirements = ()
            key = (section, _norm(text))
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            claim_id = content_hash(f"{doc.doc_id}\x1f{section}\x1f{key[1]}\x1f{occurrence}")
            claims.append(
                Claim(
                    claim_id=claim_id,
                    doc_id=doc.doc_id,
                    version_id=doc.version_id,
                    start=start,
                    end=end,
                    source_text=src_text,
                    text=text,
                    checkworthy=checkworthy,
                    reason=reason or note,
                    type=ctype,
                    risk=risk,
                    time_sensitive=ts,
                    freshness_days=fresh,
                    requirements=requirements,
                    section=section,
                )
            )
            if len(claims) > settings.max_claims_per_doc:
                raise ClaimLimitError(
                    f"more than {settings.max_claims_per_doc} claims in one document; split the document "
                    "or raise ClaimSettings.max_claims_per_doc"
                )
    return claims
