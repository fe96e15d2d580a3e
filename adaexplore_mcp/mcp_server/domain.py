"""The objects the tools act on beyond the task list: the skill memory, the judge, the search
engine, the step prompts and the searches, built together on the first tool call that needs one.

Building them imports most of the project (the memory's distiller and ranking, the search
engine, the judge's local pool and wire protocol), and `serve` must not wait for that before it
answers `initialize` and `tools/list`: the workbench imports this module when it builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adaexplore_mcp.app import App
from adaexplore_mcp.judge import LazyJudge
from adaexplore_mcp.mcp_server.answers import Step
from adaexplore_mcp.mcp_server.models import Evaluation
from adaexplore_mcp.mcp_server.prompting import StepPrompts
from adaexplore_mcp.mcp_server.running import RunningSteps
from adaexplore_mcp.mcp_server.searches import Remember, Searches
from adaexplore_mcp.memory import SkillMemory
from adaexplore_mcp.search_engine import SearchEngine
from adaexplore_mcp.tasks import Task


@dataclass(frozen=True)
class Domain:
    memory: SkillMemory
    judge: LazyJudge
    engine: SearchEngine
    prompts: StepPrompts
    searches: Searches


def build_domain(
    app: App,
    running: RunningSteps[Step | Evaluation],
    *,
    task: Callable[[str], Task],
    task_name: Callable[[str | None], str | None],
    remember: Remember,
) -> Domain:
    """The app's memory, judge and search engine (built now, if the app has not yet), and the
    searches and step prompts the tools see over them."""
    memory, engine = app.memory, app.engine
    searches = Searches(
        app.settings,
        engine,
        memory,
        running,
        lessons=app.lessons,
        task=task,
        task_name=task_name,
        remember=remember,
    )
    return Domain(memory, app.judge, engine, StepPrompts(engine, memory), searches)
