"""The MCP Inspector's CLI lists the tools of `adaexplore-mcp serve`. Runs only where node and an
already installed inspector are available: npx runs it with --offline, so it is never
downloaded here (npx --no-install refuses even a cached package on npm 11)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "@modelcontextprotocol/inspector"


def _installed() -> bool:
    """In npx's cache or the global node_modules, where `npx --offline` finds it."""
    if shutil.which("npx") is None:
        return False
    cache = Path(os.environ.get("NPM_CONFIG_CACHE") or Path.home() / ".npm")
    cached = any((cache / "_npx").glob(f"*/node_modules/{PACKAGE}/package.json"))
    if cached:
        return True
    npm = shutil.which("npm")
    if npm is None:
        return False
    try:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return (Path(root.stdout.strip()) / PACKAGE / "package.json").is_file()


@pytest.mark.skipif(not _installed(), reason=f"npx with {PACKAGE} already installed is needed")
def test_the_inspector_lists_the_tools(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADAEXPLORE_")}
    env["ADAEXPLORE_HOME"] = str(tmp_path)
    npx = shutil.which("npx")
    assert npx is not None
    done = subprocess.run(
        [
            npx,
            "--yes",
            "--offline",
            PACKAGE,
            "--cli",
            sys.executable,
            "-m",
            "adaexplore_mcp.cli",
            "serve",
            "--method",
            "tools/list",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    tools = {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    assert {"evaluate_kernel", "start_search", "select_node", "apply_patch", "regenerate"} <= tools
