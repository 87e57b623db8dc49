"""Labelling policy: from per-passage judgements and source dates to one verdict per claim.

README ("Labels") and docs/labelling.md define the four labels; this module is their executable definition.

* Evidence is grouped by ``source_id``. The passages from the newest ``source_date`` of a source
  are that source's *current* view; passages from its older versions are *history*.
* A source **supports** now when one of its current passages supports the claim (at or above
  the support threshold), **refutes** when one refutes it and none supports it more strongly.
* **supported**: some source supports now and none refutes now (a weak refutation loses to a
  strong support); a time-sensitive claim also needs a supporting source last known current
  inside its freshness window (a source this run read is current today), else it is **stale**.
* **stale**: every current view that takes a side refutes, and an older version of one of
  those same sources supported the claim: the value changed. The newest refuting judgement's
  values and sentence go into the verdict for the correction step.
* **contradicted**: current evidence refutes and no older version explains it.
* **uncertain**: no relevant evidence, current sources disagree with each other, or nothing
  reaches the thresholds.

Every non-supported verdict gets a gap (type, severity, action); ``document_status`` rolls the
verdicts of one document into a status and a score with components.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from datetime import date

from rapidfuzz import fuzz

from kb.claims.split import MAX_KEYED_SETTING_WORDS, SETTING_NOTE, keyed_setting_line
from kb.claims.text import passage_sentences
from kb.claims.units import BLOCK_LEAD_IN, COMMAND_NOTE, LEAD_IN_ATTACHED, TABLE_NOTE
from kb.evidence.changelog import is_changelog, release_heading
from kb.evidence.passages import sentence_key
from kb.evidence.versions import (
    STILL_STATED,
    kept_as_heading,
    parse_renames,
    states_as_written,
    states_its_sentence,
    states_under_its_lead_in,
    written_key,
)
from kb.ingest.commands import elided, generic_step
from kb.records import Claim, Evidence, Judgement, Verdict, replaced
from kb.verify.additions import added_beside
from kb.verify.calibration import finding_kind
from kb.verify.history import history_note, without_leading_history
from kb.verify.rewording import code_words, restates, same_statement
from kb.verify.slots import canonical, extract, informative_words, similarity, word_tokens
from kb.verify.tokens import content_set

DEFAULT_THRESHOLDS = {
    "support": 0.5,  # a supports judgement counts at or above this confidence
    "refute": 0.5,  # a refutes judgement counts at or above this confidence
    "strong_support": 0.95,  # a support this sure outweighs weak refutations
    "weak_refute": 0.8,  # refutations below this lose to a strong support
    "stale_history": 0.5,  # an older version supports (the same bar as "supports")
    "verbatim": 0.97,  # a judgement this sure means the source states the claim word for word
    "revision": 0.6,  # similarity of a newest-version sentence to a claim an older version stated
    "counterpart": 0.5,  # similarity of the older and newer sentences for a model-decided stale
    "same_words": 0.75,  # share of the claim's words a sentence in another order must hold to be about it
    "clear_side": 0.75,  # when current sources disagree, a side this sure wins...
    "weak_side": 0.6,  # ...against a side below this
}
MIN_CONTEXT_WORDS = 3  # fewer: "Optional, Default=0s" means something only under its heading
# fewer: a short sentence ("Default: 80.") held in a longer claim may be another entry's
MIN_HELD_SENTENCE_WORDS = 6
MAX_FRAGMENT_WORDS = 4  # a claim written in so few words is a fragment (a cell, an item, a label)
# A short claim is still a whole statement when it reads as one sentence: capitalised, ended,
# with a finite verb, and not opening on a subordinator or a word that points elsewhere.
_POINTS_ELSEWHERE = frozenset(
    """if when whenever once which while because although though unless until after before as since
    where whereas so such this that these those it its they them their he she his her there here""".split()
)
_SUBORDINATORS = frozenset("if when whenever once unless until while because although though since whereas".split())
_FINITE_VERB = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|does|do|did|can|cannot|could|will|would|shall|should"
    r"|may|might|must|began|became|won|wrote|made|took|gave|went|came|met|led|left|lost|ran|sang|saw"
    r"|told|grew|held|kept|knew|found|built|fought|taught|brought|sold|spent|stood|drew|flew|fell"
    r"|rose|spoke|broke|chose|drove|got|shot|sat|threw|wore)\b|\b[a-z]{2,}ed\b",
    re.IGNORECASE,
)

_HYPHENATED_WORD = re.compile(r"[a-z]+(?:-[a-z]+)+")  # prose words only: no flag, path or number
_ARTICLES = frozenset("a an the which that who".split())
UNDECIDABLE_TYPES = ("speculative", "normative")
# A source's newest version that states the claim as written, word for word, settles it: the
# fact did not change there, whatever a model reads into another sentence.
STATED_AS_WRITTEN_CONFIDENCE = 0.95
# a prose default that the newest release states in its entry's field row (kb/verify _default_in_field)
FIELD_DEFAULT_NOTE = "the default the claim states is in its entry's default field under the same heading"
RESTATED_CONFIDENCE = 0.7  # below a model's sure support: the words were compared, not the meaning
COMMAND_GONE = "the newest corpus shows it nowhere"  # the rationale of a command no release shows now
REMOVED_ACTION = "removed in"  # a stale verdict's action that starts so: the fact is gone, not changed
# a stale verdict's action when the newest source still states the claim but is past its window
AGED_ACTION = "add a fresher source or re-confirm the claim"
# The rules' word that a passage is about another entry than the claim's: another option's field
# line, another entry's table row. Such a passage is no counterpart of the claim's own line.
OPTION_ELSEWHERE_NOTE = "the passage does not name this option"
OTHER_ROW_NOTE = "the row is about another entry"
OTHER_HEADING_NOTE = "the row is the field of another heading's entry"
OWN_ROW_NOTE = "the entry's"  # how the rules' judgements of the entry's own row begin


def entries_elsewhere(evidence, judgements) -> set[int]:
    """The indices of passages the rules found to be about another entry than the claim's:
    another option's line, another heading's field row, and another entry's row where the newest
    version still has the entry's own row. Where it has none, the entry went or was renamed, and
    the row a diff put in its place may be the renamed one ("preset-rk-h264" -> "preset-rkmpp")."""
    newest = newest_dates(evidence)
    own_row = _judged_its_own_row((e, j) for e, j in zip(evidence, judgements) if _is_current(e, newest))
    kinds = (OPTION_ELSEWHERE_NOTE, OTHER_HEADING_NOTE, OTHER_ROW_NOTE) if own_row else (OPTION_ELSEWHERE_NOTE, OTHER_HEADING_NOTE)
    return {i for i, j in enumerate(judgements) if j.tier == "rules" and j.relation == "nei" and j.rationale.startswith(kinds)}


def underspecified(text: str) -> bool:
    """Too little context to know what the claim is about: "Optional, Default=0s", "If depth is
    set to 2", "this option will be ignored". "Diwali is a festival." is short but complete. A
    condition cut from its sentence ("When you run the init command", "If more than one theme is
    defined as entry points") states nothing, however many words it has."""
    if _bare_condition(text):
        return True
    # an identifier names what the claim is about ("entryPoint.priority: Optional, Default=1")
    if informative_words(text) + len(extract(text).identifiers) >= MIN_CONTEXT_WORDS:
        return False
    words = word_tokens(text)
    ended = text.rstrip().rstrip("\"'”’)]").endswith((".", "!"))  # 'nickname is "Dog."'
    complete = (
        bool(words) and words[0][:1].isupper() and words[0].lower() not in _POINTS_ELSEWHERE
        and ended and _FINITE_VERB.search(text) is not None
    )  # fmt: skip
    return not complete


def _judged_its_own_row(items) -> bool:
    """A rule read one of these passages as the claim's own table row (its first cell names the
    claim's entry): "Default is 2.3" of a cell is about that row, whatever its value now."""
    return any(j.tier == "rules" and j.rationale.startswith(OWN_ROW_NOTE) for _, j in items)


def _bare_condition(text: str) -> bool:
    """A subordinate clause alone: it opens on a subordinator, has no comma after which a main
    clause could stand, and does not end as a sentence does."""
    words = word_tokens(text)
    return (bool(words) and words[0].lower() in _SUBORDINATORS and "," not in text
            and not text.rstrip().rstrip("\"'”’)]").endswith((".", "!", "?", ":")))  # fmt: skip


def _date_key(d: date | None) -> date:
    return d or date.min


def newest_dates(evidence) -> dict[str, date]:
    """The newest version's date of each source among the evidence (``date.min`` when a source
    has only undated passages): its passages of that date are the source's current view."""
    newest: dict[str, date] = {}
    for e in evidence:
        d = _date_key(e.source_date)
        if e.source_id not in newest or d > newest[e.source_id]:
            newest[e.source_id] = d
    return newest


def apply_confidence_floor(verdicts: list[Verdict], floor: float) -> list[Verdict]:
    """Findings (stale, contradicted) below ``floor`` reported uncertain, their reading kept in the
    rationale: the operating point a team chooses (``min_confidence``), fewer findings, surer ones."""
    if floor <= 0:
        return verdicts
    out = []
    for v in verdicts:
        if v.label in ("stale", "contradicted") and v.confidence < floor:
            v = replaced(
                v, label="uncertain", gap_type="technical", gap_severity="low", action="review by hand if it matters",
                rationale=f"below the confidence floor {floor:g}: read as {v.label} at {v.confidence:.2f} ({v.rationale})",
            )  # fmt: skip
        out.append(v)
    return out


def stated_as_written(claim: Claim, e: Evidence) -> bool:
    """Whether the evidence sentence is the claim as written, word for word (kb.evidence.versions)."""
    return states_as_written(claim.source_text, claim.section, e.sentence, e.section)


# a table cell's claim against a row: (claim, row, the row's passage, its heading path) -> judgement
RowJudgement = Callable[[Claim, str, str, str], Judgement | None]


def _is_current(e: Evidence, newest: dict[str, date]) -> bool:
    """A passage of its source's newest version among the evidence, in a sentence that version
    still has (a sentence the newest version dropped is history, even where that version is not
    among the evidence)."""
    return _date_key(e.source_date) == newest[e.source_id] and not e.removed_in


def _newest_written(claim: Claim, current) -> Evidence | None:
    """Of the current evidence, the newest passage that states the claim as written, or, for a
    clause, its whole sentence under its own heading path, or, for a list item, the item under
    the same lead-in, or, for a heading, a sentence under it at the same place."""
    written = (e for e in current if stated_as_written(claim, e) or _states_its_sentence(claim, e)
               or states_under_its_lead_in(claim, e.sentence, e.section) or kept_as_heading(claim, e.section)
               or _states_without_its_history(claim, e))  # fmt: skip
    return max(written, key=lambda e: _date_key(e.source_date), default=None)


def _states_its_sentence(claim: Claim, e: Evidence) -> bool:
    return states_its_sentence(claim, e.sentence, e.section)


def _states_without_its_history(claim: Claim, e: Evidence) -> bool:
    """The sentence is the claim word for word but for the history clause the claim opens with
    ("Since Acme 0.31.0, you can ..." / "You can ..."): the note dropped, the statement kept."""
    text = claim.source_text or claim.text
    rest = without_leading_history(text, e.sentence or "")
    return rest != text and states_as_written(rest, claim.section, e.sentence or "", e.section)


def _cited(e: Evidence) -> str:
    """The evidence's source as a rationale names it: "guide.md (2024-06-10)"."""
    return e.source_id + (f" ({e.source_date.isoformat()})" if e.source_date else "")


def _supported(base: dict, e: Evidence, j: Judgement) -> Verdict:
    return Verdict(
        **base, label="supported", confidence=round(j.confidence, 4), tier=j.tier, rationale=f"{_cited(e)}: {j.rationale}",
        evidence_sentence=e.sentence,
    )  # fmt: skip


def _supported_as_written(base: dict, e: Evidence, claim: Claim) -> Verdict:
    if _states_its_sentence(claim, e):
        stated = "the sentence the claim is a clause of"
    elif states_under_its_lead_in(claim, e.sentence, e.section):
        stated = "the list item under the same lead-in"
    elif kept_as_heading(claim, e.section):
        stated = "the claim's words as a heading, under the same headings"
    elif _states_without_its_history(claim, e):
        stated = "the claim without the history clause it opens with"
    else:
        stated = "the claim"
    return Verdict(
        **base, label="supported", confidence=STATED_AS_WRITTEN_CONFIDENCE, tier="rules",
        rationale=f"{_cited(e)}: its newest version states {stated} word for word", evidence_sentence=e.sentence,
    )  # fmt: skip


def settled_as_written(claim: Claim, evidence: list[Evidence], row_judgement: RowJudgement | None = None) -> Verdict | None:
    """The verdict ``decide`` gives, without judging a single passage, to a claim that the current
    evidence states word for word when no evidence is dated after that statement (so no newer
    source can refute it); None when the claim needs its passages judged. With ``row_judgement``
    (a table cell's claim against a row), a cell whose evidence is all current is settled the same
    way by a row that holds its value in its place, unless another row holds another value there."""
    if not claim.checkworthy or claim.time_sensitive or not evidence:
        return None
    newest = newest_dates(evidence)
    current = [e for e in evidence if _is_current(e, newest)]
    base = {"claim_id": claim.claim_id, "evidence_ids": tuple(x.evidence_id for x in evidence)}
    e = _newest_written(claim, current)
    if e is None and row_judgement is not None and claim.reason.startswith(TABLE_NOTE):
        # only where the policy would read the row alone: with older versions in view it weighs
        # rewordings, and a cell too short to name its fact needs a word-for-word statement
        if len(current) < len(evidence) or not cell_settles_in_row(claim):
            return None
        return _settled_in_row(claim, base, current, row_judgement)
    if e is None or any(_date_key(x.source_date) > _date_key(e.source_date) for x in current):
        return None
    return _supported_as_written(base, e, claim)


def cell_settles_in_row(claim: Claim) -> bool:
    """Whether a table cell's claim may be settled by the row that holds its value alone: not one
    too short to name its fact (those need a word-for-word statement), nor a history note."""
    return claim.reason.startswith(TABLE_NOTE) and not underspecified(claim.text) and not history_note(claim.source_text)


def _settled_in_row(claim: Claim, base: dict, current: list[Evidence], row_judgement: RowJudgement) -> Verdict | None:
    read = [(e, row_judgement(claim, e.sentence, e.passage or "", e.section)) for e in current]
    if any(j is not None and j.relation == "refutes" for _, j in read):
        return None
    held = [(e, j) for e, j in read if j is not None and j.relation == "supports"]
    if not held:
        return None
    e, j = max(held, key=lambda p: (_date_key(p[0].source_date), p[1].confidence))
    if any(_date_key(x.source_date) > _date_key(e.source_date) for x in current):
        return None
    return _supported(base, e, j)


# A lead-in's finding rests on a value or a word its newest counterpart states otherwise; these
# bases do not carry one: its sentence gone, rewritten past recognition or read as refuted by the
# model alone says little, as the block it introduced (an install step, an example) moves and is
# reworded with its page.
_BASES_NO_LEAD_IN_FINDING_RESTS_ON = ("removed", "rewritten", "model", "dropped")


def decide(
    claim: Claim,
    evidence: list[Evidence],
    judgements: list[Judgement],
    today: date,
    freshness_days: int | None = None,
    thresholds: dict[str, float] | None = None,
    known_current: dict[str, date] | None = None,
) -> Verdict:
    """One verdict for ``claim`` from its evidence and the judgement of each passage.

    ``known_current``: per source, the last date its newest version was known to be current
    (a snapshot's capture date, the newest revision that still holds it). A source missing
    there was read by this run and nothing newer exists: it is current on ``today``."""
    verdict = _decide(claim, evidence, judgements, today, freshness_days, thresholds, known_current)
    if claim.reason != BLOCK_LEAD_IN or verdict.label not in ("stale", "contradicted"):
        return verdict
    basis = finding_kind(verdict.label, verdict.rationale).split("/", 1)[1]
    if basis not in _BASES_NO_LEAD_IN_FINDING_RESTS_ON:
        return verdict
    base = {"claim_id": claim.claim_id, "evidence_ids": verdict.evidence_ids}
    return _uncertain(
        claim,
        base,
        f"a lead-in of the block that follows, and no value of its own changed ({verdict.rationale})",
        verdict.confidence,
        kind="revised",
        tier=verdict.tier,
    )


def _decide(
    claim: Claim,
    evidence: list[Evidence],
    judgements: list[Judgement],
    today: date,
    freshness_days: int | None,
    thresholds: dict[str, float] | None,
    known_current: dict[str, date] | None,
) -> Verdict:
    # One function on purpose: the labelling policy is an ordered list of cases, and the order is the policy.
    th = dict(DEFAULT_THRESHOLDS)
    if thresholds:
        th.update({k: v for k, v in thresholds.items() if k in th})
    pairs = list(zip(evidence, judgements, strict=True))
    ev_ids = tuple(e.evidence_id for e in evidence)
    base = {"claim_id": claim.claim_id, "evidence_ids": ev_ids}

    if not claim.checkworthy:
        return Verdict(
            **base, label="uncertain", confidence=1.0, tier="rules",
            rationale=f"not check-worthy: {claim.reason or 'no checkable fact'}",
            gap_type="undecidable", gap_severity="low", action="none (not check-worthy)",
        )  # fmt: skip
    if not pairs:
        return _uncertain(claim, base, "no evidence retrieved", 0.5, kind="no_evidence")

    newest = newest_dates(evidence)
    elsewhere = {evidence[i].evidence_id for i in entries_elsewhere(evidence, judgements)}
    # terms the newest release renamed across its pages, where the claim uses them: the same words
    renames = {w: n for e in evidence if e.renamed for w, n in parse_renames(e.renamed).items()}

    current: dict[str, list[tuple[Evidence, Judgement]]] = defaultdict(list)
    history: dict[str, list[tuple[Evidence, Judgement]]] = defaultdict(list)
    for e, j in pairs:
        if _is_current(e, newest):
            current[e.source_id].append((e, j))
        else:
            history[e.source_id].append((e, j))

    def best(items, relation, threshold):
        hits = [(e, j) for e, j in items if j.relation == relation and j.confidence >= threshold]
        return max(hits, key=lambda p: (p[1].confidence, p[1].tier == "rules"), default=None)

    if history_note(claim.source_text or claim.text):
        dropped = _history_note_dropped(claim, base, current, th)
        if dropped is not None:
            return dropped
        # only a note of the same entity that states another version refutes a note
        current = _refuting_only_where(current, lambda e: _notes_same_entity(claim, e))

    if not claim.time_sensitive:
        e = _newest_written(claim, (e for items in current.values() for e, _ in items))
        # ... unless a newer source refutes it (a changelog entry that changed the value)
        newer = e is not None and any(
            j.relation == "refutes" and j.confidence >= th["refute"] and _date_key(x.source_date) > _date_key(e.source_date)
            for items in current.values() for x, j in items
        )  # fmt: skip
        if e is not None and not newer:
            return _supported_as_written(base, e, claim)

    vague = underspecified(claim.text)
    if vague:
        # "Optional, Default=0s" is about the same thing as a passage only where some version
        # of that source states the claim word for word; ignore every other source
        about = {sid for sid in set(current) | set(history)
                 if best(items := current.get(sid, []) + history.get(sid, []), "supports", th["verbatim"])
                 or _judged_its_own_row(items)}  # fmt: skip
        current = defaultdict(list, {k: v for k, v in current.items() if k in about})
        history = defaultdict(list, {k: v for k, v in history.items() if k in about})

    if bare_line(claim):
        # a bare line is about the entry its heading names: a line under another heading (another
        # entry's "since 2023-06-06, removed 2024-05-26") refutes nothing of it
        current = _refuting_only_where(current, lambda e: _under_its_heading(claim, e))

    stance: dict[str, tuple[str, Evidence, Judgement]] = {}
    for sid, items in current.items():
        s = best(items, "supports", th["support"])
        r = best(items, "refutes", th["refute"])
        if s and (not r or s[1].confidence >= r[1].confidence):
            stance[sid] = ("supports", *s)
        elif r:
            stance[sid] = ("refutes", *r)

    sup = {sid: v for sid, v in stance.items() if v[0] == "supports"}
    ref = {sid: v for sid, v in stance.items() if v[0] == "refutes"}

    if sup and ref:
        top_s = max(sup.values(), key=lambda v: v[2].confidence)
        top_r = max(ref.values(), key=lambda v: v[2].confidence)
        verbatim = top_s[2].confidence >= th["verbatim"] and top_s[2].tier == "rules"
        only_model = all(v[2].tier != "rules" for v in ref.values())
        if top_s[2].confidence >= th["strong_support"] and top_r[2].confidence < th["weak_refute"]:
            ref = {}
        elif verbatim and only_model:
            ref = {}  # a current source states it word for word; a model reading of another sentence does not outweigh that
        elif top_r[2].confidence >= th["clear_side"] and top_s[2].confidence < th["weak_side"]:
            sup = {}  # a sure refutation against a barely-better-than-chance support
        elif top_s[2].confidence >= th["clear_side"] and top_r[2].confidence < th["weak_side"]:
            ref = {}
        elif _entry_of_its_release(claim, sup, th["verbatim"]) or _its_release_supports(claim, sup):
            ref = {}  # a release note states what its release did; a later entry's change is no refutation of it
        else:
            superseding = _changelog_supersedes(claim, base, sup, ref)
            if superseding is not None and superseding.label != "supported":
                return superseding
            if superseding is not None:
                ref = {}  # a changelog entry newer than the refuting pages states the claim
        if sup and ref:
            names = ", ".join(sorted(set(sup) | set(ref)))
            return _uncertain(
                claim, base,
                f"sources disagree: {top_s[1].source_id} supports ({top_s[2].rationale}); "
                f"{top_r[1].source_id} refutes ({top_r[2].rationale}) [{names}]",
                max(top_s[2].confidence, top_r[2].confidence), kind="disagree",
                tier=top_r[2].tier,
            )  # fmt: skip

    if sup and not vague:
        # the newest versions support only loosely while an older version of one of them said
        # it word for word: that source reworded the statement (e.g. added a condition)
        # (a default moved from prose into its entry's field is the statement kept, not reworded)
        loose = all(v[2].confidence < th["verbatim"] and not v[2].rationale.startswith(FIELD_DEFAULT_NOTE)
                    for v in sup.values())  # fmt: skip
        # ... unless another source's newest version still states it, with words added beside
        if loose and not any(_still_states(claim, current[sid]) for sid in sup):
            for sid in sup:
                old = best(history.get(sid, []), "supports", th["verbatim"])
                rev = old and _revised_counterpart(claim, current[sid], th["revision"])
                if rev and not restates(claim, rev[1], renames):
                    return _revised(claim, base, sid, old, rev, th)

    if sup:
        _, e, j = max(sup.values(), key=lambda v: (v[2].confidence, _date_key(v[1].source_date)))
        window = freshness_days if freshness_days is not None else claim.freshness_days
        if claim.time_sensitive and window:
            # a source version is evidence until it is superseded: freshness runs from when the
            # supporting source was last known current, not from its last edit
            as_of = {sid: (known_current or {}).get(sid, today) for sid in sup}
            sid_new = max(as_of, key=lambda sid: as_of[sid])
            age = (today - as_of[sid_new]).days
            if age > window:
                return Verdict(
                    **base, label="stale", confidence=round(min(0.9, j.confidence), 4), tier=j.tier,
                    rationale=f"time-sensitive claim; the newest supporting source ({sid_new}) was last known "
                    f"current on {as_of[sid_new].isoformat()}, {age} days ago, window {window} days",
                    gap_type="systemic", gap_severity=_severity(claim, "stale"),
                    action=AGED_ACTION,
                    evidence_sentence=e.sentence,
                )  # fmt: skip
        return _supported(base, e, j)

    if ref:
        # stale: an older version of a refuting source supported the claim
        stale_hits = []
        for sid, (_, e_new, j_new) in ref.items():
            old = best(history.get(sid, []), "supports", th["stale_history"])
            if old:
                stale_hits.append((e_new, j_new, old[0], old[1]))
        # the model reading a sentence the claim holds word for word as refuting it: no change
        stale_hits = [h for h in stale_hits if not (_model_only(h[1]) and _claim_holds(claim, h[0].sentence))]
        # the model reading the newest version's rewording of the claim as a refutation: no change
        restated = [h for h in stale_hits if reworded_refutation(claim, h[0].sentence or "", h[1], th)]
        if restated and len(restated) == len(stale_hits) == len(ref):
            return _restated(claim, base, restated[0][0].source_id, (restated[0][2], restated[0][3]), restated[0][0].sentence or "")
        stale_hits = [h for h in stale_hits if h not in restated]
        # the two versions must be counterparts (a slot the rules aligned, or similar sentences):
        # a model refutation from an unrelated sentence of the new version says nothing of change
        paired = [h for h in stale_hits
                  if (h[1].tier == "rules" and h[1].evidence_value is not None)
                  or h[0].counterpart_of == h[2].passage_id
                  or similarity(h[2].sentence, h[0].sentence) >= th["counterpart"]]  # fmt: skip
        # ... and about the claim's own option or function: a model reading of another one's line
        # ("deps.optimizer.web was renamed" for "client.setTest was renamed") pairs with nothing
        paired = [h for h in paired if not (_model_only(h[1]) and _other_names(claim, h[0].sentence))]
        # ... and for a list item read with its lead-in, not a newest lead-in read as reworded:
        # "... Provider:" -> "..., use the following instructions:" says nothing of the item
        paired = [h for h in paired if not _reworded_lead_in(claim, h[0].sentence, h[1])]
        if stale_hits and not paired:
            # the diff of the two versions still puts a rewritten sentence where the supporting
            # one stood: stale as rewritten, whatever the unrelated sentence says
            rewrite = None if vague else _placed_rewrite(claim, base, history, current, th, elsewhere, renames)
            if rewrite:
                return rewrite
            # a model refutation by a sentence that is not the command's counterpart says nothing
            # of a command: one that no release shows any more is as stale as with no refutation
            dropped = _dropped_command(claim, base, [h[2:] for h in stale_hits], current)
            if dropped:
                return dropped
            gone = _flags_gone(claim, base, [h[2:] for h in stale_hits], current, th)
            if gone:
                return gone
            e_new, j_new, e_old, _ = stale_hits[0]
            return _uncertain(
                claim, base,
                f"{e_new.source_id}: older version ({_d(e_old)}) supports; the newest version ({_d(e_new)}) "
                f"refutes only through a sentence that is not its counterpart ({j_new.rationale})",
                j_new.confidence, kind="revised", tier=j_new.tier,
            )  # fmt: skip
        stale_hits = paired
        if stale_hits:
            e_new, j_new, e_old, j_old = max(stale_hits, key=lambda x: (x[1].confidence, x[3].confidence))
            conf = min(j_new.confidence, j_old.confidence)
            return Verdict(
                **base, label="stale", confidence=round(conf, 4), tier=j_new.tier,
                rationale=f"{e_new.source_id}: older version ({_d(e_old)}) supports ({j_old.rationale}); "
                f"newest version ({_d(e_new)}) refutes ({j_new.rationale})",
                gap_type="technical", gap_severity=_severity(claim, "stale"),
                action="update to the newer value" if j_new.evidence_value else "rewrite from the newer source",
                claim_value=j_new.claim_value, evidence_value=j_new.evidence_value,
                evidence_sentence=e_new.sentence,
            )  # fmt: skip
        if _fragment(claim) and all(_model_only(v[2]) for v in ref.values()):
            _, e, j = max(ref.values(), key=lambda v: v[2].confidence)
            return _uncertain(
                claim, base,
                f"{e.source_id}: only the model reads a refutation ({j.rationale}) of {claim.source_text!r}, a fragment "
                f"with no statement of its own to refute: {(e.sentence or '')[:200]}", j.confidence,
                kind="low_confidence", tier=j.tier,
            )  # fmt: skip
        # a contradiction needs evidence about the claim's own subject: a refutation the model
        # alone read into a sentence unlike the claim (another option, another changelog entry)
        # is no contradiction
        about = {sid: v for sid, v in ref.items() if not _unlike_model_refutation(claim, v[1], v[2], th)}
        within = {sid for sid, v in about.items() if _model_only(v[2]) and _claim_holds(claim, v[1].sentence)}
        changed = {sid: v for sid, v in about.items()
                   if sid not in within and not reworded_refutation(claim, v[1].sentence or "", v[2], th)}  # fmt: skip
        if about and not changed:
            # every refutation is the model reading a sentence of the claim's own, or a rewording of
            # it: no value changed
            sid, (_, e, j) = max(about.items(), key=lambda kv: kv[1][2].confidence)
            how, kind = (("states a sentence the claim holds word for word", "low_confidence") if sid in within
                         else ("states it in other words (no value, name or negation differs)", "revised"))  # fmt: skip
            return dataclasses.replace(_uncertain(
                claim, base, f"{e.source_id} {how}; only the model read a refutation ({j.rationale}): "
                f"{(e.sentence or '')[:200]}", j.confidence, kind=kind, tier=j.tier,
            ), evidence_sentence=e.sentence)  # fmt: skip
        about = changed
        if not about:
            _, e, j = max(ref.values(), key=lambda v: v[2].confidence)
            return _uncertain(
                claim, base,
                f"{e.source_id} refutes only through the model reading a sentence that is not about the claim's "
                f"subject ({j.rationale}): {(e.sentence or '')[:200]}", j.confidence, kind="low_confidence", tier=j.tier,
            )  # fmt: skip
        _, e, j = max(about.values(), key=lambda v: (v[2].confidence, _date_key(v[1].source_date)))
        if vague:
            return _uncertain(
                claim, base,
                f"{e.source_id} conflicts ({j.rationale}) but the claim has too little context to be "
                "sure it is about the same thing", j.confidence, kind="underspecified", tier=j.tier,
            )  # fmt: skip
        correctable = j.evidence_value is not None
        return Verdict(
            **base, label="contradicted", confidence=round(j.confidence, 4), tier=j.tier,
            rationale=f"{_cited(e)} refutes: {j.rationale}",
            gap_type="technical" if correctable else "systemic",
            gap_severity=_severity(claim, "contradicted"),
            action=("correct from the evidence" if correctable else "human review")
            if claim.risk != "high" else "human review",
            claim_value=j.claim_value, evidence_value=j.evidence_value, evidence_sentence=e.sentence,
        )  # fmt: skip

    # nothing current takes a side
    old_sup = [best(v, "supports", th["stale_history"]) for v in history.values()]
    old_sup = [x for x in old_sup if x]
    # an older version stated the claim word for word and the newest version of that same
    # source has a revised counterpart: the statement was changed (documentation drift)
    for sid, items in history.items():
        old = best(items, "supports", th["verbatim"])
        if not old or sid not in current or vague:
            continue
        rev = None if _still_states(claim, current[sid]) else _revised_counterpart(claim, current[sid], th["revision"])
        if rev and restates(claim, rev[1], renames):
            return _restated(claim, base, sid, old, rev[1])
        if rev:
            return _revised(claim, base, sid, old, rev, th)
    # its old place lost it, but the newest corpus states it nearly as written elsewhere (a page
    # moved or split, a link or a colon changed): a removal needs the fact's absence everywhere
    stands = None if vague else _stated_nearly_as_written(claim, current)
    if old_sup and stands is not None:
        return _stands_elsewhere(base, old_sup[0], stands)
    # an older version supported it and a diff of the two versions puts a different sentence of
    # the newest version in its place: the statement was rewritten (not merely dropped)
    rewrite = None if vague else _placed_rewrite(claim, base, history, current, th, elsewhere, renames)
    if rewrite:
        return rewrite
    removed = [(e, j) for e, j in old_sup if e.removed_in and j.confidence >= th["support"]]
    if removed and not vague:
        e, j = max(removed, key=lambda p: p[1].confidence)
        listed = _item_still_listed(claim, current.get(e.source_id, ()))
        kept = listed or _cell_still_in_table(claim, current.get(e.source_id, ()))
        if kept is not None:
            where = "in a list written otherwise" if listed else "in a row of its table written otherwise"
            return _uncertain(
                claim, base,
                f"{e.source_id}: the newest version ({_d(kept)}) still lists {claim.source_text!r} under the same "
                f"heading, {where}: {(kept.sentence or '')[:200]}",
                j.confidence, kind="revised", tier="rules",
            )  # fmt: skip
        return _removed(claim, base, e, j)
    if old_sup:
        e, j = old_sup[0]
        dropped = _dropped_command(claim, base, old_sup, current)
        if dropped:
            return dropped
        return _uncertain(
            claim, base,
            f"only an older version ({e.source_id}, {_d(e)}) supports; the newest version no longer states it",
            j.confidence, kind="revised", tier=j.tier,
        )  # fmt: skip
    top = max(pairs, key=lambda p: p[1].confidence if p[1].relation != "nei" else 0)
    if top[1].relation == "nei":
        return _uncertain(claim, base, "no evidence passage settles the claim", top[1].confidence,
                          kind="not_relevant", tier=top[1].tier)  # fmt: skip
    return _uncertain(
        claim, base,
        f"low confidence: best {top[1].relation} {top[1].confidence:.2f} ({top[1].rationale})",
        top[1].confidence, kind="low_confidence", tier=top[1].tier,
    )  # fmt: skip


_ISSUE_REF = re.compile(r"(?:#|\bissue:?`?)(\d+)\b", re.IGNORECASE)  # "#628", "issue48", ":issue:`3567`"


def _refuting_only_where(current, keep) -> defaultdict:
    """The current evidence with each refutation from a passage ``keep`` rejects read as nei."""
    return defaultdict(list, {sid: [(e, j if j.relation != "refutes" or keep(e) else replaced(j, relation="nei"))
                                    for e, j in items] for sid, items in current.items()})  # fmt: skip


def bare_line(claim: Claim) -> bool:
    """A short line read as written, with no subject of its own ("since 2019-06-09, removed
    2020-01-07", "Default: 80.", "Required: no"): a field line, or at most
    MAX_KEYED_SETTING_WORDS words not ended as a sentence is. Table cells, setting lines and list
    items carry their entry already (their row key, option, lead-in) and are judged by it."""
    text = claim.source_text or claim.text
    if claim.reason.startswith(TABLE_NOTE) or claim.reason in (SETTING_NOTE, LEAD_IN_ATTACHED):
        return False
    if keyed_setting_line(text):
        return True
    ended = text.rstrip().rstrip("\"'”’)]").endswith((".", "!", "?"))
    return bool(word_tokens(text)) and len(text.split()) <= MAX_KEYED_SETTING_WORDS and not ended


def _under_its_heading(claim: Claim, e: Evidence) -> bool:
    """The evidence stands under the heading the claim stands under (its path's last heading),
    or the claim stands under none."""
    mine = claim.section.rsplit(" > ", 1)[-1]
    return not mine or canonical(e.section.rsplit(" > ", 1)[-1]) == canonical(mine)


def _notes_same_entity(claim: Claim, e: Evidence) -> bool:
    """The evidence is a history note of the claim's entity: under the same heading path, or a
    setting line the rules read with the claim's option."""
    return history_note(e.sentence) and (e.section == claim.section or claim.reason == SETTING_NOTE)


def _history_note_dropped(claim: Claim, base: dict, current, th: dict[str, float]) -> Verdict | None:
    """A history note ("Added in version 1.2.") that no current source supports and no note of
    the same entity refutes: the newest release dropped the note, which changes no fact of the
    entity (its removal, if it went, shows in its other lines). Not a finding: uncertain."""
    for items in current.values():
        for e, j in items:
            if j.relation == "supports" and j.confidence >= th["support"]:
                return None
            if j.relation == "refutes" and j.confidence >= th["refute"] and _notes_same_entity(claim, e):
                return None
    return _uncertain(claim, base, "a history note the newest release no longer states about its entity; "
                      "dropping a note of when an entity came or changed changes no fact", 0.5, kind="history_note")  # fmt: skip


def _fragment(claim: Claim) -> bool:
    """A claim written as a few words, not a sentence: a table cell ("bash", "Expand all files"),
    a list item ("sync, sequential"), a label. The verifier reads sentence pairs; against a row or
    a sentence such a claim has no statement for it to refute, only words that differ. (Of the
    contradictions the model alone read into claims of at most ``MAX_FRAGMENT_WORDS`` words on the
    judged documentation samples, none was real.)"""
    words = [t for t in word_tokens(claim.source_text or claim.text) if any(ch.isalnum() for ch in t)]
    return len(words) <= MAX_FRAGMENT_WORDS


def _reworded_lead_in(claim: Claim, newest: str | None, j: Judgement) -> bool:
    """Whether ``newest`` is a lead-in that the rules read only as a rewording of a list item's
    claim ("revision: ...") or the model alone read as refuting it: a lead-in's values (a changed
    version, a count) are read by the slot rules, and are changes; its other words are not the
    item's."""
    if claim.reason != LEAD_IN_ATTACHED or not (newest or "").rstrip().endswith(":"):
        return False
    return _model_only(j) or j.rationale.startswith("revision:")


def _model_only(j: Judgement) -> bool:
    """A judgement of the model alone: no rule found a value on either side."""
    return j.tier == "model" and j.claim_value is None and j.evidence_value is None


def _code_names(text: str) -> set[str]:
    """The code names a sentence states: options, flags, dotted or snake_case names, key=value."""
    return {i for i in extract(text).identifiers if re.search(r"[._=]|^-", i)}


def _other_names(claim: Claim, sentence: str | None) -> bool:
    """The sentence names code (options, functions, settings) and none of the claim's: it is about
    another entity than the claim, which names its own."""
    mine = _code_names(claim.source_text or claim.text) | _code_names(claim.text)
    theirs = _code_names(sentence or "")
    return bool(mine and theirs and not mine & theirs)


def _claim_holds(claim: Claim, sentence: str | None) -> bool:
    """The claim holds the sentence word for word, with more of its own: a table cell or a list
    item of several sentences, of which the newest version states one. A sentence the claim says in
    its own words cannot refute it; only what the claim adds can differ, and that sentence does not
    state it."""
    key = sentence_key(sentence or "")
    if len(key.split()) < MIN_HELD_SENTENCE_WORDS:
        return False
    return any(f" {key} " in f" {sentence_key(t)} " for t in (claim.text, claim.source_text) if t)


def _unlike_model_refutation(claim: Claim, e: Evidence, j: Judgement, th: dict[str, float]) -> bool:
    """A refutation only the model read (no rule found a conflicting value) from a sentence that is
    not about the claim's subject: one that names other code than the claim's, an entry about other
    issues than the claim's ("#628" for a claim about "#8796"), or one less like the claim than
    the counterpart similarity that does not hold ``same_words`` of the claim's words in another
    order either ("The plan keeps backups for 14 days" / "Backups are kept for 30 days on the
    plan" is the same subject)."""
    if not _model_only(j) or not e.sentence:
        return False
    if _other_names(claim, e.sentence):
        return True
    texts = [t for t in (claim.text, claim.source_text) if t]
    mine = {n for t in texts for n in _ISSUE_REF.findall(t)}
    theirs = set(_ISSUE_REF.findall(e.sentence))
    if mine and theirs:
        return not mine & theirs  # the same issue is the same subject, however it is worded
    return not _about_claim(claim, e.sentence, th)


def _about_claim(claim: Claim, sentence: str, th: dict[str, float]) -> bool:
    """The sentence is about the claim's subject: like the claim in order (the counterpart
    similarity), or holding ``same_words`` of its words in another order."""
    texts = [t for t in (claim.text, claim.source_text) if t]
    if max(similarity(t, sentence) for t in texts) >= th["counterpart"]:
        return True
    return any(_holds_words_of(sentence, t, th["same_words"]) for t in texts)


def reworded_refutation(claim: Claim, sentence: str, j: Judgement, th: dict[str, float]) -> bool:
    """``j`` is the model reading a rewording as a refutation: the model decided it (no rule found
    a conflicting value of its own kind), the sentence is about the claim's subject, and it
    restates the claim (kb/verify/rewording.py)."""
    return (j.relation == "refutes" and j.tier == "model" and bool(sentence) and bool(claim.text or claim.source_text)
            and _about_claim(claim, sentence, th) and restates(claim, sentence))  # fmt: skip


def _holds_words_of(sentence: str, text: str, share: float) -> bool:
    """``sentence`` holds at least ``share`` of ``text``'s content words other than numbers (the
    values are what may differ), in any order; ``text`` has at least MIN_CONTEXT_WORDS of them."""
    words = {w for w in content_set(text) if not w[0].isdigit()}
    return len(words) >= MIN_CONTEXT_WORDS and len(words & content_set(sentence)) >= share * len(words)


def _changelog_supersedes(claim: Claim, base: dict, sup: dict, ref: dict) -> Verdict | None:
    """Where current sources disagree and one side's newest word is a changelog entry dated after
    every source on the other side, the entry supersedes them (a release note announces the
    change the pages have not caught up with, or that they already describe). A refuting entry
    makes the claim stale, with the pages' support as its history; a supporting one lets the
    support stand (returned as a "supported" marker). None: no such entry."""

    def newest_log(side: dict):
        logs = [v for v in side.values() if v[1].source_kind == "changelog" and v[1].source_date]
        return max(logs, key=lambda v: v[1].source_date, default=None)

    def newest_other(side: dict):
        return max((_date_key(v[1].source_date) for v in side.values() if v[1].source_kind != "changelog"), default=date.min)

    log_r, log_s = newest_log(ref), newest_log(sup)
    if log_r and log_r[1].source_date > newest_other(sup) and (not log_s or log_r[1].source_date > log_s[1].source_date):
        _, e_new, j_new = log_r
        _, e_old, j_old = max(sup.values(), key=lambda v: (_date_key(v[1].source_date), v[2].confidence))
        return Verdict(
            **base, label="stale", confidence=round(min(j_new.confidence, j_old.confidence), 4), tier=j_new.tier,
            rationale=f"{e_old.source_id} ({_d(e_old)}) supports ({j_old.rationale}); the newer changelog entry "
            f"{e_new.source_id} ({_d(e_new)}) refutes ({j_new.rationale})",
            gap_type="technical", gap_severity=_severity(claim, "stale"),
            action="update to the newer value" if j_new.evidence_value else "rewrite from the newer source",
            claim_value=j_new.claim_value, evidence_value=j_new.evidence_value, evidence_sentence=e_new.sentence,
        )  # fmt: skip
    if log_s and log_s[1].source_date > newest_other(ref) and (not log_r or log_s[1].source_date > log_r[1].source_date):
        return Verdict(**base, label="supported", confidence=0.0, tier="rules", rationale="")
    return None


def _entry_of_its_release(claim: Claim, sup: dict, bar: float) -> bool:
    """The claim is a changelog's own entry ("Updated highlight.js to 10.5.0.") and a changelog
    entry states it word for word: the entry tells what its release did, which stays true when a
    later release changes the same thing again."""
    return is_changelog(claim.doc_id) and any(
        v[1].source_kind == "changelog" and v[2].relation == "supports" and v[2].confidence >= bar for v in sup.values()
    )


def _its_release_supports(claim: Claim, sup: dict) -> bool:
    """The claim stands in a changelog under a release's heading, and the newest changelog's
    section of that same release supports it: it is that release's note (an item of its list,
    "Add the following to the list of ...: .nox"), which a later release's entry does not undo."""
    if not is_changelog(claim.doc_id):
        return False
    releases = {found[0] for part in claim.section.split(" > ") if (found := release_heading(part))}
    return bool(releases) and any(v[1].source_kind == "changelog" and v[1].source_id.rpartition("#")[2] in releases for v in sup.values())


def _revised(claim: Claim, base: dict, sid: str, old, rev, th) -> Verdict:
    e_new, sentence, score = rev
    return Verdict(
        **base, label="stale", confidence=round(min(0.6 + 0.3 * (score - th["revision"]), 0.75), 4),
        tier=old[1].tier,
        rationale=f"{sid}: older version ({_d(old[0])}) states it verbatim; newest version "
        f"({_d(e_new)}) revised it (similarity {score:.2f}): {sentence[:200]}",
        gap_type="technical", gap_severity=_severity(claim, "stale"),
        action="rewrite from the newer source", evidence_sentence=sentence,
    )  # fmt: skip


def _placed_rewrite(claim: Claim, base: dict, history, current, th, elsewhere: Collection[str] = (),
                    renames: Mapping[str, str] | None = None) -> Verdict | None:  # fmt: skip
    """Stale as rewritten: an older version supports the claim and the newest version of that
    source holds the sentence a diff of the two versions put in its place. ``elsewhere``: the
    evidence ids of another entry's lines, which are no rewrite of the claim's."""
    for sid, items in history.items():
        # another option's line the diff put where the claim's stood is no rewrite of it
        placed = {e.counterpart_of: e for e, _ in current.get(sid, []) if e.counterpart_of and e.evidence_id not in elsewhere}
        for e_old, j_old in sorted(items, key=lambda p: -p[1].confidence):
            e_new = placed.get(e_old.passage_id)
            if e_new and j_old.relation == "supports" and j_old.confidence >= th["stale_history"]:
                if restates(claim, e_new.sentence or "", renames) or _in_other_notation(claim, e_new.sentence or ""):
                    return _restated(claim, base, sid, (e_old, j_old), e_new.sentence or "")
                return _rewritten(claim, base, sid, (e_old, j_old), e_new)
    return None


def _rewritten(claim: Claim, base: dict, sid: str, old, e_new: Evidence) -> Verdict:
    e_old, j_old = old
    # no similarity bar: the diff placed it (a local edit); the score is for the reader
    score = similarity(e_old.sentence, e_new.sentence)
    return Verdict(
        **base, label="stale", confidence=round(min(0.6, j_old.confidence), 4), tier=j_old.tier,
        rationale=f"{sid}: older version ({_d(e_old)}) supports ({j_old.rationale}); in the newest version "
        f"({_d(e_new)}) that sentence was rewritten (similarity {score:.2f}) and no longer states it: "
        f"{e_new.sentence[:200]}",
        gap_type="technical", gap_severity=_severity(claim, "stale"),
        action="rewrite from the newer source", evidence_sentence=e_new.sentence,
    )  # fmt: skip


MAX_LISTED_ITEM_WORDS = 3
_LIST_SEPARATOR = re.compile(r"[,;:()]|\s(?:and|or)\s")


def _item_still_listed(claim: Claim, items) -> Evidence | None:
    """For an item of an inline list read with its lead-in ("only the following objects are
    supported: `car`"), a newest-version sentence of the same page under the same heading that
    still names the item as one element of a list ("Vehicles: `car`, `bicycle`, `boat`"): the
    list was regrouped or its lead-in reworded, and the item was not dropped. What the new lead-in
    says of it is not settled here, so this keeps the claim from a removal only."""
    item = written_key(claim.source_text)
    if claim.reason != LEAD_IN_ATTACHED or not item or len(item.split()) > MAX_LISTED_ITEM_WORDS:
        return None
    if not claim.text.endswith(claim.source_text):
        return None  # an item that is its own sentence ("- Set the key") is judged as a sentence
    for e, j in items:
        if j.relation == "refutes" or e.section != claim.section:
            continue
        for sentence in dict.fromkeys([e.sentence, *passage_sentences(e.passage)]):
            # a passage joins a list's lines with a space ("People: person, face Vehicles: car"):
            # a capital after a space opens the next line's label
            parts = [written_key(q) for p in _LIST_SEPARATOR.split(sentence or "") for q in re.split(r"\s(?=[A-Z])", p)]
            if len([p for p in parts if p]) >= 2 and item in parts:
                return dataclasses.replace(e, sentence=sentence)
    return None


def _cell_still_in_table(claim: Claim, items) -> Evidence | None:
    """For a table cell, a newest-version row of the same page under the same heading that holds
    the cell's value, word for word, in one of its cells: the table was reshaped or its rows
    renamed ("hatch fmt | flake8 ." -> "hatch check code | flake8 ."), and the value was not
    dropped. What the row now says of it is not settled here, so this keeps the claim from a
    removal only. A value of one plain word ("yes") is in too many rows to count."""
    value = written_key(claim.source_text)
    if not claim.reason.startswith(TABLE_NOTE) or not names_a_value(value):
        return None
    for e, j in items:
        if j.relation == "refutes" or e.section != claim.section:
            continue
        for row in dict.fromkeys([e.sentence, *passage_sentences(e.passage)]):
            cells = [written_key(c) for c in (row or "").split(" | ")]
            if len(cells) >= 2 and value in cells:
                return dataclasses.replace(e, sentence=row)
    return None


def names_a_value(key: str) -> bool:
    """Whether a text compared word for word (``written_key``) names a value by itself: two
    words or more, or one with a digit or a separator ("flake8", "ccab4aaf-frigate:5000"); one
    plain word ("yes", "bash") stands in too many places."""
    return any(ch.isalpha() for ch in key) and (" " in key or not key.isalpha())


def _stated_nearly_as_written(claim: Claim, current) -> Evidence | None:
    """A current sentence that no rule or model reads as a refutation and that states the claim
    nearly word for word (what retrieval calls still stated: ``STILL_STATED``) with no value,
    negation or swapped word of its own (kb/verify/rewording.py ``same_statement``). A bare line
    ("Type: number") counts only under its own heading: elsewhere it is another entry's line."""
    key = sentence_key(claim.source_text or claim.text)
    bare = bare_line(claim)
    for items in current.values():
        for e, j in items:
            if j.relation == "refutes" or (bare and not _under_its_heading(claim, e)):
                continue
            if (key and fuzz.ratio(key, sentence_key(e.sentence or "")) >= STILL_STATED
                    and same_statement(claim.source_text or claim.text, e.sentence or "", code_words(claim.source_text))):  # fmt: skip
                return e
    return None


def _dropped_command(claim: Claim, base: dict, old_sup, current) -> Verdict | None:
    """Stale as a command no longer shown (``_command_dropped``) where the claim is a command an
    older version supported and the newest corpus shows nowhere nearly as written; else None.
    A command names its own subject, however short: "pip install ghp-import" is not vague."""
    if not old_sup or claim.reason != COMMAND_NOTE or elided(claim.text) or generic_step(claim.text):
        return None
    if _stated_nearly_as_written(claim, current) is not None:
        return None
    e, j = old_sup[0]
    return _command_dropped(claim, base, e, j)


_LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[A-Za-z0-9]")


def _flags_gone(claim: Claim, base: dict, old_sup, current, th: dict[str, float]) -> Verdict | None:
    """Stale as removed where the claim's sentence is gone from its page and every long flag it
    names (``--formatter``) is gone with it: no passage of the newest corpus found for it names
    one. A refutation the model read into another sentence then says nothing either way, and a
    flag has no other words that could state the fact on: the option itself is what was said."""
    flags = {m.group() for m in _LONG_FLAG.finditer(claim.source_text or claim.text)}
    removed = [(e, j) for e, j in old_sup if e.removed_in and j.confidence >= th["support"]]
    if not flags or not removed:
        return None
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(f)}(?![\w-])" for f in sorted(flags)))
    if any(pattern.search(e.passage or e.sentence or "") for items in current.values() for e, _ in items):
        return None
    e, j = max(removed, key=lambda p: p[1].confidence)
    return _removed(claim, base, e, j, f", and no newest passage names {', '.join(sorted(flags))}")


def _removed(claim: Claim, base: dict, e: Evidence, j: Judgement, why: str = "") -> Verdict:
    """Stale: the older version ``e`` supported the claim (``j``) and the newest version of its
    source has no counterpart of that sentence; ``why`` adds what else says it is gone."""
    return Verdict(
        **base, label="stale", confidence=round(min(j.confidence, 0.9), 4), tier=j.tier,
        rationale=f"{e.source_id}: older version ({_d(e)}) supports ({j.rationale}); removed in {e.removed_in}: "
        f"the newest version has no counterpart{why}",
        gap_type="technical", gap_severity=_severity(claim, "stale"),
        action=f"{REMOVED_ACTION} {e.removed_in}: delete the sentence or rewrite it (review)",
    )  # fmt: skip


def _command_dropped(claim: Claim, base: dict, e: Evidence, j: Judgement) -> Verdict:
    """Stale: an older version showed the command, and the newest corpus shows it nowhere (the
    whole corpus was searched for it as written before this: Retriever.settle). A sentence gone
    from its page may live on in other words; a command has no other words: its program,
    subcommand and flags are the fact. Not for a step of the reader's own setup (``cd``,
    ``git push``: ``generic_step``) nor a command written with ``...``: their absence says
    nothing of the project."""
    return Verdict(
        **base, label="stale", confidence=round(min(j.confidence, 0.9), 4), tier=j.tier,
        rationale=f"{e.source_id}: older version ({_d(e)}) shows this command ({j.rationale}); {COMMAND_GONE}",
        gap_type="technical", gap_severity=_severity(claim, "stale"),
        action="the newest docs no longer show this command: replace it with the current one or delete it (review)",
    )  # fmt: skip


def _stands_elsewhere(base: dict, old, e_new: Evidence) -> Verdict:
    e_old, j_old = old
    return Verdict(
        **base, label="supported", confidence=RESTATED_CONFIDENCE, tier="rules",
        rationale=f"{e_old.source_id}: older version ({_d(e_old)}) supports ({j_old.rationale}); the newest corpus "
        f"still states it nearly as written: {e_new.source_id} ({_d(e_new)}): {(e_new.sentence or '')[:200]}",
        evidence_sentence=e_new.sentence,
    )  # fmt: skip


def _restated(claim: Claim, base: dict, sid: str, old, sentence: str) -> Verdict:
    """Supported: the newest version says what the older one did in other words (no value, code
    name, negation, proper name or status word differs: kb/verify/rewording.py)."""
    e_old, j_old = old
    return Verdict(
        **base, label="supported", confidence=RESTATED_CONFIDENCE, tier="rules",
        rationale=f"{sid}: older version ({_d(e_old)}) supports ({j_old.rationale}); the newest version states it in "
        f"other words (no value, name or negation differs): {sentence[:200]}",
        evidence_sentence=sentence,
    )  # fmt: skip


def _revised_counterpart(claim: Claim, items, threshold: float):
    """The newest-version sentence most like the claim, if similar enough but not the same (the
    caller has found that no passage of ``items`` still states it: ``_still_states``)."""
    if claim.reason == SETTING_NOTE:
        return None  # every option's "Optional, Default=..." line is alike: only its own line counts
    all_texts = [t for t in (claim.text, claim.source_text) if t]
    keys = {canonical(t) for t in all_texts}
    spelled = {_spelling(t) for t in all_texts}
    # a list item rewritten with its lead-in ("...steps: Set X") is compared as written, so a
    # shared lead-in does not make two different items look alike
    texts = [claim.source_text] if claim.source_text and canonical(claim.source_text) != canonical(claim.text) else [claim.text]
    stated = {_without_articles(t) for t in all_texts}
    notation = {_spelling(_without_articles(t)) for t in all_texts}
    best = None
    for e, _ in items:
        for sentence in dict.fromkeys([e.sentence] + passage_sentences(e.passage)):
            if not sentence or canonical(sentence) in keys or _spelling(sentence) in spelled:
                continue
            if _without_articles(sentence) in stated or _spelling(_without_articles(sentence)) in notation:
                return None  # "keys which are" / "keys that are", "a RFC" / "an RFC", "the add-on" / "addon": it still states it
            score = max(similarity(t, sentence) for t in texts)
            if score >= threshold and (best is None or score > best[2]):
                best = (e, sentence, score)
    return best


def _still_states(claim: Claim, items) -> bool:
    """Whether a passage of ``items`` still states the claim: whole, cut into other passages,
    written otherwise ("Addon" / "Add-on") or with words added beside it (a list item, another
    way, a modifier, an aside: kb/verify/additions.py)."""
    all_texts = [t for t in (claim.text, claim.source_text) if t]
    keys = {canonical(t) for t in all_texts}
    if any(key and key in canonical(e.passage or e.sentence or "") for e, _ in items for key in keys):
        return True
    if any(_holds_in_other_notation(t, e.passage or e.sentence or "") for e, _ in items for t in all_texts):
        return True
    sentences = {s for e, _ in items for s in [e.sentence, *passage_sentences(e.passage)] if s}
    return any(added_beside(t, s) is not None for t in all_texts for s in sentences)


def _in_other_notation(claim: Claim, sentence: str) -> bool:
    """The sentence is the claim with only articles, spacing, punctuation or a hyphen inside a
    word changed ("the Home Assistant Add-on" / "home assistant addon")."""
    key = _spelling(_without_articles(sentence))
    return bool(key) and any(key == _spelling(_without_articles(t)) for t in (claim.text, claim.source_text) if t)


def _without_articles(text: str) -> str:
    """The sentence's words without articles and relative pronouns, which a copy edit swaps ("which"
    / "that", "a" / "an") without changing what it states. Negations, modals and quantifiers stay."""
    return " ".join(w for w in canonical(text).split() if w not in _ARTICLES)


def _holds_in_other_notation(text: str, passage: str) -> bool:
    """Whether a run of whole words of ``passage`` is ``text`` in another notation (``_spelling``):
    the same letters, with words joined or written apart."""
    key, words = _spelling(text), _unhyphenated(passage).split()
    if not key:
        return False
    for i in range(len(words)):
        run = ""
        for word in words[i:]:
            run += word
            if not key.startswith(run):
                break
            if run == key:
                return True
    return False


def _unhyphenated(text: str) -> str:
    """``canonical`` with the hyphens inside prose words taken out ("add-on" / "addon")."""
    return " ".join(w.replace("-", "") if _HYPHENATED_WORD.fullmatch(w) else w for w in canonical(text).split())


def _spelling(text: str) -> str:
    """The sentence with its spacing and punctuation taken out: two sentences alike in this key
    ('"plug-in"s' / 'plug-ins', "set up" / "setup") differ in notation only, which is no revision
    of what they state, nor does a hyphen inside a word ("addon" / "add-on"). Code identifiers
    keep their case and separators (``canonical``); a flag's leading dashes stay."""
    return _unhyphenated(text).replace(" ", "")


def _d(e: Evidence) -> str:
    return e.source_date.isoformat() if e.source_date else "undated"


def _severity(claim: Claim, label: str) -> str:
    if claim.risk == "high":
        return "high"
    if label == "contradicted":
        return "high" if claim.risk == "medium" else "medium"
    if label == "stale":
        return "medium"
    return "medium" if claim.risk == "medium" else "low"


_GAPS = {
    # kind: (gap_type, action)
    "no_evidence": ("systemic", "add a source"),
    "not_relevant": ("technical", "retrieve deeper"),
    "low_confidence": ("technical", "escalate to a stronger verifier"),
    "disagree": ("systemic", "human review"),
    "revised": ("technical", "retrieve deeper in the newest source version, else human review"),
    "undated": ("systemic", "add a dated source"),
    "underspecified": ("technical", "add the section context to the claim, else human review"),
    "history_note": ("technical", "none (a dropped history note; keep or drop it)"),
}


def _uncertain(claim: Claim, base: dict, rationale: str, confidence: float, kind: str, tier: str = "rules") -> Verdict:
    gap_type, action = _GAPS[kind]
    severity = _severity(claim, "uncertain")
    if claim.type in UNDECIDABLE_TYPES:
        gap_type, action = "undecidable", "human review (opinion or prediction; rephrase or mark as such)"
    if kind == "disagree":
        severity = "high" if claim.risk in ("high", "medium") else "medium"
    if claim.risk == "high" and kind != "no_evidence":
        action = "human review"
    return Verdict(
        **base, label="uncertain", confidence=round(max(0.0, min(1.0, confidence)), 4), tier=tier,
        rationale=rationale, gap_type=gap_type, gap_severity=severity, action=action,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# document status and score
# ---------------------------------------------------------------------------------------------

STATUSES = ("VERIFIED", "PARTIAL", "CORRECTABLE", "EDITS_ACCEPTED", "UNCERTAIN", "FAILED", "HUMAN_REVIEW_REQUIRED")
# The VerifyLoop report's status codes (kb/verifyloop/schemas): kbaudit's two statuses of a page
# with correctable claims are VerifyLoop's CORRECTED (corrections drafted, in the report's
# ``corrections`` and ``corrected_answer``); CORRECTED is what stores written before them hold.
VERIFYLOOP_STATUS = {"CORRECTABLE": "CORRECTED", "EDITS_ACCEPTED": "CORRECTED", "CORRECTED": "CORRECTED"}


def verifyloop_status(status: str) -> str:
    """A document status as VerifyLoop's code (VERIFIED, PARTIAL, CORRECTED, UNCERTAIN, FAILED,
    HUMAN_REVIEW_REQUIRED)."""
    return VERIFYLOOP_STATUS.get(status, status)


SCORE_WEIGHTS = {"claim_support": 0.4, "evidence_quality": 0.2, "contradiction": 0.25, "uncertainty_handling": 0.15}


def document_status(claims: list[Claim], verdicts: list[Verdict], accepted: Collection[str] = ()) -> tuple[str, float, dict[str, float]]:
    """(status, score in [0, 1], components) for one document's claims and their verdicts;
    ``accepted``: the claim ids whose drafted edit was accepted into a new document version in
    the store (status ``auto``).

    No status says a file was written: a page's file changes only when accepted edits are
    applied (``kbaudit review apply``, ``kbaudit run --apply``), and the next run reads it.

    * VERIFIED: every checked claim supported.
    * CORRECTABLE: some claims stale/contradicted, each with a value the correction step can
      apply, none high-risk; the rest supported. Their edits are drafted; not all were accepted
      (some wait for a reviewer, or did not re-verify).
    * EDITS_ACCEPTED: CORRECTABLE, and every stale/contradicted claim's edit was accepted into a
      new version of the document in the store; the page's file is unchanged until applied.
    * PARTIAL: supported plus some uncertain claims (at most half).
    * UNCERTAIN: more than half of the checked claims uncertain.
    * FAILED: at least half of the checked claims contradicted or stale.
    * HUMAN_REVIEW_REQUIRED: a high-risk claim is not supported, or a contradiction cannot be
      corrected automatically, or sources disagree on a high-severity claim.

    Components: claim_support (share supported), evidence_quality (mean confidence of the
    deciding judgement on supported/contradicted/stale claims), contradiction (1 - share
    contradicted or stale), uncertainty_handling (share of non-supported verdicts that carry a
    gap type and an action). Scores mean "supportable under the current trace", never truth.
    """
    by_id = {c.claim_id: c for c in claims}
    checked = [v for v in verdicts if by_id.get(v.claim_id) is None or by_id[v.claim_id].checkworthy]
    n = len(checked)
    if n == 0:
        comps = {"claim_support": 1.0, "evidence_quality": 1.0, "contradiction": 1.0, "uncertainty_handling": 1.0}
        return "VERIFIED", 1.0, comps
    counts = defaultdict(int)
    for v in checked:
        counts[v.label] += 1
    decided = [v for v in checked if v.label in ("supported", "contradicted", "stale")]
    non_sup = [v for v in checked if v.label != "supported"]
    comps = {
        "claim_support": counts["supported"] / n,
        "evidence_quality": (sum(v.confidence for v in decided) / len(decided)) if decided else 0.0,
        "contradiction": 1.0 - (counts["contradicted"] + counts["stale"]) / n,
        "uncertainty_handling": (sum(1 for v in non_sup if v.gap_type and v.action) / len(non_sup)) if non_sup else 1.0,
    }
    comps = {k: round(v, 4) for k, v in comps.items()}
    score = round(sum(SCORE_WEIGHTS[k] * comps[k] for k in SCORE_WEIGHTS), 4)

    bad = [v for v in checked if v.label in ("contradicted", "stale")]

    def risk(v):
        c = by_id.get(v.claim_id)
        return c.risk if c else "low"

    if bad and len(bad) * 2 >= n:
        status = "FAILED"
    elif (
        any(risk(v) == "high" and v.label != "supported" for v in checked)
        or any(v.label == "contradicted" and not v.evidence_value for v in bad)
        or any(v.label == "uncertain" and v.gap_severity == "high" for v in checked)
    ):
        status = "HUMAN_REVIEW_REQUIRED"
    elif bad:
        status = "EDITS_ACCEPTED" if all(v.claim_id in accepted for v in bad) else "CORRECTABLE"
    elif counts["uncertain"] * 2 > n:
        status = "UNCERTAIN"
    elif counts["uncertain"]:
        status = "PARTIAL"
    else:
        status = "VERIFIED"
    return status, score, comps
