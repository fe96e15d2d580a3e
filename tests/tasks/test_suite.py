import ast
import math

from adaexplore_mcp.tasks import (
    VariantRole,
    bundled_solution,
    bundled_task_names,
    bundled_tasks,
    solution_names,
)

REQUIRED_TOPICS = {
    1: {"softmax", "layernorm", "rmsnorm", "cumsum", "matmul_fp16", "sum_rows", "gelu"},
    2: {"gemm_bias_relu", "add_layernorm", "causal_attention_scores", "conv2d_relu"},
    3: {"mlp_block", "attention_block", "moe_gating", "decode_attention"},
}


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def test_suite_has_three_levels_and_at_least_24_tasks():
    tasks = bundled_tasks()
    assert len(tasks) >= 24
    names = [t.name for t in tasks]
    assert len(names) == len(set(names)) == len(bundled_task_names())
    for level, required in REQUIRED_TOPICS.items():
        assert required <= {t.name for t in tasks if t.level == level}


def test_every_task_has_small_and_odd_shapes_and_a_summary():
    for task in bundled_tasks():
        roles = [v.role for v in task.variants]
        assert VariantRole.SMALL in roles, task.name
        odd = [v for v in task.variants if v.role is VariantRole.ODD]
        assert odd, task.name
        sizes = [value for v in odd for value in v.overrides.values() if isinstance(value, int)]
        assert any(not _is_power_of_two(size) for size in sizes), task.name
        assert task.summary, task.name


def test_benchmark_shapes_are_larger_than_the_small_ones():
    for task in bundled_tasks():
        small = task.main_variant("cpu").overrides
        for key, value in small.items():
            benchmark = task.globals.get(key)
            if isinstance(value, int) and isinstance(benchmark, int):
                assert benchmark >= value, (task.name, key)
        product = math.prod(v for v in task.globals.values() if isinstance(v, int) and v > 1)
        assert product >= 2**20, task.name  # realistic GPU work


def test_at_least_eight_solutions_each_defining_model_new():
    names = solution_names()
    assert len(names) >= 8
    assert set(names) <= set(bundled_task_names())
    for name in names:
        tree = ast.parse(bundled_solution(name))
        assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body), name
        assert "triton.jit" in bundled_solution(name), name
