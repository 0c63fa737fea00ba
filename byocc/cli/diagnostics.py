"""Rendering errors for people: located messages with the source line and a caret.

A :class:`byocc.ir.ByoccError` with a span prints as (docs/architecture.md#diagnostics)::

    model.relax:12:17: error: unknown operator R.foo
                gv = R.foo(x)
                     ^~~~~
    note: ...

Without a span the location is the file being processed, if known. An ``OSError`` is
reported with its file name, exit code 1, or 2 for an output that cannot be written
(:class:`byocc.cli.output.OutputError`). Any other
exception is a bug in byocc: one ``internal error`` line, exit code 70. Colour only on a
terminal.
"""

from __future__ import annotations

import os

import click

from .output import stderr_is_terminal
from .output import use_colour

EXIT_INPUT = 1
EXIT_INTERNAL = 70
_BUG_HINT = "this is a bug in byocc, please report it (run with --debug for the traceback)"

# Source texts the CLI has read (name -> text), so a span can show its line even for stdin.
_sources: dict[str, str] = {}
_MAX_SOURCE_BYTES = 64 << 20


def remember_source(name: str, text: str) -> None:
    """Record the text of ``name`` for later diagnostics (the CLI reads each model once)."""
    _sources[name] = text


def source_line(name: str, line: int) -> str | None:
    """Line ``line`` (1-based) of source ``name``, or ``None`` when unavailable."""
    text = _sources.get(name)
    if text is None:
        try:
            if not os.path.isfile(name) or os.path.getsize(name) > _MAX_SOURCE_BYTES:
                return None
            with open(name, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
        _sources[name] = text
    lines = text.split("\n")
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r")
    return None


def exit_code_for(exc: BaseException) -> int:
    """The exit code (docs/architecture.md#exit-codes) for an exception escaping a command."""
    from byocc.ir import ByoccError

    if isinstance(exc, ByoccError):
        return int(exc.exit_code)
    if isinstance(exc, OSError):  # the file system said no (permissions, disk full, ...)
        # an output that cannot be written says so (byocc.cli.output.OutputError: 2)
        return int(getattr(exc, "exit_code", EXIT_INPUT))
    return EXIT_INTERNAL


def format_error(exc: BaseException, default_source: str | None = None) -> list[tuple[str, str]]:
    """The lines describing ``exc``, each as ``(kind, text)`` with kind one of
    ``location``/``source``/``caret``/``note``/``plain`` (used for colouring)."""
    from byocc.ir import ByoccError
    from byocc.ir import MultipleErrors

    if isinstance(exc, MultipleErrors):
        out: list[tuple[str, str]] = []
        for sub in exc.errors:
            out += format_error(sub, default_source)
        count = len(exc.errors)
        out.append(("plain", f"{count} error{'s' if count != 1 else ''}"))
        return out
    if isinstance(exc, OSError) and not isinstance(exc, ByoccError):
        where = exc.filename or default_source or "byocc"
        return [("location", f"{where}: error: {exc.strerror or exc}")]
    if not isinstance(exc, ByoccError) or exc.exit_code == EXIT_INTERNAL:
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return [("location", f"internal error: {what}; {_BUG_HINT}")]
    out = []
    span = exc.span
    if span is not None:
        out.append(("location", f"{span.source}:{span.line}:{span.column}: error: {exc.message}"))
        text = source_line(span.source, span.line)
        if text is not None:
            shown, caret = snippet(text, span.column, _width(span))
            out.append(("source", shown))
            out.append(("caret", caret))
    else:
        where, message = _location(exc.message, default_source or "byocc")
        out.append(("location", f"{where}: error: {message}"))
    out += [("note", f"note: {note}") for note in exc.notes]
    return out


def _location(message: str, where: str) -> tuple[str, str]:
    """``(location, rest)`` of a message without a span. A library message that names the
    file already (``DIR: ...``, or a file inside ``DIR``: ``DIR/manifest.json: ...``; a
    relative path without spaces) is located there, so the file is named once."""
    if message.startswith(f"{where}: "):
        return where, message[len(where) + 2:]
    for sep in {"/", os.sep}:
        prefix = where.rstrip(sep) + sep
        inner, colon, rest = message[len(prefix):].partition(": ")
        if message.startswith(prefix) and colon and inner and " " not in inner:
            return prefix + inner, rest
    return where, message


def render_error(exc: BaseException, default_source: str | None = None) -> None:
    """Print ``exc`` to stderr, coloured on a terminal; control characters from the input
    (escape sequences) are shown escaped, never sent to the terminal."""
    colour = use_colour(stderr_is_terminal())
    for kind, text in format_error(exc, default_source):
        text = escape_controls(text)
        click.echo(_style(kind, text) if colour else text, err=True, color=colour)


#: The most characters of a source line a diagnostic shows (a window around the column).
SNIPPET_WIDTH = 160


def escape_controls(text: str) -> str:
    """``text`` with every control character but tab and newline (a message may hold lines)
    written as ``\\xNN`` / ``\\uNNNN``."""
    if text.isprintable() or all(ch in "\t\n" or ch.isprintable() for ch in text):
        return text
    return "".join(ch if ch in "\t\n" or ch.isprintable() else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def snippet(line: str, column: int, width: int) -> tuple[str, str]:
    """The part of ``line`` to show (at most :data:`SNIPPET_WIDTH` characters around
    ``column``, ``...`` marking a cut, control characters escaped) and its caret line."""
    start, end = 0, len(line)
    if len(line) > SNIPPET_WIDTH:
        start = max(0, min(column - 1 - SNIPPET_WIDTH // 3, len(line) - SNIPPET_WIDTH))
        end = start + SNIPPET_WIDTH
    head = "..." if start > 0 else ""
    tail = "..." if end < len(line) else ""
    before = line[start:max(column - 1, start)]
    rest = line[max(column - 1, start):end]
    shown_before = head + escape_controls(before)
    marked = escape_controls(rest[:max(1, width)])
    prefix = "".join(ch if ch == "\t" else " " for ch in shown_before)
    caret_width = max(1, min(len(marked), end - max(column - 1, start)) if rest else 1)
    return shown_before + escape_controls(rest) + tail, prefix + "^" + "~" * (caret_width - 1)


def _width(span) -> int:
    if span.end_line in (0, span.line) and span.end_column > span.column:
        return span.end_column - span.column
    return 1


def _caret(line: str, column: int, width: int) -> str:
    # Keep tabs from the source line so the caret lines up in any tab width.
    prefix = "".join(ch if ch == "\t" else " " for ch in line[: max(column - 1, 0)])
    width = max(1, min(width, max(len(line) - column + 1, 1)))
    return prefix + "^" + "~" * (width - 1)


def _style(kind: str, text: str) -> str:
    if kind == "location":
        head, sep, rest = text.partition(" error: ")
        if sep:
            return click.style(head + " ", bold=True) + click.style("error: ", fg="red", bold=True) + rest
        return click.style(text, fg="red", bold=True)
    if kind == "caret":
        return click.style(text, fg="green", bold=True)
    if kind == "note":
        return click.style("note: ", fg="cyan", bold=True) + text[len("note: "):]
    return text


__all__ = ["escape_controls", "exit_code_for", "format_error", "remember_source", "render_error", "snippet",
           "source_line"]
