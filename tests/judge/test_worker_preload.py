"""What a job's processes do on every evaluation must not import anything the worker has not
loaded before forking them: an import there is paid again by every evaluation."""

from __future__ import annotations

import subprocess
import sys

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
