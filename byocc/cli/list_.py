"""``byocc list [BACKEND...] [--json]`` (alias ``byocc backends``): what byocc can do.

Per backend, from its record: its patterns in priority order (highest first, as
FuseOpsByPattern tries them), each with its check's one-line summary and whether the
backend's codegen generates code for that composite (the codegen's own answer); the
layout it prefers and its driver steps; and its codegen options with their defaults (the
option schema ``--codegen-option BACKEND.KEY=VALUE`` is checked against).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import click

from .options import BACKEND
from .output import write_stdout

#: A check's docstring opens with the TVM function it mirrors (``_check_matmul``: ...).
_TVM_NAME = re.compile(r"^[^:`]*``[^`]+``:\s*")


@click.command("list", short_help="List the backends: patterns, checks, codegen support and options.")
@click.argument("backends", nargs=-1, type=BACKEND, metavar="[BACKEND]...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
def list_backends(backends: tuple[str, ...], as_json: bool) -> None:
    """List the backends (or the named ones): their patterns in priority order with
    their checks, which composites their codegen generates, and their codegen options.

    \b
    Examples:
      byocc list
      byocc list cublas
      byocc list --json
    """
    from byocc.backends import get_backend
    from byocc.backends import registered_backends

    names = list(backends) or registered_backends()
    described = [describe_backend(get_backend(name)) for name in names]
    if as_json:
        import json

        write_stdout(json.dumps({"backends": described}, indent=2) + "\n")
        return
    write_stdout("\n".join(render_backend(d) for d in described))


#: ``byocc backends``: the same command under a second name, not listed in ``byocc --help``.
backends_alias = copy.copy(list_backends)
backends_alias.hidden = True


def describe_backend(record) -> dict[str, Any]:
    """``record`` as ``byocc list --json`` writes it."""
    patterns = []
    for rank, entry in enumerate(record.patterns(), 1):
        check = entry.check
        patterns.append({
            "rank": rank, "name": entry.name, "generated": record.generates(entry.name),
            "check": None if check is None else _name_of(check),
            "check_summary": None if check is None else check_summary(check),
        })
    return {
        "name": record.name,
        "codegen": record.codegen is not None,
        "preferred_layout": record.preferred_layout,
        "rewrites": [_name_of(r) for r in record.rewrites],
        "post_partition": [_name_of(s) for s in record.post_partition],
        "patterns": patterns,
        "codegen_options": record.options.describe(),
    }


def check_summary(check) -> str:
    """The first sentence of ``check``'s docstring (its TVM name dropped), or ''."""
    doc = (getattr(check, "__doc__", None) or "").strip().split("\n\n")[0]
    text = _TVM_NAME.sub("", " ".join(doc.split())).replace("``", "")
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def _name_of(obj) -> str:
    return getattr(obj, "__name__", None) or getattr(obj, "name", None) or type(obj).__name__


def render_backend(d: dict[str, Any]) -> str:
    """The text ``byocc list`` prints for one backend."""
    steps = [f"layout {d['preferred_layout']}" if d["preferred_layout"] else "no preferred layout"]
    if d["rewrites"] or d["post_partition"]:
        steps.append("--backend-steps: " + ", ".join(d["rewrites"] + d["post_partition"]))
    lines = [f"{d['name']}: {len(d['patterns'])} patterns, " + ("a codegen" if d["codegen"] else "no codegen")
             + "; " + "; ".join(steps)]
    if d["patterns"]:
        lines.append("  patterns, highest priority first (code: whether the codegen generates it):")
        code = {True: "yes", False: "no", None: "?"}
        rows = [(str(p["rank"]), p["name"], code[p["generated"]],
                 "" if p["check"] is None else f"{p['check']}: {p['check_summary']}".rstrip(": "))
                for p in d["patterns"]]
        lines += _columns(("#", "pattern", "code", "check"), rows, indent=4)
    options = d["codegen_options"]
    if options:
        lines.append(f"  codegen options (--codegen-option {d['name']}.KEY=VALUE):")
        rows = [(o["key"], _default_text(o), o["values"], o["help"]) for o in options]
        lines += _columns(("key", "default", "values", "meaning"), rows, indent=4)
    else:
        lines.append("  codegen options: none")
    return "\n".join(lines) + "\n"


def _default_text(option: dict[str, Any]) -> str:
    value = option["default"]
    if isinstance(value, bool):
        return "true" if value else "false"
    return ",".join(value) if isinstance(value, list) else str(value)


def _columns(header: tuple[str, ...], rows: list[tuple[str, ...]], indent: int) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    pad = " " * indent
    return [pad + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in (header, *rows)]


__all__ = ["backends_alias", "check_summary", "describe_backend", "list_backends", "render_backend"]
