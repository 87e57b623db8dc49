"""Shell commands in code blocks: each command a block of its own.

Prose holds few of a page's most checkable facts: the install command, the repository's URL, a
subcommand's name and its flags stand in its shell examples, and they drift with every rename.
A code block in a shell language (``bash``, ``console``, ...), or one without a language whose
lines carry a ``$`` prompt, is read line by line: each command (continuation lines joined)
becomes a ``command`` block. Comments, blank lines and, where the block prompts, the output
between the commands stay out. Code in any other language is the reader's own program, an
example, and stays out.
"""

from __future__ import annotations

import re

from kb.ingest.offsets import OffsetMap, TextBuilder

__all__ = ["CODE_DIRECTIVES", "SHELL_LANGUAGES", "command_lines", "elided", "generic_step", "is_shell", "language_of"]

SHELL_LANGUAGES = frozenset(
    {"bash", "sh", "shell", "zsh", "fish", "console", "terminal", "shell-session", "shellsession", "sh-session",
     "powershell", "ps1", "pwsh", "bat", "batch", "cmd"}
)  # fmt: skip
CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell"})  # MyST and Sphinx names of a code block
_LANGUAGE = re.compile(r"[\w.+-]+")
# "$ ", "% ", "(venv) $ ", "user@host:~/src$ ", "PS> ", "PS C:\\src> ", "C:\\src> "
_PROMPT = re.compile(
    r"[ \t]*(?:\([^)\n]{1,40}\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::[^\s$]*)?)?(?:\$|%|PS>|PS [^>\n]{0,80}>|[A-Z]:\\[^>\n]{0,80}>)[ \t]+"
)
_CONTINUED_PROMPT = re.compile(r"[ \t]*>[ \t]+")  # "> " before a continuation line of a prompted command
_HEREDOC = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_]\w*)\1")
# the character that continues a command on the next line, by shell
_CONTINUATION = {"powershell": "`", "ps1": "`", "pwsh": "`", "bat": "^", "batch": "^", "cmd": "^"}
_COMMENT = re.compile(r"(?:#|//|::|REM\b|rem\b)")
MAX_COMMAND_CHARS = 400  # a longer "command" is a pasted script or data, not one step
# What a command starts with: variable assignments, then a program (``git``, ``./gradlew``,
# ``python3.12``) or a PowerShell cmdlet (``Set-ExecutionPolicy``). A line that starts otherwise
# (``CLIENT_TRAFFIC_SECRET_0 XXXX``, ``>> pytest``, ``}``) is output or data shown in the block.
# An interactive program's question or answered question ("? Select a project ›", "✔ Framework ·
# vue"): a block without prompts that shows one is a terminal's screen, its lines output
_INTERACTIVE = re.compile(r"[ \t]*[?✔✖][ \t]+\S")
_COMMAND_START = re.compile(r"(?:[A-Za-z_]\w*=\S*\s+)*(?:[a-z0-9.~/][\w.+:/@~-]*|[A-Z][a-z]+-[A-Z]\w*)(?:\s|$)")

# Steps every project's docs take on the reader's own machine: moving about, making, listing or
# showing files, opening a file in an editor or a browser, switching an environment, committing
# and pushing with git. A page that no longer shows "cd my-project" has dropped nothing a reader
# relies on (one that shows "git push origin main" for "git push origin master" has changed a fact).
_SCAFFOLDING = frozenset(
    {"cd", "pushd", "popd", "mkdir", "md", "touch", "tree", "ls", "cat", "pwd", "clear", "cls", "exit", "source", ".",
     "deactivate", "open", "xdg-open", "start", "explorer", "firefox", "google-chrome", "chromium", "chrome",
     "safari", "code", "vim", "vi", "nvim", "nano", "emacs", "notepad"}
)  # fmt: skip
_GIT_SCAFFOLDING = frozenset(
    {"add", "commit", "push", "pull", "status", "diff", "log", "checkout", "switch", "branch", "fetch", "merge",
     "rebase", "stash", "init", "restore"}
)  # fmt: skip
_CONDA_SCAFFOLDING = frozenset({"activate", "deactivate"})
_STEP_SEPARATOR = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=\S*$")
_ELLIPSIS = re.compile(r"(?:^|\s)(?:\.\.\.|…)(?:\s|$)")


def generic_step(command: str) -> bool:
    """True when every step of ``command`` (steps joined by ``&&``, ``;``, ``|``) is scaffolding:
    ``cd``, ``mkdir``, ``tree``, an editor or a browser, ``conda activate``, an environment's
    ``activate`` script, ``git add`` / ``commit`` / ``push``..., with or without ``sudo``."""
    steps = [s for s in _STEP_SEPARATOR.split(command.strip()) if s]
    return bool(steps) and all(_scaffolding(step.split()) for step in steps)


def _scaffolding(words: list[str]) -> bool:
    while words and (_ASSIGNMENT.match(words[0]) or words[0] == "sudo"):
        words = words[1:]
    if not words:
        return True
    program = words[0].replace("\\", "/").rsplit("/", 1)[-1].lower()
    rest = [w for w in words[1:] if not w.startswith("-")]
    if program in _SCAFFOLDING or program in ("activate", "activate.bat", "activate.ps1", "activate.fish"):
        return True
    if program == "git":
        return bool(rest) and rest[0] in _GIT_SCAFFOLDING
    if program in ("conda", "mamba", "micromamba"):
        return bool(rest) and rest[0] in _CONDA_SCAFFOLDING
    return False


def elided(command: str) -> bool:
    """True when ``command`` stands for a longer one (``docker run -d --name app ...``): as
    written it is a fragment, and its absence from a newer page says nothing of the command."""
    return _ELLIPSIS.search(command) is not None


def language_of(info: str) -> str:
    """The language a code block's info string names ("bash", "{code-block} console", "sh [npm]",
    "bash:no-line-numbers"), lower case; "" when it names none."""
    words = info.replace("{", " ").replace("}", " ").split()
    if words and words[0].lower() in CODE_DIRECTIVES:
        words = words[1:]
    m = _LANGUAGE.match(words[0]) if words else None
    return m.group(0).lower().rstrip(".") if m else ""


def is_shell(info: str) -> bool | None:
    """True when a code block's info string names a shell, None when it names no language (its
    ``$`` prompts decide), False for any other language."""
    language = language_of(info)
    return (language in SHELL_LANGUAGES) if language else None


def command_lines(code: list[tuple[str, int]], language: str = "") -> list[tuple[str, OffsetMap]]:
    """The commands of a code block's lines, each ``(line text, document offset)``, as block
    texts with their offset maps. A block without a ``language`` holds commands only where its
    lines carry prompts."""
    prompted = any(_PROMPT.match(text) for text, _ in code)
    if not prompted and (not language or any(_INTERACTIVE.match(text) for text, _ in code)):
        return []
    continuation = _CONTINUATION.get(language, "\\")
    out: list[tuple[str, OffsetMap]] = []
    builder: TextBuilder | None = None
    quote = ""  # the quote of a string that runs over lines (echo '...' | tee): data, not commands
    heredoc = ""  # the word that ends a here-document (cat <<EOF > app.conf): its lines are a file's
    for text, off in code:
        if heredoc:
            heredoc = "" if text.strip() == heredoc else heredoc
            continue
        if quote:
            quote = _open_quote(text, quote)
            continue
        if builder is None:
            m = _PROMPT.match(text)
            if prompted and m is None:
                continue  # the output of the command before it
            start = m.end() if m else len(text) - len(text.lstrip())
        else:
            m = _CONTINUED_PROMPT.match(text) if prompted else None
            start = m.end() if m else len(text) - len(text.lstrip())
        body = text[start:].rstrip()
        if builder is None and (not body or _COMMENT.match(body)):
            continue
        doc = _HEREDOC.search(body)
        if doc:
            heredoc, builder = doc.group(2), None  # the command writes the lines that follow
            continue
        quote = _open_quote(body)
        if quote:
            builder = None  # the command the string belongs to goes with it
            continue
        continued = body.endswith(continuation) and not body.endswith(continuation * 2)
        if continued:
            body = body[:-1].rstrip()
        if builder is None:
            builder = TextBuilder()
        elif body:
            builder.add_synthetic(" ", off + start)
        builder.add(body, off + start)
        if not continued:
            _keep(builder.build(), out)
            builder = None
    if builder is not None:  # a continuation on the block's last line
        _keep(builder.build(), out)
    return out


def _keep(command: tuple[str, OffsetMap], out: list[tuple[str, OffsetMap]]) -> None:
    text = command[0]
    if text and len(text) <= MAX_COMMAND_CHARS and len(text.split()) >= 2 and _COMMAND_START.match(text):
        out.append(command)


def _open_quote(line: str, quote: str = "") -> str:
    """The quote left open at the end of ``line`` ("" when none), starting inside ``quote``."""
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break  # a comment: its apostrophes open nothing
    return quote
