"""`adaexplore-mcp eval PROBLEMS_DIR KERNELS_DIR` end to end, with the real judge on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

from adaexplore_mcp.tasks import bundled_solution, get_bundled_task
from tests.conftest import run_cli

CRASHING = """\
import os
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os._exit(4)
"""


def kernelbench_set(root: Path) -> tuple[Path, Path]:
    """KernelBench's layout: problems/level1/N_Name.py; kernels named after them or N.py."""
    problems, kernels = root / "problems" / "level1", root / "kernels" / "level1"
    problems.mkdir(parents=True)
    kernels.mkdir(parents=True)
    for n, name in [(1, "softmax"), (2, "gelu"), (3, "sum_rows"), (4, "layernorm")]:
        (problems / f"{n}_{name.title()}.py").write_text(get_bundled_task(name).source)
    softmax, gelu = bundled_solution("softmax"), bundled_solution("gelu")
    assert softmax and gelu and "0.044715" in gelu
    (kernels / "1_Softmax.py").write_text(softmax)
    (kernels / "2.py").write_text(gelu.replace("0.044715", "0.06"))  # a wrong cubic term
    (kernels / "3_Sum_Rows.py").write_text(CRASHING)
    (kernels / "9_Orphan.py").write_text(softmax)
    return root / "problems", root / "kernels"


def test_a_problem_set_judged_in_one_command_resumed_and_reported(tmp_path):
    problems, kernels = kernelbench_set(tmp_path)
    out = tmp_path / "results.jsonl"
    args = ("eval", str(problems), str(kernels), "--device", "cpu", "--out", str(out))
    first = run_cli(*args, "--json", "--fast-p", "1.5", home=tmp_path / "home", timeout=600)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    summary = report["summary"]
    verdicts = {row["kernel"]: row["status"] for row in summary["rows"]}
    assert verdicts == {
        "level1/1_Softmax.py": "correct",
        "level1/2.py": "incorrect",
        "level1/3_Sum_Rows.py": "runtime_error",
    }
    assert summary["policies"] == {"precision": "strict", "ops": "triton"}
    assert summary["kernels"] == 3 and summary["correct"] == 1
    assert summary["verdicts"]["incorrect"] == 1 and summary["verdicts"]["runtime_error"] == 1
    assert summary["fast_p"] == {"0": 1 / 3, "1": 0.0, "1.5": 0.0}
    assert summary["timing"] == "not_meaningful" and summary["capped_mean"] is None
    softmax_row = summary["rows"][0]
    assert softmax_row["problem"] == "level1/1_Softmax.py" and softmax_row["variants"]
    assert [u["kernel"] for u in report["unmatched_kernels"]] == ["level1/9_Orphan.py"]
    assert report["problems_without_kernel"] == ["level1/4_Layernorm.py"]
    assert report["not_judged"] == [] and report["from_results_file"] == 0
    assert "1 unmatched" in first.stderr and "9_Orphan.py" in first.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    assert {json.loads(line)["result"]["status"] for line in lines} == {
        "correct",
        "incorrect",
        "runtime_error",
    }

    # A rerun judges nothing again: every verdict comes from the results file.
    again = run_cli(*args, home=tmp_path / "home", timeout=120)
    assert again.returncode == 0, again.stderr
    assert "3 kernels already judged under these policies" in again.stderr
    assert "3 kernels judged · ops triton · precision strict" in again.stdout
    assert "verdicts: correct 1 · incorrect 1 · runtime_error 1" in again.stdout
    assert len(out.read_text().splitlines()) == 3

    page = tmp_path / "set.html"
    drawn = run_cli("report", str(out), "--out", str(page), home=tmp_path / "home", timeout=60)
    assert drawn.returncode == 0, drawn.stderr
    html = page.read_text()
    assert "3 kernels · ops triton · precision strict" in html
    for name in ("level1/1_Softmax.py", "level1/2.py", "runtime_error", "fast_1.2"):
        assert name in html


def test_set_options_and_directory_mixes_are_refused_with_what_to_do(tmp_path):
    problems, kernels = kernelbench_set(tmp_path)
    home = tmp_path / "home"
    single = run_cli("eval", "softmax", "--solution", "--out", "r.jsonl", home=home, timeout=60)
    assert single.returncode == 2 and "apply to a problem set" in single.stderr
    mixed = run_cli("eval", "softmax", str(kernels), home=home, timeout=60)
    assert mixed.returncode == 2 and "give a directory of problems" in mixed.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run_cli("eval", str(problems), str(empty), home=home, timeout=60)
    assert nothing.returncode == 2 and "no kernel in" in nothing.stderr
    no_records = run_cli("report", str(problems / "level1" / "1_Softmax.py"), home=home)
    assert no_records.returncode == 2 and "holds no problem-set records" in no_records.stderr
