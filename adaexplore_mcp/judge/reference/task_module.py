"""The task's module in the task's process, and what it builds for each shape variant."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from adaexplore_mcp.judge.errors import REFERENCE_FILE, describe_exception
from adaexplore_mcp.judge.subject.loading import load_module, synchronize, write_source
from adaexplore_mcp.judge.subject.loading import seed as seed_generators
from adaexplore_mcp.judge.subject.server import UserCodeError
from adaexplore_mcp.tasks.model import ShapeValue


class TaskModule:
    def __init__(self, source: str, device: torch.device) -> None:
        self.device = device
        path = write_source(REFERENCE_FILE, source)
        with self.task_code("importing the task"):
            self.module = load_module(path, "adaexplore_reference")
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not callable(getattr(self.module, name, None)):
                raise UserCodeError(
                    describe_exception(
                        TypeError(f"`{name}` is missing or not callable"), REFERENCE_FILE
                    ),
                    task=True,
                )
        self._originals: dict[str, Any] = {}

    @contextmanager
    def task_code(self, doing: str) -> Iterator[None]:
        """Any exception in the task's own code ends the job as the task's failure."""
        try:
            yield
        except UserCodeError:
            raise
        except BaseException as exc:
            error = describe_exception(exc, REFERENCE_FILE)
            error.message = f"failed while {doing}: {error.message}"[:4000]
            raise UserCodeError(error, task=True) from None

    def apply(self, overrides: dict[str, ShapeValue]) -> None:
        for key, value in self._originals.items():
            setattr(self.module, key, value)
        for key in overrides:
            if key not in self._originals:
                self._originals[key] = getattr(self.module, key)
        for key, value in overrides.items():
            setattr(self.module, key, value)

    def init_inputs(self, variant: str, overrides: dict[str, ShapeValue]) -> list[Any]:
        self.apply(overrides)
        with self.task_code(f"calling get_init_inputs() for {variant}"), torch.device(self.device):
            return list(self.module.get_init_inputs())

    def build(self, init_inputs: list[Any], seed: int) -> Any:
        with self.task_code("building Model"):
            seed_generators(seed, self.device)
            with torch.device(self.device):
                model = self.module.Model(*init_inputs)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device)
            return model

    def inputs(
        self,
        variant: str,
        overrides: dict[str, ShapeValue],
        seed: int,
        *,
        scale: float | None = None,
    ) -> list[Any]:
        self.apply(overrides)
        with self.task_code(f"calling get_inputs() for {variant}"):
            seed_generators(seed, self.device)
            with torch.device(self.device):
                values = list(self.module.get_inputs())
            values = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in values]
        if scale is None:
            return values
        return [
            v * scale if isinstance(v, torch.Tensor) and v.dtype == torch.float32 else v
            for v in values
        ]

    def run(self, model: Any, inputs: list[Any]) -> Any:
        with self.task_code("running Model.forward"), torch.no_grad():
            output = model(*inputs)
            synchronize(self.device)
        return output

    def run_counting(self, model: Any, inputs: list[Any]) -> tuple[Any, float | None]:
        """``run`` under torch's FLOP counter: the output, and the FLOPs of matmuls,
        convolutions and attention (elementwise work counts 0); None where no count came."""
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False, custom_mapping=_VECTOR_FLOPS)
        try:
            with counter:
                output = self.run(model, inputs)
        except UserCodeError:  # the task's own failure shows again, without the counter
            return self.run(model, inputs), None
        try:
            return output, float(counter.get_total_flops())
        except (TypeError, ValueError, OverflowError):
            return output, None


def parameter_bytes(model: Any) -> int:
    """Bytes of the model's distinct parameters and buffers (what any kernel must read)."""
    if not isinstance(model, torch.nn.Module):
        return 0
    seen: dict[int, int] = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.numel():
            storage = tensor.untyped_storage()
            seen[storage.data_ptr()] = max(seen.get(storage.data_ptr(), 0), storage.nbytes())
    return sum(seen.values())


# torch's counter leaves out matrix-vector and vector-vector products: a matvec would count 0
def _mv_flops(matrix: list[int], vector: list[int], *args: Any, **kwargs: Any) -> int:
    return 2 * matrix[0] * matrix[1]


def _addmv_flops(bias: list[int], matrix: list[int], *args: Any, **kwargs: Any) -> int:
    return 2 * matrix[0] * matrix[1]


def _dot_flops(first: list[int], second: list[int], *args: Any, **kwargs: Any) -> int:
    return 2 * first[0]


_VECTOR_FLOPS = {
    torch.ops.aten.mv: _mv_flops,
    torch.ops.aten.addmv: _addmv_flops,
    torch.ops.aten.dot: _dot_flops,
}
