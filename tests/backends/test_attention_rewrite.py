"""partition_for_cutlass step 1 (the attention rewrites) against TVM 0.27's goldens, and the
two TVM defects byocc does not copy.

Goldens: tests/data/attention_rewrite (made by tools/gen_attention_goldens.py with TVM 0.27;
its README lists the cases). Every rewrite is also checked numerically: the interpreter runs
the module before and after step 1 on fresh random inputs and the results must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from byocc.backends.cutlass.rewrites import rewrite_attention
from byocc.ir import Function
from byocc.ir.well_formed import well_formed
from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
from byocc.script import from_source
from byocc.transform import map_functions

DATA = Path(__file__).parents[1] / "data" / "attention_rewrite"
CASES = sorted(p.stem for p in DATA.glob("*.relax"))
STEPS = ("rewrite", "annotate", "composite")


def _load(case: str):
    return from_source((DATA / f"{case}.relax").read_text())


def _step1(mod, mqa: bool):
    return map_functions(mod, lambda f: rewrite_attention(f, mqa))


def _run(case: str, step: str) -> str:
    mod = _load(case)
    mqa = not case.endswith("_nomqa")
    if step == "rewrite":
        return _step1(mod, mqa).script() + "\n"
    return partition_for_cutlass(mod, annotate_codegen=step == "annotate", use_flash_mqa=mqa).script() + "\n"


def _tvm_error(case: str) -> str | None:
    path = DATA / f"{case}.rewrite.error.txt"
    return path.read_text().strip() if path.exists() else None


GOLDEN = [(c, s) for c in CASES for s in STEPS if (DATA / f"{c}.{s}.txt").exists()]
TVM_FAILS = [c for c in CASES if _tvm_error(c) is not None]


def test_corpus_is_complete():
    """Every case has, per step, either TVM's output or TVM's error."""
    assert len(CASES) >= 80
    for c in CASES:
        for s in STEPS:
            assert (DATA / f"{c}.{s}.txt").exists() or (DATA / f"{c}.{s}.error.txt").exists(), (c, s)


@pytest.mark.parametrize("case,step", GOLDEN, ids=[f"{c}-{s}" for c, s in GOLDEN])
def test_matches_tvm(case, step):
    assert _run(case, step) == (DATA / f"{case}.{step}.txt").read_text()


def _rewritten(text: str) -> bool:
    return "R.nn.attention(" in text or "R.nn.attention_bias(" in text


@pytest.mark.parametrize("case", CASES)
def test_step1_computes_what_the_input_computes(case):
    """The rewritten module gives the original module's results on random inputs (the
    interpreter's R.nn.attention against the hand-written chain it replaces)."""
    import numpy as np

    from byocc.runtime import Interpreter
    from byocc.runtime import random_arguments

    original = _load(case)
    rewritten = _step1(original, not case.endswith("_nomqa"))
    assert not well_formed(rewritten)
    # the bias (b, s, s) of this case only broadcasts against (b*4, s, s) when b == 1
    dims = {"b": 1} if case == "bias_symbolic_b_s_s" else None
    for name in original.names():
        func = original[name]
        if not isinstance(func, Function):
            continue
        # inputs scaled so that float16 scores stay moderate: the chain rounds its scores to
        # float16 before the softmax, the attention reference does not
        args = [np.asarray(a * 0.25, dtype=a.dtype) if getattr(a, "dtype", None) is not None and a.dtype.kind == "f" else a
                for a in random_arguments(func, seed=7, dims=dims).values()]
        expected = Interpreter(original).run(args, name)
        actual = Interpreter(rewritten).run(args, name)
        exp = expected if isinstance(expected, (list, tuple)) else [expected]
        act = actual if isinstance(actual, (list, tuple)) else [actual]
        for e, a in zip(exp, act):
            e, a = np.asarray(e, dtype=np.float64), np.asarray(a, dtype=np.float64)
            assert e.shape == a.shape
            np.testing.assert_allclose(a, e, rtol=2e-2, atol=2e-3, err_msg=f"{case}:{name}")


BSH_OUT = [c for c in TVM_FAILS if "shape must be a tuple/list" in _tvm_error(c)]
UNPACK = [c for c in TVM_FAILS if "cannot unpack non-iterable NoneType" in _tvm_error(c)]


@pytest.mark.parametrize("case", BSH_OUT)
def test_tvm_defect_bsh_output_rewrite_raises_type_error(case):
    """TVM 0.27 raises TypeError for every chain with a BSH output (its rewriter passes an
    FFI array to R.reshape). byocc performs the rewrite TVM intends: R.nn.attention on
    (B, S, 1, H) views and a reshape back to the chain's (B, S, H) output; the full driver
    then offloads the attention."""
    text = _run(case, "rewrite")
    assert _rewritten(text)
    for step in ("annotate", "composite"):
        out = _run(case, step)
        assert "cutlass.attention" in out and "workspace_main" in out, step


@pytest.mark.parametrize("case", UNPACK)
def test_tvm_defect_qkv_check_failure_raises_unpack_type_error(case):
    """TVM 0.27 raises TypeError (unpacking None) when a q/k/v sub-check fails after the
    chain matched structurally (wrong permutation, wrong rank). byocc treats it as any failed
    check: that pattern does not apply. What a later pattern may still rewrite (the 3-D core
    of a BSNH chain as a one-head attention) keeps the module's results (checked by
    test_step1_computes_what_the_input_computes) and both driver modes give well-formed
    modules."""
    original = _load(case)
    rewritten = _step1(original, True)
    assert not well_formed(rewritten)
    # the mismatching permutation is still computed: its permute_dims is not dropped
    assert rewritten.script().count("R.permute_dims") >= 1
    for step in ("annotate", "composite"):
        assert not well_formed(from_source(_run(case, step)))


def test_defect_lists_are_not_empty():
    assert len(BSH_OUT) >= 10 and len(UNPACK) >= 5


def test_use_flash_mqa_keeps_the_unrepeated_key_and_value():
    mod = _load("mqa_repeat_kv_cast")
    with_mqa = _step1(mod, True).script()
    without = _step1(mod, False).script()
    assert "R.repeat" not in with_mqa and _rewritten(with_mqa)
    assert with_mqa != without


def test_unknown_scale_value_is_a_clear_error():
    """A metadata scale without its .npz sidecar has no value to put into the attention."""
    from byocc.ir import ByoccError

    text = (DATA / "combo_bsnh_bsnh_nobias_nocast_f16.relax").read_text()
    src = _load("combo_bsnh_bsnh_nobias_nocast_f16").script()
    assert "R.const(" in text or "metadata" in src
    mod = _load("combo_bsnh_bsnh_nobias_nocast_f16")
    # drop the scale's value, as reading metadata without a sidecar does
    from byocc.ir import Constant
    from byocc.ir.functor import ExprMutator

    class Forget(ExprMutator):
        def visit_constant_(self, e):
            return Constant(None, e.struct_info, e.span)

    func = Forget().visit_expr(mod["main"])
    with pytest.raises(ByoccError, match="scale"):
        rewrite_attention(func)
