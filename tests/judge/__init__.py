import pytest
import torch

# a test run on the CPU and, where the machine has one, on a CUDA GPU (marked ``gpu``)
CPU_AND_CUDA = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
        ],
    ),
]
