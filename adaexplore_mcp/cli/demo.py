"""`adaexplore-mcp demo`: a short AdaExplore search on a bundled task, end to end.

With a configured provider and its key, a live model writes the kernels. Without one, the demo
replays the transcript shipped for the task (written by the developers, never presented as a
model's) so that a fresh machine sees the whole loop work: selection, small and large steps,
a patch that does not apply, a compile error filed in the memory, and every kernel judged for
real by the local judge (the GPU if there is one, else Triton's CPU interpreter).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from adaexplore_mcp.cli.common import DeviceOption, ProviderChoice, fail, out, settings_with
from adaexplore_mcp.cli.drive import run_and_report


def demo_command(
    task: Annotated[str, typer.Option(help="The bundled task to optimize.")] = "softmax",
    steps: Annotated[int, typer.Option(min=1, max=50, help="Steps of the search.")] = 6,
    run_dir: Annotated[
        Path | None,
        typer.Option(help="Where the run is written. Default: ADAEXPLORE_HOME/runs/demo-<time>."),
    ] = None,
    provider: Annotated[
        ProviderChoice | None,
        typer.Option(help="A live model's provider. Default: ADAEXPLORE_LLM__PROVIDER."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="A live model's name. Default: ADAEXPLORE_LLM__MODEL.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No live table.")] = False,
    device: DeviceOption = None,
) -> None:
    """Watch AdaExplore work: a short search on a bundled task with the local judge.

    Uses the configured model when its API key is set; otherwise replays a scripted transcript
    (labelled as such) whose kernels are judged for real.
    """
    from adaexplore_mcp.driver import REPLAY_NOTICE, DriveSpec, ReplayLLM, load_transcript
    from adaexplore_mcp.llm import LLMNotConfigured, open_llm

    settings = settings_with(device)
    updates = {"provider": provider.value if provider else None, "model": model}
    llm_settings = settings.llm.model_copy(
        update={key: value for key, value in updates.items() if value is not None}
    )
    settings = settings.model_copy(update={"llm": llm_settings})
    llm = None
    if llm_settings.provider is not None:
        try:
            llm = open_llm(llm_settings)
        except LLMNotConfigured as exc:
            out.print(f"no live model ({exc})", markup=False)
    seed = None
    if llm is None:
        try:
            transcript = load_transcript(task)
        except FileNotFoundError as exc:
            raise fail(f"{exc}; or set a provider's API key for a live model") from None
        llm = ReplayLLM(transcript)
        if steps > transcript.steps:
            out.print(f"the transcript covers {transcript.steps} steps; running that many")
        steps = min(steps, transcript.steps)
        seed = transcript.seed
        intro = f"adaexplore-mcp demo: {REPLAY_NOTICE}.\n{transcript.about}"
    else:
        intro = f"adaexplore-mcp demo: a live model, {llm.provider} {llm.model}."
    from adaexplore_mcp.rundir import RunPaths, runs_root

    if run_dir is None:
        run_dir = runs_root(settings.home) / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    spec = DriveSpec(
        strategy="adaexplore",
        memory="rules",
        steps=steps,
        workers=1,  # a replay answers in order; one worker keeps the story in order
        tasks=[task],
        run_dir=run_dir,
        seed=seed,
    )
    result = run_and_report(spec, settings, quiet=quiet, llm=llm, intro=intro)
    summary = result.summaries[0] if result.summaries else None
    task_paths = RunPaths(run_dir).task(task)
    best = task_paths.best_kernel
    if summary is None or not summary.correct:
        out.print("no kernel was correct in this run.")
    elif (
        summary.timing_meaningful
        and summary.speedup_eager is not None
        and summary.best_runtime_ms is not None
    ):
        compiled = (
            f", {summary.speedup_compile:.2f}x torch.compile"
            if summary.speedup_compile is not None
            else ""
        )
        out.print(
            f"best kernel: node {summary.best_node_id}, correct, "
            f"{summary.best_runtime_ms:.4f} ms: {summary.speedup_eager:.2f}x eager PyTorch"
            f"{compiled} on {summary.device_name}",
            markup=False,
        )
    else:
        out.print(
            f"best kernel: node {summary.best_node_id}, correct (Triton's CPU interpreter: no "
            "timing, so correct kernels are not ranked by speed)",
            markup=False,
        )
    if best.is_file():
        out.print(f"its code: {best}", markup=False)
    out.print(
        f"every prompt, reply, kernel and verdict: {task_paths.steps}",
        markup=False,
    )
    if getattr(llm, "replay", False):
        out.print(f"(this run {REPLAY_NOTICE})", markup=False)
