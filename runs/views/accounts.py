"""The account pages benchlab changes: a login form that refuses an over-long user name
before anything is looked up (django-axes would record it, and its column is 255 long), and
password changes that go into the audit log."""

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import PasswordChangeView
from django.core.validators import MaxLengthValidator
from django.http import HttpResponse

from runs.common.services.audit import audit_record
from runs.models import AuditAction

USERNAME_MAX_LENGTH = 150  # Django's User.username


class BoundedAuthenticationForm(AuthenticationForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Django sets max_length on the widget only; the check itself must be a validator.
        self.fields["username"].validators.append(MaxLengthValidator(USERNAME_MAX_LENGTH))


class AuditedPasswordChangeView(PasswordChangeView):
    """A user's change of their own password is a change of credentials."""

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        audit_record(
            action=AuditAction.CREDENTIALS_CHANGED,
            target=self.request.user,  # type: ignore[arg-type]
            request=self.request,
            message="changed their own password",
        )
        return response
