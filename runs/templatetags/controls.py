"""A control the reader cannot use, shown disabled with the reason beside it: one tag for every
page, so a viewer learns what operators can do (and why she cannot) without typing a URL.

    {% cannot_use "queue-again" needs="runs.queue_run" doing="queue runs" %}Run again{% end_cannot_use %}
    {% cannot_use "cancel" reason=cancel_refusal classes="danger" %}Cancel run {{ run.pk }}…{% end_cannot_use %}

The body is the control's label. `reason` is the page's own refusal (the owner's, a state's);
without one it is the role's (runs.common.roles.role_refusal of `needs`, saying `doing`). The
reason is the element `<id>-refusal`, which the button names with aria-describedby. The server
still refuses the action itself: this only says so before the click."""

from typing import Any

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from runs.common.roles import role_refusal

register = template.Library()

OPTIONS = frozenset({"reason", "needs", "doing", "classes"})


class CannotUseNode(template.Node):
    def __init__(self, control_id: FilterExpression, options: dict[str, FilterExpression], label: NodeList) -> None:
        self.control_id, self.options, self.label = control_id, options, label

    def render(self, context: template.Context) -> SafeString:
        given: dict[str, Any] = {name: value.resolve(context) for name, value in self.options.items()}
        reason = given.get("reason") or role_refusal(context["user"], given.get("needs", ""), given.get("doing", ""))
        shown = {
            "id": self.control_id.resolve(context),
            "label": self.label.render(context),  # rendered with the page, so escaped already
            "reason": reason or "",
            "classes": given.get("classes", ""),
        }
        return render_to_string("runs/_cannot_use.html", shown)


@register.tag("cannot_use")
def cannot_use(parser: Parser, token: Token) -> CannotUseNode:
    bits = token.split_contents()
    if len(bits) < 2:
        raise template.TemplateSyntaxError("cannot_use takes the control's id, then reason= or needs= and doing=")
    options = template.base.token_kwargs(bits[2:], parser)
    if len(options) != len(bits) - 2 or not set(options) <= OPTIONS:
        raise template.TemplateSyntaxError(f"cannot_use takes only {', '.join(sorted(OPTIONS))} as name=value")
    if "reason" not in options and not {"needs", "doing"} <= set(options):
        raise template.TemplateSyntaxError("cannot_use needs reason=, or needs= and doing= (the role's reason)")
    label = parser.parse(("end_cannot_use",))
    parser.delete_first_token()
    return CannotUseNode(parser.compile_filter(bits[1]), options, label)
