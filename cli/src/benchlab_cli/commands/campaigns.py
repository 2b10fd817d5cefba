"""`benchlab campaigns create --from plan.json` (POST /api/campaigns/: preview, queue, wait with a
progress bar), `campaigns show ID` and `campaigns list`; --fail-on-slower and --fail-on-failed turn
a finished campaign's verdicts into exit code 1 for CI."""

import argparse
from typing import Any

from benchlab_cli.commands.common import add_from_option, add_noun, add_show_command, add_wait_options, read_json_file
from benchlab_cli.errors import ApiError, Exit, UsageError
from benchlab_cli.http import Api
from benchlab_cli.output import cell, duration, print_json, say, table
from benchlab_cli.progress import bar_line, wait_for
from benchlab_cli.verdicts import current_runs, has_ended, not_done_runs, slower, unknown_metrics


def add_commands(subparsers: Any, common: argparse.ArgumentParser) -> None:
    campaigns = add_noun(subparsers, "campaigns", "create, show and list campaigns", ("create", "show", "list"))
    create = campaigns.add_parser(
        "create", parents=[common], help="queue (or preview) a campaign from a JSON plan",
        description="Queue a campaign: the file holds the body POST /api/campaigns/ takes: name, base (a run "
        'as `runs queue` takes one), variables ([{"field": "clients", "values": [1, 8]}]), repetitions, ...',
    )  # fmt: skip
    add_from_option(create, "plan", "the plan")
    create.add_argument("--preview", action="store_true", help="only expand and estimate: queue nothing")
    _add_judging(create)
    create.set_defaults(handler=create_campaign)
    _add_judging(add_show_command(campaigns, common, "a campaign's progress and verdicts", show_campaign))
    listed = campaigns.add_parser("list", parents=[common], help="every campaign, newest first")
    listed.set_defaults(handler=list_campaigns)


def _add_judging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true", help="wait until every run has ended")
    parser.add_argument(
        "--fail-on-slower", action="store_true", help='exit 1 when a configuration is "slower" than the baseline'
    )
    parser.add_argument("--fail-on-failed", action="store_true", help="exit 1 when a run failed or was cancelled")
    parser.add_argument("--metric", action="append", metavar="KEY",
                        help="judge only this metric (repeatable; e.g. steady_tps); default: every one")  # fmt: skip
    add_wait_options(parser)


def create_campaign(args: argparse.Namespace, api: Api) -> int:
    plan = read_json_file(args.plan, "the campaign plan")
    if args.preview and (args.wait or args.fail_on_slower or args.fail_on_failed):
        raise UsageError("--preview queues nothing: it takes no --wait, --fail-on-slower or --fail-on-failed")
    if (args.fail_on_slower or args.fail_on_failed) and not args.wait:
        raise UsageError("--fail-on-slower and --fail-on-failed need --wait: verdicts exist once the runs have ended")
    if args.preview:
        return _preview(api, plan | {"preview": True}, args.json)
    try:
        campaign = api.post("/api/campaigns/", plan | {"preview": False})
    except ApiError as exc:
        raise _refusal_said(exc) from None
    if not args.json:
        page = api.page_url(f"/campaigns/{campaign['id']}/")
        print(f"queued campaign {campaign['id']}: {campaign['progress']['total']} runs, {page}")
    return _finish(args, api, campaign)


def show_campaign(args: argparse.Namespace, api: Api) -> int:
    return _finish(args, api, api.get(f"/api/campaigns/{args.id}/"))


def list_campaigns(args: argparse.Namespace, api: Api) -> int:
    found = api.get_all("/api/campaigns/")
    if args.json:
        print_json(found)
        return Exit.OK
    rows = [[c["id"], c["name"], c["created_at"][:16].replace("T", " "),
             f"{c['progress']['finished']}/{c['progress']['total']}"] for c in found]  # fmt: skip
    print(table(("id", "name", "created", "ended"), rows) if rows else "no campaigns")
    return Exit.OK


def _finish(args: argparse.Namespace, api: Api, campaign: dict[str, Any]) -> int:
    """Wait if asked, print the campaign, and judge it as asked."""
    if args.metric and (unknown := unknown_metrics(campaign, args.metric)) and campaign.get("statistics"):
        known = ", ".join(campaign["statistics"])
        raise UsageError(f"no metric {', '.join(unknown)} in this campaign's statistics; it has {known}")
    if args.wait:
        campaign = wait_for(
            lambda: api.get(f"/api/campaigns/{campaign['id']}/"),
            has_ended,
            progress_line,
            interval_s=args.interval,
            timeout_s=args.timeout,
        )
    if args.json:
        print_json(campaign)
    else:
        print(campaign_text(campaign, args.metric))
    return judge(campaign, fail_on_slower=args.fail_on_slower, fail_on_failed=args.fail_on_failed, metrics=args.metric)


def judge(campaign: dict[str, Any], *, fail_on_slower: bool, fail_on_failed: bool, metrics: list[str] | None) -> int:
    """Exit.VERDICT when asked to fail on what the campaign shows, each reason said on stderr."""
    reasons = []
    if fail_on_slower:
        reasons += [f"slower: {v.metric}, {v.configuration}: {v.text}" for v in slower(campaign, metrics)]
    if fail_on_failed:
        reasons += [f"run {pk} {state} ({label})" for pk, state, label in not_done_runs(campaign)]
    if (fail_on_slower or fail_on_failed) and not has_ended(campaign):
        say(f"campaign {campaign['id']} has not ended: judged on the runs ended so far")
    for reason in reasons:
        say(reason)
    return Exit.VERDICT if reasons else Exit.OK


def progress_line(campaign: dict[str, Any]) -> str:
    progress = campaign["progress"]
    current = ", ".join(f"run {pk} {state.replace('_', ' ')} ({label})" for pk, state, label in current_runs(campaign))
    return bar_line(progress["finished"], progress["total"], current, progress.get("eta_s"))


def campaign_text(campaign: dict[str, Any], metrics: list[str] | None) -> str:
    progress = campaign["progress"]
    states = ", ".join(f"{state} {count}" for state, count in sorted(progress["by_state"].items()))
    lines = [f"campaign {campaign['id']} {campaign['name']!r}: {progress['finished']} of {progress['total']} "
             f"runs ended ({states or 'none'})"]  # fmt: skip
    if progress.get("eta_s") is not None and progress["finished"] < progress["total"]:
        lines.append(f"about {duration(progress['eta_s'])} left")
    labels = {c["index"]: c["label"] for c in campaign.get("configurations", [])}
    baseline = campaign.get("baseline")
    for key, stats in campaign.get("statistics", {}).items():
        if metrics and key not in metrics:
            continue
        lines.append(f"\n{stats['label']} ({stats['unit']}), against {labels.get(baseline, baseline)}:")
        rows = [
            [labels.get(row["configuration"], row["configuration"]), row["summary"]["n"], row["summary"]["mean"],
             "baseline" if row["comparison"] is None else row["comparison"]["text"], row.get("confounded") or ""]
            for row in stats["rows"]
        ]  # fmt: skip
        lines.append(table(("configuration", "n", "mean", "verdict", "confounded"), rows))
    if not campaign.get("statistics"):
        lines.append("no statistics yet")
    return "\n".join(lines)


def _preview(api: Api, body: dict[str, Any], as_json: bool) -> int:
    try:
        preview = api.post("/api/campaigns/", body)
    except ApiError as exc:
        raise _refusal_said(exc) from None
    if as_json:
        print_json(preview)
    else:
        rows = [[c["label"], c["valid"], "; ".join(c["reasons"])] for c in preview["configurations"]]
        print(table(("configuration", "valid", "why not"), rows))
        print(f"{preview['runs']} runs, about {duration(preview['estimated_wall_s'])}")
        if preview.get("refusal"):
            print(f"it would be refused: {cell(preview['refusal'])}")
    return Exit.USAGE if preview.get("refusal") else Exit.OK  # the plan as it is would be refused


def _refusal_said(exc: ApiError) -> ApiError:
    """A refused campaign's body lists every rejected configuration with its whole spec: say
    each one's label and reasons instead."""
    body = exc.body
    if not (isinstance(body, dict) and isinstance(body.get("rejected"), list)):
        return exc
    lines = [f"refused ({exc.status}): " + " ".join(body.get("variables", []))]
    lines += [f"  {c['label']}: {'; '.join(c['reasons'])}" for c in body["rejected"] if not c.get("valid")]
    return ApiError("\n".join(lines), exc.status, body)
