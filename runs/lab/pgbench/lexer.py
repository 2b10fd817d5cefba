"""Where pgbench 15 sees backslash meta-commands in a custom script: a re-implementation of the
part of its script parser that decides where they start and end (pgbench_script.py says why,
and which commands are allowed).

How pgbench 15 reads a script, as modelled here:

* The SQL lexer runs with standard_conforming_strings on. Outside quotes and comments a
  backslash starts a meta-command, except `\\;` and `\\:`, which put `;` and `:` into the SQL.
* Inside '…' (also B'', X'', N'', U&''), "…" and U&"…" identifiers, $tag$…$tag$ dollar
  quotes, -- comments and nested /* */ comments a backslash is plain text; inside E'…' it
  escapes the next character. E' only opens an extended string where E starts a token:
  in `abcE'` the E ends an identifier, in `1E'` and `$1E'` it is junk that PG 15 lexes
  as part of the number, in `:E'` it is part of a psql-style variable reference.
* A closing quote followed by whitespace holding a newline (-- comments allowed) and
  another quote continues the same string, in the same mode: E'a'<newline>'\\' …' is
  still one extended string.
* After the backslash, the command word follows after blanks ([ \\t\\r\\f\\v]) and
  continuations (a backslash before "\\n" or "\\r\\n"); a newline before any word means
  there is no command. A word directly followed by a continuation loses that backslash.
  The command's arguments run to the end of the line, where a continuation carries them
  on; SQL lexing resumes on the next line. Only "\\n" ends a command line, while the SQL
  lexer also ends -- comments at "\\r".
* pgbench compares command names case-insensitively (pg_strcasecmp).

The script is examined as the UTF-8 bytes that are uploaded and that pgbench's lexer
reads (it takes every byte from 0x80 up as a letter). Lines are counted by "\\n", as
pgbench counts them.
One deliberate difference: pgbench stops reading at a NUL byte; this reads on, so a
command hidden after a NUL is still refused.

Other pgbench versions lex a few corners differently (PG 14 reads `1E'…'` as 1 and an
E-string; PG 17 counts \\v as whitespace between continued strings), and benchlab runs
whatever pgbench an install has. So, whatever the version, a script is also refused when
its text anywhere -- inside a string or comment too -- has a backslash that could start
\\shell or \\setshell (SHELL_ANYWHERE): no lexer difference can turn that text into a command.

Pure functions only: no Django, no I/O.
"""

from bisect import bisect_left
from dataclasses import dataclass


@dataclass(frozen=True)
class MetaCommand:
    """One backslash command, as pgbench reads it."""

    name: str  # as written, without the backslash; "" for a backslash with no command word
    line: int  # 1-based line of the backslash


def meta_commands(script: str) -> list[MetaCommand]:
    """Every meta-command pgbench 15 would find in `script`, in order."""
    return _Scanner(script.encode("utf-8", "surrogatepass")).scan()


def _byte_set(chars: str) -> frozenset[int]:
    return frozenset(chars.encode("ascii"))


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_DIGITS = _byte_set("0123456789")
_HIGH = frozenset(range(0x80, 0x100))
# psqlscan.l: ident_start, ident_cont (which takes "$"), dolq_start/dolq_cont, variable_char.
_IDENT_START = _byte_set(_LETTERS + "_") | _HIGH
_IDENT_CONT = _IDENT_START | _DIGITS | _byte_set("$")
_DOLQ_START = _IDENT_START
_DOLQ_CONT = _IDENT_START | _DIGITS
_VARIABLE_CHAR = _IDENT_START | _DIGITS
_SQL_NEWLINE = _byte_set("\n\r")
_HORIZ_SPACE = _byte_set(" \t\f")
# exprscan.l: blanks between the words of a backslash command; only "\n" ends the command.
_META_SPACE = _byte_set(" \t\r\f\v")
_WORD_END = _META_SPACE | _byte_set("\n")

_SEMICOLON_COLON = _byte_set(";:")  # after a backslash: psql-style escapes, not commands
_EXPONENT = _byte_set("eE")
_SIGN = _byte_set("+-")
_COLON_EQUALS = _byte_set(":=")  # after a colon: the "::" and ":=" operators

_BACKSLASH, _NEWLINE, _CR, _QUOTE, _DQUOTE, _DOLLAR = (ord(c) for c in "\\\n\r'\"$")


class _Scanner:
    """psqlscan.l's INITIAL state and the states it enters, reduced to where each token ends."""

    def __init__(self, text: bytes) -> None:
        self.text = text
        self.end = len(text)
        self.newlines = [i for i, byte in enumerate(text) if byte == _NEWLINE]
        self.found: list[MetaCommand] = []

    def at(self, i: int) -> int:
        """The byte at i, or -1 past the end."""
        return self.text[i] if i < self.end else -1

    def scan(self) -> list[MetaCommand]:
        text, i = self.text, 0
        while i < self.end:
            byte = text[i]
            if byte == _BACKSLASH:
                i = i + 2 if self.at(i + 1) in _SEMICOLON_COLON else self.meta_command(i)
            elif byte == _QUOTE:
                i = self.string(i + 1, extended=False)
            elif byte == _DQUOTE:
                i = self.identifier(i + 1)
            elif text.startswith(b"--", i):
                i = self.line_comment(i)
            elif text.startswith(b"/*", i):
                i = self.block_comment(i + 2)
            elif text.startswith(b"..", i):  # dot_dot, so "..5" is not read as ".5"
                i += 2
            elif byte == _DOLLAR:
                i = self.dollar(i)
            elif byte == ord(":"):
                i = self.colon(i)
            elif byte in _DIGITS or (byte == ord(".") and self.at(i + 1) in _DIGITS):
                i = self.number(i)
            elif byte in _IDENT_START:
                i = self.word(i)
            else:  # whitespace, operators, punctuation: tokens that cannot hide anything
                i += 1
        return self.found

    # --- SQL tokens -------------------------------------------------------------------

    def word(self, i: int) -> int:
        """A string with a letter prefix (E'', B'', X'', N'', U&'', U&""), or an identifier."""
        first, second = self.text[i : i + 1].upper(), self.at(i + 1)
        if second == _QUOTE and first in (b"E", b"B", b"X", b"N"):
            return self.string(i + 2, extended=first == b"E")
        if first == b"U" and second == ord("&"):
            third = self.at(i + 2)
            if third == _QUOTE:
                return self.string(i + 3, extended=False)
            if third == _DQUOTE:
                return self.identifier(i + 3)
            return i + 1  # xufailed: the "u" alone; "&" is an operator
        i += 1
        while self.at(i) in _IDENT_CONT:
            i += 1
        return i

    def number(self, i: int) -> int:
        """integer, decimal, real, and PG 15's *_junk rules: an identifier right after a number is part of it."""
        start = i
        while self.at(i) in _DIGITS:
            i += 1
        if self.at(i) == ord("."):
            if i > start and self.at(i + 1) == ord("."):
                return i  # decimalfail: "1..": the integer, then ".."
            i += 1
            while self.at(i) in _DIGITS:
                i += 1
        if self.at(i) in _EXPONENT and self.at(i + 1) in _SIGN:
            i += 2
            if self.at(i) not in _DIGITS:
                return i  # realfail: "1e+" is one token, so "1e--" does not start a comment
            while self.at(i) in _DIGITS:
                i += 1  # real: "1e+5"
        # Without a sign, the longest match reads the "e" as the start of a junk identifier,
        # which takes digits and "$" too: "1e5$a$" is one token, not "1e5" and a dollar quote.
        return self.junk(i)

    def junk(self, i: int) -> int:
        """integer_junk, decimal_junk, real_junk, param_junk: "1E'…'" and "$1E'…'" are standard strings."""
        if self.at(i) in _IDENT_START:
            i += 1
            while self.at(i) in _IDENT_CONT:
                i += 1
        return i

    def dollar(self, i: int) -> int:
        """A parameter ($1, maybe with junk), a dollar quote, or a lone "$"."""
        j = i + 1
        if self.at(j) in _DIGITS:
            while self.at(j) in _DIGITS:
                j += 1
            return self.junk(j)
        if self.at(j) in _DOLQ_START:
            j += 1
            while self.at(j) in _DOLQ_CONT:
                j += 1
        if self.at(j) != _DOLLAR:
            return i + 1  # dolqfailed gives back all but the "$": "$E'…'" is an E string
        delimiter = self.text[i : j + 1]
        close = self.text.find(delimiter, j + 1)
        return self.end if close < 0 else close + len(delimiter)

    def colon(self, i: int) -> int:
        """psql-style variable references (:name, :'name', :"name", :{?name}), "::" and ":="."""
        following = self.at(i + 1)
        if following in _COLON_EQUALS:
            return i + 2
        if following in _VARIABLE_CHAR:
            j = i + 2
            while self.at(j) in _VARIABLE_CHAR:
                j += 1
            return j
        if following in (_QUOTE, _DQUOTE):
            first, closing = i + 2, following
        elif self.text.startswith(b"{?", i + 1):
            first, closing = i + 3, ord("}")
        else:
            return i + 1
        j = first
        while self.at(j) in _VARIABLE_CHAR:
            j += 1
        return j + 1 if j > first and self.at(j) == closing else i + 1

    def string(self, i: int, *, extended: bool) -> int:
        """A quoted string from just after its opening quote, through any continuations."""
        text = self.text
        while True:
            while True:
                if i >= self.end:
                    return self.end
                byte = text[i]
                if extended and byte == _BACKSLASH:
                    i += 2
                elif byte != _QUOTE:
                    i += 1
                elif self.at(i + 1) == _QUOTE:
                    i += 2
                else:
                    break
            i += 1  # the closing quote
            resumed = self.quote_continuation(i)
            if resumed is None:
                return i
            i = resumed

    def quote_continuation(self, i: int) -> int | None:
        """After a closing quote: whitespace with a newline, -- comments, then a quote continue the string.

        Returns the position after that quote, or None. (Written out rather than as a regular
        expression, whose nested repetition would backtrack badly over long runs of dashes.)
        """
        text, newline_seen = self.text, False
        while i < self.end:
            byte = text[i]
            if byte in _HORIZ_SPACE:
                i += 1
            elif byte in _SQL_NEWLINE:
                newline_seen = True
                i += 1
            elif text.startswith(b"--", i):
                i = self.line_comment(i)
                if i >= self.end:
                    return None
            elif byte == _QUOTE and newline_seen:
                return i + 1
            else:
                return None
        return None

    def identifier(self, i: int) -> int:
        """A "quoted identifier" from just after its opening quote ("" reopens it at once)."""
        close = self.text.find(b'"', i)
        return self.end if close < 0 else close + 1

    def line_comment(self, i: int) -> int:
        for j in range(i, self.end):
            if self.text[j] in _SQL_NEWLINE:
                return j
        return self.end

    def block_comment(self, i: int) -> int:
        """A /* */ comment from just after its opening; comments nest."""
        text, depth = self.text, 0
        while i < self.end:
            if text.startswith(b"/*", i):
                depth += 1
                i += 2
            elif text.startswith(b"*/", i):
                if depth == 0:
                    return i + 2
                depth -= 1
                i += 2
            else:
                i += 1
        return self.end

    # --- backslash commands -----------------------------------------------------------

    def meta_command(self, backslash: int) -> int:
        """Record the command starting at this backslash; return where SQL lexing resumes."""
        text, i = self.text, backslash + 1
        line = bisect_left(self.newlines, backslash) + 1
        # Blanks and continuations before the command word; a newline first means no command.
        while True:
            if self.at(i) in _META_SPACE:
                i += 1
            elif self.continuation(i):
                i = self.continuation(i)
            else:
                break
        if i >= self.end or text[i] == _NEWLINE:
            self.found.append(MetaCommand("", line))
            return min(i + 1, self.end)
        start = i
        while i < self.end and text[i] not in _WORD_END:
            i += 1
        word = text[start:i]
        if len(word) > 1 and self.continuation(i - 1):
            word, i = word[:-1], self.continuation(i - 1)  # "word\<newline>": the word; the line goes on
        self.found.append(MetaCommand(word.decode("utf-8", "replace"), line))
        # The arguments, up to a newline that no backslash continues.
        while i < self.end:
            if text[i] == _NEWLINE:
                return i + 1
            i = self.continuation(i) or i + 1
        return self.end

    def continuation(self, i: int) -> int:
        """exprscan.l's continuation, a backslash then "\n" or "\r\n": the position after it, or 0."""
        if self.at(i) != _BACKSLASH:
            return 0
        if self.at(i + 1) == _NEWLINE:
            return i + 2
        if self.at(i + 1) == _CR and self.at(i + 2) == _NEWLINE:
            return i + 3
        return 0
