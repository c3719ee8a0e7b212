"""A tiny ONNX cross-encoder stand-in, written as raw protobuf (the ``onnx`` package is not a dependency).

Graph (opset 11): ``logits[N, 1] = ReduceSum(Cast<float>(attention_mask), axes=[1])`` — it scores a
(query, passage) pair by its token count.  Enough to prove that the operator-directory reranker
loads a model, tokenises pairs, feeds the declared inputs and reads (n, 1) logits.
"""

from __future__ import annotations

from pathlib import Path


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(raw)) + raw


def _value_info(name: str, elem_type: int, dims: list[str | int]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor))


def write_length_scorer(path: Path) -> None:
    float_t, int64_t = 1, 7
    cast = (
        _bytes(1, "attention_mask")
        + _bytes(2, "mask_f")
        + _bytes(3, "cast")
        + _bytes(4, "Cast")
        + _bytes(5, _bytes(1, "to") + _int(3, float_t) + _int(20, 2))
    )
    reduce = (
        _bytes(1, "mask_f")
        + _bytes(2, "logits")
        + _bytes(3, "sum")
        + _bytes(4, "ReduceSum")
        + _bytes(5, _bytes(1, "axes") + _int(8, 1) + _int(20, 7))
        + _bytes(5, _bytes(1, "keepdims") + _int(3, 1) + _int(20, 2))
    )
    graph = (
        _bytes(1, cast)
        + _bytes(1, reduce)
        + _bytes(2, "length_scorer")
        + _bytes(11, _value_info("input_ids", int64_t, ["n", "l"]))
        + _bytes(11, _value_info("attention_mask", int64_t, ["n", "l"]))
        + _bytes(12, _value_info("logits", float_t, ["n", 1]))
    )
    model = _int(1, 6) + _bytes(2, "cairn-test") + _bytes(7, graph) + _bytes(8, _bytes(1, "") + _int(2, 11))
    path.write_bytes(model)
