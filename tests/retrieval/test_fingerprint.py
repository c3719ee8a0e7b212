from __future__ import annotations

import random

from retrieval.fingerprint import (
    canonical_url,
    content_fingerprint,
    hamming64,
    is_near_duplicate,
    simhash64,
)


def _page(seed: int, words: int = 400) -> str:
    rng = random.Random(seed)
    vocabulary = [
        "invoice", "approval", "manager", "budget", "quarter", "policy", "travel", "expense",
        "receipt", "deadline", "vendor", "contract", "renewal", "security", "review", "access",
        "laptop", "request", "onboarding", "payroll", "benefits", "holiday", "office", "remote",
    ]  # fmt: skip
    sentences = []
    for _ in range(words // 10):
        sentence = " ".join(rng.choice(vocabulary) for _ in range(10))
        sentences.append(sentence.capitalize() + ".")
    return " ".join(sentences)


def test_it_drops_tracking_params_fragment_and_default_port() -> None:
    url = "HTTPS://Docs.Example.COM:443/Wiki/Page?utm_source=mail&utm_campaign=x&gclid=1&fbclid=2&id=7#top"
    assert canonical_url(url) == "https://docs.example.com/Wiki/Page?id=7"


def test_it_drops_every_listed_tracking_param() -> None:
    tracking = "mc_cid=1&mc_eid=2&ref=3&ref_src=4&_hsenc=5&_hsmi=6&spm=7&UTM_Medium=8"
    assert canonical_url(f"http://example.com/a?{tracking}") == "http://example.com/a"


def test_query_order_does_not_change_the_canonical_url() -> None:
    assert canonical_url("http://example.com/s?b=2&a=1&c=") == canonical_url("http://example.com/s?c=&a=1&b=2")
    assert canonical_url("http://example.com/s?b=2&a=1") == "http://example.com/s?a=1&b=2"


def test_it_resolves_dot_segments_and_trailing_slashes() -> None:
    assert canonical_url("http://example.com/a/./b/../c/") == "http://example.com/a/c"
    assert canonical_url("http://example.com") == "http://example.com/"
    assert canonical_url("http://example.com/") == "http://example.com/"
    assert canonical_url("http://example.com:8080/x/") == "http://example.com:8080/x"


def test_it_normalises_percent_encoding() -> None:
    # %7e is an escaped unreserved "~" and is decoded; other escapes keep upper-case hex.
    assert canonical_url("http://example.com/%7euser/a%2fb%e2%82%ac") == "http://example.com/~user/a%2Fb%E2%82%AC"
    assert canonical_url("http://example.com/a b") == "http://example.com/a%20b"


def test_invalid_urls_come_back_stripped_instead_of_raising() -> None:
    assert canonical_url("  not a url  ") == "not a url"
    assert canonical_url(" http://example.com:99999/ ") == "http://example.com:99999/"
    assert canonical_url("http://[::1/") == "http://[::1/"
    assert canonical_url("") == ""


def test_fingerprint_ignores_whitespace_case_and_compatibility_forms() -> None:
    a = content_fingerprint("Quarterly  Report\n\n  Revenue grew.")
    b = content_fingerprint("quarterly report revenue GREW.")
    c = content_fingerprint("ｑｕａｒｔｅｒｌｙ\u00a0report revenue grew.")  # full-width letters, NBSP
    assert a == b == c
    assert len(a) == 64 and int(a, 16) >= 0


def test_fingerprint_changes_when_a_word_changes() -> None:
    assert content_fingerprint("revenue grew") != content_fingerprint("revenue fell")


def test_simhash_is_a_signed_64_bit_int_and_deterministic() -> None:
    values = [simhash64(_page(seed)) for seed in range(20)]
    assert all(-(2**63) <= v < 2**63 for v in values)
    assert any(v < 0 for v in values)  # top bit set must come back negative, not as > 2**63
    assert simhash64(_page(3)) == values[3]
    assert simhash64("") == 0


def test_a_page_and_its_one_word_edit_are_near_duplicates() -> None:
    page = _page(42)
    words = page.split()
    words[len(words) // 2] = "zeppelin"
    edited = " ".join(words)
    assert edited != page
    assert is_near_duplicate(simhash64(page), simhash64(edited))


def test_formatting_only_changes_give_the_same_simhash() -> None:
    page = _page(7)
    assert simhash64(page) == simhash64(page.upper().replace(" ", "\n  "))


def test_unrelated_texts_are_not_near_duplicates() -> None:
    a, b = simhash64(_page(1)), simhash64(_page(2))
    assert hamming64(a, b) > 10
    assert not is_near_duplicate(a, b)


def test_hamming_distance_counts_bits_for_signed_values() -> None:
    assert hamming64(0, -1) == 64
    assert hamming64(-1, -1) == 0
    assert hamming64(0b1011, 0b0001) == 2
    assert is_near_duplicate(0, 0b111) and not is_near_duplicate(0, 0b1111)
