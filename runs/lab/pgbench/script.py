"""Which pgbench meta-commands a custom script contains, found the way pgbench 15 finds them.

A custom pgbench script is SQL mixed with backslash meta-commands, and two of those,
`\\shell` and `\\setshell`, run programs on the lab host as the user pgbench runs as. A
pattern over lines cannot tell which backslashes pgbench acts on: `SELECT 1; \\shell id`
runs a program, while `SELECT '\\shell id';` and `-- \\shell id` do not, and neither does
a backslash inside E'…' escapes, $tag$ dollar quotes or nested /* */ comments. So
pgbench_lexer.py re-implements the part of pgbench's script parser that decides where meta-commands
start and end (pgbench.c ParseScript over src/fe_utils/psqlscan.l, with the backslash
command words read by src/bin/pgbench/exprscan.l) and lets through only a list of known
harmless commands. Everything else -- \\shell, \\setshell, a word pgbench would reject
anyway, a backslash with no command after it -- is refused before the script is uploaded.

And since pgbench versions lex a few corners differently, a script is also refused when its text
anywhere has a backslash that could start \\shell or \\setshell (SHELL_ANYWHERE; pgbench_lexer.py
says which corners). Pure functions only: no Django, no I/O.
"""

import re

from runs.lab.errors import InvalidOption
from runs.lab.pgbench.lexer import meta_commands

# The harmless meta-commands of pgbench 15 (variables, sleeping, conditionals, storing
# query results, pipelines). Not here: \shell and \setshell, which run programs.
ALLOWED_META_COMMANDS = (
    "set",
    "sleep",
    "if",
    "elif",
    "else",
    "endif",
    "gset",
    "aset",
    "startpipeline",
    "endpipeline",
    "syncpipeline",
)
_ALLOWED_LIST = ", ".join("\\" + name for name in ALLOWED_META_COMMANDS)
# A backslash, blanks or continuations, then shell or setshell in any letter case.
SHELL_ANYWHERE = re.compile(r"\\(?:[ \t\r\f\v]|\\\r?\n)*((?:set)?shell)", re.IGNORECASE)


def is_allowed(name: str) -> bool:
    """Whether a command name is on the list; pgbench folds only ASCII letters (pg_strcasecmp)."""
    return name.isascii() and name.lower() in ALLOWED_META_COMMANDS


def check_custom_script(script: str) -> None:
    """Raise InvalidOption naming the first meta-command that is not on the allowed list, or
    any text that some pgbench version could read as \\shell or \\setshell."""
    if found := SHELL_ANYWHERE.search(script):
        line = script.count("\n", 0, found.start()) + 1
        raise InvalidOption(
            f"custom script line {line}: \\{found.group(1)} is not allowed, even inside a string or a comment "
            "(pgbench versions differ in where they see commands)"
        )
    for command in meta_commands(script):
        if not command.name:
            raise InvalidOption(
                f"custom script line {command.line}: a backslash must be followed by a meta-command "
                f"(allowed: {_ALLOWED_LIST})"
            )
        if not is_allowed(command.name):
            raise InvalidOption(
                f"custom script line {command.line}: \\{command.name} is not allowed (allowed: {_ALLOWED_LIST})"
            )
