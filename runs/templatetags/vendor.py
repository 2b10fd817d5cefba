"""Template tags for vendored front-end libraries, so pages never hard-code their versions."""

from django import template
from django.templatetags.static import static
from django.utils.html import format_html
from django.utils.safestring import SafeString

# Vendored by scripts/vendor-chartjs into static/vendor/chart.js-<version>/ (MIT, licence beside it).
CHARTJS_VERSION = "4.6.1"
CHARTJS_PATH = f"vendor/chart.js-{CHARTJS_VERSION}/chart.umd.min.js"

register = template.Library()


@register.simple_tag
def chartjs_script() -> SafeString:
    return format_html('<script src="{}"></script>', static(CHARTJS_PATH))
