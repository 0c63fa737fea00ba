"""Reading the MODEL argument of a command: a ``.relax`` file (with its sidecar ``.npz``) or
``-`` for stdin. Unreadable input becomes an :class:`~byocc.ir.InputError` (exit code 1)."""

from __future__ import annotations

import os
import sys

import click

from .diagnostics import remember_source
from .output import note_model_input

STDIN_NAME = "<stdin>"


def load_model(path: str):
    """Parse the module named by ``path`` (``-``: stdin) and return the IRModule."""
    from byocc.ir import InputError

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["byocc.source"] = STDIN_NAME if path == "-" else path
    note_model_input(path)
    if path == "-":
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError as err:
            raise InputError(f"stdin is not UTF-8 text ({err.reason})") from None
        remember_source(STDIN_NAME, text)
        from byocc.text import parse_module

        return parse_module(text, STDIN_NAME)
    if not os.path.exists(path):
        raise InputError("no such file")
    if os.path.isdir(path):
        raise InputError("is a folder, not a .relax file")
    from byocc.text import read_file

    try:
        return read_file(path)
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}") from None


def model_argument():
    """The ``MODEL`` argument shared by the commands."""
    return click.argument("model", metavar="MODEL", type=str)


__all__ = ["STDIN_NAME", "load_model", "model_argument"]
