"""Every output byocc writes goes through one writer (issue 9, class 1).

The writer (``byocc/cli/output.py``) writes through symlinks to their target, writes
special files (fifos, ``/proc/self/fd/1`` = ``/dev/stdout``) directly, refuses an output that
is the same file (inode) as an input, checks destinations before the work, names only the
user's path in errors, honours the umask and takes ``-`` for stdout. Each test runs every
command that writes that kind of output: ``run -o``, ``import -o`` (text and sidecar),
``partition --explain-json``, ``partition -o DIR``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli as run

from byocc.cli import cli
from byocc.cli import output

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SEED = SAMPLES / "seed.relax"
SEED_PATTERNS = SAMPLES / "seed_patterns.py"
CNN_ONNX = SAMPLES / "small_cnn.onnx"


@pytest.fixture()
def model(tmp_path):
    """A copy of seed.relax in tmp_path (inputs are never written: copies keep samples safe)."""
    path = tmp_path / "seed.relax"
    shutil.copy(SEED, path)
    return path


def _writers(tmp_path: Path, model: Path, target: Path) -> dict[str, list]:
    """One command line per writer of a single file, all writing ``target``."""
    return {
        "run -o": ["run", model, "-o", target],
        "import -o": ["import", CNN_ONNX, "-o", target],
        "--explain-json": ["partition", model, "--patterns", SEED_PATTERNS, "--explain-json", target],
    }


WRITERS = ["run -o", "import -o", "--explain-json"]


# --------------------------------------------------------------------------- symlinks
@pytest.mark.parametrize("writer", WRITERS)
def test_a_symlink_is_written_through_to_its_target(tmp_path, model, writer):
    target = tmp_path / "real.out"
    target.write_text("old\n")
    link = tmp_path / "link.out"
    link.symlink_to("real.out")
    result = run(*_writers(tmp_path, model, link)[writer])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == "real.out"
    assert target.read_bytes() != b"old\n" and target.stat().st_size > 0
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_dangling_symlink_creates_its_target(tmp_path, model, writer):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.out"
    link.symlink_to("sub/new.out")
    result = run(*_writers(tmp_path, model, link)[writer])
    assert result.exit_code == 0, result.output
    assert link.is_symlink()
    assert (tmp_path / "sub" / "new.out").stat().st_size > 0


def test_import_sidecar_symlink_is_written_through(tmp_path):
    (tmp_path / "weights.npz").write_bytes(b"")
    (tmp_path / "cnn.npz").symlink_to("weights.npz")
    result = run("import", CNN_ONNX, "-o", tmp_path / "cnn.relax")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cnn.npz").is_symlink()
    with np.load(tmp_path / "weights.npz") as npz:
        assert len(npz.files) == 15


def test_output_folder_that_is_a_symlink_is_filled_through_it(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to("real")
    written = output.write_tree_atomic(tmp_path / "link", {"a.txt": "a\n", "sub/b.bin": b"b"})
    assert written == [tmp_path / "link" / "a.txt", tmp_path / "link" / "sub" / "b.bin"]
    assert (tmp_path / "link").is_symlink()
    assert (real / "a.txt").read_text() == "a\n" and (real / "sub" / "b.bin").read_bytes() == b"b"
    dangling = tmp_path / "dangling"
    dangling.symlink_to("made")
    output.write_tree_atomic(dangling, {"c.txt": "c\n"})
    assert dangling.is_symlink() and (tmp_path / "made" / "c.txt").read_text() == "c\n"


# --------------------------------------------------------------------------- special files
@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_is_written_directly(tmp_path, model, writer):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stdout.write(str(len(open({str(fifo)!r}, 'rb').read())))"],
                              stdout=subprocess.PIPE, text=True)
    try:
        result = run(*_writers(tmp_path, model, fifo)[writer])
    finally:
        received = reader.communicate(timeout=60)[0]
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a fifo, not replaced by a file
    assert int(received) > 0


@pytest.mark.parametrize("stdout_kind", ["pipe", "file"])
def test_dev_stdout_style_link_is_written_directly(tmp_path, stdout_kind):
    """``--explain-json /dev/stdout``: /dev/stdout is a symlink to /proc/self/fd/1; a link of
    our own to the same place stands in for it, so a regression cannot replace the system's."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    cmd = [sys.executable, "-m", "byocc", "partition", str(SEED), "--patterns", str(SEED_PATTERNS),
           "--explain-json", str(link)]
    if stdout_kind == "pipe":
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        text = proc.stdout
    else:
        with open(tmp_path / "captured", "w") as f:
            proc = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, timeout=120)
        text = (tmp_path / "captured").read_text()
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert text.startswith("{\n") and '"offloaded"' in text  # the JSON, then the module
    assert text.rstrip().endswith("return gv")


# --------------------------------------------------------------------------- inputs are never outputs
def _same_file_cases(tmp_path: Path, model: Path):
    onnx = tmp_path / "m.onnx"
    shutil.copy(CNN_ONNX, onnx)
    sidecar = model.with_suffix(".npz")
    np.savez(sidecar)  # seed.relax has no constants, but a sidecar beside it is still an input
    patterns = tmp_path / "p.py"
    shutil.copy(SEED_PATTERNS, patterns)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((10, 10), "float32"), y=np.ones((10, 10), "float32"))
    hard = tmp_path / "hard.relax"
    os.link(model, hard)
    soft = tmp_path / "soft.relax"
    soft.symlink_to(model.name)
    return onnx, [
        (["run", model, "-o", model], model),
        (["run", model, "-o", sidecar], sidecar),
        (["run", model, "-o", hard], model),
        (["run", model, "-o", soft], model),
        (["run", model, "--inputs", inputs, "-o", inputs], inputs),
        (["run", onnx, "-o", onnx], onnx),
        (["import", onnx, "-o", onnx], onnx),
        (["import", onnx, "-o", tmp_path / "m.relax"], None),  # writes m.npz: not an input
        (["partition", model, "--patterns", patterns, "--explain-json", model], model),
        (["partition", model, "--patterns", patterns, "--explain-json", patterns], patterns),
        (["partition", model, "--patterns", patterns, "--explain-json", sidecar], sidecar),
    ]


def test_an_output_that_is_an_input_is_refused_before_the_work(tmp_path, model):
    onnx, cases = _same_file_cases(tmp_path, model)
    for args, clash in cases:
        before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        result = run(*args)
        if clash is None:
            assert result.exit_code == 0, (args, result.output)
            continue
        assert result.exit_code == 2, (args, result.output)
        assert "which byocc never overwrites" in result.stderr, args
        assert result.stdout == "", args  # refused before the work: no summary, no module
        after = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
        assert after == before, args


def test_stdin_redirected_from_the_output_is_refused(tmp_path, model):
    with open(model, "rb") as f:
        proc = subprocess.run([sys.executable, "-m", "byocc", "run", "-", "-o", str(model)], stdin=f,
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot write '{model}': it is the input 'stdin'" in proc.stderr
    assert model.read_text() == SEED.read_text()


def test_output_folder_file_that_is_an_input_is_refused(tmp_path, model):
    with pytest.raises(Exception, match="never overwrites"):
        from click import Context

        with Context(cli) as ctx:
            ctx.meta["byocc.inputs"] = {}
            output.note_input(model)
            output.write_tree_atomic(tmp_path, {"seed.relax": "clobbered\n"})
    assert model.read_text() == SEED.read_text()


# --------------------------------------------------------------------------- destinations first
@pytest.mark.parametrize("writer", WRITERS)
def test_a_missing_folder_is_a_usage_error_before_the_work(tmp_path, model, writer):
    target = tmp_path / "nodir" / "x.out"
    result = run(*_writers(tmp_path, model, target)[writer])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"cannot write '{target}': no folder '{target.parent}'" in result.stderr
    assert ".tmp" not in result.stderr


@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_as_folder_is_a_usage_error(tmp_path, model, writer):
    (tmp_path / "afile").write_text("x\n")
    target = tmp_path / "afile" / "x.out"
    result = run(*_writers(tmp_path, model, target)[writer])
    assert result.exit_code == 2
    assert f"cannot write '{target}': '{tmp_path / 'afile'}' is not a folder" in result.stderr


@pytest.mark.parametrize("writer", WRITERS)
def test_a_folder_as_file_is_a_usage_error(tmp_path, model, writer):
    (tmp_path / "adir").mkdir()
    result = run(*_writers(tmp_path, model, tmp_path / "adir")[writer])
    assert result.exit_code == 2
    assert f"cannot write '{tmp_path / 'adir'}': is a folder" in result.stderr


def test_dump_ir_and_output_folders_are_checked_first(tmp_path, model):
    (tmp_path / "afile").write_text("x\n")
    for option in ("-o", "--dump-ir"):
        result = run("partition", model, "--patterns", SEED_PATTERNS, option, tmp_path / "afile")
        assert result.exit_code == 2, option
        assert f"Invalid value for '{option}': cannot write '{tmp_path / 'afile'}': exists and is not a folder" \
            in result.stderr
        assert result.stdout == ""


def test_a_failing_write_names_the_users_path_not_a_temporary_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError(28, "No space left on device", src)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError) as info:
        output.write_file(str(tmp_path / "out.json"), "{}\n")
    assert info.value.filename == str(tmp_path / "out.json")
    assert info.value.strerror == "cannot write: No space left on device"
    with pytest.raises(OSError) as info:
        output.write_tree_atomic(tmp_path / "tree", {"a": "a"})
    assert info.value.filename == str(tmp_path / "tree")
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary file or folder left


# --------------------------------------------------------------------------- permissions
@pytest.fixture()
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


@pytest.mark.parametrize("writer", WRITERS)
def test_new_files_get_the_umask_permissions(tmp_path, model, writer, umask_027):
    target = tmp_path / "new.out"
    result = run(*_writers(tmp_path, model, target)[writer])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    if writer == "import -o":
        assert stat.S_IMODE(target.with_suffix(".npz").stat().st_mode) == 0o640


def test_a_replaced_file_keeps_its_mode(tmp_path, model):
    target = tmp_path / "out.npz"
    target.write_bytes(b"")
    target.chmod(0o600)
    assert run("run", model, "-o", target).exit_code == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.stat().st_size > 0


def test_a_new_output_folder_gets_the_umask_permissions(tmp_path, umask_027):
    output.write_tree_atomic(tmp_path / "out", {"a.txt": "a\n", "src/b.cc": "b\n"})
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "out" / "src").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "out" / "a.txt").stat().st_mode) == 0o640


# --------------------------------------------------------------------------- "-" is stdout
def test_run_output_dash_writes_the_npz_to_stdout(model):
    result = run("run", model, "-o", "-")
    assert result.exit_code == 0, result.output
    with np.load(io.BytesIO(result.stdout_bytes)) as npz:
        assert npz.files == ["output_0"] and npz["output_0"].shape == (10, 10)
    assert result.stderr.startswith("main: 1 output\n")  # the summary moved to stderr
    assert result.stderr.endswith("wrote 1 output to stdout\n")


def test_explain_json_dash(tmp_path, model):
    result = run("partition", model, "--patterns", SEED_PATTERNS, "--explain-json", "-")
    assert result.exit_code == 2  # stdout already holds the module
    assert "stdout holds the partitioned module" in result.stderr
    assert not (Path.cwd() / "-").exists()


def test_import_output_dash_is_stdout(tmp_path):
    result = run("import", CNN_ONNX, "-o", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith("# from tvm.script import ir as I\n")
    assert not (Path.cwd() / "-").exists()


# --------------------------------------------------------------------------- -o DIR owns what it wrote
MLP = SAMPLES / "mlp_fp16.relax"


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_a_rerun_removes_what_the_previous_run_wrote_and_this_one_does_not(tmp_path):
    out = tmp_path / "out"
    merged = run("partition", MLP, "--backend", "cutlass", "--path", "merge", "-o", out)
    assert merged.exit_code == 0, merged.stderr
    first = json.loads((out / "manifest.json").read_text())["files"]
    assert first == sorted(_tree(out))  # the manifest lists exactly what the run wrote
    assert merged.stderr == f"wrote {len(first)} files to {out}\n"
    (out / "notes.txt").write_text("mine\n")  # files byocc did not write stay
    (out / "src" / "funcs" / "mine.cu").write_text("// mine\n")
    (out / "lib").mkdir()
    (out / "lib" / "libbyocc_mlp_fp16.so").write_bytes(b"built")

    annotated = run("partition", MLP, "--backend", "cutlass", "--path", "annotate", "-o", out)
    assert annotated.exit_code == 0, annotated.stderr
    current = json.loads((out / "manifest.json").read_text())["files"]
    stale = sorted(set(first) - set(current))
    assert [Path(p).parent.name for p in stale] == ["funcs"]  # the merged wrapper
    assert annotated.stderr == f"wrote {len(current)} files to {out} and removed 1 left by the previous run\n"
    assert _tree(out) == set(current) | {"notes.txt", "src/funcs/mine.cu", "lib/libbyocc_mlp_fp16.so"}
    assert current == sorted(set(current)) and "manifest.json" in current
    symbols = {f["symbol"] for f in json.loads((out / "manifest.json").read_text())["functions"]}
    assert {Path(p).stem for p in current if p.startswith("src/funcs/")} == symbols


#: A model with a composite no codegen generates (a bare softmax under the cutlass prefix).
REFUSED = Path(__file__).resolve().parents[1] / "data" / "refused" / "softmax_fp16.relax"
REFUSED_PATTERNS = REFUSED.with_name("softmax_patterns.py")


def test_a_failed_rerun_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "out"
    assert run("partition", MLP, "--backend", "cutlass", "--path", "merge", "-o", out).exit_code == 0
    before = {p: (out / p).read_bytes() for p in _tree(out)}
    # a bare softmax composite has no CUDA code: the run fails before anything is written or removed
    failed = run("partition", REFUSED, "--patterns", REFUSED_PATTERNS, "--backend", "cutlass", "--path", "merge",
                 "-o", out)
    assert failed.exit_code == 1
    assert {p: (out / p).read_bytes() for p in _tree(out)} == before


def test_only_plain_files_byocc_listed_inside_the_folder_are_removed(tmp_path):
    from click import Context

    out = tmp_path / "out"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    with Context(cli) as ctx:
        ctx.meta["byocc.inputs"] = {}
        written, removed = output.write_output_folder(out, {"manifest.json": "{}\n", "a.txt": "a\n",
                                                            "deep/er/b.txt": "b\n", "input.relax": "x\n",
                                                            "link.txt": "l\n", "folder/c.txt": "c\n"})
        assert removed == [] and len(written) == 6
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest == {"files": ["a.txt", "deep/er/b.txt", "folder/c.txt", "input.relax", "link.txt",
                                      "manifest.json"]}
        # listed paths that lead out of the folder or are no plain relative path, a listed
        # file now a symlink, a listed folder, and one of this command's inputs stay
        manifest["files"] += ["../outside.txt", str(outside), "deep/../../outside.txt", "./a.txt", "deep//x",
                              "folder", 7, None]
        (out / "manifest.json").write_text(json.dumps(manifest))
        (out / "link.txt").unlink()
        (out / "link.txt").symlink_to(outside)
        (out / "mine.txt").write_text("mine\n")
        output.note_input(out / "input.relax")
        written, removed = output.write_output_folder(out, {"manifest.json": "{}\n", "a.txt": "a2\n"})
    assert removed == ["deep/er/b.txt", "folder/c.txt"]
    assert outside.read_text() == "keep\n"
    assert (out / "link.txt").is_symlink() and (out / "input.relax").read_text() == "x\n"
    assert not (out / "deep").exists() and not (out / "folder").exists()  # emptied folders go too
    assert _tree(out) == {"a.txt", "input.relax", "link.txt", "manifest.json", "mine.txt"}
    assert json.loads((out / "manifest.json").read_text()) == {"files": ["a.txt", "manifest.json"]}


def test_a_folder_from_an_older_byocc_or_another_tool_loses_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{"functions": []}\n')  # no "files": nothing is known as byocc's
    (out / "old.cu").write_text("// old\n")
    written, removed = output.write_output_folder(out, {"manifest.json": "{}\n", "new.cu": "// new\n"})
    assert removed == []
    assert _tree(out) == {"manifest.json", "new.cu", "old.cu"}
    (out / "manifest.json").write_text("not json")
    assert output.previous_files(out) == set()
