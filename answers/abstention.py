"""Tune the weak-evidence abstention threshold on labelled data (SciFact claims, dev split).

    python -m answers.abstention --tune

For each claim (used as the question) the extractive writer reads the cited
abstract (one passage per abstract); the engine's ``evidence_strength`` of its best
claim is the score.  The answer is *right* when the chosen sentence is one of the
annotated rationale sentences (SUPPORT/CONTRADICT); for NOT ENOUGH INFO claims, and
for wrong picks, the right move is to abstain.  The threshold that maximises
accuracy (answer iff right) is reported; the engine's ``WEAK_EVIDENCE_THRESHOLD``
records the chosen value.  Pure Python, no database.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from answers.contracts import EvidenceRecord, QueryPlan
from answers.lexicon import (
    LIGHT_STEMS,
    asked_clause,
    asked_sentence,
    attribute_synonyms,
    content_stems,
    earlier_turn_scale,
    question_form_stems,
    with_abbreviations,
)
from answers.planning import plan_question
from answers.writers.extractive import ExtractiveWriter, scoped_terms


def evidence_strength(
    plan: QueryPlan, quotes: Sequence[str], defined: Mapping[str, frozenset[str]] | None = None
) -> float:
    """Share of the query's content terms covered by the best quote; an entity's alias and its
    canonical name count as one term (either form covers it), and so do an abbreviation the evidence
    defines and its words (``defined``, lexicon.abbreviations_defined)."""

    groups: list[set[str]] = []
    entity_stems: set[str] = set()
    # A kept claim cites a filing about the bound company and the resolved period (the relevance check
    # makes sure), so their words ("Apple", "latest quarter") count as covered.
    bound = scoped_terms(plan)
    for surface, canonical in plan.parsed.entities:
        group = set(content_stems(surface)) | set(content_stems(canonical))
        entity_stems |= group
        groups.append(group)
    form = question_form_stems(plan.original)
    text = plan.parsed.text or plan.original
    last = asked_clause(text)
    situation = last == text  # a first question: what comes before its asked sentence is the asker's situation
    if situation:
        # The asker's situation before the question ("We're building a product whose authority to operate will
        # come from a partner agency. Who do we go to for the privacy threshold analysis?") weighs like a
        # follow-up's earlier question: a quote answers what is asked with few of its words.
        last = asked_sentence(text)
    latest = set(content_stems(last)) if last != text else None
    earlier: set[int] = set()  # indexes of the groups only a resolved follow-up's earlier question asks for
    for t in dict.fromkeys(content_stems(text)):
        if t not in entity_stems and t not in form:
            if latest is not None and t not in latest:
                earlier.add(len(groups))
            groups.append({t} | attribute_synonyms(t))
    if not groups or not quotes:
        return 0.0
    # "To access the EAP, you can call them 24/7 …" covers "Employee Assistance Program" where the evidence defines it.
    stems = [set(with_abbreviations(frozenset(content_stems(q)), defined or {})) | bound for q in quotes]
    asked = [g for i, g in enumerate(groups) if i not in earlier]
    # Two asked words at least: one word is often said otherwise ("What am I allowed to approve?": "deny that").
    if situation and earlier and len(asked) >= 2 and not any(g & have for have in stems for g in asked):
        # Quotes that cover only the asker's situation ("If someone I refer ends up getting hired, do I get any kind
        # of bonus for it?" met by "Refer to Hire NTE Dt") answer none of what is asked.  A follow-up's quote may
        # answer what "it" is with the earlier question's words alone (below), so this is for first questions.
        return 0.0
    strength = max(sum(1 for g in groups if g & have) / len(groups) for have in stems)
    if earlier:
        # A resolved follow-up's earlier question only says what "that" is (answers/lexicon.asked_clause):
        # a quote may answer the last question with few of the earlier one's words ("How much is that BART
        # fare: I'm flying into SFO ... by public transit?"), or answer what "it" is ("When did it come out:
        # What's the current major release ...?").  Either reading counts.
        scale = earlier_turn_scale([1.0] * (len(groups) - len(earlier)), [1.0] * len(earlier))
        weights = [scale if i in earlier else 1.0 for i in range(len(groups))]
        total = sum(weights)
        weighted = max(sum(w for g, w in zip(groups, weights, strict=True) if g & have) for have in stems) / total
        strength = max(strength, weighted)
    return strength


# A rule stated for a case: "If you have a personal or family medical emergency and have exhausted your earned
# leave, you can enroll in the VLTP", "… may participate in Zoom meetings hosted by external partners UNLESS they
# are required to accept Zoom Terms of Service", "When you are called to jury duty, your absence is marked as
# Court Leave".  The condition runs to the next comma, semicolon or sentence end.  "if", "when" and "once" open a
# condition at the start of a sentence or a clause; after a verb they open a question or a time ("PeopleOps will
# advise when you should change your home address", "take stock if any of these things happen").
_CASE_RE = re.compile(r"(?:(?:^|[.,;:(]\s*)(?:if|when|once|whenever)|\bunless)\s+(?P<case>[^,;.?!]{5,200})", re.I)
CASE_WORDS = 3
CASE_SHARE = 3  # the shared words are at least a third of the condition's


def states_the_askers_case(plan: QueryPlan, claim: str) -> bool:
    """Whether ``claim`` is a rule for the case the question describes: a condition ("If …", "When …",
    "UNLESS …") that holds ``CASE_WORDS`` of the question's own content words, at least a ``CASE_SHARE``-th of
    the condition's.

    "My dad has a medical emergency, but I still have some sick leave left. Can I get donated hours through VLTP
    anyway?" is answered by the rule for a medical emergency with leave exhausted: its condition repeats the
    asker's case, and its consequence is in the page's words, which the coverage count does not credit.
    """
    # A resolved follow-up's case is its last question's ("What size is the monitor they send: … home kit …"), not
    # the earlier turn's words appended to it; a first question's is all of it, the situation included.
    asked = set(content_stems(asked_clause(plan.parsed.text or plan.original))) - question_form_stems(plan.original)
    for m in _CASE_RE.finditer(claim):
        case = set(content_stems(m.group("case")))
        shared = asked & case
        # Most of a long condition must be the asker's: "If you need more than 13 sick days at once to care for a
        # loved one" shares only "care" and "one" with "What's the most I can put into the health care one?".
        if len(shared) >= CASE_WORDS and len(shared) * CASE_SHARE >= len(case):
            return True
    return False


# A yes-or-no question about what the asker may or must do: "Can I just plug my own personal laptop into the office
# network for the day?", "Do I still have to notify GSA before a personal trip abroad?".
_YES_NO_RE = re.compile(
    r"^\s*(?:(?:so|and|but|then|also)\s+)?(?:can|could|may|might|am|is|are|do|does|should|must|would|will|shall|"
    r"need|have)\b",
    re.I,
)
# A rule's wording: a prohibition, an obligation, a restriction ("Personal laptops cannot be connected directly to the
# GSA network", "Do not use a Personal Meeting ID", "… is not currently available for private repositories").
_RULE_RE = re.compile(
    r"\b(?:cannot|can['’]t|can\s+not|must|may\s+not|should\s+not|shouldn['’]t|do\s+not|don['’]t|does\s+not|"
    r"doesn['’]t|is\s+not|are\s+not|will\s+not|won['’]t|never|only|required|prohibit\w*|no\s+longer)\b",
    re.I,
)


def _word_pairs(stems: Sequence[str]) -> set[tuple[str, str]]:
    return {(a, b) for a, b in zip(stems, stems[1:], strict=False) if a != b and not {a, b} & LIGHT_STEMS}


def rules_on_the_asked_act(plan: QueryPlan, claim: str) -> bool:
    """Whether ``claim`` is a rule (``_RULE_RE``) about the act a yes-or-no question asks about: it names two of the
    asked sentence's content words side by side, as the question does ("personal laptop", "GitHub Actions").

    "Can I just plug my own personal laptop into the office network for the day?" is answered "Personal laptops
    cannot be connected directly to the GSA network at any GSA facility." The rule is in the page's words ("cannot
    be connected", not "plug"), which the coverage count does not credit; the pair of words says it is about the
    thing asked, where single shared words ("GSA", "need", "before") are about anything.
    """
    text = plan.parsed.text or plan.original
    last = asked_clause(text)
    sentence = asked_sentence(text) if last == text else last
    if not _YES_NO_RE.match(sentence) or not _RULE_RE.search(claim):
        return False
    form = question_form_stems(plan.original)
    asked = [t for t in content_stems(sentence) if t not in form]
    return bool(_word_pairs(asked) & _word_pairs(content_stems(claim)))


DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def _examples(split: str = "dev") -> list[tuple[str, list[str], set[str]]]:
    corpus: dict[str, str] = {}
    for part in sorted((DATA / "beir_scifact").glob("corpus.part*.jsonl")):
        for line in part.open():
            d = json.loads(line)
            corpus[d["_id"]] = d["text"]
    out = []
    for line in (DATA / "scifact_claims" / f"scifact_claims_{split}.jsonl").open():
        c = json.loads(line)
        docs = [corpus[d] for d in c["cited_doc_ids"] if d in corpus]
        gold = {s.strip() for ev in c["evidence"].values() for s in ev["rationale_sentences"]}
        if docs:
            out.append((c["claim"], docs, gold))
    return out


def score_examples(split: str = "dev") -> list[tuple[float, bool]]:

    writer = ExtractiveWriter()
    scored: list[tuple[float, bool]] = []
    for claim, docs, gold in _examples(split):
        plan = plan_question(claim[:900], datetime(2026, 1, 1, tzinfo=UTC))
        evidence = [
            EvidenceRecord(
                id=f"D{i}",
                document_id=i,
                chunk_id=i,
                canonical_url="",
                title="",
                source_system="",
                container="",
                text=t,
                char_start=0,
                char_end=len(t),
                snapshot_sha256="",
            )  # fmt: skip
            for i, t in enumerate(docs)
        ]
        drafts = writer.write(plan, evidence, max_claims=1)
        if not drafts:
            scored.append((0.0, False))
            continue
        quote = drafts[0].citations[0].quote
        right = any(quote.strip() in g or g in quote for g in gold)
        scored.append((evidence_strength(plan, [quote]), right))
    return scored


def tune(scored: list[tuple[float, bool]]) -> dict[str, float]:
    """Threshold maximising balanced accuracy (mean of: answer when right, abstain when not).

    Balanced rather than plain accuracy: in this set most picks are wrong, and plain accuracy
    would reward abstaining almost always, which the product cannot afford.
    """
    pos = [s for s, r in scored if r]
    neg = [s for s, r in scored if not r]
    best = {"threshold": 0.0, "balanced_accuracy": -1.0}
    for i in range(0, 21):
        t = i / 20
        bal = (sum(s >= t for s in pos) / max(len(pos), 1) + sum(s < t for s in neg) / max(len(neg), 1)) / 2
        if bal > best["balanced_accuracy"]:
            best = {"threshold": t, "balanced_accuracy": round(bal, 4)}
    t = best["threshold"]
    answered = [r for s, r in scored if s >= t]
    best["accuracy"] = round(sum((s >= t) == r for s, r in scored) / len(scored), 4)
    best["answer_rate"] = round(len(answered) / len(scored), 4)
    best["precision_when_answering"] = round(sum(answered) / len(answered), 4) if answered else 0.0
    best["n"] = len(scored)
    best["answerable"] = len(pos)
    return best


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--split", default="dev")
    args = ap.parse_args()
    print(json.dumps(tune(score_examples(args.split)), indent=2))
