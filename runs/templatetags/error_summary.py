"""Where a form's error summary (templates/runs/_error_summary.html) links each mistake to."""

from django import forms, template
from django.forms.boundfield import BoundField

register = template.Library()


@register.filter
def error_anchor(field: BoundField) -> str:
    """The id of the control a mistake in `field` is corrected in: the form's own (its
    error_anchors, for controls the page draws itself), a group of boxes' first box, else the
    field's control."""
    anchors: dict[str, str] = getattr(field.form, "error_anchors", {})
    if field.name in anchors:
        return anchors[field.name]
    if isinstance(field.field.widget, forms.CheckboxSelectMultiple) and field.auto_id:
        return f"{field.auto_id}_0"
    return field.id_for_label
