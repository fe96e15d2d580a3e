"""The objects the tools act on beyond the task list: the skill memory, the judge, the search
engine, the step prompts and the searches, built together on the first tool call that needs one.

Building them imports most of the project (the memory's distiller and ranking, the search
engine, the judge's local pool and wire protocol), and `serve` must not wait for that before it
answers `initialize` and `tools/list`: the workbench imports this module when it builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adaexplore_mcp.config import Settings
from adaexplore_mcp.judge import Judge, LazyJudge, open_judge
from adaexplore_mcp.mcp_server.answers import Step
from adaexplore_mcp.mcp_server.models import Evaluation
from adaexplore_mcp.mcp_server.prompting import StepPrompts
from adaexplore_mcp.mcp_server.running import RunningSteps
from adaexplore_mcp.mcp_server.searches import Remember, Searches
from adaexplore_mcp.memory import PerformanceMemory, SkillMemory, open_memory
from adaexplore_mcp.search_engine import SearchEngine
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import Task


@dataclass(frozen=True)
class Domain:
    memory: SkillMemory
    judge: LazyJudge
    engine: SearchEngine
    prompts: StepPrompts
    searches: Searches


def build_domain(
    settings: Settings,
    store: Store,
    running: RunningSteps[Step | Evaluation],
    *,
    judge: Judge | None,
    memory: SkillMemory | None,
    task: Callable[[str], Task],
    task_name: Callable[[str | None], str | None],
    remember: Remember,
) -> Domain:
    """The domain of ``settings`` over ``store``; ``judge`` and ``memory`` replace the ones the
    settings describe (the driver lends its own, tests lend stubs)."""
    memory = memory if memory is not None else open_memory(settings)
    lazy_judge = LazyJudge(judge if judge is not None else open_judge(settings))
    engine = SearchEngine(store, lazy_judge, settings.search)
    searches = Searches(
        settings,
        engine,
        memory,
        running,
        lessons=PerformanceMemory(store, settings.memory),
        task=task,
        task_name=task_name,
        remember=remember,
    )
    return Domain(memory, lazy_judge, engine, StepPrompts(engine, memory), searches)
