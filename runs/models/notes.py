"""Notes and tags that people write on runs and campaigns ("after firmware 2.1"): why a run was
made, what it belongs with. runs.notes checks and writes them."""

import re

from django.contrib.postgres.fields import ArrayField
from django.db import models

NOTE_MAX = 5000  # characters: a paragraph or a few, not a report
TAG_MAX = 40  # characters of one tag
TAGS_MAX = 20  # tags on one run or campaign
TAG = re.compile(r"[a-z0-9][a-z0-9._:+/-]*")
TAG_ALLOWED = "lowercase letters, digits and . _ : + / - (starting with a letter or digit)"


class Annotated(models.Model):
    """What a run or a campaign carries besides what benchlab measured."""

    note = models.TextField(blank=True, max_length=NOTE_MAX, help_text="Why it was made, what to know about it.")
    tags = ArrayField(
        models.CharField(max_length=TAG_MAX),
        default=list,
        blank=True,
        help_text="Short words that put it with others, such as firmware-2.1; lowercase.",
    )

    class Meta:
        abstract = True
