"""The profiled process: ``python -m adaexplore_mcp.judge.profile.target JOB_FILE``, started by
ncu inside the sandbox (``launcher``). It builds the task's inputs and the candidate's
``ModelNew``, calls forward a few times to warm up, then a few times between
``cudaProfilerStart`` and ``cudaProfilerStop``: ncu runs with ``--profile-from-start off`` and
records only those launches.

It runs the task's and the candidate's code in one process, which the judge never does for a
verdict: nothing here is compared or timed, and the profile is informational.
"""

from __future__ import annotations

import sys
import traceback

# exit statuses the caller names in its error
TASK_FAILED = 3
KERNEL_FAILED = 4


def main(job_path: str) -> int:
    import torch

    from adaexplore_mcp.judge.errors import KERNEL_FILE
    from adaexplore_mcp.judge.profile.models import ProfileJob
    from adaexplore_mcp.judge.reference.task_module import TaskModule
    from adaexplore_mcp.judge.subject.loading import (
        load_module,
        start_device,
        synchronize,
        write_source,
    )
    from adaexplore_mcp.judge.subject.server import UserCodeError

    with open(job_path, encoding="utf-8") as handle:
        job = ProfileJob.model_validate_json(handle.read())
    device = start_device(job.device)
    try:
        task = TaskModule(job.task_source, device)
        init = task.init_inputs("benchmark", job.overrides)
        inputs = task.inputs("benchmark", job.overrides, job.seed)
    except UserCodeError as failure:
        _say(f"the task failed: {failure.error.message}")
        return TASK_FAILED
    try:
        module = load_module(write_source(KERNEL_FILE, job.code), "adaexplore_kernel")
        torch.manual_seed(job.seed)
        with torch.device(device):
            model = module.ModelNew(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(device)
        with torch.no_grad():
            for _ in range(job.warmup_calls):
                model(*inputs)
            synchronize(device)
            if device.type == "cuda":
                torch.cuda.profiler.start()
            for _ in range(job.profiled_calls):
                model(*inputs)
            synchronize(device)
            if device.type == "cuda":
                torch.cuda.profiler.stop()
    except BaseException:  # the kernel's own failure, SystemExit included
        _say("the kernel failed while profiled:\n" + traceback.format_exc(limit=-4))
        return KERNEL_FAILED
    return 0


def _say(message: str) -> None:
    sys.stderr.write(message.rstrip() + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
