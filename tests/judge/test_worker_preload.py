"""What a job's processes do on every evaluation must not import anything the worker has not
loaded before forking them: an import there is paid again by every evaluation."""

from __future__ import annotations

import subprocess
import sys

from adaexplore_mcp.judge import Status
from adaexplore_mcp.tasks import bundled_solution, get_bundled_task

PROBE = """
import importlib, sys, os, tempfile
os.chdir(tempfile.mkdtemp())
from adaexplore_mcp.judge.worker.main import PRELOADED
for name in PRELOADED:
    importlib.import_module(name)
import torch
from adaexplore_mcp.judge.reference.task_module import TaskModule
from adaexplore_mcp.tasks import get_bundled_task

task = TaskModule(get_bundled_task("gemm_bias_relu").source, torch.device("cpu"))
model = task.build(task.init_inputs("main", {}), seed=1)
inputs = task.inputs("main", {}, seed=2)
before = set(sys.modules)
output, flops = task.run_counting(model, inputs)
assert flops and flops > 0, flops
print(sorted(set(sys.modules) - before))
"""


def test_the_reference_counts_its_flops_with_nothing_left_to_import():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_a_kernels_process_starts_with_the_workers_imports_out_of_the_collectors_sight(
    unguarded_judge,
):
    """A full collection in a forked process walked every object of torch and Triton (0.15 s of
    a candidate's start-up on each evaluation); the worker freezes what it preloaded. (The
    judge refuses ``gc`` to a kernel: this one runs unguarded, its import disguised.)"""
    code = bundled_solution("softmax").replace(
        "class ModelNew",
        "import builtins\n"
        "collector = getattr(builtins, '__imp' + 'ort__')('g' + 'c')\n"
        "print('FROZEN', collector.get_freeze_count())\n\n\nclass ModelNew",
        1,
    )
    result = unguarded_judge.evaluate(get_bundled_task("softmax"), code, timeout_s=120)
    assert result.status is Status.CORRECT, result.message
    frozen = int(result.output_tail.split("FROZEN ", 1)[1].split()[0])
    assert frozen > 100_000
