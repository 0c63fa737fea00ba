"""``--patterns FILE.py`` loading (conformance README, "patterns.py")."""

from __future__ import annotations

import os

import pytest
from conftest import SHARED_MISSING
from conftest import params_or_skip
from conftest import shared_glob

from byocc.backends import backend_of
from byocc.backends import load_pattern_file
from byocc.backends import pattern_file_namespace
from byocc.dpl import CallPattern
from byocc.dpl import FusionPattern
from byocc.ir import PatternError

CORPUS_FILES = [str(p) for p in shared_glob("conformance/cases/*/patterns.py")]
EXAMPLE_FILES = [str(p) for p in shared_glob("spec/partitioning-examples/*/patterns.py")]


@pytest.mark.parametrize("path", params_or_skip(CORPUS_FILES + EXAMPLE_FILES),
                         ids=lambda p: os.path.basename(os.path.dirname(p)) if p else "no-shared")
def test_every_shared_pattern_file_loads(path):
    entries = load_pattern_file(path)
    assert all(isinstance(e, FusionPattern) for e in entries)
    assert all(isinstance(e.name, str) for e in entries)


def test_corpus_file_count():
    if not CORPUS_FILES:
        pytest.skip(SHARED_MISSING)
    assert len(CORPUS_FILES) == 62


def write(tmp_path, text, name="p.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_namespace_names():
    ns = pattern_file_namespace()
    for name in ("is_op", "wildcard", "is_const", "is_var", "is_dfv", "is_tuple", "is_tuple_get_item",
                 "is_gv", "GlobalVarPattern", "TuplePattern", "make_fused_bias_activation_pattern",
                 "make_matmul_pattern", "make_conv2d_pattern", "make_residual_block_pattern",
                 "make_layer_norm_pattern", "make_rms_norm_pattern", "make_attention_pattern",
                 "make_stacked_attention_pattern"):
        assert callable(ns[name]), name
    assert ns["__builtins__"]["len"] is len


def test_entries_in_file_order_with_tuples_of_2_to_4(tmp_path):
    path = write(tmp_path, (
        "def check(ctx):\n    return True\n"
        "patterns = [\n"
        "    ('a.one', is_op('relax.nn.relu')(wildcard())),\n"
        "    ('a.two', *make_matmul_pattern(with_bias=True)),\n"
        "    ('a.three', *make_matmul_pattern(), check),\n"
        "]\n"))
    entries = load_pattern_file(path)
    assert [e.name for e in entries] == ["a.one", "a.two", "a.three"]
    assert list(entries[1].annotation_patterns) == ["lhs", "rhs", "root", "bias"]
    assert entries[2].check.__name__ == "check"


def test_make_fused_bias_activation_pattern_works_spread_or_not(tmp_path):
    path = write(tmp_path, (
        "p = make_fused_bias_activation_pattern('relax.matmul', with_bias=True)\n"
        "q = make_fused_bias_activation_pattern('relax.nn.conv2d')\n"
        "patterns = [('x.a', p), ('x.b', *p), ('x.c', *q)]\n"))
    a, b, c = load_pattern_file(path)
    assert a.pattern is b.pattern and isinstance(a.pattern, CallPattern)
    assert list(b.annotation_patterns) == ["lhs", "rhs", "root", "bias"]
    assert c.annotation_patterns["root"] is c.pattern


def test_tvm_imports_work_and_unmapped_tvm_modules_are_refused(tmp_path):
    path = write(tmp_path, (
        "from tvm.relax.dpl import is_op, wildcard\n"
        "from tvm.relax.backend.utils import has_leaking_intermediate_variables\n"
        "import math\n"
        "patterns = [('t.exp', is_op('relax.exp')(wildcard()), {}, lambda c: not has_leaking_intermediate_variables(c))]\n"))
    assert [e.name for e in load_pattern_file(path)] == ["t.exp"]
    bad = write(tmp_path, "import os\nimport tvm.topi\npatterns = []\n", "bad.py")
    with pytest.raises(PatternError, match=r"can import the pattern language from tvm.relax.dpl, "
                                           r"tvm.relax.backend and tvm.relax.transform, not "
                                           r"'tvm.topi'") as info:
        load_pattern_file(bad)
    assert info.value.span.line == 2 and str(info.value).startswith(bad + ":2:")


def test_errors_are_located(tmp_path):
    path = write(tmp_path, "x = 1\n\npatterns = [('a.b', undefined_name())]\n")
    with pytest.raises(PatternError, match="NameError: name 'undefined_name' is not defined") as info:
        load_pattern_file(path)
    assert info.value.span.source == path and info.value.span.line == 3
    path = write(tmp_path, "patterns = [\n  ('a.b',\n", "syntax.py")
    with pytest.raises(PatternError, match="invalid syntax") as info:
        load_pattern_file(path)
    assert info.value.span.line >= 1
    path = write(tmp_path, "p = 1\n", "nopatterns.py")
    with pytest.raises(PatternError, match="does not define a list named 'patterns'"):
        load_pattern_file(path)
    path = write(tmp_path, "x = 0\npatterns = [('a.b',)]\n", "short.py")
    with pytest.raises(PatternError, match=r"patterns\[0\]: a pattern entry must have 2 to 5") as info:
        load_pattern_file(path)
    assert info.value.span.line == 2
    path = write(tmp_path, "patterns = [('a.b', 3)]\n", "notpattern.py")
    with pytest.raises(PatternError, match="expected a pattern, got int"):
        load_pattern_file(path)
    path = write(tmp_path, "def helper():\n    return is_op('relax.add')(wildcard(), 5)\npatterns = [('a.b', helper())]\n",
                 "inner.py")
    with pytest.raises(PatternError, match="argument 1 of a call pattern must be a pattern") as info:
        load_pattern_file(path)
    assert info.value.span.line == 2
    with pytest.raises(PatternError, match="cannot read pattern file"):
        load_pattern_file(os.path.join(str(tmp_path), "missing.py"))


def test_backend_of():
    assert backend_of("cutlass.matmul_bias") == "cutlass"
    assert backend_of("a.b.c") == "a"
    assert backend_of("nodot") is None


def test_tvm_style_table_file(tmp_path):
    path = write(tmp_path, (
        "import tvm.relax.backend.cuda.cutlass  # registers the table\n"
        "from tvm.relax.backend.pattern_registry import get_patterns_with_prefix\n"
        "patterns = get_patterns_with_prefix('cutlass')\n"))
    entries = load_pattern_file(path)
    assert len(entries) == 79 and entries[0].name == "cutlass.rms_norm"


def test_check_result_is_a_bool_with_a_reason():
    from byocc.dpl import ACCEPT
    from byocc.dpl import CheckResult
    from byocc.dpl import check_reason
    from byocc.dpl import fail

    bad = fail("lhs dtype bfloat16 not in {float16, float32, int8, uint8}")
    assert not bad and bad == False and bad.reason.startswith("lhs dtype")  # noqa: E712
    assert ACCEPT and isinstance(ACCEPT, CheckResult)
    assert check_reason(bad) == bad.reason and check_reason(ACCEPT) is None and check_reason(False) is None
