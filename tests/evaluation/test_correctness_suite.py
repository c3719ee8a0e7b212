"""The correctness suite: its labelled set, its scoring rules, and a small slice run end to end.

The slice loads a handful of handbook pages through the demo's connectors (sample-export server,
Confluence connector, sync task, ingestion pipeline) and asks the labelled questions as the labelled
users through the answer path of the REST API.  Assertions are on behaviour (who must abstain, what
counts as wrong, what the report holds), never on the figures.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation import correctness_scoring as cs
from evaluation.suites import correctness

ITEMS = correctness.load_items()
METRICS = set(correctness.slice_metrics([]))

APPLE_LATEST = {"id": "period-x", "category": "period", "user": "carol", "expect": "answer", "entity": "AAPL",
                "wrong": ["94,836"],
                "turns": [{"question": "What was Apple's revenue in the latest quarter?", "facts": ["81,797 | 81.8 billion"],
                           "passages": [{"doc": "sec10q:2023 Q3 AAPL.pdf", "quote": "Total net sales 81,797 82,959"}]}]}  # fmt: skip
DOC_KEYS = {1: "sec10q:2023 Q3 AAPL.pdf", 2: "sec10q:2023 Q3 NVDA.pdf", 3: "sec10q:2023 Q2 AAPL.pdf",
            4: "handbook:pages/getting-started/equipment.md"}  # fmt: skip


def response(*claims: tuple[str, int], abstention: str | None = None, conflict: str | None = None) -> dict[str, Any]:
    """An answer body as ``answers.engine`` returns it: claims citing evidence records of documents."""
    return {
        "answer": {"claims": [{"id": f"c{i}", "text": text, "citations": [{"evidence_id": f"e{i}", "quote": text}]}
                              for i, (text, _) in enumerate(claims)],
                   "abstention": {"reason": abstention, "message": ""} if abstention else None},
        "evidence": [{"id": f"e{i}", "document_id": doc} for i, (_, doc) in enumerate(claims)],
        "results": [{"document_id": doc} for _, doc in claims],
        "conflict": {"status": conflict} if conflict else None,
    }  # fmt: skip


def score(item: dict[str, Any], resp: dict[str, Any]) -> cs.TurnScore:
    return cs.score_turn(item, item["turns"][0], resp, DOC_KEYS)


# ------------------------------------------------------------------ the labelled set


def test_the_labelled_set_has_every_category_in_both_splits_and_at_least_150_questions() -> None:
    assert len(ITEMS) >= 150
    assert len({i["id"] for i in ITEMS}) == len(ITEMS)
    per = Counter((i["category"], i["split"]) for i in ITEMS)
    for category in cs.CATEGORIES:
        dev, test = per[(category, "dev")], per[(category, "test")]
        assert dev and test and abs(dev - test) <= 1, (category, dev, test)


def test_every_labelled_question_names_a_demo_user_and_what_a_correct_answer_states() -> None:
    for item in ITEMS:
        assert item["user"] in ("alice", "bob", "carol", "mallory"), item["id"]
        assert item["expect"] in ("answer", "abstain")
        if item["category"] == "follow_up":
            assert 2 <= len(item["turns"]) <= 3, item["id"]
        for turn in item["turns"]:
            if item["expect"] == "answer":
                assert turn["facts"] and turn["passages"], item["id"]
            else:
                assert not turn["facts"], item["id"]
        if item["category"] == "restricted_non_reader":
            assert item["expect"] == "abstain" and item["turns"][0]["passages"], item["id"]


def test_the_table_probes_are_questions_in_the_labelled_sets_format() -> None:
    # The thirteenth round's own questions about the re-rendered 10-Q tables (docs/evaluation.md), asked with
    # `manage.py evaluate --suite correctness --data evaluation/data/table_probes_r13.jsonl`.
    probes = correctness.load_items(correctness.DATA.parent / "table_probes_r13.jsonl")
    assert len(probes) == 16 and len({p["id"] for p in probes}) == 16
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    for probe in probes:
        assert probe["user"] == "carol" and probe["expect"] == "answer" and probe["turns"][0]["facts"]


def _handbook_pages() -> dict[str, str]:
    from connectors.demo.loader import handbook_pages

    return {page["id"]: page["text"] for page in handbook_pages()}


def _quotes_its_pages(probe: dict[str, Any], turn: dict[str, Any], pages: dict[str, str], *, facts: bool) -> None:
    """Every quote of the turn is verbatim in its handbook page; with ``facts``, every fact occurs there too."""
    cited = [pages[p["doc"].removeprefix("handbook:")] for p in turn["passages"]]
    quoted = zip(turn["passages"], cited, strict=True)
    assert all(cs.normalise(p["quote"]) in cs.normalise(text) for p, text in quoted), probe["id"]
    if facts:
        assert all(
            any(cs.normalise(alt) in cs.normalise(" ".join(cited)) for alt in cs.alternatives(fact))
            for fact in turn["facts"]
        ), (probe["id"], turn["facts"])


def test_the_fifteenth_rounds_probes_quote_their_pages_and_state_facts_the_pages_hold() -> None:
    # Written from the handbook pages only (docs/evaluation.md, fifteenth round), asked with
    # `manage.py evaluate --suite correctness --split dev --data evaluation/data/probes_r15.jsonl`.
    probes = correctness.load_items(correctness.DATA.parent / "probes_r15.jsonl")
    assert len(probes) == 52 and sum(len(p["turns"]) for p in probes) == 72
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    pages = _handbook_pages()
    for probe in probes:
        assert probe["user"] == "alice" and probe["expect"] == "answer" and probe["split"] == "dev", probe["id"]
        for turn in probe["turns"]:
            # A multi-hop fact may be worked out (its notes say so).
            _quotes_its_pages(probe, turn, pages, facts=probe["category"] != "multi_hop")


def test_the_sixteenth_rounds_conversations_quote_their_pages_and_end_half_of_them_unanswerable() -> None:
    # Two-turn conversations written from the handbook pages only (docs/evaluation.md, sixteenth round): in the
    # "fa" ones the follow-up asks what no page says, in the "fs" ones it is answered from the same page or from
    # another one.  Asked with `manage.py evaluate --suite correctness --split dev --data
    # evaluation/data/probes_r16.jsonl`.
    probes = correctness.load_items(correctness.DATA.parent / "probes_r16.jsonl")
    assert len(probes) == 24 and all(len(p["turns"]) == 2 for p in probes)
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    pages = _handbook_pages()
    unanswerable = [p["id"] for p in probes if cs.turn_expect(p, p["turns"][1]) == "abstain"]
    assert len(unanswerable) == 12 and all(i.startswith("probe16-fa-") for i in unanswerable)
    for probe in probes:
        assert probe["user"] == "alice" and probe["category"] == "follow_up" and probe["split"] == "dev"
        for turn in probe["turns"]:
            if cs.turn_expect(probe, turn) == "abstain":
                assert not turn["facts"] and not turn["passages"] and turn["why_unanswerable"], probe["id"]
                continue
            assert turn["facts"], probe["id"]
            _quotes_its_pages(probe, turn, pages, facts=True)


def test_the_seventeenth_rounds_probes_quote_their_pages_and_say_why_the_unanswerable_ones_are() -> None:
    # Written from the handbook pages only and measured before any change was tuned on them (docs/evaluation.md,
    # seventeenth round): `manage.py evaluate --suite correctness --split dev --data evaluation/data/probes_r17.jsonl`.
    probes = correctness.load_items(correctness.DATA.parent / "probes_r17.jsonl")
    assert Counter(p["category"] for p in probes) == {"factual": 12, "negative": 10, "multi_hop": 8, "no_answer": 10}
    assert len(probes) == 40 and all(len(p["turns"]) == 1 for p in probes)
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    pages = _handbook_pages()
    for probe in probes:
        assert probe["user"] == "alice" and probe["split"] == "dev", probe["id"]
        turn = probe["turns"][0]
        if probe["category"] == "no_answer":
            assert probe["expect"] == "abstain" and not turn["facts"] and not turn["passages"], probe["id"]
            assert turn["why_unanswerable"], probe["id"]
            continue
        assert probe["expect"] == "answer" and turn["facts"], probe["id"]
        _quotes_its_pages(probe, turn, pages, facts=True)


def _check_handbook_probes(name: str, categories: dict[str, int], turns: int, prefix: str) -> None:
    """A handbook probe set: its category counts and turns, ids apart from the labelled set's, the second turns of
    ``<prefix>-fu-09`` to ``-12`` unanswerable, every quote in its page and (multi-hop aside) every fact in them."""
    probes = correctness.load_items(correctness.DATA.parent / name)
    assert Counter(p["category"] for p in probes) == categories
    assert len(probes) == sum(categories.values()) and sum(len(p["turns"]) for p in probes) == turns
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    pages = _handbook_pages()
    unanswerable = [p["id"] for p in probes if p["category"] == "follow_up"
                    and cs.turn_expect(p, p["turns"][1]) == "abstain"]  # fmt: skip
    assert unanswerable == [f"{prefix}-fu-{n:02d}" for n in range(9, 13)]
    for probe in probes:
        assert probe["user"] == "alice" and probe["split"] == "dev", probe["id"]
        for turn in probe["turns"]:
            if cs.turn_expect(probe, turn) == "abstain":
                assert not turn["facts"] and not turn["passages"] and turn["why_unanswerable"], probe["id"]
                continue
            assert turn["facts"], probe["id"]
            # A multi-hop fact may be worked out (its notes say how).
            _quotes_its_pages(probe, turn, pages, facts=probe["category"] != "multi_hop")


# The handbook probe sets, each written from the handbook pages only (docs/evaluation.md, the round named): r18 and
# r20-r23 were measured before and after their round's changes, before any of their failures was read
# (`manage.py evaluate --suite correctness --split dev --data evaluation/data/probes_rNN.jsonl`); r24 was written
# at the end of the twenty-third round and asked at both ends of the twenty-fourth, r25, r26, r27 and r28 likewise one
# round later each; r29 was written during the twenty-eighth and asked at both ends of it too (its baseline after the
# round had begun, on a snapshot of the round's starting code), and none of its failures was read; r30 was written at
# the end of the twenty-eighth and asked at both ends of the twenty-ninth; r28, blind for two rounds, became a set the
# twenty-ninth round tuned on; r31 was written during the twenty-ninth and asked at its end and at both ends of the
# thirtieth; r32 was written during the thirtieth and asked at both ends of it (its baseline on a snapshot of the
# round's starting code).
_FOUR_KINDS = {"negative": 12, "multi_hop": 8, "follow_up": 12, "no_answer": 8}


@pytest.mark.parametrize(
    ("round_", "categories"),
    [
        ("18", {"negative": 10, "multi_hop": 10, "follow_up": 12, "no_answer": 8}),
        ("20", _FOUR_KINDS),
        ("21", _FOUR_KINDS),
        ("22", _FOUR_KINDS),
        ("23", _FOUR_KINDS),
        ("24", _FOUR_KINDS),
        ("25", _FOUR_KINDS),
        ("26", _FOUR_KINDS),
        ("27", _FOUR_KINDS),
        ("28", _FOUR_KINDS),
        ("29", _FOUR_KINDS),
        ("30", _FOUR_KINDS),
        ("31", _FOUR_KINDS),
        ("32", _FOUR_KINDS),
    ],
    ids=["r18", "r20", "r21", "r22", "r23", "r24", "r25", "r26", "r27", "r28", "r29", "r30", "r31", "r32"],
)
def test_a_handbook_probe_set_quotes_its_pages_and_ends_four_conversations_unanswerable(
    round_: str, categories: dict[str, int]
) -> None:
    _check_handbook_probes(f"probes_r{round_}.jsonl", categories, 52, f"probe{round_}")


def test_the_nineteenth_rounds_filing_probes_cite_the_filings_and_state_each_figure_in_its_quote() -> None:
    # Written from the filings' indexed text only, and measured before the round's change was run on them
    # (docs/evaluation.md, nineteenth round):
    # `manage.py evaluate --suite correctness --split dev --data evaluation/data/probes_r19.jsonl`.
    # The quotes are the index's text of each filing (tables as labelled rows), which the suite's recall@10 checks.
    probes = correctness.load_items(correctness.DATA.parent / "probes_r19.jsonl")
    assert Counter(p["category"] for p in probes) == {"multi_hop": 20, "period": 6, "no_answer": 4}
    assert Counter(p["id"].split("-")[1] for p in probes) == {"cm": 14, "mh": 6, "pd": 6, "un": 4}
    assert not {p["id"] for p in probes} & {i["id"] for i in ITEMS}
    from connectors.demo.loader import data_dir

    filings = {f"sec10q:{p.name}" for p in (data_dir() / "sec10q" / "docs").glob("*.pdf")}
    for probe in probes:
        turn = probe["turns"][0]
        assert probe["user"] == "alice" and probe["split"] == "dev" and len(probe["turns"]) == 1, probe["id"]
        if probe["expect"] == "abstain":
            assert not turn["facts"] and not turn["passages"] and turn["why_unanswerable"], probe["id"]
            continue
        assert {p["doc"] for p in turn["passages"]} <= filings, probe["id"]
        # Each figure is in the quote that cites it; a comparison's third fact is its conclusion, worked out.
        figures = turn["facts"][:1] if probe["category"] == "period" else turn["facts"][:2]
        for fact, passage in zip(figures, turn["passages"], strict=True):
            assert cs.alternatives(fact)[0] in passage["quote"], (probe["id"], fact)


def test_a_turn_that_expects_no_answer_is_right_only_when_it_abstains_in_an_answerable_conversation() -> None:
    conversation = {"id": "fu-x", "category": "follow_up", "user": "alice", "expect": "answer", "wrong": [],
                    "turns": [{"question": "What comes in the home kit?", "facts": ["monitor"], "passages": []},
                              {"question": "What size is the monitor they send?", "expect": "abstain",
                               "facts": [], "passages": []}]}  # fmt: skip
    first, second = conversation["turns"]
    kit = response(("GSA IT can provide a remote kit, including a monitor and a keyboard.", 4))
    assert cs.turn_expect(conversation, first) == "answer" and cs.turn_expect(conversation, second) == "abstain"
    assert cs.score_turn(conversation, first, kit, DOC_KEYS).correct
    # Answering the size question with the kit's contents is wrong; abstaining is right.
    assert not cs.score_turn(conversation, second, kit, DOC_KEYS).correct
    assert cs.score_turn(conversation, second, response(abstention="weak_evidence"), DOC_KEYS).correct


def test_evaluate_refuses_a_question_file_that_is_not_there() -> None:
    with pytest.raises(CommandError, match="--data"):
        call_command("evaluate", "--suite", "correctness", "--data", "evaluation/data/no-such-file.jsonl")
    with pytest.raises(CommandError, match="--data"):
        call_command("evaluate", "--suite", "retrieval", "--data", str(correctness.DATA))


def test_every_wiki_gold_quote_is_in_its_page() -> None:
    """The handbook and ENG quotes against the source text (the PDFs' are checked against the index by the suite)."""
    from connectors.demo.exports import ENG_PAGES

    root = Path(settings.CAIRN["DEMO_DATA_DIR"]) / "18f_handbook" / "pages_current.jsonl"
    pages = {json.loads(line)["id"]: json.loads(line)["text"] for line in root.read_text().splitlines() if line}
    eng = {f"eng:{pid}": body for pid, _, _, body in ENG_PAGES}
    checked = 0
    for item in ITEMS:
        for turn in item["turns"]:
            for p in turn["passages"]:
                kind, _, rest = p["doc"].partition(":")
                text = (
                    eng.get(p["doc"]) if kind == "eng" else pages.get(rest) if kind in ("handbook", "globex") else None
                )
                if kind == "sec10q":
                    assert re.fullmatch(r"20\d\d Q[1-4] (AAPL|AMZN|INTC|MSFT|NVDA)\.pdf", rest), p["doc"]
                    continue
                assert text is not None, p["doc"]
                assert cs.normalise(p["quote"]) in cs.normalise(text), (item["id"], p["quote"])
                checked += 1
    assert checked > 80


# ------------------------------------------------------------------ scoring rules


def test_an_answer_about_another_company_counts_as_wrong_entity_and_wrong() -> None:
    s = score(APPLE_LATEST, response(("NVIDIA's revenue was $18,120 million.", 2)))
    assert s.answered and not s.correct
    assert s.wrong_entity is True
    assert s.relevant_claims == 0


def test_the_right_figure_from_the_right_filing_is_correct_with_or_without_separators() -> None:
    s = score(APPLE_LATEST, response(("Total net sales: $81797 million, three months ended July 1, 2023.", 1)))
    assert s.correct and s.wrong_entity is False and s.relevant_claims == 1
    assert cs.states(cs.normalise("Net sales were $81.8 billion."), "81,797 | 81.8 billion")


def test_an_amount_that_rounds_to_the_gold_amount_at_its_precision_states_it() -> None:
    fact = "18,120 | 18.1 billion"
    assert cs.states(cs.normalise("Revenue for the quarter was $18.12 billion, up 206%."), fact)
    assert cs.states(cs.normalise("Revenue: $18,120 million."), fact)
    assert not cs.states(cs.normalise("Revenue was $18.3 billion."), fact)
    assert not cs.states(cs.normalise("Revenue was $118.1 billion."), fact)
    assert not cs.states(cs.normalise("Revenue was 18.1 percent higher."), fact)


def test_a_statement_figure_in_millions_is_stated_by_the_prose_rounding_in_billions() -> None:
    assert cs.states(cs.normalise("Operating income for the second quarter was $6.80 billion."), "6,800")
    assert cs.states(cs.normalise("Data Center revenue was $14.51 billion."), "14,514")
    assert not cs.states(cs.normalise("Data Center revenue was $14.6 billion."), "14,514")
    assert not cs.states(cs.normalise("Data Center revenue was $15 billion."), "14,514")  # no decimal: too coarse
    assert not cs.states(cs.normalise("It grew to 6.8 percent."), "6,800")


def test_an_answer_that_also_states_the_labelled_wrong_figure_is_not_correct() -> None:
    s = score(APPLE_LATEST, response(("Total net sales 81,797", 1), ("Total net sales 94,836", 3)))
    assert s.facts_stated == 1 and s.wrong_stated == ["94,836"] and not s.correct


def test_a_claim_that_compares_the_gold_figure_with_the_wrong_one_is_not_wrong() -> None:
    compared = score(APPLE_LATEST, response(("Total net sales were $81,797 million, down from $94,836 million.", 1)))
    assert compared.wrong_stated == [] and compared.correct
    # The wrong figure on its own, beside a claim with the gold one, is still a wrong answer.
    alone = score(APPLE_LATEST, response(("Total net sales 81,797", 1), ("Total net sales 94,836", 3)))
    assert alone.wrong_stated == ["94,836"] and not alone.correct


def test_the_computed_conclusion_shown_with_the_claims_counts_as_stated() -> None:
    item = {"id": "multi_hop-x", "category": "multi_hop", "user": "carol", "expect": "answer", "wrong": [],
            "turns": [{"question": "Will Foo 3.2 still get fixes on 2026-09-01?", "facts": ["no", "2026-06-30"], "passages": []}]}  # fmt: skip
    claims = response(("Foo 3.2: security fixes until 2026-06-30.", 1))
    assert not score(item, claims).correct
    claims["answer"]["conclusion"] = "No. For Foo 3.2 the source gives 2026-06-30, 63 days before 2026-09-01."
    assert score(item, claims).correct
    claims["answer"]["abstention"] = {"reason": "weak_evidence", "message": ""}
    assert not score(item, claims).correct  # an abstention shows no conclusion


def test_a_handbook_sentence_does_not_answer_a_question_about_a_filing() -> None:
    s = score(APPLE_LATEST, response(("All TTS employees are issued an Apple iPhone.", 4)))
    assert s.wrong_entity is True and not s.correct


def test_a_restricted_question_asked_by_a_non_reader_is_right_only_when_it_abstains() -> None:
    item = next(i for i in ITEMS if i["category"] == "restricted_non_reader")
    assert score(item, response(abstention="weak_evidence")).correct
    assert not score(item, response(("Anything at all.", 4))).correct


def test_markup_and_shown_conflicts_are_counted_on_delivered_claims() -> None:
    s = score(APPLE_LATEST, response(("**Total net sales** | 81,797 |", 1), conflict="conflict"))
    assert s.markup_claims == 1 and s.conflict_shown
    assert not score(APPLE_LATEST, response(("Total net sales 81,797", 1), conflict="none")).conflict_shown
    for text in ("[Book your flight]({% page x %})", "see {% slack_channel \"travel\" %}", "<em>before</em>",
                 "Logging in &amp; Networks", "# Heading"):  # fmt: skip
        assert cs.RAW_MARKUP.search(text), text
    assert not cs.RAW_MARKUP.search("Total net sales: $81,797 million (three months ended July 1, 2023).")


def test_a_claim_from_the_gold_page_that_says_something_else_is_not_relevant() -> None:
    quote = ["You are entitled to 12 weeks of paid time off for the birth, adoption or placement of a new child"]
    assert not cs.claim_addresses(
        "You can request Leave Without Pay (LWOP) of less than four weeks.", ["12 weeks"], quote
    )
    assert cs.claim_addresses("PPL gives you 12 weeks of paid time off.", ["12 weeks"], quote)


def test_the_per_category_table_lists_the_worst_category_first() -> None:
    rows = [{"id": "a", "split": "dev", "category": "factual", "expect": "answer", "answered": True, "correct": True},
            {"id": "b", "split": "dev", "category": "period", "expect": "answer", "answered": True, "correct": False}]  # fmt: skip
    base = {"claims": 1, "relevant_claims": 1, "markup_claims": 0, "wrong_entity": False, "conflict_shown": False,
            "abstention": None, "zero_results": False, "recall@10": True, "first_claim_ms": 1.0, "full_answer_ms": 2.0}  # fmt: skip
    out = correctness.aggregate([{**base, **r} for r in rows])
    assert [m["category"] for m in out["dev"]["per_category"]] == ["period", "factual"]
    assert set(out["dev"]["overall"]) == METRICS


# ------------------------------------------------------------------ a slice, end to end

SLICE = ["factual-001", "factual-031", "restricted_reader-001", "restricted_non_reader-001", "restricted_non_reader-008",
         "no_answer-001", "follow_up-001"]  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, django_db_blocker: Any) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("correctness")
    with django_db_blocker.unblock():  # module scope: one slice run serves every test below
        call_command("evaluate", suite="correctness", ids=",".join(SLICE), out=str(out), no_progress=True)
    latest = out / "latest"
    assert (latest / "correctness.md").read_text().startswith("# Evaluation: correctness")
    assert (latest / "correctness_per_category.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return json.loads((latest / "correctness.json").read_text())


def _rows(report: dict[str, Any], item_id: str) -> list[dict[str, Any]]:
    return [r for r in report["details"]["turns"] if r["id"] == item_id]


def test_the_slice_report_has_every_metric_overall_and_per_category(report: dict[str, Any]) -> None:
    splits = report["metrics"]["splits"]
    assert set(splits) == {ITEMS_BY_ID[i]["split"] for i in SLICE}
    for data in splits.values():
        assert set(data["overall"]) == METRICS
        assert data["per_category"] and all(set(m) == METRICS | {"category"} for m in data["per_category"])
    seen = {m["category"] for d in splits.values() for m in d["per_category"]}
    assert seen == {ITEMS_BY_ID[i]["category"] for i in SLICE}
    assert len(report["details"]["turns"]) == sum(len(ITEMS_BY_ID[i]["turns"]) for i in SLICE)


def test_the_slice_is_loaded_through_the_connectors_into_both_demo_tenants(report: dict[str, Any]) -> None:
    docs = report["metrics"]["corpus"]["documents"]
    acme = next(v for k, v in docs.items() if k.endswith("-acme"))
    globex = next(v for k, v in docs.items() if k.endswith("-globex"))
    # PPL, the playbook page and its restricting section page, gmail in acme; gmail in globex.
    assert acme >= 4 and globex == 1
    assert report["metrics"]["corpus"]["not_indexed"] == []


def test_a_restricted_page_is_found_by_its_reader_and_withheld_from_a_non_reader(report: dict[str, Any]) -> None:
    (reader,) = _rows(report, "restricted_reader-001")
    assert reader["user"] == "alice" and reader["recall@10"] is True
    (other,) = _rows(report, "restricted_non_reader-001")
    assert other["user"] == "carol" and not other["answered"] and other["correct"]
    assert not any(k.startswith("handbook:pages/supervisor-resources") for k in other["cited"])
    (tenant_b,) = _rows(report, "restricted_non_reader-008")
    assert tenant_b["user"] == "mallory" and not tenant_b["answered"] and tenant_b["correct"]


def test_a_follow_up_is_asked_as_the_second_turn_of_one_conversation(report: dict[str, Any]) -> None:
    turns = _rows(report, "follow_up-001")
    assert [t["turn"] for t in turns] == [1, 2]
    assert all(t["full_answer_ms"] > 0 for t in turns)


ITEMS_BY_ID = {i["id"]: i for i in ITEMS}
