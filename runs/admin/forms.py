"""The Host admin form: a write-only field for private keys, so the key is encrypted before
it reaches the model and is never rendered back into a page."""

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from runs.common.ssh_keys import encrypt_private_key, load_private_key
from runs.models import Host


class WriteOnlyTextarea(forms.Textarea):
    """A textarea that never renders what was posted into it (a re-shown form stays empty)."""

    def format_value(self, value: Any) -> None:
        return None


class HostAdminForm(forms.ModelForm):
    new_private_key = forms.CharField(
        label="Store a private key",
        required=False,
        strip=False,
        widget=WriteOnlyTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"}),
        help_text="Paste an unprotected private key. It is encrypted with CREDENTIALS_KEY and never shown again.",
    )
    forget_private_key = forms.BooleanField(label="Forget the stored private key", required=False)

    class Meta:
        model = Host
        fields = [
            "name",
            "address",
            "ssh_port",
            "ssh_user",
            "transport",
            "host_keys",
            "private_key_path",
            "serves_postgres",
            "runs_clients",
            "enabled",
            "allow_runs_on_benchlab_server",
            "notes",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        text = cleaned.get("new_private_key", "")
        if text.strip():
            try:
                key = load_private_key(text)
                self.instance.private_key_encrypted = encrypt_private_key(text)
            except ValidationError as exc:
                raise ValidationError({"new_private_key": exc.messages}) from exc
            self.instance.private_key_fingerprint = f"{key.get_name()} {key.fingerprint}"
        elif cleaned.get("forget_private_key"):
            self.instance.private_key_encrypted = ""
            self.instance.private_key_fingerprint = ""
        return cleaned
