"""``--patterns FILE.py``: run a pattern file in a prepared namespace (conformance README,
"patterns.py").

The namespace holds the pattern-language names TVM pattern files use (``is_op``,
``wildcard``, ``make_matmul_pattern``...) plus Python's builtins. A pattern file is the
user's own Python: it imports what it likes (``os``, numpy, its own helper modules beside
it: the file's folder is first on the import path while it runs). ``tvm`` and the TVM
module paths of the pattern language (``from tvm.relax.dpl import is_op``) map onto
byocc's, in the file and in the modules it imports, so a file written for TVM runs
unchanged; another ``tvm`` module is a clear error. Helper modules from the file's folder
are imported afresh for each load. The file must define ``patterns``: a list of
``FusionPattern`` or 2-5 tuples; earlier entries have priority. Errors become
:class:`~byocc.ir.PatternError` located at ``file:line``.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.abc
import os
import sys
import types
from collections.abc import Iterator

from byocc import dpl
from byocc.dpl import FusionPattern
from byocc.dpl import PatternCheckContext
from byocc.dpl import as_fusion_pattern
from byocc.ir import ByoccError
from byocc.ir import PatternError
from byocc.ir import Span

from . import patterns as helpers
from . import utils


def pattern_file_namespace() -> dict:
    """A fresh namespace for executing a pattern file."""
    ns: dict = {
        # the names the conformance README promises
        "is_op": dpl.is_op, "wildcard": dpl.wildcard, "is_const": dpl.is_const,
        "is_var": dpl.is_var, "is_dfv": dpl.is_dfv, "is_tuple": dpl.is_tuple,
        "is_tuple_get_item": dpl.is_tuple_get_item, "is_gv": dpl.is_gv,
        "GlobalVarPattern": dpl.GlobalVarPattern, "TuplePattern": dpl.TuplePattern,
        "make_fused_bias_activation_pattern": dpl.make_fused_bias_activation_pattern,
        "make_matmul_pattern": helpers.make_matmul_pattern,
        "make_conv2d_pattern": helpers.make_conv2d_pattern,
        "make_residual_block_pattern": helpers.make_residual_block_pattern,
        "make_layer_norm_pattern": helpers.make_layer_norm_pattern,
        "make_rms_norm_pattern": helpers.make_rms_norm_pattern,
        "make_attention_pattern": helpers.make_attention_pattern,
        "make_stacked_attention_pattern": helpers.make_stacked_attention_pattern,
        # the rest of the pattern language and the check helpers
        "is_expr": dpl.is_expr, "is_shape": dpl.is_shape, "reject": dpl.reject,
        "has_attr": dpl.has_attr, "has_dtype": dpl.has_dtype, "has_shape": dpl.has_shape,
        "is_call_tir": dpl.is_call_tir, "is_call_packed": dpl.is_call_packed,
        "is_call_dps_packed": dpl.is_call_dps_packed,
        "make_matmul_dequantize_pattern": helpers.make_matmul_dequantize_pattern,
        "make_matmul_multiply_pattern": helpers.make_matmul_multiply_pattern,
        "has_leaking_intermediate_variables": utils.has_leaking_intermediate_variables,
        "FusionPattern": FusionPattern, "PatternCheckContext": PatternCheckContext,
    }
    for name in ("DFPattern", "WildcardPattern", "ExprPattern", "VarPattern", "DataflowVarPattern",
                 "ExternFuncPattern", "ConstantPattern", "CallPattern", "UnorderedTuplePattern",
                 "TupleGetItemPattern", "OrPattern", "AndPattern", "NotPattern", "AttrPattern",
                 "DataTypePattern", "ShapePattern", "StructInfoPattern", "TypePattern", "PrimArrPattern"):
        ns[name] = getattr(dpl, name)
    ns["__builtins__"] = dict(vars(builtins))  # a copy: the file may rebind a builtin
    ns["__name__"] = "__patterns__"
    return ns


# ---------------------------------------------------------------------------- imports
_SHIMS: dict | None = None


def _shim_modules() -> dict:
    """Stand-ins for the TVM modules pattern files import the pattern language from."""
    global _SHIMS
    if _SHIMS is not None:
        return _SHIMS
    from byocc import ir

    ns = pattern_file_namespace()
    del ns["__builtins__"], ns["__name__"]

    def module(name: str, **attrs) -> types.ModuleType:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        mod.__path__ = []  # a package: an unmapped submodule reaches _TvmNames' message
        return mod

    pattern_names = {k: v for k, v in ns.items() if not k.startswith("make_") and k not in (
        "has_leaking_intermediate_variables", "FusionPattern", "PatternCheckContext")}
    pattern_names["make_fused_bias_activation_pattern"] = dpl.make_fused_bias_activation_pattern
    dpl_pattern = module("tvm.relax.dpl.pattern", **pattern_names)
    dpl_mod = module("tvm.relax.dpl", pattern=dpl_pattern, **pattern_names)
    backend_patterns = module("tvm.relax.backend.patterns",
                              **{k: getattr(helpers, k) for k in helpers.__all__})
    # pattern files spread it (``*make_...``) or take it whole: the DPL one serves both
    backend_patterns.make_fused_bias_activation_pattern = dpl.make_fused_bias_activation_pattern
    backend_utils = module("tvm.relax.backend.utils",
                           has_leaking_intermediate_variables=utils.has_leaking_intermediate_variables)
    from . import registry

    pattern_registry = module("tvm.relax.backend.pattern_registry", FusionPattern=FusionPattern,
                              get_patterns_with_prefix=registry.get_patterns_with_prefix,
                              get_pattern=registry.get_pattern)
    cutlass = module("tvm.relax.backend.cuda.cutlass", get_patterns_with_prefix=registry.get_patterns_with_prefix)
    cublas = module("tvm.relax.backend.cuda.cublas", get_patterns_with_prefix=registry.get_patterns_with_prefix)
    cuda = module("tvm.relax.backend.cuda", cutlass=cutlass, cublas=cublas)
    backend = module("tvm.relax.backend", patterns=backend_patterns, utils=backend_utils, cuda=cuda,
                     pattern_registry=pattern_registry,
                     get_patterns_with_prefix=registry.get_patterns_with_prefix,
                     get_pattern=registry.get_pattern)
    transform = module("tvm.relax.transform", PatternCheckContext=PatternCheckContext,
                       FusionPattern=FusionPattern)
    relax_names = {k: getattr(ir, k) for k in ("Call", "Constant", "DataflowVar", "Expr", "ExternFunc",
                                                  "Function", "GlobalVar", "ShapeExpr", "PrimValue",
                                                  "Tuple", "TupleGetItem", "Var")}
    relax = module("tvm.relax", dpl=dpl_mod, backend=backend, transform=transform, **relax_names)
    tvm = module("tvm", relax=relax)
    _SHIMS = {m.__name__: m for m in (tvm, relax, dpl_mod, dpl_pattern, backend, backend_patterns,
                                      backend_utils, pattern_registry, cuda, cutlass, cublas, transform)}
    return _SHIMS


class _TvmNames(importlib.abc.MetaPathFinder):
    """While a pattern file runs: ``tvm`` modules byocc does not map are a clear error
    (the mapped ones sit in ``sys.modules``, so the import system never asks)."""

    def find_spec(self, name, path=None, target=None):
        if name == "tvm" or name.startswith("tvm."):
            raise ImportError(f"pattern files can import the pattern language from tvm.relax.dpl, "
                              f"tvm.relax.backend and tvm.relax.transform, not {name!r}")
        return None


@contextlib.contextmanager
def _user_imports(folder: str) -> Iterator[None]:
    """The import state a pattern file runs in (see the module docstring), restored after:
    the byocc stand-ins as ``tvm...`` in ``sys.modules``, ``folder`` first on
    ``sys.path``, and the modules the file imported from ``folder`` dropped again."""
    shims = _shim_modules()
    saved = {name: sys.modules[name] for name in shims if name in sys.modules}
    before = set(sys.modules)
    finder = _TvmNames()
    sys.modules.update(shims)
    sys.meta_path.insert(0, finder)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path.remove(folder)
        sys.meta_path.remove(finder)
        for name in shims:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        for name in set(sys.modules) - before:
            if _is_under(getattr(sys.modules[name], "__file__", None), folder):
                del sys.modules[name]


def _is_under(path: str | None, folder: str) -> bool:
    if not path:
        return False
    return os.path.normcase(os.path.abspath(path)).startswith(os.path.normcase(folder) + os.sep)


# ---------------------------------------------------------------------------- loading
def user_code_span(exc: BaseException, filename: str) -> Span | None:
    """The innermost traceback location of ``exc`` inside ``filename`` (1-based line)."""
    if isinstance(exc, SyntaxError) and exc.filename == filename and exc.lineno:
        return Span(filename, exc.lineno, exc.offset or 1)
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return Span(filename, line, 1) if line else None


def _error(exc: BaseException, filename: str, what: str) -> PatternError:
    span = user_code_span(exc, filename)
    if isinstance(exc, ByoccError):
        message = exc.message
        span = exc.span or span
    elif isinstance(exc, SyntaxError):
        message = f"invalid syntax: {exc.msg}"
    else:
        message = f"{what}: {type(exc).__name__}: {exc}"
    return PatternError(message, span)


def load_pattern_file(path) -> list:
    """Execute a pattern file; its ``patterns`` as a list of :class:`FusionPattern`."""
    filename = os.fspath(path)
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise PatternError(f"cannot read pattern file {filename}: {exc.strerror or exc}") from None
    try:
        source = data.decode("utf-8-sig")  # Python source may open with a byte-order mark
    except UnicodeDecodeError as exc:
        raise PatternError(f"not UTF-8 text ({exc.reason} at byte {exc.start}): a pattern file "
                           "is Python source") from None
    if "\0" in source:  # compile() raises ValueError (3.11) or SyntaxError (3.12) on it
        raise PatternError(f"a NUL byte at byte {data.index(0)}: a pattern file is Python source, "
                           "not a binary file")
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise _error(exc, filename, "invalid syntax") from None
    ns = pattern_file_namespace()
    ns["__file__"] = filename
    try:
        with _user_imports(os.path.dirname(os.path.abspath(filename))):
            exec(code, ns)  # noqa: S102 - running the user's pattern file is the point
    except (Exception, SystemExit) as exc:
        raise _error(exc, filename, "the pattern file raised") from None
    if "patterns" not in ns:
        raise PatternError(f"{filename} does not define a list named 'patterns'", Span(filename, 1, 1))
    items = ns["patterns"]
    line = _assignment_line(source, "patterns")
    if not isinstance(items, (list, tuple)):
        raise PatternError(f"'patterns' must be a list, got {type(items).__name__}", Span(filename, line, 1))
    out = []
    for i, item in enumerate(items):
        try:
            out.append(as_fusion_pattern(item))
        except PatternError as exc:
            raise PatternError(f"patterns[{i}]: {exc.message}", Span(filename, line, 1)) from None
    return out


def _assignment_line(source: str, name: str) -> int:
    for number, text in enumerate(source.splitlines(), 1):
        stripped = text.lstrip()
        if stripped.startswith(name) and stripped[len(name):].lstrip().startswith(("=", "+=", ":")):
            return number
    return 1


__all__ = ["load_pattern_file", "pattern_file_namespace", "user_code_span"]
