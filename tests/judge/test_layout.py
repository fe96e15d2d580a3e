"""The judge's shape: one folder per process, a package the caller can import without torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import adaexplore_mcp.judge as judge

ROOT = Path(judge.__file__).parent


def test_importing_the_judge_does_not_import_torch():
    probe = "import sys, adaexplore_mcp.judge; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_folder_per_process():
    for folder in ("pool", "worker", "trusted", "candidate", "reference", "service", "sandbox"):
        assert (ROOT / folder / "__init__.py").is_file(), folder


def test_the_trusted_process_never_imports_user_code_harnesses():
    """The trusted process's modules do not import the candidate's or the task's side."""
    for path in (ROOT / "trusted").glob("*.py"):
        text = path.read_text()
        assert "judge.candidate" not in text and "judge.reference" not in text, path.name
