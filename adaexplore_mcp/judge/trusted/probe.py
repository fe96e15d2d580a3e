"""What GPUs this machine has, read in a child so the worker never initializes CUDA."""

from __future__ import annotations

import sys

from adaexplore_mcp.judge.devices import GpuInfo, ProbeReport


def probe() -> ProbeReport:
    import torch
    import triton

    gpus = []
    available = torch.cuda.is_available()
    for index in range(torch.cuda.device_count() if available else 0):
        props = torch.cuda.get_device_properties(index)
        gpus.append(
            GpuInfo(
                index=index,
                name=props.name,
                uuid=str(getattr(props, "uuid", f"index-{index}")),
                capability=f"{props.major}.{props.minor}",
                memory_gb=round(props.total_memory / 2**30, 1),
                l2_bytes=int(getattr(props, "L2_cache_size", 0)),
                sm_count=props.multi_processor_count,
            )
        )
    return ProbeReport(
        torch=torch.__version__,
        triton=triton.__version__,
        python=sys.version.split()[0],
        cuda_available=available,
        gpus=gpus,
    )
