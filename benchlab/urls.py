from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.decorators.http import require_safe

from runs.views.accounts import AuditedPasswordChangeView, BoundedAuthenticationForm

# Only the account pages benchlab uses: no e-mail based password reset (admins reset passwords).
account_urls = [
    path("login/", auth_views.LoginView.as_view(authentication_form=BoundedAuthenticationForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", AuditedPasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
]


@require_safe
@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on pages that link no icon (a raw output shown as
    text, a JSON answer): benchlab's icon, rather than a 404 on the console. The static URL is
    looked up per request: with hashed static names it is known only once collectstatic ran."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),  # unnamed: nothing links it, browsers ask for it on their own
    path("accounts/", include(account_urls)),
    path("admin/", admin.site.urls),
    path("api/", include("runs.api.urls")),
    path("", include("runs.urls")),
]
