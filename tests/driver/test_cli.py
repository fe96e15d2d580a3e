"""``adaexplore-mcp drive`` and ``demo`` as a user runs them: subprocesses, keys from the
environment, the model behind ``--base-url`` (the fake provider server), Ctrl-C and --resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter

from adaexplore_mcp.driver import RunConfig
from adaexplore_mcp.rundir import read_events
from tests.llm.conftest import KEYS

from .conftest import cli, cli_environment

REPLAY_LABEL = (
    "replaying a scripted transcript written by the adaexplore-mcp developers (no model is "
    "called; set ANTHROPIC_API_KEY or OPENAI_API_KEY and --provider/--model to use a live model)"
)


def _interruptible() -> None:
    """Ctrl-C as at a terminal: a test run started in the background (``cmd &``) ignores SIGINT,
    and the drive, rightly, would keep ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_drive_stops_cleanly_on_ctrl_c_and_resumes(tmp_path, model, fake_server):
    model.delay_s = 0.3  # slow enough to be interrupted in the middle
    home, run_dir = tmp_path / "home", tmp_path / "run"
    env = cli_environment(home, {"OPENAI_API_KEY": KEYS["openai"]})
    args = [
        "drive", "--task", "gelu", "--strategy", "adaexplore", "--steps", "6",
        "--provider", "openai", "--model", "gpt-4o", "--base-url", fake_server.openai_url,
        "--device", "cpu", "--run-dir", str(run_dir),
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "adaexplore_mcp.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + 90
    while len(read_events(run_dir)) < 2:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert f"adaexplore-mcp drive --resume --run-dir {run_dir}" in stderr
    interrupted = len(read_events(run_dir))
    assert 2 <= interrupted < 6

    model.delay_s = 0.0
    resumed = cli("drive", "--resume", "--run-dir", str(run_dir), "--quiet", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"run directory: {run_dir}" in resumed.stdout and "gelu" in resumed.stdout
    records = read_events(run_dir)
    assert sorted(r.step for r in records) == [1, 2, 3, 4, 5, 6]
    config = RunConfig.model_validate_json((run_dir / "run.json").read_text())
    assert (config.provider, config.model, config.base_url) == (
        "openai", "gpt-4o", fake_server.openai_url
    )  # fmt: skip
    assert all(r.api_key == KEYS["openai"] for r in fake_server.requests)


def test_drive_without_a_key_names_the_variable(tmp_path):
    result = cli(
        "drive", "--task", "gelu", "--provider", "anthropic", "--model", "claude-sonnet-5-5",
        env=cli_environment(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_drive_with_an_unreachable_judge_exits_3(tmp_path, model, fake_server):
    env = cli_environment(
        tmp_path,
        {
            "OPENAI_API_KEY": KEYS["openai"],
            "ADAEXPLORE_REMOTE__RETRIES": "0",
            "ADAEXPLORE_REMOTE__CONNECT_TIMEOUT_S": "2",
        },
    )
    result = cli(
        "drive", "--task", "gelu", "--provider", "openai", "--model", "gpt-4o",
        "--base-url", fake_server.openai_url, "--judge", "http://127.0.0.1:9", "--quiet",
        env=env,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "the judge could not start" in result.stderr and "127.0.0.1:9" in result.stderr
    assert fake_server.requests == []  # nothing was asked of the model


def test_demo_replays_its_labelled_transcript_and_judges_every_kernel(tmp_path):
    run_dir = tmp_path / "demo"
    env = cli_environment(tmp_path)
    result = cli("demo", "--run-dir", str(run_dir), "--device", "cpu", env=env)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert REPLAY_LABEL in out
    assert "best kernel: node" in out and f"run directory: {run_dir}" in out
    config = RunConfig.model_validate_json((run_dir / "run.json").read_text())
    assert config.provider == "replay" and config.replay and config.strategy == "adaexplore"
    records = read_events(run_dir)
    assert len(records) == 6
    outcomes = Counter(r.outcome for r in records)
    assert outcomes["patch_failed"] == 1 and outcomes["compile_error"] == 1
    assert outcomes["correct"] == 4
    assert {r.action for r in records} == {"large", "small"}
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage["cost_usd"] == 0 and usage["calls"] == 11
    for record in records:
        if record.node_id is not None:
            verdict = run_dir / f"tasks/softmax/steps/{record.step:04d}/verdict.json"
            assert json.loads(verdict.read_text())["status"] == record.outcome
