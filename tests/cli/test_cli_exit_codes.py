"""One exit code per class of failure, the same for every command, as the README's table
says (issue 22, item 5):

- 2, a usage error: a file or folder named on the command line that does not exist or is
  of the wrong kind, and an output location that cannot be written (no such folder, a file
  where a folder is wanted or the reverse, a kernel file system such as ``/proc``, no
  permission, a write that fails midway);
- 1, bad input: what is inside a file that was read is wrong, e.g. a ``build`` folder
  without a (valid) ``manifest.json``.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import run_cli as run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
SEED = SAMPLES / "seed.relax"
SEED_PATTERNS = SAMPLES / "seed_patterns.py"
CNN_ONNX = SAMPLES / "small_cnn.onnx"
EXIT_INPUT, EXIT_USAGE = 1, 2


@pytest.fixture()
def where(tmp_path):
    """tmp_path with a file ``afile``, an empty folder ``empty`` and a copy of seed.relax."""
    (tmp_path / "afile").write_text("not a model\n")
    (tmp_path / "empty").mkdir()
    shutil.copy(SEED, tmp_path / "seed.relax")
    return tmp_path


PATTERNS = ["--patterns", SEED_PATTERNS]

# (command line with {d} for the folder, expected code, a part of the message)
MISSING_OR_WRONG_KIND = [
    (["show", "{d}/nope.relax"], "no such file"),
    (["check", "{d}/nope.relax"], "no such file"),
    (["run", "{d}/nope.relax"], "no such file"),
    (["verify", "{d}/nope.relax", *PATTERNS], "no such file"),
    (["partition", "{d}/nope.relax", *PATTERNS], "no such file"),
    (["partition", "{d}/nope.onnx", "--backend", "cutlass"], "no such file"),
    (["import", "{d}/nope.onnx"], "no such file"),
    (["build", "{d}/nope"], "does not exist"),
    (["partition", "{d}/seed.relax", "--patterns", "{d}/nope.py"], "cannot read pattern file: no such file"),
    (["run", "{d}/seed.relax", "--inputs", "{d}/nope.npz"], "no such file"),
    (["show", "{d}/empty"], "is a folder"),
    (["run", "{d}/empty"], "is a folder"),
    (["import", "{d}/empty"], "is a folder, not an ONNX file"),
    (["partition", "{d}/seed.relax", "--patterns", "{d}/empty"], "cannot read pattern file: is a folder"),
    (["run", "{d}/seed.relax", "--inputs", "{d}/empty"], "is a folder"),
    (["build", "{d}/afile"], "is a file"),
    (["build", "{d}/empty", "--cutlass-dir", "{d}/nope"], "does not exist"),
]

UNUSABLE_OUTPUT = [
    (["partition", "{d}/seed.relax", *PATTERNS, "-o", "{d}/afile"], "exists and is not a folder"),
    (["partition", "{d}/seed.relax", *PATTERNS, "-o", "/proc/byocc-out"], "none can be created in /proc"),
    (["partition", "{d}/seed.relax", *PATTERNS, "--dump-ir", "/proc/byocc-out"], "none can be created in /proc"),
    (["partition", "{d}/seed.relax", *PATTERNS, "--explain-json", "/proc/x.json"], "none can be created in /proc"),
    (["partition", "{d}/seed.relax", *PATTERNS, "--explain-json", "{d}/nodir/x.json"], "no folder"),
    (["run", "{d}/seed.relax", "-o", "/proc/x.npz"], "none can be created in /proc"),
    (["run", "{d}/seed.relax", "-o", "/sys/x.npz"], "none can be created in /sys"),
    (["run", "{d}/seed.relax", "-o", "{d}/empty"], "is a folder"),
    (["import", str(CNN_ONNX), "-o", "/proc/x.relax"], "none can be created in /proc"),
    (["import", str(CNN_ONNX), "-o", "{d}/afile/x.relax"], "is not a folder"),
    (["show", "{d}/seed.relax", "-o", "/proc/x.relax"], "none can be created in /proc"),
    (["show", "{d}/seed.relax", "-o", "{d}/nodir/x.relax"], "no folder"),
]


def _args(args: list, where: Path) -> list[str]:
    return [str(a).replace("{d}", str(where)) for a in args]


@pytest.mark.parametrize(("args", "message"), MISSING_OR_WRONG_KIND, ids=lambda v: " ".join(map(str, v))
                         if isinstance(v, list) else None)
def test_a_missing_path_or_one_of_the_wrong_kind_is_a_usage_error(where, args, message):
    result = run(*_args(args, where))
    assert result.exit_code == EXIT_USAGE, result.output
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("args", "message"), UNUSABLE_OUTPUT, ids=lambda v: " ".join(map(str, v))
                         if isinstance(v, list) else None)
def test_an_unusable_output_location_is_a_usage_error_before_the_work(where, args, message):
    before = sorted(p.name for p in where.iterdir())
    result = run(*_args(args, where))
    assert result.exit_code == EXIT_USAGE, result.output
    assert message in result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in where.iterdir()) == before  # nothing written


@pytest.mark.parametrize("args", [
    ["partition", "{d}/seed.relax", *PATTERNS, "-o", "{d}/out"],
    ["run", "{d}/seed.relax", "-o", "{d}/out.npz"],
    ["import", str(CNN_ONNX), "-o", "{d}/out.relax"],
    ["show", "{d}/seed.relax", "-o", "{d}/out.relax"],
], ids=["partition -o", "run -o", "import -o", "show -o"])
def test_a_write_that_fails_midway_is_the_same_usage_error_naming_the_output(where, args, monkeypatch):
    def disk_full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", disk_full)
    result = run(*_args(args, where))
    assert result.exit_code == EXIT_USAGE, result.output
    target = str(Path(_args(args, where)[-1]).with_suffix(""))  # import -o writes OUT.npz first
    assert re.search(rf"^{re.escape(target)}\S*: error: cannot write: No space left on device$", result.stderr,
                     re.M), result.stderr
    assert ".tmp" not in result.stderr


def test_an_unwritable_output_folder_is_a_usage_error(where, monkeypatch):
    # (tests run as root too, where permissions do not refuse: the check is what is tested)
    real = os.access

    def read_only(path, mode, **kw):
        if Path(path) == where / "ro" and mode & os.W_OK:
            return False
        return real(path, mode, **kw)

    (where / "ro").mkdir()
    (where / "ro" / "manifest.json").write_text("{}\n")
    monkeypatch.setattr(os, "access", read_only)
    for args in (["partition", "{d}/seed.relax", *PATTERNS, "-o", "{d}/ro"], ["build", "{d}/ro"],
                 ["run", "{d}/seed.relax", "-o", "{d}/ro/x.npz"]):
        result = run(*_args(args, where))
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert "permission denied" in result.stderr, args


@pytest.mark.parametrize(("manifest", "message"), [
    (None, "{m}: error: no manifest (write one with `byocc partition MODEL -o {d}`)"),
    ("{", "{m}:1:2: error: not valid JSON: Expecting property name enclosed in double quotes"),
    ("[]", "{m}: error: the manifest must be a JSON object"),
    ("{}", "{m}: error: missing field 'abi_version'"),
])
def test_a_build_folder_without_a_valid_manifest_is_bad_input(where, manifest, message):
    if manifest is not None:
        (where / "empty" / "manifest.json").write_text(manifest)
    result = run("build", where / "empty")
    assert result.exit_code == EXIT_INPUT, result.output
    # one located message: the manifest named once, one "error:"
    first = result.stderr.splitlines()[0]
    assert first == message.format(m=where / "empty" / "manifest.json", d=where / "empty")
    assert result.stderr.count("error:") == 1 and result.stderr.count("manifest.json") == 1


def test_a_manifest_error_from_the_library_names_the_manifest_once(where):
    from byocc.backends.manifest import load_manifest
    from byocc.ir import InputError

    (where / "empty" / "manifest.json").write_text('{"abi_version": 1,\n "functions": [}')
    with pytest.raises(InputError) as info:
        load_manifest(where / "empty")
    assert str(info.value) == f"{where / 'empty' / 'manifest.json'}:2:16: not valid JSON: Expecting value"
    result = run("build", where / "empty")
    assert result.stderr.splitlines() == [
        f"{where / 'empty' / 'manifest.json'}:2:16: error: not valid JSON: Expecting value",
        ' "functions": [}', "               ^"]


@pytest.mark.parametrize("args", [
    ["show", "{d}/afile"],
    ["import", "{d}/afile"],
    ["run", "{d}/seed.relax", "--inputs", "{d}/afile"],
], ids=["show", "import", "run --inputs"])
def test_a_readable_file_with_wrong_content_is_bad_input(where, args):
    result = run(*_args(args, where))
    assert result.exit_code == EXIT_INPUT, result.output


def test_the_readme_exit_code_table_names_each_class():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Exit codes and errors"):]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M))
    assert set(rows) >= {"0", "1", "2", "3", "70"}
    assert "without a manifest" in rows["1"]
    for words in ("does not exist", "wrong kind", "output location that cannot be written", "/proc"):
        assert words in rows["2"], words
    assert "missing file" not in rows["1"]  # now a usage error
