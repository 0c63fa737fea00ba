"""``byocc show MODEL``: print a module.

Off a terminal the output is exactly what TVM 0.27's ``mod.show()`` prints (the text plus
one newline), so ``byocc show a.relax | diff - a.relax`` is empty for TVM-printed files.
On a terminal: the same text syntax-highlighted, then a summary (functions, op counts,
what is offloaded to which backend).
"""

from __future__ import annotations

import click

from .model import load_model
from .model import model_argument
from .output import check_output_file
from .output import console
from .output import stdout_closed
from .output import stdout_is_terminal
from .output import warn_dropped_constants
from .output import write_file
from .output import write_stdout


@click.command(short_help="Print MODEL as TVM prints it; on a terminal, highlighted with a summary.")
@model_argument()
@click.option("--pep695", is_flag=True,
              help="Print symbolic dimensions as PEP 695 type parameters (def main[n](...)), "
                   "as TVM does under Python 3.12+, instead of TypeVar lines.")
@click.option("--summary/--no-summary", default=None,
              help="Add the summary tables (default: only on a terminal; text format only).")
@click.option("--format", "format_", type=click.Choice(["text", "html", "dot"]), default="text",
              show_default=True,
              help="text: the module as TVM prints it. html: a self-contained page drawing the "
                   "graph (offloaded functions as boxes coloured by backend, click to open; needs "
                   "Graphviz's dot, exit 3 without it). dot: the same graph as Graphviz text.")
@click.option("-o", "--output", "output", metavar="FILE",
              help="Write to FILE instead of stdout (- for stdout).")
def show(model: str, pep695: bool, summary: bool | None, format_: str, output: str | None) -> None:
    """Print MODEL as TVM prints it (a round trip for TVM-printed files).

    On a terminal the text is highlighted and followed by a summary: functions, op counts
    and the functions offloaded to each backend. MODEL may be - for stdin. --format html
    draws the module instead (byocc show part.relax --format html -o part.html).
    """
    if format_ == "html" and output in (None, "-") and stdout_is_terminal():
        raise click.UsageError("--format html writes a web page: give -o FILE.html")
    if format_ != "text" or output is not None:
        _show_to(model, format_, output or "-", pep695)
        return
    mod = load_model(model)
    from byocc.text import constant_arrays
    from byocc.text import print_module_with_metadata

    text, meta = print_module_with_metadata(mod, pep695=pep695)
    if model.lower().endswith(".onnx"):  # a .relax model's values are in its own sidecar
        warn_dropped_constants(len(constant_arrays(meta)), keep="byocc import MODEL -o OUT.relax")
    tty = stdout_is_terminal()
    if summary is None:
        summary = tty
    if not tty and not summary:
        write_stdout(text + "\n")
        return
    _show_rich(mod, text, highlight=tty, with_summary=summary)


def _show_to(model: str, format_: str, output: str, pep695: bool) -> None:
    """``--format`` html / dot, or text into ``-o FILE``, through the one writer."""
    from pathlib import Path

    check_output_file(output, "-o")
    if format_ == "html":
        from .report import find_dot

        find_dot()  # Graphviz missing: exit 3 before any work, nothing written
    mod = load_model(model)
    if format_ == "text":
        from byocc.text import print_module_with_metadata

        text = print_module_with_metadata(mod, pep695=pep695)[0] + "\n"
    elif format_ == "dot":
        from .report import render_dot

        text = render_dot(mod)
    else:
        from .report import render_html

        name = "stdin" if model == "-" else model
        offloaded = sum(1 for n in mod.names() if "Codegen" in (getattr(mod[n], "attrs", None) or {}))
        text = render_html(mod, f"byocc show: {Path(name).name}",
                           f"{name} · {len(mod.names())} functions · {offloaded} offloaded")
    write_file(output, text)


def _show_rich(mod, text: str, highlight: bool, with_summary: bool) -> None:
    from rich.syntax import Syntax

    from .summary import summarize

    # Off a terminal (--summary into a pipe) tables get room instead of wrapped cells.
    out = console(tty=highlight, soft_wrap=True, width=None if highlight else 200)
    try:
        if not out.no_color:
            out.print(Syntax(text, "python", theme="ansi_dark", background_color="default"))
        else:
            out.print(text, soft_wrap=True)
        if with_summary:
            out.print()
            for table in summary_tables(summarize(mod)):
                out.print(table)
        out.file.flush()
    except BrokenPipeError:
        stdout_closed()


def summary_tables(summary) -> list:
    """Rich tables for a :class:`~byocc.cli.summary.ModuleSummary`."""
    from rich.table import Table

    functions = Table(title="functions", title_justify="left")
    for column in ("name", "kind", "params", "bindings", "backend", "composites"):
        functions.add_column(column, justify="right" if column in ("params", "bindings") else "left",
                             overflow="fold")  # long fused names wrap instead of being cut
    for row in summary.functions:
        functions.add_row(row.name, row.kind, str(row.params), str(row.bindings),
                          row.backend or "", ", ".join(row.composites))
    tables = [functions]
    if summary.op_counts:
        ops = Table(title="operators", title_justify="left")
        ops.add_column("op", overflow="fold")
        ops.add_column("calls", justify="right")
        for name, count in sorted(summary.op_counts.items(), key=lambda kv: (-kv[1], kv[0])):
            ops.add_row(name, str(count))
        tables.append(ops)
    offloaded = Table(title="offloaded", title_justify="left")
    offloaded.add_column("backend")
    offloaded.add_column("functions", justify="right")
    offloaded.add_column("composites", overflow="fold")
    by_backend: dict[str, list] = {}
    for row in summary.offloaded:
        by_backend.setdefault(row.backend, []).append(row)
    for backend, rows in sorted(by_backend.items()):
        names = sorted({c for row in rows for c in row.composites})
        offloaded.add_row(backend, str(len(rows)), ", ".join(names))
    for symbol, count in sorted(summary.packed_calls.items()):
        offloaded.add_row("(external call)", str(count), symbol)
    if not by_backend and not summary.packed_calls:
        offloaded.add_row("(none)", "0", "")
    tables.append(offloaded)
    return tables


__all__ = ["show"]
