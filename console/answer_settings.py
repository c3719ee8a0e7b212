"""The console's answer settings page: which writer answers, its endpoint, model and key, and a Test.

Validation is the REST API's: ``answers.admin_views.AnswerSettingsSerializer`` (writer choices,
"openai_compatible needs endpoint_url and model") and then ``answers.actions.do_set_answer_settings``
(the outbound policy's ``endpoint_not_allowed``), the action behind ``PUT /api/v1/admin/answer-settings``.
The API key is write-only: the page says whether one is stored and never renders it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from answers.actions import do_set_answer_settings, do_test_answer_settings
from answers.admin_views import AnswerSettingsSerializer
from answers.models import AnswerSettings
from console.views import actor, page
from core.errors import ApiError
from tenants.access import admin_view
from tenants.models import Membership

WRITER_LABELS = {
    AnswerSettings.Writer.EXTRACTIVE: "Extractive (no model: answers quote the passages)",
    AnswerSettings.Writer.OPENAI_COMPATIBLE: "OpenAI-compatible endpoint (OpenAI, Azure OpenAI, vLLM, Ollama…)",
    AnswerSettings.Writer.LLAMA_CPP: "Local model (llama.cpp server run by the operator)",
}


class AnswerSettingsForm(forms.Form):
    use_required_attribute = False

    writer = forms.ChoiceField(label="Writer", choices=[(w, WRITER_LABELS[w]) for w in AnswerSettings.Writer.values])
    endpoint_url = forms.CharField(
        label="Endpoint URL", required=False, max_length=2000,
        help_text="The base URL ending in /v1 (Cairn posts to …/chat/completions). Must be public https unless the "
                  "operator approved this origin.",
    )  # fmt: skip
    model = forms.CharField(label="Model", required=False, max_length=200, help_text="e.g. gpt-4o-mini")
    api_key = forms.CharField(
        label="API key", required=False, max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )  # fmt: skip

    def __init__(self, *args: Any, key_stored: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["api_key"].help_text = (
            "Stored; leave empty to keep it." if key_stored else "Sent as a Bearer token; none stored."
        ) + " Write-only: never shown again."

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        body = {k: data.get(k) or "" for k in ("writer", "endpoint_url", "model")}
        if data.get("api_key"):
            body["api_key"] = data["api_key"]
        ser = AnswerSettingsSerializer(data=body)
        if not ser.is_valid():
            for key, errors in ser.errors.items():
                for e in errors:
                    self.add_error(key if key in self.fields else None, str(e))
            return data
        data["validated"] = dict(ser.validated_data)
        return data


@admin_view
def answer_settings(request: HttpRequest, membership: Membership) -> HttpResponse:
    row = AnswerSettings.objects.first()
    initial = {"writer": row.writer, "endpoint_url": row.endpoint_url, "model": row.model} if row else {}
    key_stored = bool(row and row.api_key_encrypted)
    form = AnswerSettingsForm(initial=initial, key_stored=key_stored)
    test_result: tuple[bool, str] | None = None
    if request.method == "POST" and request.POST.get("op") == "test":
        test_result = do_test_answer_settings(actor=actor(request))
    elif request.method == "POST":
        form = AnswerSettingsForm(request.POST, key_stored=key_stored)
        if form.is_valid():
            d = form.cleaned_data["validated"]
            try:
                do_set_answer_settings(d["writer"], endpoint_url=d["endpoint_url"], model=d["model"],
                                       api_key=d.get("api_key"), actor=actor(request))  # fmt: skip
                messages.success(request, "Answer settings saved. Use Test to send the writer one tiny prompt.")
                return redirect("console-answers")
            except ApiError as exc:
                form.add_error("endpoint_url" if exc.error_code == "endpoint_not_allowed" else None,
                               f"{exc.detail} ({exc.error_code})")  # fmt: skip
    elif request.method != "GET":
        return HttpResponse(status=405)
    return page(request, membership, "console/answer_settings.html", "answers", "Answer settings",
                {"form": form, "key_stored": key_stored, "test_result": test_result, "row": row},
                status=400 if form.errors else 200)  # fmt: skip
