"""Every operator call in the conformance corpus: the registry's inference must give the
type TVM printed on the binding.

The .relax files are Python syntax, so a small ``ast`` evaluator (independent of
byocc.text) reads parameter and binding annotations and rebuilds each ``R.<op>(...)`` call
through ``lookup_printed`` / ``bind`` / ``make_call``.
"""

from __future__ import annotations

import ast
import os

import pytest
from conftest import SHARED_MISSING
from conftest import shared_glob

from byocc.ir import ObjectStructInfo
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ops import lookup_printed
from byocc.ops import make_call

FILES = [str(p) for p in shared_glob("conformance/cases/*/*.relax")]


class Skip(Exception):
    pass


class Evaluator:
    def __init__(self, typevars: set):
        self.typevars = typevars
        self.dims: dict = {}
        self.env: dict = {}

    def dim(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.dims:
                self.dims[node.id] = TirVar(node.id)
            return self.dims[node.id]
        if isinstance(node, ast.BinOp):
            a, b = self.dim(node.left), self.dim(node.right)
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}[type(node.op)]
            from byocc.ir import simplify_binary

            return simplify_binary(op, a, b)
        raise Skip(f"dim {ast.dump(node)}")

    def sinfo(self, node):
        """Evaluate a type annotation."""
        name = ast.unparse(node.func if isinstance(node, ast.Call) else node)
        if name == "R.Tensor":
            shape, dtype, ndim = None, None, -1
            if isinstance(node, ast.Call):
                if node.args:
                    shape = tuple(self.dim(d) for d in node.args[0].elts)
                for kw in node.keywords:
                    if kw.arg == "dtype":
                        dtype = kw.value.value
                    elif kw.arg == "ndim":
                        ndim = ast.literal_eval(kw.value)
            return TensorStructInfo(shape, dtype, ndim)
        if name == "R.Tuple":
            if isinstance(node, ast.Call):
                return TupleStructInfo(tuple(self.sinfo(a) for a in node.args))
            return TupleStructInfo(())
        if name == "R.Shape":
            return ShapeStructInfo(tuple(self.dim(d) for d in node.args[0].elts))
        if name in ("R.Any", "R.Object"):
            return ObjectStructInfo()
        if name.startswith("T."):
            return PrimStructInfo(name[2:])
        raise Skip(f"type {name}")

    def value(self, node):
        """Evaluate an argument to the raw values bind() accepts."""
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise Skip(f"unknown name {node.id}")
            return self.env[node.id]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.value(node.operand)
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [self.value(e) for e in node.elts]
            if isinstance(node, ast.Tuple) and all(isinstance(v, Var) for v in vals) and vals:
                from byocc.ops.convert import make_tuple

                return make_tuple(vals)
            return vals
        if isinstance(node, ast.Call):
            callee = ast.unparse(node.func)
            if callee == "R.shape":
                return ShapeExpr(tuple(self.dim(d) for d in node.args[0].elts))
            if callee == "R.const":
                from byocc.ops.convert import make_scalar_constant

                dtype = node.args[1].value if len(node.args) > 1 else None
                return make_scalar_constant(self.value(node.args[0]), dtype)
            if callee.startswith("T.") and len(node.args) == 1:
                return PrimValue(node.args[0].value, callee[2:])
            if callee.startswith("R."):
                return self.op_call(node)
        raise Skip(f"value {ast.unparse(node)}")

    def op_call(self, node):
        dotted = ast.unparse(node.func)[2:]
        pos = [self.value(a) for a in node.args]
        kw = {k.arg: self.value(k.value) for k in node.keywords}
        opdef = lookup_printed(dotted, len(pos), kw)
        if opdef is None:
            raise Skip(f"op {dotted}")
        args, attrs = opdef.bind(pos, kw)
        return make_call(opdef, args, attrs)


def _statements(body):
    """Statements of a function body, entering ``with`` blocks but not nested functions."""
    for stmt in body:
        if isinstance(stmt, ast.With):
            yield from _statements(stmt.body)
        elif not isinstance(stmt, ast.FunctionDef):
            yield stmt


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


def check_file(path: str):
    """Returns (n_checked, list of mismatches)."""
    src = open(path).read()
    tree = ast.parse(src)
    typevars = {t.targets[0].id for t in tree.body if isinstance(t, ast.Assign)}
    checked, bad, skipped = 0, [], []
    for fn in _functions(tree):
        ev = Evaluator(typevars)
        for p in fn.args.args:
            ev.env[p.arg] = Var(p.arg, ev.sinfo(p.annotation))
        for stmt in _statements(fn.body):
            if not isinstance(stmt, ast.AnnAssign):
                continue
            ann = ev.sinfo(stmt.annotation)
            value = stmt.value
            if isinstance(value, ast.Call) and ast.unparse(value.func).startswith("R."):
                try:
                    call = ev.op_call(value)
                except Skip as e:
                    skipped.append((stmt.lineno, str(e)))
                else:
                    checked += 1
                    if call.struct_info != ann:
                        bad.append((stmt.lineno, ast.unparse(value), ann, call.struct_info))
            ev.env[stmt.target.id] = Var(stmt.target.id, ann)
    return checked, bad, skipped


@pytest.mark.skipif(not FILES, reason=SHARED_MISSING)
def test_every_corpus_op_call_gets_the_annotated_type():
    total, failures, skipped = 0, [], []
    for path in FILES:
        n, bad, skip = check_file(path)
        total += n
        case = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
        failures += [(case,) + b for b in bad]
        skipped += [(case,) + s for s in skip]
    assert not skipped, "\n".join(map(str, skipped[:10]))
    assert total > 15000  # the corpus holds ~16k annotated op calls (inputs and expected outputs)
    assert not failures, "\n".join(map(str, failures[:10]))


def test_evaluator_detects_a_wrong_annotation(tmp_path):
    """The corpus check would notice an inference mismatch."""
    bad = tmp_path / "bad.relax"
    bad.write_text(
        "@I.ir_module\nclass Module:\n    @R.function\n"
        "    def main(x: R.Tensor((4, 8), dtype=\"float32\")) -> R.Tensor((8, 4), dtype=\"float32\"):\n"
        "        y: R.Tensor((4, 8), dtype=\"float32\") = R.permute_dims(x, axes=None)\n"
        "        return y\n")
    n, mismatches, _ = check_file(str(bad))
    assert n == 1 and len(mismatches) == 1
