"""What a comparison is: its runs and how they are grouped, as the query string and a share link
carry it. Parsing refuses, with what is allowed, anything a query could not use.

A comparison is given by run ids (`runs=1,2,3`), by a campaign (`campaign=4`: its runs), or by
the run list's filters (`host=2&filesystem=ext4`, runs.bench.filters: the runs they list, a
campaign's narrowed by them). `group` names the specification fields that make two runs members of one group; without
it a group is one configuration (runs whose whole specification but the random seed is equal),
which is what repetitions are. `facet` draws one panel per value of a grouping field, `baseline` is the group
the others are compared with, `show` the runs whose per-second tps is overlaid.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from runs.bench.filters import run_filter_names
from runs.bench.spec_labels import spec_value
from runs.bench.specs import CONFIGURATION_FIELDS, FIELD_LABELS, FORM_FIELDS, SPEC_FIELDS, run_spec_value
from runs.common.params import BadParameter, is_id, parse_choice, parse_id, parse_whole_number
from runs.models import Run, RunState

MAX_RUNS = 1000  # a comparison's runs, and far more than any chart can show apart
MAX_SHOWN = 12  # overlaid per-second series
PARAMETERS = ("runs", "campaign", "group", "baseline", "facet", "show")
# The run list's filters but the campaign, which is a comparison's own parameter.
FILTERS = tuple(name for name in run_filter_names() if name not in PARAMETERS)

# Not a spec field: the runs' tags (runs.notes), which a comparison may group by too.
TAGS = "tags"
# The words a query uses for the spec's fields: the queue form's, "device", not "device_id".
GROUP_NAMES: dict[str, str] = {FORM_FIELDS[name]: name for name in SPEC_FIELDS} | {TAGS: TAGS}
WORDS: dict[str, str] = {name: word for word, name in GROUP_NAMES.items()}
# Other words read as these: links made when a run had one client host, and the field's own name.
ALIASES = {"client_host": "client_hosts", "client_host_ids": "client_hosts"}


@dataclass
class Group:
    index: int
    key: tuple[Any, ...]
    label: str
    facet: str | None
    runs: list[Run]

    @property
    def done(self) -> list[Run]:
        return [run for run in self.runs if run.state == RunState.DONE]

    @property
    def failed(self) -> list[Run]:
        return [run for run in self.runs if run.state == RunState.FAILED]


def group_label(field: str) -> str:
    return "tags" if field == TAGS else FIELD_LABELS[field]


def run_tags(run: Run) -> tuple[str, ...]:
    """A run's tags and its campaign's, as the tag filter reads them (runs.bench.filters), sorted."""
    return tuple(sorted({*run.tags, *(run.campaign.tags if run.campaign_id and run.campaign else ())}))


def group_value(run: Run, field: str) -> Any:
    """A run's value of a grouping field: a spec field's, or its tags (in order, as a set is)."""
    return run_tags(run) if field == TAGS else run_spec_value(run, field)


def group_shown(run: Run, field: str, *, with_label: bool = False) -> str:
    """That value as a person reads it (spec_labels.spec_value for a spec field)."""
    if field != TAGS:
        return spec_value(run, field, with_label=with_label)
    tags = ", ".join(run_tags(run)) or "untagged"
    return f"tags {tags}" if with_label else tags


@dataclass(frozen=True)
class ComparisonQuery:
    run_ids: tuple[int, ...] = ()
    campaign_id: int | None = None
    group_by: tuple[str, ...] = ()  # spec fields; empty: every field but the seed (one group per configuration)
    baseline: int = 0
    facet: str | None = None  # a spec field among the grouping
    show: tuple[int, ...] = ()  # empty: the first finished run of each group
    filters: tuple[tuple[str, str], ...] = ()  # the run list's filters, as given (runs.bench.filters)

    @property
    def grouping(self) -> tuple[str, ...]:
        return self.group_by or CONFIGURATION_FIELDS

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "ComparisonQuery":
        """The query in a request's GET parameters; BadParameter says what is wrong."""
        run_ids = _id_list(params.get("runs", ""), "runs", MAX_RUNS)
        campaign = params.get("campaign", "")
        unknown = sorted(set(params) - set(PARAMETERS) - set(FILTERS))
        if unknown:
            raise BadParameter(
                f"unknown parameter {', '.join(map(repr, unknown[:5]))}: a comparison takes "
                f"{', '.join((*PARAMETERS, *FILTERS))}"
            )
        filters = tuple((name, params[name].strip()) for name in FILTERS if params.get(name, "").strip())
        if not run_ids and not campaign and not filters:
            raise BadParameter(
                "a comparison needs runs (runs=1,2,3: the run ids), a campaign (campaign=4) or the run list's "
                f"filters ({', '.join(FILTERS)})"
            )
        if run_ids and (campaign or filters):
            raise BadParameter("give runs, or a campaign and filters, not both")
        group_by = tuple(
            GROUP_NAMES[parse_choice(ALIASES.get(word, word), "group", GROUP_NAMES)]
            for word in _words(params.get("group", ""))
        )
        if len(set(group_by)) != len(group_by):
            raise BadParameter("group names a field twice")
        facet_word = params.get("facet", "")
        facet = (
            GROUP_NAMES[parse_choice(ALIASES.get(facet_word, facet_word), "facet", GROUP_NAMES)] if facet_word else None
        )
        query = cls(
            run_ids=run_ids,
            campaign_id=parse_id(campaign, "campaign") if campaign else None,
            group_by=group_by,
            baseline=parse_whole_number(params.get("baseline", "0") or "0", "baseline", 0, MAX_RUNS),
            facet=facet,
            show=_id_list(params.get("show", ""), "show", MAX_SHOWN),
            filters=filters,
        )
        if facet is not None and facet not in query.grouping:
            raise BadParameter(
                f"facet by {facet_word} needs the runs grouped by it too: add {facet_word} to group, "
                f"or leave group empty (one group per configuration)"
            )
        return query

    def as_params(self) -> dict[str, str]:
        """The query string that gives this query back (only what differs from the defaults)."""
        params = {
            "runs": ",".join(map(str, self.run_ids)),
            "campaign": str(self.campaign_id) if self.campaign_id else "",
            "group": ",".join(WORDS[name] for name in self.group_by),
            "baseline": str(self.baseline) if self.baseline else "",
            "facet": WORDS[self.facet] if self.facet else "",
            "show": ",".join(map(str, self.show)),
            **dict(self.filters),
        }
        return {key: value for key, value in params.items() if value}

    def selection_params(self) -> dict[str, str]:
        """Which runs, without how they are grouped: what the grouping form keeps."""
        return {key: value for key, value in self.as_params().items() if key in ("runs", "campaign", *FILTERS)}

    def options(self) -> dict[str, Any]:
        """What a share link stores besides the runs (which it keeps, not the filters that chose them)."""
        return {key: value for key, value in self.as_params().items() if key not in ("runs", "campaign", *FILTERS)}

    def shareable(self) -> "ComparisonQuery":
        """This query, if a share link may keep it; BadParameter if it is grouped by tags, which
        are the lab's own notes and never shown without an account."""
        if TAGS in self.group_by or self.facet == TAGS:
            raise BadParameter("a shared comparison cannot be grouped by tags (they are not shown on shared pages)")
        return self

    def pinned(self, run_ids: tuple[int, ...]) -> "ComparisonQuery":
        """The same comparison of these runs, by id: what a share link of a filtered one keeps."""
        return replace(self, run_ids=run_ids, campaign_id=None, filters=())

    @classmethod
    def from_share(cls, run_ids: list[int], options: Mapping[str, str]) -> "ComparisonQuery":
        return cls.from_params({**options, "runs": ",".join(map(str, run_ids))}).shareable()


def _words(raw: str) -> list[str]:
    return [word.strip() for word in raw.split(",") if word.strip()]


def _id_list(raw: str, name: str, most: int) -> tuple[int, ...]:
    words = _words(raw)
    if len(words) > most:
        raise BadParameter(f"{name} takes at most {most} run ids, not {len(words)}")
    for word in words:
        if not is_id(word):
            raise BadParameter(f"{name} must be run ids separated by commas (such as 12,13,14), not {word[:40]!r}")
    return tuple(dict.fromkeys(int(word) for word in words))  # in the order given, each once
