"""The form that makes an API token on the tokens page: a name and an optional expiry in days,
checked by runs.accounts.token_rules (the same checks as the service and the command)."""

import secrets
from collections.abc import Callable
from typing import Any

from django import forms

from runs.accounts.token_rules import EXPIRY_DAYS_MAX, EXPIRY_DAYS_MIN, TokenRefused, expiry_days, token_name
from runs.models import TOKEN_NAME_MAX


class TokenForm(forms.Form):
    # Not required here: the rules' own message for a blank name says what is allowed.
    name = forms.CharField(
        label="Name",
        required=False,
        strip=False,
        help_text=f"What it is for, e.g. “CI on build-7” (1 to {TOKEN_NAME_MAX} characters).",
        widget=forms.TextInput(attrs={"size": 40, "maxlength": TOKEN_NAME_MAX, "autocomplete": "off"}),
    )
    expires_days = forms.CharField(
        label="Expires after (days)",
        required=False,
        help_text=f"A whole number from {EXPIRY_DAYS_MIN} to {EXPIRY_DAYS_MAX}, or blank: it never expires.",
        widget=forms.TextInput(attrs={"size": 5, "inputmode": "numeric", "autocomplete": "off"}),
    )

    # A key of this one rendering of the form: the page sent again (a reload of the answer that
    # showed the secret) is recognised and makes no second token (runs.views.tokens).
    once = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["once"].initial = secrets.token_urlsafe(16)

    def clean_name(self) -> str:
        return _checked(token_name, self.cleaned_data["name"])

    def clean_expires_days(self) -> str:
        _checked(expiry_days, self.cleaned_data["expires_days"])
        return str(self.cleaned_data["expires_days"])


def _checked(rule: Callable[[str], Any], raw: str) -> Any:
    try:
        return rule(raw)
    except TokenRefused as exc:
        raise forms.ValidationError(str(exc)) from exc
