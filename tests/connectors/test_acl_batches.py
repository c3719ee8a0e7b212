"""How the sync driver groups a permission walk's ACL updates (connectors.tasks._batched)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from connectors.base import ConnectorError, SetGroupMembers, SyncOp, UpdateAcl
from connectors.tasks import ACL_BATCH, _batched


def _acl(n: int) -> tuple[SyncOp, dict[str, Any]]:
    return UpdateAcl(f"page:{n}", (("confluence:group:g",),)), {"offset": n}


def test_consecutive_acl_updates_travel_in_groups_and_any_other_op_alone() -> None:
    group = SetGroupMembers("confluence:group:g", ("confluence:user:u",))
    stream = [_acl(n) for n in range(ACL_BATCH + 5)] + [(group, {"phase": "principals"})] + [_acl(9999)]

    batches = list(_batched(iter(stream)))

    assert [len(b) for b in batches] == [ACL_BATCH, 5, 1, 1]
    assert batches[2][0][0] is group
    # Each group ends on its last op, whose checkpoint the driver stores with it.
    assert batches[1][-1][1] == {"offset": ACL_BATCH + 4}


def test_ops_produced_before_the_connector_failed_are_handed_over_before_the_error() -> None:
    def walk() -> Iterator[tuple[SyncOp, dict[str, Any]]]:
        yield _acl(1)
        yield _acl(2)
        raise ConnectorError("Confluence error (HTTP 500)")

    batches = _batched(walk())
    assert [op.external_id for op, _ in next(batches)] == ["page:1", "page:2"]  # type: ignore[union-attr]
    with pytest.raises(ConnectorError):
        next(batches)
