"""Shapes derived from a task's module-level sizes when it declares no ODD_SHAPES."""

from adaexplore_mcp.tasks import VariantRole, parse_task

KERNELBENCH = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, hidden, num_heads, kernel_size):
        super().__init__()
        self.linear = nn.Linear(in_features, hidden)

    def forward(self, x):
        return self.linear(x)


batch_size = 128
in_features = 2048 * 2
hidden = in_features // 4
num_heads = 16
kernel_size = 3
reduce_dim = 1
bias = True
M, K = 64, 1000


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, num_heads, kernel_size]
"""


def derived(source: str) -> dict[str, dict]:
    task = parse_task(source, name="t")
    return {v.name: v.overrides for v in task.variants if v.role is VariantRole.DERIVED}


def test_a_kernelbench_file_gets_odd_unaligned_and_small_batch_shapes():
    variants = derived(KERNELBENCH)
    assert variants == {
        # constant arithmetic is folded, and a size computed from another is computed again
        "derived-odd": {
            "batch_size": 65,
            "in_features": 2049,
            "hidden": 512,
            "M": 33,
            "K": 501,
        },
        "derived-unaligned": {"in_features": 2040, "hidden": 510, "M": 24, "K": 488},
        "derived-batch": {"batch_size": 3},
    }
    task = parse_task(KERNELBENCH, name="t")
    assert [v.name for v in task.variants_for("cuda")] == ["benchmark", *variants]
    # heads, kernel sizes, small axes and booleans are never changed; no size ever grows
    benchmark = {"batch_size": 128, "in_features": 4096, "hidden": 1024, "M": 64, "K": 1000}
    for overrides in variants.values():
        assert not {"num_heads", "kernel_size", "reduce_dim", "bias"} & set(overrides)
        assert all(0 < value <= benchmark[name] for name, value in overrides.items())
    assert all(v % 2 == 1 for k, v in variants["derived-odd"].items() if k != "hidden")
    assert all(v % 16 == 8 for k, v in variants["derived-unaligned"].items() if k != "hidden")


def test_declared_odd_shapes_replace_the_derived_ones():
    source = KERNELBENCH + '\nODD_SHAPES = [{"batch_size": 7}]\n'
    task = parse_task(source, name="t")
    assert [v.name for v in task.variants] == ["benchmark", "odd-1"]


def test_derived_shapes_start_from_the_small_shape():
    source = KERNELBENCH + '\nSMALL_SHAPES = {"batch_size": 8, "in_features": 64}\n'
    variants = derived(source)
    assert variants["derived-odd"] == {
        "batch_size": 5,
        "in_features": 33,
        "hidden": 8,
        "M": 33,
        "K": 501,
    }
    assert variants["derived-batch"] == {"batch_size": 3, "in_features": 64, "hidden": 16}


def test_a_task_without_sizes_gets_no_derived_shape():
    source = KERNELBENCH.split("batch_size = 128")[0] + (
        "def get_inputs():\n    return [torch.randn(8, 4)]\n\n\n"
        "def get_init_inputs():\n    return [4, 4, 1, 3]\n"
    )
    assert derived(source) == {}


def test_sizes_that_cannot_be_read_are_left_alone():
    source = KERNELBENCH.replace("kernel_size = 3", "huge = 10 ** 10 ** 10\nlater = 64").replace(
        "reduce_dim = 1", "later = int('64')"
    )
    variants = derived(source)  # returns at once: the power is never computed
    assert all("huge" not in o and "later" not in o for o in variants.values())
