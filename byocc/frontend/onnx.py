"""ONNX importer: an ONNX graph (opsets 9 to the installed onnx's, 28 with onnx 1.23; 6-8
where byocc knows the older semantics) to a Relax module with one function ``main``.

Steps (one pass over the nodes, in topological order; linear in the graph size):

1. Graph inputs become parameters (``dim_param`` dimensions become symbolic variables,
   shared by name). Initializers become tensor constants, or with
   ``params_as_inputs=True`` parameters after the graph inputs (in initializer order,
   only those read as tensors).
2. Each node is folded *symbolically* when it computes on a shape with symbolic
   dimensions (``Shape -> Gather -> Concat -> Reshape`` chains, :mod:`.onnx_fold`), else
   *converted* into Relax operator calls by its converter (:mod:`.onnx_ops`,
   :mod:`.onnx_nn`). A call whose operands are constants is folded as it is made, by
   byocc's own reference of the Relax op (:meth:`Importer.make`), so a node on known
   values becomes a known value and shape computations on constants vanish.
3. A node that cannot be imported is recorded and its outputs are poisoned; at the end
   one :class:`~byocc.ir.UnsupportedError` lists every such node (op type, name, opset).

Names: parameters and node outputs keep their ONNX names, sanitised to identifiers
(``input.1`` -> ``input_1``) and made unique; helper bindings are ``lv``, ``lv1``...
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import FrontendError
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir import VarBinding

MIN_OPSET = 6


def _installed_opset() -> int:
    try:
        import onnx.defs

        return max(21, int(onnx.defs.onnx_opset_version()))
    except Exception:  # noqa: BLE001  (an onnx without defs: the opsets byocc was written for)
        return 21


#: The newest opset imported: the installed onnx's (28 with onnx 1.23).
MAX_OPSET = _installed_opset()

#: Operators whose schema changed after opset 21, with the newest version whose meaning
#: byocc has checked: the changes up to there only add types (bfloat16, float4/8, int2/4),
#: Cast's ``round_mode`` (for float8e8m0, which byocc does not have), and Mod/ReduceLogSumExp
#: wording of special cases (opset 28). A node whose operator changed again after the
#: version given here (or changed after 21 and is not listed) is named as unsupported.
REVIEWED_AFTER_21 = {
    **dict.fromkeys(("Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cos", "Cosh", "Round",
                     "Sin", "Sinh", "Tan"), 22),
    "Cast": 28, "CastLike": 25, "Identity": 25, "Mod": 28, "ReduceLogSumExp": 28,
}


def changed_after_review(op_type: str, opset: int) -> int | None:
    """The version of ``op_type`` at ``opset`` when its meaning changed after what byocc
    reviewed (opset 21 or :data:`REVIEWED_AFTER_21`), else None."""
    if opset <= 21:
        return None
    try:
        import onnx.defs

        version = int(onnx.defs.get_schema(op_type, opset).since_version)
    except Exception:  # noqa: BLE001  (no such schema: the converter decides)
        return None
    return version if version > REVIEWED_AFTER_21.get(op_type, 21) else None
_RESERVED = {"R", "T", "I", "cls", "Module", "metadata", "main"}


def sanitize(name: str) -> str:
    """A valid, printable identifier for an ONNX name (deterministic)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_")  # "/conv1/Conv_output_0" -> "conv1_..."
    if not s:
        s = "v"
    if s[0].isdigit():
        s = "v" + s
    if keyword.iskeyword(s) or s in _RESERVED:
        s += "_"
    return s


class Poisoned(Exception):
    """Raised when a node reads the output of a node that could not be imported."""


class Importer:
    """Builds one Relax function from an ONNX graph; converters call the helpers here."""

    def __init__(self, model, params_as_inputs: bool = False):
        self.model = model
        self.graph = model.graph
        self.params_as_inputs = params_as_inputs
        self.opset = _default_opset(model)
        self.values: dict[str, dict] = {}  # ONNX name -> {"const", "expr", "init"}
        self.bindings: list = []
        self.params: list = []
        self.init_params: dict[str, Var] = {}
        self.names: set[str] = set()
        self.counter = 0
        self.dim_vars: dict[str, TirVar] = {}
        self.unsupported: list[str] = []
        self.poisoned: set[str] = set()
        self.outputs = {o.name for o in self.graph.output}
        self.node = None

    # ------------------------------------------------------------------ names
    def unique(self, hint: str) -> str:
        base = sanitize(hint)
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def fresh(self) -> str:
        while True:
            name = "lv" if self.counter == 0 else f"lv{self.counter}"
            self.counter += 1
            if name not in self.names:
                self.names.add(name)
                return name

    # ------------------------------------------------------------------ values
    def has(self, name: str) -> bool:
        return bool(name) and name in self.values

    def known(self, name: str):
        """The value of input ``name`` when known at import time (a numpy array, object
        dtype for symbolic integers), else ``None``. Initializers count as known here
        even with ``params_as_inputs`` (for shapes, axes, pads...)."""
        if not name:
            return None
        if name in self.poisoned:
            raise Poisoned(name)
        v = self.values.get(name)
        if v is None:
            raise FrontendError(f"node {self._node_label()} reads {name!r}, which no node produces")
        return v["const"]

    def foldable(self, name: str) -> bool:
        """Known, and allowed to be computed on at import time (with ``params_as_inputs``,
        floating-point initializers are parameters, so not foldable)."""
        v = self.values.get(name)
        return v is not None and v["const"] is not None and not self._is_param_init(v)

    def _is_param_init(self, v: dict) -> bool:
        from byocc.ops.reference import is_float_dtype

        return self.params_as_inputs and v["init"] and is_float_dtype(v["const"].dtype)

    def require(self, name: str, what: str):
        value = self.known(name)
        if value is None:
            raise UnsupportedError(f"{what} must be a constant (computed from initializers or shapes)")
        return value

    def tensor(self, name: str) -> Expr:
        """The Relax expression for input ``name`` (materialising constants)."""
        if name in self.poisoned:
            raise Poisoned(name)
        v = self.values.get(name)
        if v is None:
            raise FrontendError(f"node {self._node_label()} reads {name!r}, which no node produces")
        if v["expr"] is None:
            const = v["const"]
            if _is_string_array(const):
                raise UnsupportedError(f"{name!r} is a string tensor; byocc imports numeric and bool "
                                       "tensors only")
            if self._is_param_init(v):
                var = Var(self.unique(name), _tensor_sinfo(const))
                self.init_params[name] = var
                v["expr"] = var
            else:
                v["expr"] = self.constant(const)
        return v["expr"]

    def sinfo(self, name: str) -> TensorStructInfo:
        const = self.values.get(name, {}).get("const")
        if const is not None and const.dtype != object:
            return _tensor_sinfo(const)
        si = self.tensor(name).struct_info
        if not isinstance(si, TensorStructInfo):
            raise UnsupportedError(f"input {name!r} is not a tensor")
        return si

    def shape(self, name: str) -> tuple:
        """Dimensions of input ``name`` (ints or symbolic); error if the rank is unknown."""
        const = self.values.get(name, {}).get("const")
        if const is not None:
            return tuple(int(d) for d in const.shape)
        si = self.sinfo(name)
        if si.shape is None:
            raise UnsupportedError(f"the shape of {name!r} is not known at import time")
        return tuple(si.shape)

    def rank(self, name: str) -> int:
        return len(self.shape(name))

    def dtype(self, name: str) -> str:
        dt = self.sinfo(name).dtype
        if dt is None:
            raise UnsupportedError(f"the dtype of {name!r} is not known at import time")
        return dt

    def constant(self, array) -> Constant:
        import numpy as np

        array = np.asarray(array)
        if array.dtype == object:
            raise UnsupportedError("a shape with symbolic dimensions is used as a tensor "
                                   "(data-dependent shapes are not supported)")
        return Constant(array, _tensor_sinfo(array))

    def scalar(self, value, dtype: str) -> Constant:
        import numpy as np

        from byocc.ops.reference import np_dtype

        return self.constant(np.array(value, dtype=np_dtype(dtype)))

    # ------------------------------------------------------------------ emitting
    def make(self, op: str, *args, **attrs) -> Expr:
        """A normalised, typed call of ``op``; folded by byocc's own reference of the op
        (:func:`byocc.ops.fold_call`) to a Constant (a Tuple of them) when its operands are
        constants, so constant weights are transposed or reshaped, and shape computations
        on constants vanish, at import time."""
        from byocc.ops import fold_call
        from byocc.ops import get_op_def
        from byocc.ops import make_call
        from byocc.ops.convert import OPERAND_KINDS

        try:
            opdef = get_op_def(op)
        except KeyError:
            raise UnsupportedError(f"byocc has no operator {op}") from None
        conv = [OPERAND_KINDS[opdef.arg_kinds.get(n, "tensor")](a) for n, a in zip(opdef.arg_names, args)
                if not (a is None and n in opdef.arg_defaults)]
        call = make_call(opdef, conv, attrs or None)
        if any(isinstance(a, Constant) or (isinstance(a, Tuple) and any(isinstance(f, Constant) for f in a.fields))
               for a in call.args):
            folded = fold_call(call)  # None: an operand is not constant, or it cannot fold
            if folded is not None:
                return folded
        return call

    def tuple_fields(self, expr: Expr) -> list[Expr]:
        """The fields of a tuple-valued :meth:`make` result: the Constants of a folded
        tuple, else ``t[i]`` of a new binding ``t``."""
        if isinstance(expr, Tuple):
            return list(expr.fields)
        tup = self.emit(expr)
        return [TupleGetItem(tup, i, f) for i, f in enumerate(tup.struct_info.fields)]

    def emit(self, expr: Expr, name: str | None = None) -> Expr:
        """Bind ``expr`` to a new variable (named ``name`` or ``lv...``); leaves pass through."""
        if not isinstance(expr, (Call, Tuple, TupleGetItem)):
            return expr
        is_output = name is not None and name in self.outputs
        var_name = self.unique(name) if name is not None else self.fresh()
        var = (Var if is_output else DataflowVar)(var_name, expr.struct_info)
        self.bindings.append(VarBinding(var, expr))
        return var

    def op(self, op: str, *args, **attrs) -> Expr:
        """``make`` then ``emit``: a variable (or Constant) holding ``op(*args)``."""
        return self.emit(self.make(op, *args, **attrs))

    def _node_label(self) -> str:
        n = self.node
        if n is None:
            return "?"
        return f"{n.name or '(unnamed)'} ({n.op_type})"

    # ------------------------------------------------------------------ driving
    def run(self) -> IRModule:
        from . import onnx_ops

        self._inputs()
        for node in _topological(self.graph):
            self.node = node
            self._import_node(node, onnx_ops)
        self.node = None
        if self.unsupported:
            lines = self.unsupported
            raise UnsupportedError(
                f"{len(lines)} ONNX node{'s' if len(lines) != 1 else ''} cannot be imported:\n  "
                + "\n  ".join(lines),
                notes=(f"supported operators: {', '.join(onnx_ops.supported_op_types())}",))
        return self._finish()

    def _inputs(self) -> None:
        import numpy as np
        from onnx import numpy_helper

        inits = {}
        for init in self.graph.initializer:
            try:
                inits[init.name] = numpy_helper.to_array(init)
            except Exception as err:  # noqa: BLE001  (onnx raises assorted types for bad tensors)
                raise FrontendError(f"cannot read initializer {init.name!r}: {err}") from None
        for inp in self.graph.input:
            if inp.name in inits:
                continue
            var = Var(self.unique(inp.name), self._input_sinfo(inp))
            self.params.append(var)
            self.values[inp.name] = {"const": None, "expr": var, "init": False}
        for name, array in inits.items():
            self.values[name] = {"const": np.asarray(array), "expr": None, "init": True}

    def _input_sinfo(self, inp) -> TensorStructInfo:
        from onnx import helper

        t = inp.type
        if not t.HasField("tensor_type"):
            raise UnsupportedError(f"graph input {inp.name!r} is not a tensor")
        tt = t.tensor_type
        from byocc.ops.reference import dtype_name

        try:
            dtype = dtype_name(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception:  # noqa: BLE001  (onnx raises KeyError/ValueError/TypeError)
            raise UnsupportedError(f"graph input {inp.name!r} has an unsupported element type "
                                   f"{tt.elem_type}") from None
        if dtype == "object":  # TensorProto.STRING: Relax text has no string tensor type
            raise UnsupportedError(f"graph input {inp.name!r} is a string tensor; byocc imports "
                                   "numeric and bool tensors only")
        if not tt.HasField("shape"):
            raise UnsupportedError(f"graph input {inp.name!r} has no shape; byocc needs its rank")
        dims: list = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                label = d.dim_param if d.HasField("dim_param") and d.dim_param else f"{inp.name}_dim{i}"
                key = sanitize(label)
                if key not in self.dim_vars:
                    self.dim_vars[key] = TirVar(key)
                dims.append(self.dim_vars[key])
        return TensorStructInfo(tuple(dims), dtype)

    def _import_node(self, node, onnx_ops) -> None:
        label = f"{node.op_type} (node {node.name or '(unnamed)'!r}, opset {self.opset})"
        if node.domain not in ("", "ai.onnx"):
            self._unsupported(node, f"{node.domain}::{node.op_type} (node {node.name or '(unnamed)'!r}): "
                                    "only the default ONNX domain is supported")
            return
        changed = changed_after_review(node.op_type, self.opset)
        if changed is not None:
            self._unsupported(node, f"{label}: its meaning changed in opset {changed}, after the "
                                    f"versions byocc imports (export at opset 21 or older)")
            return
        try:
            outputs = onnx_ops.import_node(self, node)
        except Poisoned:
            if not onnx_ops.is_supported(node.op_type):
                self._unsupported(node, f"{label}: no converter")
            else:
                self.poisoned.update(o for o in node.output if o)
            return
        except UnsupportedError as err:
            self._unsupported(node, f"{label}: {err.message}")
            return
        except FrontendError:
            raise
        except Exception as err:  # a converter met a malformed node: say which one
            from byocc.ir import InputError

            if isinstance(err, InputError):
                self._unsupported(node, f"{label}: {err.message}")
                return
            raise
        for name, value in zip(node.output, outputs):
            if not name:
                continue
            self._define(name, value)

    def _define(self, name: str, value: Any) -> None:
        import numpy as np

        if value is None:
            self.poisoned.add(name)
        elif isinstance(value, np.ndarray):
            self.values[name] = {"const": value, "expr": None, "init": False}
        elif isinstance(value, Constant):
            self.values[name] = {"const": value.data, "expr": value, "init": False}
        else:
            self.values[name] = {"const": None, "expr": self.emit(value, name), "init": False}

    def _unsupported(self, node, line: str) -> None:
        self.unsupported.append(line)
        self.poisoned.update(o for o in node.output if o)

    def _finish(self) -> IRModule:
        results = []
        bound = {b.var for b in self.bindings if type(b.var) is Var}
        for out in self.graph.output:
            expr = self.tensor(out.name)
            if expr not in bound:
                var = Var(self.unique(out.name), expr.struct_info)
                self.bindings.append(VarBinding(var, expr))
                expr = var
            results.append(expr)
        if not results:
            raise FrontendError("the ONNX graph has no outputs")
        body = results[0] if len(results) == 1 else Tuple(tuple(results), TupleStructInfo(
            tuple(r.struct_info for r in results)))
        params = list(self.params)
        attrs: dict = {"global_symbol": "main"}
        if self.params_as_inputs:
            attrs["num_input"] = len(params)
            order = [i.name for i in self.graph.initializer]
            params += [self.init_params[n] for n in order if n in self.init_params]
        seq = SeqExpr((DataflowBlock(tuple(self.bindings)),), body)
        func = Function(tuple(params), seq, body.struct_info, True, attrs)
        return IRModule({"main": func})


# --------------------------------------------------------------------------- helpers
def _default_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return MIN_OPSET


def _is_string_array(array) -> bool:
    """A numpy array of ONNX strings (object dtype holding bytes/str), as opposed to byocc's
    own object arrays of symbolic dimensions."""
    if getattr(array, "dtype", None) is None or array.dtype.kind not in "OSU":
        return False
    if array.dtype.kind in "SU":
        return True
    return any(isinstance(e, (bytes, str)) for e in array.flat)


def _tensor_sinfo(array) -> TensorStructInfo:
    from byocc.ops.reference import dtype_name

    return TensorStructInfo(tuple(int(d) for d in array.shape), dtype_name(array.dtype))


def _topological(graph) -> list:
    """Nodes in a dependency order (stable: the file's order when it already is one)."""
    produced = {}
    for i, node in enumerate(graph.node):
        for o in node.output:
            if o:
                produced[o] = i
    nodes = list(graph.node)
    deps = []
    for i, node in enumerate(nodes):
        deps.append({produced[x] for x in node.input if x in produced and produced[x] != i})
    if all(all(d < i for d in ds) for i, ds in enumerate(deps)):
        return nodes
    import heapq

    users: list[list[int]] = [[] for _ in nodes]
    indeg = [len(ds) for ds in deps]
    for i, ds in enumerate(deps):
        for d in ds:
            users[d].append(i)
    ready = [i for i, n in enumerate(indeg) if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        raise FrontendError("the ONNX graph has a cycle")
    return order


def load_onnx(path: str):
    """Read an ONNX file (external data beside it included); FrontendError if unreadable."""
    import onnx

    try:
        return onnx.load(path)
    except FileNotFoundError:
        raise FrontendError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise FrontendError(f"{path}: is a folder, not an ONNX file") from None
    except Exception as err:  # noqa: BLE001  (protobuf's DecodeError and friends)
        raise FrontendError(f"{path}: not a readable ONNX model ({type(err).__name__}: {err})") from None


def from_onnx(model, *, params_as_inputs: bool = False) -> IRModule:
    """Import an ONNX model (a ``ModelProto`` or a file path) as a Relax module."""
    if isinstance(model, str):
        model = load_onnx(model)
    opset = _default_opset(model)
    if opset < MIN_OPSET or opset > MAX_OPSET:
        raise UnsupportedError(f"ONNX opset {opset} is not supported (byocc imports opsets "
                               f"9-{MAX_OPSET}, and {MIN_OPSET}-8 where the operators agree)")
    return Importer(model, params_as_inputs).run()


__all__ = ["MAX_OPSET", "MIN_OPSET", "Importer", "from_onnx", "load_onnx", "sanitize"]
