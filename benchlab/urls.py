from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from runs.views.accounts import AuditedPasswordChangeView, BoundedAuthenticationForm

# Only the account pages benchlab uses: no e-mail based password reset (admins reset passwords).
account_urls = [
    path("login/", auth_views.LoginView.as_view(authentication_form=BoundedAuthenticationForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", AuditedPasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
]

urlpatterns = [
    path("accounts/", include(account_urls)),
    path("admin/", admin.site.urls),
    path("api/", include("runs.api.urls")),
    path("", include("runs.urls")),
]
