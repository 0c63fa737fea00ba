"""Reading the MODEL argument of a command: a ``.relax`` file (with its sidecar ``.npz``), an
``.onnx`` file (imported, as ``byocc import`` does), or ``-`` for stdin (Relax text).
A MODEL that does not exist, is a folder or cannot be read is a
:class:`~byocc.ir.PathError` (a usage error, exit code 2); what is wrong inside a file that
was read is an :class:`~byocc.ir.InputError` (exit code 1)."""

from __future__ import annotations

import os
import sys

import click

from .diagnostics import remember_source
from .output import note_model_input

STDIN_NAME = "<stdin>"


def load_model(path: str, params_as_inputs: bool = False):
    """The IRModule named by ``path`` (``-``: stdin): parsed text, or an imported ONNX model
    (``params_as_inputs``: its float initializers become parameters)."""
    from byocc.ir import PathError

    set_source(path)
    note_model_input(path)
    if path == "-":
        from byocc.text import decode_source
        from byocc.text import parse_module

        text = decode_source(_read_stdin())
        remember_source(STDIN_NAME, text)

        return parse_module(text, STDIN_NAME)
    check_input_file(path, "is a folder, not a .relax or .onnx file")
    if path.lower().endswith(".onnx"):
        from byocc.frontend import from_onnx

        return from_onnx(path, params_as_inputs=params_as_inputs)
    from byocc.text import read_file

    try:
        return read_file(path)
    except OSError as err:
        raise PathError(f"cannot read: {err.strerror or err}") from None


def check_input_file(path: str, folder: str = "is a folder", prefix: str = "") -> None:
    """A :class:`~byocc.ir.PathError` (exit code 2) unless ``path`` names a readable file;
    ``folder``: the message when it is a folder; ``prefix``: put before every message."""
    from byocc.ir import PathError

    if not os.path.exists(path):
        raise PathError(prefix + "no such file")
    if os.path.isdir(path):
        raise PathError(prefix + folder)
    if not os.access(path, os.R_OK):
        raise PathError(prefix + "permission denied")


def set_source(path: str) -> None:
    """Name ``path`` (``-``: stdin) as the file that errors without a span are located at."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["byocc.source"] = STDIN_NAME if path == "-" else path


def _read_stdin() -> bytes:
    from byocc.ir import InputError

    stream = sys.stdin
    if stream is None:
        raise InputError("stdin is closed; give MODEL as a file name, or pipe a module into -")
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is not None:
            return buffer.read()
        data = stream.read()
        return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    except (OSError, ValueError) as err:  # a closed descriptor reads as EBADF or "closed file"
        raise InputError("cannot read stdin: " + (getattr(err, "strerror", None) or str(err))
                         + "; give MODEL as a file name, or pipe a module into -") from None


def model_argument():
    """The ``MODEL`` argument shared by the commands."""
    return click.argument("model", metavar="MODEL", type=str)


__all__ = ["STDIN_NAME", "check_input_file", "load_model", "model_argument", "set_source"]
