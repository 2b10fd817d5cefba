"""The reason a user gives, when queueing, for the method warnings the queue form showed."""

from django import forms

from runs.method.services.acceptance import MAX_REASON


class MethodReasonForm(forms.Form):
    method_reason = forms.CharField(
        label="Accept the warnings because",
        max_length=MAX_REASON,
        required=False,
        strip=True,
        help_text="Optional. Kept with the run and shown beside each warning it accepts; the warnings stay visible.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. a short smoke test, not a measurement"}),
    )
