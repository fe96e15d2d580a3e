from pathlib import Path

import pytest

from adaexplore_mcp.tasks import TaskError, VariantRole, load_task_file, parse_task, resolve_task

GOOD = '''"""Doubles its input.

Longer description.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


n = 4096


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"n": 64}
ODD_SHAPES = [{"n": 1000}, {"n": 7}]
'''


def test_parses_variants_metadata_and_globals():
    task = parse_task(GOOD, name="double")
    assert task.summary == "Doubles its input."
    assert task.description == "Longer description."
    assert [(v.name, v.role) for v in task.variants] == [
        ("benchmark", VariantRole.BENCHMARK),
        ("small", VariantRole.SMALL),
        ("odd-1", VariantRole.ODD),
        ("odd-2", VariantRole.ODD),
    ]
    assert task.globals == {"n": 4096}
    assert [v.name for v in task.variants_for("cpu")] == ["small", "odd-1", "odd-2"]
    assert [v.name for v in task.variants_for("cuda")] == ["benchmark", "odd-1", "odd-2"]


def test_without_small_shapes_the_cpu_runs_the_benchmark_shape():
    task = parse_task(GOOD.replace('SMALL_SHAPES = {"n": 64}\n', ""), name="double")
    assert task.main_variant("cpu").name == "benchmark"


def test_hash_is_stable_and_tracks_source_and_shapes():
    first = parse_task(GOOD, name="a")
    assert parse_task(GOOD, name="renamed").hash == first.hash
    assert parse_task(GOOD.replace("x * 2", "x * 3"), name="a").hash != first.hash
    assert parse_task(GOOD.replace('{"n": 7}', '{"n": 9}'), name="a").hash != first.hash


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("class Model(nn.Module):", "class Modle(nn.Module):"),
            "defines no `class Model(nn.Module)`",
        ),
        (("def get_inputs():", "def inputs():"), "defines no `def get_inputs()`"),
        (("return x * 2", "return x *"), ":11: syntax error"),
        (
            ('SMALL_SHAPES = {"n": 64}', 'SMALL_SHAPES = {"m": 64}'),
            "overrides `m`, which the task does not define",
        ),
        (
            ('SMALL_SHAPES = {"n": 64}', "SMALL_SHAPES = dict(n=64)"),
            "SMALL_SHAPES must be a plain literal",
        ),
        (
            ('ODD_SHAPES = [{"n": 1000}, {"n": 7}]', 'ODD_SHAPES = {"n": 7}'),
            "ODD_SHAPES must be a list",
        ),
        (('SMALL_SHAPES = {"n": 64}', 'SMALL_SHAPES = {"n": [64]}'), "must be a number"),
        (('SMALL_SHAPES = {"n": 64}', 'TOLERANCE = {"atol": -1, "rtol": 0}'), "TOLERANCE must be"),
        # an infinite tolerance reached the worker as null, which killed it; the kernel was blamed
        (('SMALL_SHAPES = {"n": 64}', 'TOLERANCE = {"atol": 1e999, "rtol": 0}'), "TOLERANCE must"),
        (('SMALL_SHAPES = {"n": 64}', 'TOLERANCE = {"atol": 0, "rtol": 1e999}'), "TOLERANCE must"),
        (('SMALL_SHAPES = {"n": 64}', "READ_FRACTION = 0"), "READ_FRACTION must be a number"),
        (('SMALL_SHAPES = {"n": 64}', "READ_FRACTION = 1.5"), "READ_FRACTION must be a number"),
        (('SMALL_SHAPES = {"n": 64}', "READ_FRACTION = True"), "READ_FRACTION must be a number"),
        (('SMALL_SHAPES = {"n": 64}', "READ_FRACTION = n / 2"), "READ_FRACTION must be a plain"),
    ],
)
def test_broken_task_files_get_precise_errors(edit, expected):
    old, new = edit
    assert old in GOOD
    with pytest.raises(TaskError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        parse_task(GOOD.replace(old, new), name="broken", path=Path("broken.py"))


def test_read_fraction_is_read_without_running_the_task_and_is_no_size():
    plain = parse_task(GOOD, name="plain")
    assert plain.read_fraction == 1.0
    task = parse_task(GOOD + "\nREAD_FRACTION = 0.5\n", name="padded")
    assert task.read_fraction == 0.5
    assert "READ_FRACTION" not in task.globals
    assert all("READ_FRACTION" not in variant.overrides for variant in task.variants)


def test_error_names_file_and_line(tmp_path: Path):
    path = tmp_path / "t.py"
    path.write_text(GOOD.replace('SMALL_SHAPES = {"n": 64}', 'SMALL_SHAPES = {"m": 64}'))
    line = GOOD.splitlines().index('SMALL_SHAPES = {"n": 64}') + 1
    with pytest.raises(TaskError) as info:
        load_task_file(path)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_missing_file():
    with pytest.raises(TaskError, match="no such file"):
        load_task_file("/nonexistent/task.py")


def test_resolve_by_name_and_by_path(tmp_path: Path):
    assert resolve_task("softmax").name == "softmax"
    path = tmp_path / "mytask.py"
    path.write_text(GOOD)
    task = resolve_task(str(path))
    assert task.name == "mytask" and task.path == path
    with pytest.raises(TaskError, match="no bundled task named 'softmaxx'"):
        resolve_task("softmaxx")


@pytest.mark.parametrize("depth", [2000, 100_000])  # past the recursion limit, the parser's
def test_a_task_nested_too_deeply_is_a_task_error(tmp_path: Path, depth: int):
    source = GOOD.replace('ODD_SHAPES = [{"n": 1000}, {"n": 7}]', "m = " + "-" * depth + "1")
    with pytest.raises(TaskError, match="nests too deeply"):
        parse_task(source, name="deep")
    path = tmp_path / "deep.py"
    path.write_text(source)
    with pytest.raises(TaskError) as info:
        load_task_file(path)
    assert str(info.value).startswith(f"{path}: ")


def test_a_task_named_with_a_nul_byte_is_parsed_like_any_other():
    """The name became the parser's filename, which may hold no NUL: the service answered 500."""
    assert parse_task(GOOD, name="a\x00b").name == "a\x00b"


def test_a_fifo_for_a_task_is_refused_at_once(tmp_path: Path):
    """Opening a FIFO for reading waits for a writer: the CLI hung on one (a red team)."""
    import os
    import threading

    path = tmp_path / "task.py"
    os.mkfifo(path)
    failed: list[BaseException] = []
    worker = threading.Thread(target=lambda: _load_into(path, failed), daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # let the blocked open return before failing the test
        with open(path, "wb"):
            pass
        worker.join(timeout=10)
        pytest.fail("loading a FIFO blocked")
    assert failed and "not a regular file" in str(failed[0])


def _load_into(path: Path, failed: list[BaseException]) -> None:
    try:
        load_task_file(path)
    except TaskError as exc:
        failed.append(exc)


def test_a_directory_for_a_task_is_refused_and_leaves_no_descriptor_open(tmp_path: Path):
    """``open`` refused the directory only after ``os.open`` had opened it: every call left a
    descriptor open, until an MCP server could open no file at all (a red team)."""
    import os

    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(TaskError, match="not a regular file"):
            load_task_file(tmp_path)
    assert len(os.listdir("/proc/self/fd")) <= before
