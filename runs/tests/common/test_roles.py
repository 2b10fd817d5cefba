"""The role groups the data migrations made hold exactly the permissions runs/common/roles.py lists:
the table people read to learn what a role may do is the one the database has."""

import pytest
from django.contrib.auth.models import Group

from runs.common.roles import ROLE_PERMISSIONS


@pytest.mark.django_db
def test_each_role_group_has_exactly_the_permissions_roles_py_lists() -> None:
    groups = Group.objects.filter(name__in=ROLE_PERMISSIONS).prefetch_related("permissions__content_type")
    granted = {
        group.name: sorted(f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all())
        for group in groups
    }

    assert granted == {role: sorted(permissions) for role, permissions in ROLE_PERMISSIONS.items()}
