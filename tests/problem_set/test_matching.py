"""Which kernel file goes with which problem file."""

from __future__ import annotations

from pathlib import Path

from adaexplore_mcp.problem_set import match_set


def files(root: Path, *names: str) -> Path:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# a file\n")
    return root


def pairs(match) -> dict[str, tuple[str, str]]:
    return {pair.kernel: (pair.problem, pair.how) for pair in match.pairs}


def test_kernelbench_layout_by_name_and_by_problem_number(tmp_path):
    problems = files(tmp_path / "p", "1_Conv2d_ReLU.py", "2_Gemm_Scale.py", "10_Softmax.py")
    kernels = files(tmp_path / "k", "1_Conv2d_ReLU.py", "2_fused.py", "10.py", "11_Extra.py")
    match = match_set(problems, kernels)
    assert pairs(match) == {
        "1_Conv2d_ReLU.py": ("1_Conv2d_ReLU.py", "same name"),
        "2_fused.py": ("2_Gemm_Scale.py", "problem number"),
        "10.py": ("10_Softmax.py", "problem number"),
    }
    assert [(u.kernel, u.reason) for u in match.unmatched_kernels] == [
        ("11_Extra.py", "no problem 11 or 11_Extra.py among the problems")
    ]
    assert match.problems_without_kernel == []
    # natural order: 2 before 10
    assert [pair.kernel for pair in match.pairs] == ["1_Conv2d_ReLU.py", "2_fused.py", "10.py"]


def test_adaexplore_release_layout_matches_level_by_level(tmp_path):
    # KernelBench/levelL/N_Name.py against AdaExplore's kernelbench/levelL/N.py
    problems = files(
        tmp_path / "KernelBench",
        "level1/25_Swish.py",
        "level2/25_Conv2d_Min_Tanh_Tanh.py",
        "level2/3_ConvTranspose3d_Sum.py",
    )
    kernels = files(tmp_path / "saved_kernels" / "kernelbench", "level2/25.py", "level2/3.py")
    match = match_set(problems, kernels)
    assert pairs(match) == {
        "level2/25.py": ("level2/25_Conv2d_Min_Tanh_Tanh.py", "problem number"),
        "level2/3.py": ("level2/3_ConvTranspose3d_Sum.py", "problem number"),
    }
    assert {pair.level for pair in match.pairs} == {2}
    assert match.problems_without_kernel == ["level1/25_Swish.py"]
    # The level folders themselves given: their names carry the level.
    level2 = match_set(tmp_path / "KernelBench" / "level2", kernels / "level2")
    assert {pair.problem for pair in level2.pairs} == {
        "25_Conv2d_Min_Tanh_Tanh.py",
        "3_ConvTranspose3d_Sum.py",
    }


def test_level_and_number_in_a_flat_kernel_directory(tmp_path):
    problems = files(tmp_path / "KernelBench", "level1/4_Matvec.py", "level2/4_Conv_Mish.py")
    kernels = files(tmp_path / "flat", "level2_4.py", "level1-4_try2.py")
    match = match_set(problems, kernels)
    assert pairs(match) == {
        "level2_4.py": ("level2/4_Conv_Mish.py", "level and number"),
        "level1-4_try2.py": ("level1/4_Matvec.py", "level and number"),
    }


def test_a_kernel_that_fits_several_problems_is_listed_not_guessed(tmp_path):
    problems = files(tmp_path / "KernelBench", "level1/4_Matvec.py", "level2/4_Conv_Mish.py")
    kernels = files(tmp_path / "flat", "4.py", "same.py")
    match = match_set(problems, kernels)
    assert match.pairs == []
    reasons = {u.kernel: u.reason for u in match.unmatched_kernels}
    assert "several problems fit (level1/4_Matvec.py, level2/4_Conv_Mish.py)" in reasons["4.py"]
    assert reasons["same.py"] == "no same.py among the problems"


def test_same_name_files_and_what_is_skipped(tmp_path):
    problems = files(tmp_path / "p", "softmax.py", "gelu.py", "__init__.py", ".hidden/x.py")
    kernels = files(tmp_path / "k", "softmax.py", "__pycache__/softmax.py", "notes.txt")
    match = match_set(problems, kernels)
    assert pairs(match) == {"softmax.py": ("softmax.py", "same name")}
    assert match.unmatched_kernels == []
    assert match.problems_without_kernel == ["gelu.py"]
