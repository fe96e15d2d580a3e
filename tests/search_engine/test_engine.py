"""The engine's methods as the MCP tools will call them."""

from __future__ import annotations

import asyncio
import json

import pytest

from adaexplore_mcp.judge.result import Phase
from adaexplore_mcp.search_engine import (
    Action,
    Budget,
    BudgetExhausted,
    Edit,
    SearchEngine,
    SearchError,
    SearchExport,
    UnknownNode,
    UnknownSearch,
)
from adaexplore_mcp.search_engine.settings import SearchSettings
from tests.search_engine.fakes import FakeJudge, kernel, toy_task


def run(coro):
    return asyncio.run(coro)


def test_a_search_starts_with_a_root_that_holds_no_kernel(engine):
    info = engine.start_search(toy_task(), label="first")
    assert info.root.id == 0 and info.root.action is Action.ROOT and info.root.reward is None
    assert info.node_count == 1 and info.best is None and info.label == "first"
    root = engine.get_node(info.id, 0)
    assert root.code is None and root.result is None
    assert info.budget == Budget(max_steps=50) and info.exhausted is None


def test_every_step_is_in_the_store_for_a_fresh_engine(engine, store, judge):
    sid = engine.start_search(toy_task()).id
    one = run(engine.regenerate(sid, kernel(speed=2.0), author="agent-a", note="v1", tokens=120))
    assert one.improved and one.best_node_id == one.node.id == 1
    two = run(engine.apply_patch(sid, 1, [Edit(old_str="2.0", new_str="3.0")], author="agent-b"))
    assert two.node.parent_id == 1 and two.node.action is Action.SMALL and two.improved
    failed = run(
        engine.apply_patch(sid, 2, [{"old_str": "# speed: 3.0", "new_str": "# fails: compile"}])
    )
    assert not failed.improved and failed.node.reward == 0.0 and failed.best_node_id == 2
    other = SearchEngine(store, judge)  # another process would see the same
    tree = other.get_tree(sid)
    assert [(n.id, n.parent_id, n.action.value) for n in tree.nodes] == [
        (0, None, "root"), (1, 0, "large"), (2, 1, "small"), (3, 2, "small"),
    ]  # fmt: skip
    assert tree.nodes[0].visits == 3 and tree.nodes[1].visits == 3 and tree.nodes[3].visits == 1
    node = other.get_node(sid, 1)
    assert node.author == "agent-a" and node.note == "v1" and node.tokens == 120
    assert node.result.speedup_eager == 2.0 and node.speedup == 2.0 and node.runtime_ms == 5.0
    assert other.get_node(sid, 2).edits == [Edit(old_str="2.0", new_str="3.0")]
    assert tree.search.usage.tokens == 120 and tree.search.usage.steps == 3
    assert tree.search.best.id == 2 and tree.search.correct_count == 2


def test_unknown_ids_say_what_exists(engine):
    sid = engine.start_search(toy_task()).id
    with pytest.raises(UnknownSearch, match=f"recent searches: {sid}.*list_searches"):
        engine.select_node("nope")
    with pytest.raises(UnknownNode, match="numbered 0 \\(the root\\) to 0; get_tree"):
        engine.get_node(sid, 5)
    with pytest.raises(UnknownNode):
        run(engine.regenerate(sid, kernel(), node_id=9))
    with pytest.raises(SearchError, match="empty"):
        run(engine.regenerate(sid, "  \n"))


def test_progress_is_passed_through_to_the_caller(engine):
    sid = engine.start_search(toy_task()).id
    phases = []
    run(engine.regenerate(sid, kernel(speed=2.0), on_progress=lambda p, t: phases.append(p)))
    assert phases == [Phase.QUEUED, Phase.COMPILING, Phase.CHECKING, Phase.TIMING]


class BlockingJudge(FakeJudge):
    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()

    async def evaluate(self, task, code, **kwargs):
        self.started.set()
        await asyncio.sleep(3600)


class BrokenJudge(FakeJudge):
    async def evaluate(self, task, code, **kwargs):
        raise RuntimeError("judge unavailable")


def test_cancelling_an_evaluation_records_nothing_and_releases_the_node(store):
    judge = BlockingJudge()
    engine = SearchEngine(store, judge, SearchSettings(seed=1))
    sid = engine.start_search(toy_task()).id
    engine.select_node(sid)

    async def cancel_midway():
        step = asyncio.create_task(engine.regenerate(sid, kernel(speed=2.0)))
        await judge.started.wait()
        step.cancel()
        with pytest.raises(asyncio.CancelledError):
            await step

    run(cancel_midway())
    info = engine.get_search(sid)
    assert info.node_count == 1 and info.usage.in_flight == 0 and info.usage.steps == 0
    # a judge that fails does the same
    broken = SearchEngine(store, BrokenJudge())
    with pytest.raises(RuntimeError, match="judge unavailable"):
        run(broken.regenerate(sid, kernel()))
    assert engine.get_search(sid).usage.in_flight == 0


def test_the_step_budget_counts_selections_in_flight(store, judge, clock):
    engine = SearchEngine(store, judge, SearchSettings(seed=1, max_steps=3), clock=clock)
    sid = engine.start_search(toy_task()).id
    run(engine.regenerate(sid, kernel(speed=1.0)))
    engine.select_node(sid)
    engine.select_node(sid)
    with pytest.raises(BudgetExhausted, match="2 selection\\(s\\) still hold budget") as caught:
        engine.select_node(sid)
    assert caught.value.reason == "steps" and caught.value.in_flight == 2
    # a step without a selection must fit the budget too
    with pytest.raises(BudgetExhausted):
        run(engine.regenerate(sid, kernel(speed=5.0)))
    # an abandoned selection stops holding budget when its lease expires
    clock.advance(SearchSettings().lease_timeout_s + 1)
    assert engine.get_search(sid).usage.in_flight == 0
    last = run(engine.regenerate(sid, kernel(speed=5.0)))
    third = run(engine.regenerate(sid, kernel(speed=6.0)))
    assert last.exhausted is None and third.exhausted == "steps"
    with pytest.raises(BudgetExhausted, match="3 of 3 steps taken\\); best_kernel"):
        engine.select_node(sid)
    assert engine.get_search(sid).exhausted == "steps"


def test_wall_clock_and_token_budgets(store, judge, clock):
    engine = SearchEngine(store, judge, SearchSettings(seed=1), clock=clock)
    timed = engine.start_search(toy_task(), budget=Budget(max_steps=100, max_wall_s=60)).id
    clock.advance(30)
    run(engine.regenerate(timed, kernel()))
    clock.advance(31)
    with pytest.raises(BudgetExhausted, match="wall_clock"):
        engine.select_node(timed)
    # the time after the last recorded activity (here: before a crash and the resume) does not
    # count; the refused selection recorded nothing
    clock.advance(3600)
    assert engine.resume(timed).usage.wall_s == pytest.approx(30)
    clock.advance(5)
    assert engine.get_search(timed).usage.wall_s == pytest.approx(35)
    tokens = engine.start_search(toy_task(), budget=Budget(max_steps=100, max_tokens=1000)).id
    run(engine.regenerate(tokens, kernel(), tokens=600))
    assert engine.add_tokens(tokens, 400).tokens == 1000
    with pytest.raises(BudgetExhausted, match="tokens"):
        engine.select_node(tokens)


def test_a_lease_nobody_acts_on_expires_so_the_node_is_not_starved(store, judge, clock):
    settings = SearchSettings(seed=1, lease_timeout_s=60, virtual_loss=50)
    engine = SearchEngine(store, judge, settings, clock=clock)
    sid = engine.start_search(toy_task()).id
    run(engine.regenerate(sid, kernel(speed=4.0)))
    run(engine.regenerate(sid, kernel(speed=1.0)))
    held = engine.select_node(sid).node.id
    assert held == 1
    assert engine.select_node(sid).node.id != held  # the lease weighs on node 1
    clock.advance(61)
    assert engine.select_node(sid).node.id == held
    assert engine.release(sid, held)
    assert not engine.release(sid, held)  # only one lease on it was still live


def test_fork_copies_the_path_and_the_subtree_with_a_fresh_budget(engine):
    sid = engine.start_search(toy_task()).id
    run(engine.regenerate(sid, kernel(speed=1.0)))  # 1
    run(engine.regenerate(sid, kernel(speed=2.0)))  # 2
    run(engine.apply_patch(sid, 2, [Edit(old_str="2.0", new_str="3.0")]))  # 3
    run(engine.apply_patch(sid, 3, [Edit(old_str="3.0", new_str="4.0")]))  # 4
    fork = engine.fork(sid, 3, budget=Budget(max_steps=5), label="from 3")
    assert fork.forked_from.search_id == sid and fork.forked_from.node_id == 3
    tree = engine.get_tree(fork.id)
    assert [(n.id, n.parent_id) for n in tree.nodes] == [(0, None), (1, 0), (2, 1), (3, 2)]
    assert fork.forked_from.copied_as == 2
    assert [n.visits for n in tree.nodes] == [3, 3, 2, 1]
    assert fork.usage.steps == 0 and fork.budget.max_steps == 5 and fork.label == "from 3"
    assert engine.get_node(fork.id, 2).copied_from == 3
    assert engine.get_node(fork.id, 2).code == engine.get_node(sid, 3).code
    run(engine.regenerate(fork.id, kernel(speed=9.0), node_id=2))
    assert engine.get_search(sid).node_count == 5  # the original is untouched
    assert engine.get_search(fork.id).best.id == 4


def test_searches_are_listed_newest_first_and_exported_as_json(engine, clock):
    first = engine.start_search(toy_task("one")).id
    clock.advance(1)
    second = engine.start_search(toy_task("two")).id
    run(engine.regenerate(second, kernel(speed=2.0)))
    assert [s.id for s in engine.list_searches()] == [second, first]
    assert [s.id for s in engine.list_searches(task="one")] == [first]
    exported = engine.export(second)
    again = SearchExport.model_validate(json.loads(exported.model_dump_json()))
    assert again == exported and len(again.nodes) == 2
    assert again.nodes[1].result.speedup_eager == 2.0 and again.search.id == second


def test_the_task_is_stored_with_the_search(engine, store):
    task = toy_task()
    sid = engine.start_search(task).id
    judge = FakeJudge()
    run(SearchEngine(store, judge).regenerate(sid, kernel()))
    assert judge.tasks == [task]


def test_the_best_kernel_is_decided_on_remeasured_runtime(store):
    judge = FakeJudge()
    settings = SearchSettings(seed=1, remeasure_top_k=3, remeasure_count=3)
    engine = SearchEngine(store, judge, settings)
    sid = engine.start_search(toy_task()).id
    lucky = run(engine.regenerate(sid, kernel("class ModelNew:\n  a = 1") + "# speeds: 5, 1.5\n"))
    steady = run(engine.regenerate(sid, kernel("class ModelNew:\n  b = 1", speed=3.0))).node.id
    flaky = run(engine.regenerate(sid, kernel("class ModelNew:\n  c = 1", speed=4.0) + "# flaky\n"))
    single = run(engine.best_kernel(sid))
    assert single.node.id == lucky.node.id and single.decided_by == "median_runtime"
    best = run(engine.best_kernel(sid, remeasure=True))
    assert best.node.id == steady and best.decided_by == "median_runtime"
    by_id = {c.node_id: c for c in best.candidates}
    assert by_id[lucky.node.id].samples_ms == [2.0] + [10 / 1.5] * 3
    assert by_id[flaky.node.id].disqualified.startswith("re-measurement incorrect")
    assert by_id[steady].median_ms == pytest.approx(10 / 3)
    assert len(judge.evaluated) == 3 + 9
    # the tree's best and the rewards follow the re-measured runtimes
    info = engine.get_search(sid)
    assert info.best.id == steady and info.best.reward == 1.0
    tree = {node.id: node for node in engine.get_tree(sid).nodes}
    assert tree[lucky.node.id].reward < 1.0 and tree[lucky.node.id].median_ms == 10 / 1.5
    assert tree[flaky.node.id].reward == settings.reward_incorrect
    # the measurements are stored: a later call without re-measuring decides the same
    assert run(engine.best_kernel(sid)).node.id == steady
    assert len(engine.export(sid).measurements) == 9
    assert engine.get_search(sid).usage.evaluations == 12


def test_best_node_id_agrees_with_best_kernel_after_remeasuring(store):
    # re-measuring the top two moves a kernel outside them ahead: it becomes the best node
    # and best_kernel names it too, among its candidates
    settings = SearchSettings(seed=1, remeasure_top_k=2, remeasure_count=1)
    engine = SearchEngine(store, FakeJudge(), settings)
    sid = engine.start_search(toy_task()).id
    for name, speeds in (("a", "4, 1"), ("b", "3, 1")):
        body = kernel(f"class ModelNew:\n  {name} = 1") + f"# speeds: {speeds}\n"
        run(engine.regenerate(sid, body))
    third = run(engine.regenerate(sid, kernel("class ModelNew:\n  c = 1", speed=2.0))).node.id
    best = run(engine.best_kernel(sid, remeasure=True))
    assert best.node.id == third == engine.get_search(sid).best.id
    assert third in {c.node_id for c in best.candidates}
    step = run(engine.regenerate(sid, kernel("class ModelNew:\n  d = 1", speed=1.5)))
    assert step.best_node_id == third and not step.improved
    # a fork keeps the re-measurements, so its copies keep the rewards they earned
    fork = engine.fork(sid, 1)
    copied = engine.get_node(fork.id, fork.forked_from.copied_as)
    assert copied.median_ms == engine.get_node(sid, 1).median_ms == (2.5 + 10) / 2


def test_rewards_follow_the_best_as_it_improves(engine):
    sid = engine.start_search(toy_task()).id
    first = run(engine.regenerate(sid, kernel("class ModelNew:\n  a = 1", speed=1.0)))
    assert first.node.reward == 1.0 and first.improved
    second = run(engine.regenerate(sid, kernel("class ModelNew:\n  b = 1", speed=1.25)))
    assert second.improved and second.best_node_id == second.node.id
    earlier = engine.get_node(sid, first.node.id)
    assert earlier.reward == pytest.approx(0.3 + 0.7 * 0.8**4)  # 20% slower than the best
    root = engine.get_tree(sid).nodes[0]
    assert root.value * root.visits == pytest.approx(earlier.reward + 1.0)


def test_a_kernel_the_search_already_holds_spends_no_step(engine, judge):
    sid = engine.start_search(toy_task()).id
    code = kernel(speed=2.0)
    first = run(engine.regenerate(sid, code)).node
    other = run(engine.regenerate(sid, kernel("class ModelNew:\n    b = 1", speed=2.0))).node
    edit = Edit(old_str="    b = 1", new_str="    pass")
    again = run(engine.apply_patch(sid, other.id, [edit]))  # a patch of a sibling makes it
    assert again.reused and again.node.id == first.id and not again.improved
    # a selection the duplicate answers is given back, not left holding the budget
    selected = engine.select_node(sid).node.id
    assert run(engine.regenerate(sid, code, selected)).reused
    # trailing whitespace and line ends aside, it is the same kernel
    padded = code.replace("\n", "  \r\n") + "\n\n"
    assert run(engine.regenerate(sid, padded, other.id)).node.id == first.id
    info = engine.get_search(sid)
    assert info.usage.steps == 2 and info.usage.in_flight == 0 and info.node_count == 3
    assert len(judge.evaluated) == 2


def test_without_timings_the_best_kernel_is_decided_by_reward(store):
    engine = SearchEngine(store, FakeJudge(timing=False), SearchSettings(seed=1))
    sid = engine.start_search(toy_task()).id
    assert run(engine.best_kernel(sid)).node is None
    run(engine.regenerate(sid, kernel(fails="incorrect")))
    first = run(engine.regenerate(sid, kernel(speed=3.0))).node
    assert first.speedup is None and first.reward == 1.0  # correct kernels cannot be ranked
    best = run(engine.best_kernel(sid, remeasure=True))
    assert best.decided_by == "reward" and best.node.id == first.id


def test_an_engine_without_a_judge_reads_but_does_not_evaluate(engine, store):
    sid = engine.start_search(toy_task()).id
    reader = SearchEngine(store)
    assert reader.get_tree(sid).search.id == sid
    with pytest.raises(SearchError, match="no judge"):
        run(reader.regenerate(sid, kernel()))


def test_a_fork_with_a_seeded_settings_replays_the_same_choices(store, judge):
    unseeded = SearchSettings(p_large=0.5, small_quota=100, expansion_weight=0.0)
    engine = SearchEngine(store, judge, unseeded)
    sources = [engine.start_search(toy_task()).id for _ in range(2)]
    for sid in sources:
        run(engine.regenerate(sid, kernel(speed=2.0)))
    seeded = unseeded.model_copy(update={"seed": 1234})
    runs = []
    for sid in sources:
        fork = engine.fork(sid, 1, settings=seeded).id
        actions = []
        for _ in range(40):
            selection = engine.select_node(fork)
            actions.append(selection.action)
            engine.release(fork, selection.node.id)
        runs.append(actions)
    assert runs[0] == runs[1] and len(set(runs[0])) == 2


def test_every_evaluation_of_a_search_uses_its_policies(tmp_path):
    from adaexplore_mcp.judge.policy import Ops, Precision
    from adaexplore_mcp.search_engine import SearchEngine
    from adaexplore_mcp.store import Store

    judge = FakeJudge()
    engine = SearchEngine(Store(tmp_path / "db.sqlite3"), judge, SearchSettings())
    settings = SearchSettings(precision=Precision.TF32, ops=Ops.MIXED, remeasure_count=1)
    search = engine.start_search(toy_task(), settings=settings)
    asyncio.run(engine.regenerate(search.id, kernel(speed=2.0), node_id=0))
    assert judge.precisions == [Precision.TF32] and judge.ops == [Ops.MIXED]
    asyncio.run(engine.best_kernel(search.id, remeasure=True))  # re-measured under them too
    assert judge.ops[1:] and set(judge.ops) == {Ops.MIXED}
    assert set(judge.precisions) == {Precision.TF32}
    resumed = SearchEngine(Store(tmp_path / "db.sqlite3"), judge, SearchSettings())
    assert resumed.get_search(search.id).settings.ops is Ops.MIXED  # kept in the store


def test_a_fork_selects_within_the_node_it_continues_from(engine):
    sid = engine.start_search(toy_task()).id
    run(engine.regenerate(sid, kernel(speed=1.0)))  # 1
    run(engine.regenerate(sid, kernel(speed=2.0)))  # 2
    run(engine.apply_patch(sid, 2, [Edit(old_str="2.0", new_str="3.0")]))  # 3
    fork = engine.fork(sid, 3, budget=Budget(max_steps=5))
    start = fork.forked_from.copied_as
    # the path above the forked node (root and node 2's copy) is context, not ground to expand:
    # before, the root's expansion option won the first selection
    for _ in range(3):
        assert engine.select_node(fork.id).node.id == start
