"""What a note and tags may be (pure): tags typed as one line, separated by commas or spaces,
each a short lowercase word; a refusal says what is wrong and what is allowed."""

import re
from dataclasses import dataclass

from runs.models.notes import NOTE_MAX, TAG, TAG_ALLOWED, TAG_MAX, TAGS_MAX


class NotesRefused(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Notes:
    note: str
    tags: tuple[str, ...]


def tags_from_text(text: str) -> tuple[str, ...]:
    """The tags typed, in their order, each once; uppercase is read as lowercase."""
    words = [word for word in re.split(r"[,\s]+", text) if word]
    return checked_tags(words)


def checked_tags(words: list[str]) -> tuple[str, ...]:
    """The tags, lowercase, each once in their order; NotesRefused for one that cannot be a tag."""
    tags = tuple(dict.fromkeys(word.strip().lower() for word in words))
    for tag in tags:
        if len(tag) > TAG_MAX:
            raise NotesRefused("tags", f"the tag {tag[:TAG_MAX]}… is longer than {TAG_MAX} characters")
        if not TAG.fullmatch(tag):
            raise NotesRefused("tags", f"the tag {tag[:TAG_MAX]!r} may hold only {TAG_ALLOWED}")
    if len(tags) > TAGS_MAX:
        raise NotesRefused("tags", f"{len(tags)} tags: at most {TAGS_MAX}")
    return tags


def checked_note(note: str) -> str:
    note = note.replace("\r\n", "\n").strip()
    if len(note) > NOTE_MAX:
        raise NotesRefused("note", f"the note has {len(note)} characters: at most {NOTE_MAX}")
    if "\x00" in note:
        raise NotesRefused("note", "the note holds a NUL character, which text cannot")
    return note


def checked_notes(note: str, tags: list[str] | str) -> Notes:
    """A note and tags as they will be stored (tags as a list from the API, as text from the page)."""
    return Notes(checked_note(note), tags_from_text(tags) if isinstance(tags, str) else checked_tags(tags))
