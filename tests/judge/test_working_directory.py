"""The judge's trusted processes never import from the caller's working directory.

``python -m`` puts the working directory first on ``sys.path``, and an MCP server or a drive
runs in the user's project, where an agent writes files at will: a ``pydantic.py`` or an
``adaexplore_mcp/`` there would run in the worker or the profile launcher, before any sandbox,
with the judge's data in reach. Both are started with ``-P``, which leaves it out."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaexplore_mcp.judge import LocalJudge
from adaexplore_mcp.judge.settings import JudgeSettings

from .fake_ncu import write_fake_ncu
from .test_profile import GELU, GELU_TASK, ROWS, _profiler


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _planted(directory: Path, markers: Path) -> dict[str, Path]:
    """Modules in ``directory`` that shadow the judge's own imports; each leaves a marker."""
    markers.mkdir()
    planted = {"pydantic": directory / "pydantic.py"}
    (directory / "adaexplore_mcp").mkdir()
    planted["adaexplore_mcp"] = directory / "adaexplore_mcp" / "__init__.py"
    for name, path in planted.items():
        path.write_text(f"open({str(markers / name)!r}, 'w').write('imported')\n")
    return {name: markers / name for name in planted}


@pytest.mark.anyio
async def test_the_worker_does_not_import_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    markers = _planted(project, tmp_path / "markers")
    monkeypatch.chdir(project)
    settings = JudgeSettings(device="cpu", workers_per_device=1)
    async with LocalJudge(settings, home=tmp_path / "home") as judge:
        assert judge.devices == ["cpu"]
    assert not [name for name, marker in markers.items() if marker.exists()]


@pytest.mark.anyio
async def test_the_profile_launcher_does_not_import_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    markers = _planted(project, tmp_path / "markers")
    ncu = write_fake_ncu(tmp_path / "ncu-bin", ROWS)
    profiler = _profiler(tmp_path, ncu)
    monkeypatch.chdir(project)
    report = await profiler.profile(GELU_TASK, GELU)
    assert report.launches == len(ROWS)
    assert not [name for name, marker in markers.items() if marker.exists()]
