from __future__ import annotations

import pytest

from adaexplore_mcp.memory import FailureReport, SkillMemory, install_starter
from adaexplore_mcp.memory.settings import MemorySettings
from adaexplore_mcp.store import Store


class ScriptedDistiller:
    """A stand-in for the model: rules by error substring, "same" answers by rule pair."""

    def __init__(
        self, rules: dict[str, str | None] | None = None, same: set[tuple[str, str]] = frozenset()
    ):
        self.rules = rules or {}
        self.same = same
        self.extract_calls: list[list] = []
        self.judge_calls: list[tuple[str, str]] = []

    async def extract_rule(self, failures):
        self.extract_calls.append(failures)
        for needle, rule in self.rules.items():
            if needle in failures[0].error:
                return rule
        return None

    async def same_prohibition(self, new, existing):
        self.judge_calls.append((new, existing))
        return (new, existing) in self.same


def memory_in(tmp_path, distiller=None, **settings) -> SkillMemory:
    """A memory over a store in ``tmp_path``; with starter=True the starter rules installed, as
    the composition root (``adaexplore_mcp.app``) installs them."""
    values = {"starter": False} | settings
    store = Store(tmp_path / "db.sqlite3")
    memory = SkillMemory(store, MemorySettings(**values), distiller)
    if memory.settings.starter:
        install_starter(memory, store)
    return memory


def global_read_failure(task: str, name: str, line: int) -> FailureReport:
    """The same mistake as the GPU compiler reports it, in a kernel with its own names."""
    code = (
        "import triton\nimport triton.language as tl\n"
        f"{name} = 0.79\n\n@triton.jit\ndef {name.lower()}_kernel(x_ptr, BLOCK: tl.constexpr):\n"
        f"    y = {name} * tl.load(x_ptr)\n"
    )
    error = (
        f"at {line}:8:\n    y = {name} * tl.load(x_ptr)\n        ^\n"
        f"NameError(\"Cannot access global variable {name} from within @jit'ed function. Triton "
        'kernels can only access global variables that are instanstiated as constexpr")'
    )
    return FailureReport(
        task=task,
        code=code,
        error=error,
        error_type="CompilationError",
        verdict="compile_error",
        triton="3.6.0",
        gpu_arch="sm_90",
    )


GLOBAL_RULE = (
    "You cannot read a module-level Python variable inside a @triton.jit kernel unless it is a "
    "tl.constexpr; pass it as a constexpr argument instead."
)


@pytest.fixture
def memory(tmp_path) -> SkillMemory:
    return memory_in(tmp_path)
