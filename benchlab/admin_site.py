from django.conf import settings
from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse

from runs.common.roles import ADMIN_SITE_PERMISSION


class BenchlabAdminSite(admin.AdminSite):
    """The inventory admin: open to members of the "admin" role as well as to staff.

    There is one login page for all of benchlab; Django's admin login would only take staff.
    """

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return user.is_active and (user.is_staff or user.has_perm(ADMIN_SITE_PERMISSION))

    def login(self, request: HttpRequest, extra_context: dict[str, object] | None = None) -> HttpResponse:
        # Imported here: this module is loaded while apps are still being set up.
        from django.contrib.auth.views import redirect_to_login

        if request.user.is_authenticated:
            if self.has_permission(request):
                return super().login(request, extra_context)  # redirects on to the admin
            raise PermissionDenied("The inventory admin is for the admin role.")
        return redirect_to_login(request.GET.get("next", request.get_full_path()), settings.LOGIN_URL)

    def password_change(  # type: ignore[override]  # Django's own view returns any response too
        self, request: HttpRequest, extra_context: dict[str, object] | None = None
    ) -> HttpResponseBase:
        """Django's admin page for changing one's own password, with the change audited."""
        from django.contrib.admin.forms import AdminPasswordChangeForm

        from runs.views.accounts import AuditedPasswordChangeView

        request.current_app = self.name
        return AuditedPasswordChangeView.as_view(
            form_class=AdminPasswordChangeForm,
            success_url=reverse("admin:password_change_done", current_app=self.name),
            extra_context={**self.each_context(request), **(extra_context or {})},
        )(request)


class BenchlabAdminConfig(AdminConfig):
    default_site = "benchlab.admin_site.BenchlabAdminSite"
