"""Options shared by several commands (``partition``, ``verify``), in a module of its own so
that ``byocc.cli_runtime`` can use them without importing the ``byocc.cli`` package."""

from __future__ import annotations

import click

#: The largest value ``--dim`` takes; larger work is refused by the memory check anyway.
MAX_DIM = 2**62


class DimType(click.ParamType):
    """``NAME=VALUE``: a symbolic dimension's name (an identifier) and its value (an integer
    in ``[0, 2**62]``); converts to ``(name, value)``. Anything else is a usage error."""

    name = "NAME=VALUE"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        name, sep, text = str(value).partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name.isidentifier():
            self.fail(f"expected NAME=VALUE with NAME a dimension's name, got {value!r}", param, ctx)
        try:
            number = int(text)
        except ValueError:
            self.fail(f"{name}: expected an integer value, got {text!r}", param, ctx)
        if not 0 <= number <= MAX_DIM:
            self.fail(f"{name}: a dimension must be in [0, 2**62], got {number}", param, ctx)
        return (name, number)


class BackendType(click.ParamType):
    """A registered backend's name (``cutlass``, ``cublas``, ...); an unknown name is a
    usage error listing the known ones. The registry is read only when a value is given,
    so ``byocc --help`` does not import the backends."""

    name = "backend"

    def convert(self, value, param, ctx):
        from byocc.backends import registered_backends

        known = registered_backends()
        if value in known:
            return value
        import difflib

        close = difflib.get_close_matches(str(value), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        self.fail(f"unknown backend {value!r} (known: {', '.join(known)}){hint}", param, ctx)

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        from byocc.backends import registered_backends

        return [CompletionItem(b) for b in registered_backends() if b.startswith(incomplete)]


DIM = DimType()
BACKEND = BackendType()


def prepare_options(command):
    """The options that run :func:`byocc.transform.prepare_for_backend` first."""
    command = click.option(
        "--fold-batch-norm/--no-fold-batch-norm", "fold_bn", default=None,
        help="Fold inference BatchNorm into the preceding convolution (implies --prepare).")(command)
    command = click.option(
        "--layout", type=click.Choice(["NHWC", "none"]), default=None,
        help="Convert conv2d to this layout first (cutlass needs NHWC/OHWI). Implies "
             "--prepare; 'none' keeps the layout.")(command)
    return click.option(
        "--prepare", is_flag=True,
        help="Before partitioning, apply what the backends need: constant folding, BatchNorm "
             "folding into convolutions and (for cutlass) the NHWC/OHWI layout.")(command)


def apply_prepare(mod, backends, prepare: bool, layout: str | None, fold_bn: bool | None):
    """``mod`` prepared for ``backends`` when any of the prepare options was given."""
    if not (prepare or layout is not None or fold_bn is not None):
        return mod
    from byocc.transform import prepare_for_backend

    return prepare_for_backend(mod, list(backends), layout=None if layout == "none" else "NHWC",
                               fold_batch_norm=True if fold_bn is None else fold_bn)
