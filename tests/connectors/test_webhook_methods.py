"""Every webhook endpoint answers a method other than POST with a coded 405, before any lookup."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

HOOKS = ["/hooks/confluence/{}/page_updated", "/hooks/sharepoint/{}/notifications", "/hooks/slack/{}/events",
         "/hooks/slack/{}/commands", "/hooks/slack/{}/interactivity"]  # fmt: skip


@pytest.mark.parametrize("template", HOOKS)
@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_a_webhook_refuses_other_methods_with_a_coded_405(template: str, method: str) -> None:
    response = getattr(Client(), method)(template.format(uuid.uuid4()))
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("template", HOOKS)
def test_a_post_still_reaches_the_view(template: str) -> None:
    response = Client().post(template.format(uuid.uuid4()), data=b"{}", content_type="application/json")
    assert response.status_code in (401, 404)  # the view's own answer to an unknown hook
    assert response.json()["error"]["code"] != "method_not_allowed"
