"""The root ``Settings`` assembled from the parts each package defines next to its code: the
same ``ADAEXPLORE_*`` variables reach every part, reading them imports nothing heavy, and the
settings modules and ``config`` do not import each other's packages beyond them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import adaexplore_mcp
from adaexplore_mcp.config import Settings

PACKAGE = Path(adaexplore_mcp.__file__).parent

# The modules that define a part of Settings, or the vocabulary those parts use.
SETTINGS_MODULES = (
    "judge/settings.py",
    "judge/policy.py",
    "memory/settings.py",
    "search_engine/settings.py",
    "mcp_server/settings.py",
    "config/llm.py",
    "config/driver.py",
)


def _project_imports(path: Path) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return {name for name in imported if name.startswith("adaexplore_mcp")}


def test_reading_the_settings_imports_no_heavy_module_and_no_package_s_internals() -> None:
    probe = (
        "import json, sys\n"
        "from adaexplore_mcp.config import Settings\n"
        "Settings()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    heavy = ("torch", "numpy", "triton", "mcp", "jinja2", "anthropic", "openai", "ray")
    assert [name for name in heavy if name in loaded] == []
    ours = {name for name in loaded if name.startswith("adaexplore_mcp.")}
    beyond = {
        name
        for name in ours
        if not name.endswith((".settings", ".policy"))
        and name.count(".") > 1  # a package's __init__ is adaexplore_mcp.NAME
        and not name.startswith("adaexplore_mcp.config.")
    }
    # devices: the judge's settings check a device spec; signature: the memory's lazy table
    # resolves the name that is also its module's (with slips) when the package is imported
    assert beyond == {
        "adaexplore_mcp.judge.devices",
        "adaexplore_mcp.memory.signature",
        "adaexplore_mcp.memory.slips",
    }


def test_config_imports_only_settings_and_the_settings_import_no_config() -> None:
    allowed = {
        f"adaexplore_mcp.{name.removesuffix('.py').replace('/', '.')}" for name in SETTINGS_MODULES
    }
    for path in (PACKAGE / "config").glob("*.py"):
        assert _project_imports(path) <= allowed, path.name
    for name in SETTINGS_MODULES:
        imports = _project_imports(PACKAGE / name)
        assert not {i for i in imports if i.startswith("adaexplore_mcp.config")}, name
        # a settings module reads only other settings and vocabulary, and the device spec
        assert imports <= allowed | {"adaexplore_mcp.judge.devices"}, name


@pytest.mark.parametrize(
    ("variable", "value", "read"),
    [
        ("ADAEXPLORE_JUDGE__TIMEOUT_S", "60", lambda s: s.judge.timeout_s == 60),
        ("ADAEXPLORE_JUDGE__PRECISION", "tf32", lambda s: s.judge.precision == "tf32"),
        (
            "ADAEXPLORE_JUDGE__TOLERANCES",
            '{"float32": {"atol": 0.5, "rtol": 0.25}}',
            lambda s: s.judge.tolerances["float32"].rtol == 0.25,
        ),
        ("ADAEXPLORE_REMOTE__URL", "ray", lambda s: s.remote.url == "ray"),
        ("ADAEXPLORE_RAY__ACTORS", "3", lambda s: s.ray.actors == 3),
        ("ADAEXPLORE_SERVICE__PORT", "9000", lambda s: s.service.port == 9000),
        ("ADAEXPLORE_LLM__MODEL", "m", lambda s: s.llm.model == "m"),
        ("ADAEXPLORE_MEMORY__THRESHOLD", "5", lambda s: s.memory.threshold == 5),
        ("ADAEXPLORE_SEARCH__OPS", "mixed", lambda s: s.search.ops == "mixed"),
        ("ADAEXPLORE_MCP__PORT", "0", lambda s: s.mcp.port == 0),
        ("ADAEXPLORE_DRIVER__STREAM", "true", lambda s: s.driver.stream is True),
        (
            "ADAEXPLORE_JUDGE__SANDBOX__CUDA_CONNECTIONS",
            "null",  # a setting whose default is not None can be set to None
            lambda s: s.judge.sandbox.cuda_connections is None,
        ),
        (
            "ADAEXPLORE_JUDGE__SANDBOX__CUDA_CONNECTIONS",
            "4",
            lambda s: s.judge.sandbox.cuda_connections == 4,
        ),
    ],
)
def test_every_part_reads_its_nested_variable(monkeypatch, variable, value, read) -> None:
    monkeypatch.setenv(variable, value)
    assert read(Settings())


@pytest.mark.parametrize("connections", [0, 1])
def test_one_hardware_queue_is_refused(connections) -> None:
    """With one queue per context, a kernel's side-stream work escaped the clock on an H200."""
    from pydantic import ValidationError

    from adaexplore_mcp.judge.settings import SandboxSettings

    with pytest.raises(ValidationError, match="use 2 or more, or null"):
        SandboxSettings(cuda_connections=connections)
    assert SandboxSettings().cuda_connections == 2
