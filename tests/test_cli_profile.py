"""`adaexplore-mcp profile`: its refusals on a machine without ncu or a GPU, and its table."""

from __future__ import annotations

from rich.console import Console
from typer.testing import CliRunner

from adaexplore_mcp.cli import app
from adaexplore_mcp.cli.profile import table_of
from adaexplore_mcp.judge.profile import ProfileReport
from adaexplore_mcp.judge.profile.metrics import parse_raw_csv, summarize
from tests.judge.fake_ncu import Row, ncu_csv, write_fake_ncu

runner = CliRunner()


def test_profile_without_ncu_exits_3_saying_what_to_set(tmp_path):
    env = {"ADAEXPLORE_HOME": str(tmp_path), "ADAEXPLORE_JUDGE__PROFILE__NCU": str(tmp_path / "x")}
    result = runner.invoke(app, ["profile", "gelu", "--solution"], env=env)
    assert result.exit_code == 3
    assert "ADAEXPLORE_JUDGE__PROFILE__NCU" in result.output


def test_profile_on_the_cpu_exits_3_saying_it_needs_a_gpu(tmp_path):
    ncu = write_fake_ncu(tmp_path / "bin", [Row("k", 1_000)])
    env = {"ADAEXPLORE_HOME": str(tmp_path), "ADAEXPLORE_JUDGE__PROFILE__NCU": str(ncu)}
    result = runner.invoke(app, ["profile", "gelu", "--solution", "--device", "cpu"], env=env)
    assert result.exit_code == 3
    assert "needs a CUDA GPU" in result.output


def test_the_table_shows_each_kernel_and_what_bounds_it():
    launches = parse_raw_csv(ncu_csv([Row("gelu_kernel", 40_000), Row("gemm", 10_000, sm=90)]))
    report = ProfileReport(
        task="gelu",
        device="cuda:0",
        compute_capability="9.0",
        profiled_calls=2,
        launches=2,
        distinct_kernels=2,
        total_us=50.0,
        kernels=summarize(launches, top=1),
        omitted_kernels=1,
    )
    console = Console(width=200, record=True)
    console.print(table_of(report))
    shown = console.export_text()
    assert "gelu_kernel" in shown and "memory" in shown and "80%" in shown
    assert "gemm" not in shown  # beyond top
    assert "1 shorter kernels left out" in shown
