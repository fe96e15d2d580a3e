"""The engine against the real judge (CPU interpreter), not the stand-in evaluator."""

import pytest

from adaexplore_mcp.search_engine import Action, Edit, PatchError, SearchEngine
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.store import Store
from adaexplore_mcp.tasks import bundled_solution, resolve_task


def test_a_short_search_with_real_evaluations(tmp_path, cpu_judge, loop_thread):
    engine = SearchEngine(Store(tmp_path / "db.sqlite3"), cpu_judge.judge, SearchSettings())
    task = resolve_task("gelu")
    search = engine.start_search(task, author="test")
    first = engine.select_node(search.id)
    assert first.action is Action.LARGE and first.node.id == 0

    solution = bundled_solution("gelu")
    phases = []
    large = loop_thread.run(
        engine.regenerate(
            search.id,
            solution,
            node_id=0,
            author="test",
            on_progress=lambda phase, *rest: phases.append(str(phase)),
        )
    )
    assert large.node.status == "correct" and large.improved
    assert phases, "the judge's progress reached the caller"

    # A patch that breaks the kernel: a compile error node, with the judge's message.
    broken = loop_thread.run(
        engine.apply_patch(
            search.id,
            large.node.id,
            [Edit(old_str="tl.arange(0, BLOCK_SIZE)", new_str="tl.arange(0, 1000)")],
            author="test",
        )
    )
    assert broken.node.status == "compile_error"
    assert broken.node.parent_id == large.node.id

    # A patch that does not apply costs no evaluation and creates no node.
    before = engine.get_tree(search.id)
    with pytest.raises(PatchError):
        loop_thread.run(
            engine.apply_patch(
                search.id, large.node.id, [Edit(old_str="no such line", new_str="x")], author="test"
            )
        )
    assert len(engine.get_tree(search.id).nodes) == len(before.nodes)

    best = loop_thread.run(engine.best_kernel(search.id))
    assert best.node.id == large.node.id
