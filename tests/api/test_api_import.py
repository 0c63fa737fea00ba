"""``import byocc.relax`` stays light: only ``byocc.ir`` loads; ``op``, ``transform``,
``analysis``, ``dpl`` and ``backend`` load on first use, and even the seed script's imports
never load onnx, the frontend or the runtime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "onnx", "lark", "rich", "click")


def loaded_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nsys.stderr.write(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr))


def layers(mods: set[str]) -> set[str]:
    return {m.split(".")[1] for m in mods if m.startswith("byocc.") and m.count(".") >= 1}


def test_import_loads_only_the_ir():
    mods = loaded_after("import byocc.relax")
    assert sorted(m for m in mods if m.split(".")[0] in HEAVY) == []
    assert layers(mods) == {"ir", "relax"}


def test_submodules_load_on_first_use():
    mods = loaded_after("from byocc import relax\nrelax.op.add")
    assert {"ops", "relax"} <= layers(mods) and "transform" not in layers(mods)
    mods = loaded_after("from byocc import relax\nrelax.transform.FuseOpsByPattern")
    assert "transform" in layers(mods) and "backends" not in layers(mods)


def test_seed_imports_skip_onnx_frontend_runtime_and_the_parser():
    mods = loaded_after(
        "from byocc import relax\n"
        "from byocc.relax.dpl.pattern import is_op, wildcard\n"
        "from byocc.relax.transform import PatternCheckContext\n"
        "from byocc.relax.backend.cuda.cutlass import partition_for_cutlass\n"
        "from byocc.relax.backend.cuda.cublas import partition_for_cublas\n")
    assert not {"frontend", "runtime", "cli", "script"} & layers(mods)
    assert "onnx" not in mods and "lark" not in mods


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    from byocc import relax

    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        relax.nosuch  # noqa: B018
    assert relax.call_tir is relax.op.call_tir
