"""Operator constructors generated from the op registry (``byocc.ops.all_op_defs()``).

For the OpDef ``relax.nn.conv2d`` the namespace ``byocc.relax.op.nn`` gets a function
``conv2d(data, weight, strides=(1, 1), ...)`` whose signature is the OpDef's ``params``
(required attributes have no default). A call binds its arguments the way the parser
binds ``R.nn.conv2d(...)`` (:meth:`~byocc.ops.OpDef.bind`) and builds the call with
:func:`~byocc.ops.make_call`: attributes completed and normalised, struct info inferred.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from byocc.ir import Call
from byocc.ir import Expr
from byocc.ir import Op
from byocc.ops import REQUIRED
from byocc.ops import OpDef
from byocc.ops import all_op_defs
from byocc.ops import make_call

_MISSING = inspect.Parameter.empty


def _signature(opdef: OpDef) -> inspect.Signature:
    defaults: dict[str, Any] = {}
    for f in opdef.attrs:
        defaults[f.name] = _MISSING if f.default is REQUIRED else f.default
    for name, value in opdef.arg_defaults.items():
        defaults[name] = value
    params = []
    seen_default = False
    for name in opdef.params:
        default = defaults.get(name, _MISSING)
        if default is _MISSING and seen_default:
            kind = inspect.Parameter.KEYWORD_ONLY  # a required field after optional ones
        else:
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        seen_default |= default is not _MISSING
        params.append(inspect.Parameter(name, kind, default=default))
    if opdef.varargs:
        fixed = [p for p in params if p.name in opdef.arg_names]
        rest = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params if p.name not in opdef.arg_names]
        params = fixed + [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)] + rest
    return inspect.Signature(params)


def make_constructor(opdef: OpDef) -> Callable:
    """The Python function building calls of ``opdef``."""
    short = opdef.name.rsplit(".", 1)[1]

    def constructor(*args: Any, **kwargs: Any):
        operands, attrs = opdef.bind(list(args), kwargs)
        if operands and all(isinstance(a, Expr) for a in operands) \
                and any(a.struct_info is None for a in operands):
            # an operand without a type (``relax.Var("x")``): TVM builds the call as is and
            # infers only when a block builder normalises it; so does byocc
            return Call(Op.get(opdef.name), tuple(operands), opdef.make_attrs(attrs, None), (), None)
        return make_call(opdef, operands, attrs)

    constructor.__name__ = constructor.__qualname__ = short
    constructor.__signature__ = _signature(opdef)  # type: ignore[attr-defined]
    summary = opdef.doc.strip() or f"Build a call of ``{opdef.name}`` (printed ``{opdef.printed}``)."
    constructor.__doc__ = summary
    return constructor


def namespace_entries(prefix: str) -> dict[str, Callable]:
    """Constructors of the ops named ``<prefix><name>`` with no further dot, by short name.

    ``prefix`` is ``"relax."`` for ``relax.op`` and ``"relax.nn."`` for ``relax.op.nn``.
    """
    out: dict[str, Callable] = {}
    for opdef in all_op_defs():
        if not opdef.name.startswith(prefix):
            continue
        rest = opdef.name[len(prefix):]
        if "." in rest:
            continue
        out[rest] = make_constructor(opdef)
    return out


def sub_namespaces() -> list[str]:
    """Dotted op families under ``relax.`` (``nn``, ``image``, ``builtin``...)."""
    found = set()
    for opdef in all_op_defs():
        parts = opdef.name.split(".")
        if len(parts) == 3:
            found.add(parts[1])
    return sorted(found)


__all__ = ["make_constructor", "namespace_entries", "sub_namespaces"]
