"""Options and parameter types shared by several commands (``partition``, ``verify``,
``run``): ``--dim``, ``--backend``, ``--codegen-option``, the ``--prepare`` family and
``--backend-steps``.

The backend options read the backend records (:mod:`byocc.backends.record`): the CLI never
names a backend itself."""

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


class DeviceType(click.ParamType):
    """``cpu``, ``cuda`` or ``cuda:N`` (``cpu`` only where ``allow_cpu``); anything else is a
    usage error (exit 2) before any model is read."""

    name = "device"

    def __init__(self, allow_cpu: bool = True):
        self.allow_cpu = allow_cpu

    def convert(self, value, param, ctx):
        text = str(value).strip().lower()
        kind, _, index = text.partition(":")
        if kind == "cpu" and not index and self.allow_cpu:
            return text
        if kind == "cuda" and (not _ or index.isdigit()):
            return text
        known = "cpu, cuda, cuda:N" if self.allow_cpu else "cuda, cuda:N"
        self.fail(f"unknown device {value!r} (expected {known})", param, ctx)


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


class CodegenOptionType(click.ParamType):
    """``BACKEND.KEY=VALUE``: an option of a backend's codegen, checked against the backend's
    option schema (its record's ``options``); converts to ``(backend, key, value)`` with the
    value parsed. A malformed item, an unknown backend or key, or a bad value is a usage
    error naming what is valid. The backends are read only when a value is given."""

    name = "BACKEND.KEY=VALUE"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        target, sep, text = str(value).partition("=")
        backend, dot, key = target.strip().partition(".")
        if not sep or not dot or not backend or not key.strip():
            self.fail(f"expected BACKEND.KEY=VALUE (e.g. cublas.fp32_math=tf32), got {value!r}", param, ctx)
        backend = BACKEND.convert(backend, param, ctx)
        from byocc.backends import OptionError
        from byocc.backends import get_backend

        try:
            key, parsed = get_backend(backend).options.parse_value(key.strip(), text.strip())
        except OptionError as exc:
            self.fail(str(exc), param, ctx)
        return (backend, key, parsed)


DIM = DimType()
BACKEND = BackendType()
CODEGEN_OPTION = CodegenOptionType()


def codegen_option_option(command):
    """``--codegen-option BACKEND.KEY=VALUE`` (repeatable): RunCodegen's target options."""
    return click.option(
        "--codegen-option", "codegen_options", multiple=True, type=CODEGEN_OPTION,
        metavar="BACKEND.KEY=VALUE",
        help="An option of a backend's codegen, for -o (repeatable), e.g. cublas.fp32_math=tf32 "
             "or cutlass.arch=sm_80; `byocc list` shows each backend's options and "
             "defaults.")(command)


def target_options(items) -> dict:
    """RunCodegen's ``target_options`` (``{backend: {key: value}}``) from the
    ``--codegen-option`` items (a later item wins); options that contradict each other
    are a usage error."""
    grouped: dict[str, dict] = {}
    for backend, key, value in items:
        grouped.setdefault(backend, {})[key] = value
    if grouped:
        from byocc.backends import OptionError
        from byocc.backends import get_backend

        for backend, values in grouped.items():
            try:
                get_backend(backend).options.parse(values, strict=True)
            except OptionError as exc:
                raise click.BadParameter(str(exc), param_hint="'--codegen-option'") from None
    return grouped


def backend_steps_option(command):
    """``--backend-steps``: each backend's rewrites before fusion and steps after it."""
    return click.option(
        "--backend-steps/--no-backend-steps", "backend_steps", default=False, show_default=True,
        help="Run each --backend's own steps around FuseOpsByPattern, as its TVM partition "
             "driver does (cutlass: attention chains rewritten to R.nn.attention before, a "
             "workspace for attention functions after; with --no-bind-constants and the "
             "annotate path this is partition_for_cutlass).")(command)


def prepare_options(command):
    """The options that run :func:`byocc.backends.prepare_for_backend` first."""
    command = click.option(
        "--fold-batch-norm/--no-fold-batch-norm", "fold_bn", default=None,
        help="Fold inference BatchNorm into the preceding convolution (implies --prepare).")(command)
    command = click.option(
        "--layout", type=click.Choice(["NHWC", "none"]), default=None,
        help="Convert conv2d to this layout first, for backends that prefer a layout (cutlass "
             "needs NHWC/OHWI). Implies --prepare; 'none' keeps the layout.")(command)
    return click.option(
        "--prepare", is_flag=True,
        help="Before partitioning, apply what the backends need: constant folding, BatchNorm "
             "folding into convolutions and the layout a backend prefers (cutlass: "
             "NHWC/OHWI).")(command)


def apply_prepare(mod, backends, prepare: bool, layout: str | None, fold_bn: bool | None):
    """``mod`` prepared for ``backends`` when any of the prepare options was given: the
    backends' preferred layout unless ``--layout`` names one (``none``: kept)."""
    choice = _prepare_choice(prepare, layout, fold_bn)
    if choice is None:
        return mod
    from byocc.backends import prepare_for_backend

    return prepare_for_backend(mod, list(backends), **choice)


def prepare_passes_of(backends, prepare: bool, layout: str | None, fold_bn: bool | None) -> list:
    """The passes :func:`apply_prepare` runs (inside a Sequential named ``prepare``); none
    without a prepare option."""
    choice = _prepare_choice(prepare, layout, fold_bn)
    if choice is None:
        return []
    from byocc.backends import prepare_passes

    return list(prepare_passes(list(backends), **choice))


def _prepare_choice(prepare: bool, layout: str | None, fold_bn: bool | None) -> dict | None:
    if not (prepare or layout is not None or fold_bn is not None):
        return None
    from byocc.backends import PREFERRED

    chosen = PREFERRED if layout is None else (None if layout == "none" else layout)
    return {"layout": chosen, "fold_batch_norm": True if fold_bn is None else fold_bn}


def precision_options(command):
    """``--dtype``, ``--accumulate-dtype`` and ``--recompose``: the steps that take an fp32
    model exported from a framework to the half-precision fused operators the tables match."""
    command = click.option(
        "--recompose/--no-recompose", "recompose", default=None,
        help="Fuse the decomposed forms exporters write (GELU as erf/tanh arithmetic, SiLU, "
             "LayerNorm, RMSNorm, 4-D attention chains) into the ops the tables match, then run "
             "the backends' rewrites (cutlass: attention, grouped K/V heads without repeats; "
             "rms_norm as the call_tir of a standard rms_norm prim_func, after --dtype) "
             "(RecomposeOps). Default: on with --dtype.")(command)
    command = click.option(
        "--accumulate-dtype", "accumulate", type=click.Choice(["float32", "half"]), default="half",
        show_default=True,
        help="With --dtype: the out_dtype of matmul/conv (TVM's ToMixedPrecision out_dtype). "
             "half: results in the --dtype (the cutlass/cublas kernels still accumulate in "
             "fp32 and the bias/activation epilogues fuse); float32: fp32 results, then a cast.")(command)
    return click.option(
        "--dtype", "mixed_dtype", type=click.Choice(["float16", "bfloat16"]), default=None,
        help="Mixed precision before partitioning (ToMixedPrecision, after the --prepare "
             "steps): matmul, convolutions and attention in this dtype, element-wise ops "
             "following their operands, softmax and reductions in fp32; the model's inputs and "
             "outputs keep their dtype.")(command)


def recompose_passes(backends, recompose: bool | None, mixed_dtype: str | None, prepare: tuple) -> list:
    """The passes of ``--recompose`` (RecomposeOps, then the backends' rewrites), run first;
    none when it is off (by default it is on with ``--dtype``; ``prepare``, the
    ``--prepare`` values, does not turn it on, so prepared runs keep their output)."""
    if recompose is None:
        recompose = mixed_dtype is not None
    if not recompose:
        return []
    from byocc.transform import RecomposeOps
    from byocc.transform import RewriteFunctions

    passes: list = [RecomposeOps()]
    if backends:
        from byocc.backends import backend_steps

        rewrites = backend_steps(list(backends))[0]
        if rewrites:
            from byocc.transform.recompose_ops import group_kv_heads

            # then the grouped-query K/V repeats RecomposeOps wrote are dropped again where
            # the rewrites made an attention of them (exact: attention groups the heads)
            passes.append(RewriteFunctions((*rewrites, group_kv_heads)))
    # FoldConstant runs after ToMixedPrecision instead (fold_passes): the casts of constants
    # that pass writes are folded too
    return passes


def fold_passes(recompose: bool | None, mixed_dtype: str | None) -> list:
    """With ``--recompose`` (on by default with ``--dtype``), after ToMixedPrecision:
    FoldConstant, so what exporters compute from constants at run time (the reshapes and the
    cast of an additive attention mask, transposed weights) is a constant the backends see:
    the cutlass attention reads a constant causal mask as the mask (docs/codegen.md#attention)."""
    if recompose is None:
        recompose = mixed_dtype is not None
    if not recompose:
        return []
    from byocc.transform.fold_constant import FoldConstant

    return [FoldConstant()]


def lowering_passes(backends, recompose: bool | None, mixed_dtype: str | None) -> list:
    """With ``--recompose`` (on by default with ``--dtype``) and the cutlass backend, last:
    ``R.nn.rms_norm`` as the ``R.call_tir`` of a standard-form rms_norm prim_func, the form
    TVM's CUTLASS table matches (RmsNormToCallTIR). After ToMixedPrecision, so the
    prim_func has the norm's final dtype."""
    if recompose is None:
        recompose = mixed_dtype is not None
    if not recompose or not backends:
        return []
    from byocc.backends.registry import get_pattern

    # only for a backend whose table matches rms_norm in the call_tir form (cutlass's)
    if not any(get_pattern(f"{b}.rms_norm") is not None for b in backends):
        return []
    from byocc.transform.rms_norm_tir import RmsNormToCallTIR

    return [RmsNormToCallTIR()]


def mixed_precision_passes(mixed_dtype: str | None, accumulate: str) -> list:
    """``--dtype``'s ToMixedPrecision (none without it)."""
    if mixed_dtype is None:
        return []
    from byocc.transform import ToMixedPrecision

    return [ToMixedPrecision(mixed_dtype, mixed_dtype if accumulate == "half" else "float32")]


def apply_frontend(mod, backends, prepare: tuple, recompose: bool | None, mixed_dtype: str | None,
                   accumulate: str):
    """``mod`` through ``--recompose``, the ``--prepare`` steps and ``--dtype``, in that order
    (``prepare``: the ``(--prepare, --layout, --fold-batch-norm)`` values)."""
    for p in recompose_passes(backends, recompose, mixed_dtype, prepare):
        mod = p(mod)
    mod = apply_prepare(mod, backends, *prepare)
    for p in (mixed_precision_passes(mixed_dtype, accumulate) + fold_passes(recompose, mixed_dtype)
              + lowering_passes(backends, recompose, mixed_dtype)):
        mod = p(mod)
    return mod


def steps_of(backends, enabled: bool) -> dict:
    """``transform.partition``'s ``rewrites`` and ``post_fusion`` for ``--backend-steps``
    (empty without it)."""
    if not enabled or not backends:
        return {"rewrites": (), "post_fusion": ()}
    from byocc.backends import backend_steps

    rewrites, post = backend_steps(list(backends))
    return {"rewrites": rewrites, "post_fusion": post}


__all__ = [
    "DeviceType",
    "BACKEND", "CODEGEN_OPTION", "DIM", "MAX_DIM", "BackendType", "CodegenOptionType", "DimType",
    "apply_frontend", "apply_prepare", "backend_steps_option", "lowering_passes", "mixed_precision_passes",
    "precision_options", "recompose_passes", "codegen_option_option", "prepare_options",
    "prepare_passes_of", "steps_of", "target_options",
]
