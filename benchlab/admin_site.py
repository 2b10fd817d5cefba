from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest

from runs.roles import ADMIN_SITE_PERMISSION


class BenchlabAdminSite(admin.AdminSite):
    """The inventory admin: open to members of the "admin" role as well as to staff."""

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return user.is_active and (user.is_staff or user.has_perm(ADMIN_SITE_PERMISSION))


class BenchlabAdminConfig(AdminConfig):
    default_site = "benchlab.admin_site.BenchlabAdminSite"
