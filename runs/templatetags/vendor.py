"""Template tags for the front-end libraries from the npm registry, so pages never hard-code their versions.

package-lock.json pins them; `make assets` (scripts/vendor-assets) copies each one's browser build
into static/vendor/<name without @scope>-<version>/, and the paths here are derived the same way.
"""

import json
from pathlib import Path

from django import template
from django.conf import settings
from django.templatetags.static import static
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


def _locked_versions() -> dict[str, str]:
    """Every package in package-lock.json ("chart.js", "@sgratzl/chartjs-chart-boxplot") with its version."""
    packages = json.loads((Path(settings.BASE_DIR) / "package-lock.json").read_text())["packages"]
    return {path.removeprefix("node_modules/"): entry["version"] for path, entry in packages.items() if path}


VERSIONS = _locked_versions()


def vendored(package: str, filename: str) -> str:
    """The static path of `filename` (the package's "unpkg" build) as scripts/vendor-assets lays it out."""
    return f"vendor/{package.rsplit('/', 1)[-1]}-{VERSIONS[package]}/{filename}"


CHARTJS_VERSION = VERSIONS["chart.js"]
CHARTJS_PATH = vendored("chart.js", "chart.umd.min.js")
# Box plots and bars with error bars; each registers its chart types with the global Chart when
# loaded, so they must come after CHARTJS_PATH.
CHART_PLUGIN_PATHS = (
    vendored("@sgratzl/chartjs-chart-boxplot", "index.umd.min.js"),
    vendored("chartjs-chart-error-bars", "index.umd.min.js"),
)

register = template.Library()


@register.simple_tag
def chartjs_script() -> SafeString:
    return format_html('<script src="{}"></script>', static(CHARTJS_PATH))


@register.simple_tag
def chart_plugins_script() -> SafeString:
    """The box-plot and error-bar plugins; the page must load chartjs_script first."""
    return format_html_join("\n", '<script src="{}"></script>', ((static(path),) for path in CHART_PLUGIN_PATHS))
