"""The notes form of a run or a campaign: a note, and tags typed on one line (runs.notes.rules)."""

from django import forms

from runs.models.notes import NOTE_MAX, TAG_ALLOWED


class NotesForm(forms.Form):
    note = forms.CharField(
        label="Note",
        required=False,
        strip=False,  # runs.notes.rules trims it and counts it once line ends are "\n", for the page and the API
        widget=forms.Textarea(attrs={"rows": 5, "cols": 70, "maxlength": NOTE_MAX}),
        help_text="Why it was made, what to know about it (after firmware 2.1, the fan was loud, ...).",
    )
    tags = forms.CharField(
        label="Tags",
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"size": 60, "autocomplete": "off"}),
        help_text=f"Separated by commas or spaces; {TAG_ALLOWED}.",
    )
