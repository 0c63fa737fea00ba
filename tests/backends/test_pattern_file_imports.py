"""Pattern files are the user's own Python: they import what they like (issue 11).

``tvm`` names map onto byocc's (in the file and in its helper modules), the file's folder
is on the import path while it runs, and the import state is restored afterwards.
"""

from __future__ import annotations

import sys
import types

import pytest

from byocc.backends import load_pattern_file
from byocc.ir import PatternError


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return str(path)


HELPER = (
    "from tvm.relax.dpl import is_op, wildcard\n"
    "NAME = {name!r}\n"
    "def unary(op):\n"
    "    return is_op(op)(wildcard())\n"
)
PATTERNS = (
    "import os\n"
    "import json\n"
    "import my_helpers\n"
    "from my_helpers import unary\n"
    "HERE = os.path.basename(os.path.dirname(__file__))\n"
    "patterns = [(my_helpers.NAME + '.' + HERE, unary('relax.exp'))]\n"
)


def test_a_pattern_file_imports_the_stdlib_and_its_own_helper_module(tmp_path):
    write(tmp_path / "a", "my_helpers.py", HELPER.format(name="alpha"))
    path = write(tmp_path / "a", "patterns.py", PATTERNS)
    [entry] = load_pattern_file(path)
    assert entry.name == "alpha.a"
    assert str(entry.pattern) == 'is_op("relax.exp")(wildcard())'


def test_helper_modules_are_imported_afresh_for_each_file(tmp_path):
    write(tmp_path / "a", "my_helpers.py", HELPER.format(name="alpha"))
    write(tmp_path / "b", "my_helpers.py", HELPER.format(name="beta"))
    first = write(tmp_path / "a", "patterns.py", PATTERNS)
    second = write(tmp_path / "b", "patterns.py", PATTERNS)
    assert [e.name for e in load_pattern_file(first)] == ["alpha.a"]
    assert [e.name for e in load_pattern_file(second)] == ["beta.b"]


def test_import_state_is_restored_even_when_the_file_fails(tmp_path):
    write(tmp_path, "my_helpers.py", HELPER.format(name="alpha"))
    path = write(tmp_path, "patterns.py", "import my_helpers\nraise RuntimeError('boom')\n")
    fake = types.ModuleType("tvm")
    sys.modules["tvm"] = fake  # a real TVM loaded by the caller stays theirs
    path_before, meta_before = list(sys.path), list(sys.meta_path)
    try:
        with pytest.raises(PatternError, match=r"RuntimeError: boom") as info:
            load_pattern_file(path)
        assert info.value.span.line == 2
        assert sys.modules["tvm"] is fake
        assert "tvm.relax.dpl" not in sys.modules and "my_helpers" not in sys.modules
        assert sys.path == path_before and sys.meta_path == meta_before
    finally:
        del sys.modules["tvm"]


def test_errors_in_imports_are_located_at_the_import(tmp_path):
    path = write(tmp_path, "missing.py", "x = 1\nimport not_a_module_anywhere\npatterns = []\n")
    with pytest.raises(PatternError, match=r"ModuleNotFoundError: No module named "
                                           r"'not_a_module_anywhere'") as info:
        load_pattern_file(path)
    assert info.value.span.line == 2
    write(tmp_path / "c", "broken_helper.py", "from tvm.relax.dpl import is_op\n1 / 0\n")
    path = write(tmp_path / "c", "patterns.py", "\n\nimport broken_helper\npatterns = []\n")
    with pytest.raises(PatternError, match=r"ZeroDivisionError: division by zero") as info:
        load_pattern_file(path)
    assert info.value.span.line == 3  # the line of the pattern file that imported it
