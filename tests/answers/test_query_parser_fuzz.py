"""Property-based fuzzing of the query parser: any input either parses or raises QueryError."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from answers.contracts import ParsedQuery
from answers.query_parser import QueryError, parse_query

AS_OF = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OPERATOR_BITS = st.sampled_from(
    ['"', "-", "source:", "space:", "channel:", "after:", "before:", "not ", "latest", "last quarter",
     "2024-02-30", "“", "”", "\\", "\x00", "\u202e", "🙂", ":", "--", "after:2024", "before:1999-01"]
)  # fmt: skip
QUERY_TEXT = st.lists(st.one_of(st.text(max_size=30), OPERATOR_BITS), max_size=25).map(" ".join)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(QUERY_TEXT)
def test_any_input_parses_or_fails_with_a_coded_error(raw: str) -> None:
    try:
        parsed = parse_query(raw, AS_OF)
    except QueryError as exc:
        assert exc.code and exc.message
        return
    assert isinstance(parsed, ParsedQuery)
    assert parsed.original == raw
    if parsed.time and parsed.time.after and parsed.time.before:
        assert parsed.time.after < parsed.time.before


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(min_size=1001, max_size=3000))
def test_overlong_input_is_always_rejected_with_query_too_long(raw: str) -> None:
    try:
        parse_query(raw, AS_OF)
    except QueryError as exc:
        assert exc.code in {"query_too_long", "control_characters"}
    else:
        raise AssertionError("an overlong query was accepted")
