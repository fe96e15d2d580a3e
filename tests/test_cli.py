"""The command line, end to end (eval runs as a real subprocess)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from adaexplore_mcp.cli import app
from adaexplore_mcp.tasks import bundled_solution, bundled_tasks

from .conftest import run_cli as cli

runner = CliRunner()


def test_eval_solution_as_json(tmp_path):
    proc = cli("eval", "softmax", "--solution", "--json", "--device", "cpu", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "correct"
    assert result["timing_meaningful"] is False
    assert (tmp_path / "adaexplore.sqlite3").exists()


def test_eval_any_verdict_exits_zero_and_reads_stdin(tmp_path):
    code = (
        "import os\nimport torch.nn as nn\n\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        os._exit(4)\n"
    )
    proc = cli(
        "eval",
        "softmax",
        "-",
        "--json",
        "--device",
        "cpu",
        "--timeout",
        "30",
        home=tmp_path,
        stdin=code,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "runtime_error"
    assert result["error"]["exit_code"] == 4


def test_eval_human_output(tmp_path):
    path = tmp_path / "kernel.py"
    path.write_text(bundled_solution("gelu"))
    proc = cli("eval", "gelu", str(path), "--device", "cpu", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("correct  gelu")
    assert "Triton's CPU interpreter" in proc.stdout
    # the judge's workers exit quietly (with their preloaded heap frozen for the collector,
    # each printed Triton's bindings' "nanobind: leaked ..." list, 50 lines, on every eval)
    assert proc.stderr == "", proc.stderr


def test_eval_under_the_mixed_operator_policy(tmp_path):
    from tests.judge.mixed import LIBRARY_GEMM_TRITON_EPILOGUE, LINEAR_RELU_TASK

    task, kernel = tmp_path / "linear_relu.py", tmp_path / "kernel.py"
    task.write_text(LINEAR_RELU_TASK)
    kernel.write_text(LIBRARY_GEMM_TRITON_EPILOGUE)
    proc = cli("eval", str(task), str(kernel), "--device", "cpu", "--ops", "mixed", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("correct  linear_relu")
    assert "precision strict  ops mixed" in proc.stdout and "mm ×1" in proc.stdout
    proc = cli("eval", str(task), str(kernel), "--device", "cpu", "--json", home=tmp_path)
    result = json.loads(proc.stdout)
    assert result["status"] == "rejected" and result["ops"] == "triton"
    env_default = {"ADAEXPLORE_HOME": str(tmp_path), "ADAEXPLORE_JUDGE__OPS": "mixed"}
    proc = runner.invoke(app, ["eval", str(task), str(kernel), "--device", "cpu", "--json"],
                         env=env_default)  # fmt: skip
    assert proc.exit_code == 0, proc.output
    assert json.loads(proc.stdout)["ops"] == "mixed"


def test_eval_errors_exit_non_zero_with_a_message(tmp_path):
    proc = cli("eval", "no_such_task", "x.py", home=tmp_path)
    assert proc.returncode == 2
    assert "no bundled task named 'no_such_task'" in proc.stderr
    proc = cli("eval", "softmax", str(tmp_path / "missing.py"), home=tmp_path)
    assert proc.returncode == 2
    assert "cannot read the kernel file" in proc.stderr
    proc = cli("eval", "softmax", home=tmp_path)
    assert proc.returncode == 2 and "--solution" in proc.stderr


@pytest.mark.skipif(os.path.exists("/proc/driver/nvidia/version"), reason="this machine has a GPU")
def test_eval_on_a_missing_gpu_is_a_judge_failure(tmp_path):
    proc = cli("eval", "softmax", "--solution", "--device", "cuda:0", home=tmp_path)
    assert proc.returncode == 3
    assert "use --device cpu" in proc.stderr


def test_tasks_list_one_per_line(isolated_home):
    plain = runner.invoke(app, ["tasks", "list"])
    assert plain.exit_code == 0
    lines = plain.stdout.strip().splitlines()
    assert len(lines) == len(bundled_tasks())
    as_json = runner.invoke(app, ["tasks", "list", "--json", "--level", "2"])
    rows = [json.loads(line) for line in as_json.stdout.strip().splitlines()]
    assert rows and all(row["level"] == 2 for row in rows)
    assert {"name", "summary", "hash", "has_solution", "variants"} <= set(rows[0])


def test_tasks_show_and_solution(isolated_home):
    shown = runner.invoke(app, ["tasks", "show", "softmax"])
    assert shown.exit_code == 0
    assert "class Model(nn.Module)" in shown.stdout and "odd-1" in shown.stdout
    as_json = json.loads(runner.invoke(app, ["tasks", "show", "softmax", "--json"]).stdout)
    assert as_json["name"] == "softmax" and as_json["hash"]
    solution = runner.invoke(app, ["tasks", "solution", "softmax"])
    assert solution.stdout == bundled_solution("softmax")
    missing = runner.invoke(app, ["tasks", "solution", "conv2d_relu"])
    assert missing.exit_code == 2


def test_tasks_lint_flags_a_bad_task_file(tmp_path):
    task = tmp_path / "lazy.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x.mean() * 1e-3\n\n"
        "def get_inputs():\n    return [torch.randn(64, 64)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    proc = cli("tasks", "lint", str(task), "--device", "cpu", home=tmp_path)
    assert proc.returncode == 1
    assert "zeros" in proc.stdout


def test_app_is_the_typer_app_after_its_module_was_imported():
    # The module that builds the app once shared its name: importing it first made
    # ``from adaexplore_mcp.cli import app`` return the module instead of the app.
    import importlib

    import typer

    import adaexplore_mcp.cli as cli_package

    importlib.import_module("adaexplore_mcp.cli.commands")
    assert isinstance(cli_package.app, typer.Typer)


def test_a_setting_that_is_not_json_is_a_one_line_error(monkeypatch):
    """It was a Python traceback (a red team)."""
    monkeypatch.setenv("ADAEXPLORE_JUDGE__TOLERANCES", "{bad")
    proc = runner.invoke(app, ["eval", "softmax", "-", "--device", "cpu"], input="pass\n")
    assert proc.exit_code == 2, proc.output
    assert "Traceback" not in proc.output
    assert "ADAEXPLORE_JUDGE" in proc.output and "JSON" in proc.output


def test_what_a_kernel_prints_reaches_the_terminal_without_its_control_codes():
    """A kernel cleared the screen and drew a forged `correct` verdict (a red team)."""
    from adaexplore_mcp.cli.evaluate import printable

    shown = printable("\x1b[2J\x1b[Hcorrect  softmax\r\nline\ttab\x07\x9b2J")
    assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
    assert "\x9b" not in shown
    assert shown == "\\x1b[2J\\x1b[Hcorrect  softmax\\x0d\nline\ttab\\x07\\x9b2J"
