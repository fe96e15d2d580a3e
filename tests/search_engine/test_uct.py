"""Selection on hand-built trees: UCT, the expansion option, virtual loss and action choice."""

from __future__ import annotations

import asyncio

from adaexplore_mcp.search_engine import Action, Budget, SearchEngine
from adaexplore_mcp.search_engine.actions import choose_action
from adaexplore_mcp.search_engine.lineage import new_record
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.tree import Tree
from tests.search_engine.fakes import EAGER_MS, kernel, toy_task

Outcome = float | str | None


def build(
    outcomes: dict[int, tuple[int | None, Outcome, str]], settings: SearchSettings | None = None
) -> Tree:
    """A tree from {id: (parent, outcome, action)}: an outcome is a correct kernel's speedup
    (its runtime is ``EAGER_MS / speedup``), a failure's status, or None for the root."""
    tree = Tree(settings or SearchSettings())
    rows = []
    for node_id, (parent, outcome, action) in sorted(outcomes.items()):
        status = None if outcome is None else "correct" if isinstance(outcome, float) else outcome
        runtime = EAGER_MS / outcome if isinstance(outcome, float) else None
        rows.append(
            {
                "id": node_id, "parent_id": parent, "action": action, "depth": 0,
                "status": status, "speedup": outcome if runtime else None, "runtime_ms": runtime,
                "author": None, "created_at": 0.0,
            }
        )  # fmt: skip
    tree.refresh(rows[:1], [])  # the root alone, then the rest as later arrivals
    tree.refresh(rows[1:], [])
    return tree


def test_a_tree_of_only_the_root_selects_the_root():
    assert build({0: (None, None, "root")}).select([]) == 0


def test_statistics_back_up_to_the_root():
    tree = build({0: (None, None, "root"), 1: (0, 0.5, "large"), 2: (1, 0.9, "small")})
    assert (tree[0].visits, tree[1].visits, tree[2].visits) == (2, 2, 1)
    both = tree[1].reward + tree[2].reward
    assert tree[1].value_sum == both and tree[0].value_sum == both
    assert tree[0].best_below == tree[1].best_below == tree[2].reward == 1.0


def test_without_exploration_the_best_mean_is_followed_to_a_leaf():
    tree = build(
        {
            0: (None, None, "root"),
            1: (0, 0.4, "large"),
            2: (0, 0.9, "large"),
            3: (2, 0.8, "small"),
            4: (2, 0.95, "small"),
        }
    )
    tree.settings = SearchSettings(exploration_weight=0.0)
    assert tree.select([]) == 4


def test_exploration_visits_the_less_visited_child():
    # child 1 is slightly better on average but visited five times; child 2 once
    nodes = {0: (None, None, "root"), 1: (0, 0.6, "large"), 2: (0, 0.55, "large")}
    nodes |= {i: (1, 0.6, "small") for i in range(3, 7)}
    greedy = build(nodes, SearchSettings(exploration_weight=0.0, expansion_weight=0.0))
    assert greedy.select([]) in {3, 4, 5, 6}
    exploring = build(nodes, SearchSettings(exploration_weight=1.0, expansion_weight=0.0))
    assert exploring.select([]) == 2


def test_the_expansion_option_competes_with_the_children():
    # a root whose single child is mediocre: widening the root beats descending when the
    # expansion option is weighted up, never when it is weighted 0
    nodes = {0: (None, None, "root"), 1: (0, 0.3, "large")}
    nodes |= {i: (1, 0.3, "small") for i in range(2, 8)}
    assert build(nodes, SearchSettings(expansion_weight=0.0)).select([]) != 0
    assert build(nodes, SearchSettings(expansion_weight=3.0)).select([]) == 0
    # the same holds for an inner node: node 1 is the best child of a wide root, and with the
    # option weighted up, widening node 1 beats descending into its two children
    nodes = {0: (None, None, "root"), 1: (0, 0.9, "large"), 2: (1, 0.9, "small")}
    nodes |= {3: (1, 0.9, "small")} | {i: (0, "compile_error", "large") for i in range(4, 10)}
    assert build(nodes, SearchSettings(expansion_weight=2.0)).select([]) == 1
    assert build(nodes, SearchSettings(expansion_weight=0.0)).select([]) == 2


def test_virtual_loss_hands_concurrent_selections_different_nodes():
    nodes = {0: (None, None, "root")} | {i: (0, 0.7, "large") for i in range(1, 5)}
    tree = build(nodes)
    leased: list[int] = []
    for _ in range(4):
        leased.append(tree.select(leased))
    assert sorted(leased) == [1, 2, 3, 4]
    # without virtual loss every worker would get the same node
    flat = build(nodes, SearchSettings(virtual_loss=0.0))
    assert len({flat.select(leased) for _ in range(4)}) == 1


def test_a_fresh_search_selects_the_root_for_a_large_step(engine):
    search = engine.start_search(toy_task())
    selection = engine.select_node(search.id)
    assert selection.node.id == 0 and selection.action is Action.LARGE
    assert "regenerate" in selection.reason and selection.pool == []
    engine.release(search.id, 0)


def record(settings: SearchSettings, selections: int = 0):
    fresh = new_record(
        toy_task(), settings=settings, budget=Budget(max_steps=10), label=None, now=0
    )
    return fresh.model_copy(update={"selections": selections})


def test_action_choice_follows_the_root_the_quota_and_p_large():
    nodes = {0: (None, None, "root"), 1: (0, 0.5, "large"), 2: (1, 0.5, "small")}
    tree = build(nodes | {3: (1, 0.5, "small")})
    never = SearchSettings(seed=1, p_large=0.0, small_quota=3)
    assert choose_action(record(never), tree, 0, 0)[0] is Action.LARGE
    assert choose_action(record(never), tree, 1, 0)[0] is Action.SMALL
    # two recorded small children plus one selected fill a quota of three
    action, reason = choose_action(record(never), tree, 1, 1)
    assert action is Action.LARGE and "quota 3" in reason
    always = SearchSettings(seed=1, p_large=1.0)
    assert choose_action(record(always), tree, 2, 0)[0] is Action.LARGE


def test_the_large_step_coin_is_reproducible_and_lands_at_p_large():
    settings = SearchSettings(seed=11, p_large=0.3, small_quota=100)
    tree = build({0: (None, None, "root"), 1: (0, 0.5, "large")})
    draws = [choose_action(record(settings, n), tree, 1, 0)[0] for n in range(2000)]
    again = [choose_action(record(settings, n), tree, 1, 0)[0] for n in range(2000)]
    assert draws == again
    assert 0.26 < draws.count(Action.LARGE) / len(draws) < 0.34


def test_selected_small_steps_count_towards_the_quota(store, judge, clock):
    settings = SearchSettings(seed=3, p_large=0.0, small_quota=2, expansion_weight=0.0)
    engine = SearchEngine(store, judge, settings, clock=clock)
    search = engine.start_search(toy_task())
    first = asyncio.run(engine.regenerate(search.id, kernel(speed=2.0))).node.id
    one = engine.select_node(search.id)
    two = engine.select_node(search.id)
    three = engine.select_node(search.id)
    assert [s.node.id for s in (one, two, three)] == [first] * 3
    assert [s.action for s in (one, two, three)] == [Action.SMALL, Action.SMALL, Action.LARGE]
    assert "quota 2" in three.reason


def test_a_recorded_search_expands_the_leader_not_the_dominated_kernels():
    # the tf32 GEMM search of issue 17: 0.879x and 0.93x kernels were refined again and again
    # while a 1.078x kernel (the repair of a crashed one) waited. With the log-speedup reward
    # and mean backup, node 2's subtree (0.93x, 0.92x) scored highest at the root and its
    # small steps went on; ranked against the leader and blended with the best in each
    # subtree, the walk goes to the leader.
    recorded = {
        0: (None, None, "root"),
        1: (0, 0.879, "large"),
        2: (0, 0.93, "large"),
        3: (0, "runtime_error", "large"),
        4: (1, 0.87, "small"),
        5: (2, 0.92, "small"),
        6: (1, "compile_error", "small"),
        7: (3, 1.078, "small"),
    }
    tree = build(recorded)
    assert tree.best_id == 7 and tree[7].reward == 1.0
    assert tree.select([]) == 7
    # each half alone is not enough: without the blend the failure under node 3 still hides it
    assert build(recorded, SearchSettings(leader_weight=0.0)).select([]) != 7
