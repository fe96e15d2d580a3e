"""``profile_kernel`` through an MCP client: the answer with a stand-in ncu, and the coded
error where ncu is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from adaexplore_mcp.app import open_app
from adaexplore_mcp.judge.profile import Profiler
from adaexplore_mcp.judge.settings import ProfileSettings
from adaexplore_mcp.mcp_server import ErrorCode, ErrorInfo, Workbench, build_server
from tests.judge.fake_ncu import Row, write_fake_ncu
from tests.mcp_server.conftest import GELU, make_settings, text

pytestmark = pytest.mark.anyio


def _bench(tmp_path: Path, ncu: Path) -> Workbench:
    settings = make_settings(tmp_path / "home")
    judge = settings.judge.model_copy(update={"profile": ProfileSettings(ncu=str(ncu))})
    return Workbench(open_app(settings), profiler=Profiler(judge, home=settings.home, device="cpu"))


async def test_profile_kernel_answers_the_longest_kernels(tmp_path: Path) -> None:
    rows = [Row("gelu_kernel", 40_000), Row("gelu_kernel", 42_000), Row("copy", 1_000, sm=2)]
    bench = _bench(tmp_path, write_fake_ncu(tmp_path / "bin", rows))
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("profile_kernel", {"task": "gelu", "code": GELU, "top": 1})
    assert not result.is_error, text(result)
    answer = result.structured_content
    assert answer["launches"] == 3 and answer["omitted_kernels"] == 1
    (kernel,) = answer["kernels"]
    assert kernel["name"] == "gelu_kernel" and kernel["calls"] == 2
    assert kernel["total_us"] == pytest.approx(82.0) and kernel["bound_by"] == "memory"
    assert "never a verdict" in answer["note"]


async def test_profile_kernel_without_ncu_is_judge_unavailable(tmp_path: Path) -> None:
    bench = _bench(tmp_path, tmp_path / "missing" / "ncu")
    async with Client(build_server(bench)) as client:
        result = await client.call_tool("profile_kernel", {"task": "gelu", "code": GELU})
    assert result.is_error
    error = ErrorInfo.from_text(text(result))
    assert error is not None and error.code is ErrorCode.JUDGE_UNAVAILABLE
    assert "ADAEXPLORE_JUDGE__PROFILE__NCU" in error.message
    assert result.structured_content["error"]["code"] == "judge_unavailable"
