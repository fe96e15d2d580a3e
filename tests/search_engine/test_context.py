"""What a selected step is shown: working memory for a small step, a diverse pool for a large."""

from __future__ import annotations

import asyncio

from adaexplore_mcp.search_engine import Action, Edit, SearchEngine, views
from adaexplore_mcp.search_engine.settings import SearchSettings
from adaexplore_mcp.search_engine.similarity import similarity
from tests.search_engine.fakes import kernel, toy_task

ELEMENTWISE = """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""

MATMUL = """
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""

REDUCTION = """
@triton.jit
def sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        vals = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        total += vals
    tl.store(out_ptr + row, tl.sum(total, axis=0))
"""


def renamed(code: str) -> str:
    """The same structure: other names, other constants, a comment."""
    return (
        code.replace("x_ptr", "inp").replace("offs", "idx").replace("BLOCK", "TILE")
        + "# tuned for H100\n"
    ).replace("0.0", "1.0")


def run(coro):
    return asyncio.run(coro)


def test_similarity_ignores_names_constants_and_comments_but_not_structure():
    assert similarity(ELEMENTWISE, renamed(ELEMENTWISE)) == 1.0
    assert similarity(REDUCTION, renamed(REDUCTION)) == 1.0
    # shared boilerplate (signatures, tl.load/tl.store) keeps different kernels well above 0
    assert similarity(ELEMENTWISE, MATMUL) < 0.6
    assert similarity(MATMUL, REDUCTION) < 0.6
    edited = ELEMENTWISE.replace("x + y", "tl.maximum(x, y)")
    assert 0.8 < similarity(ELEMENTWISE, edited) < 1.0


def test_a_small_step_sees_the_chain_from_the_nearest_large_step_with_feedback(store, judge):
    settings = SearchSettings(seed=1, p_large=0.0, expansion_weight=0.0, working_memory_k=5)
    engine = SearchEngine(store, judge, settings)
    search = engine.start_search(toy_task())
    sid = search.id
    one = run(engine.regenerate(sid, kernel(ELEMENTWISE, speed=1.5))).node.id
    two = run(engine.apply_patch(sid, one, [Edit(old_str="x + y", new_str="y + x")])).node.id
    three = run(
        engine.apply_patch(sid, two, [Edit(old_str="# speed: 1.5", new_str="# fails: runtime")])
    ).node.id
    four = run(
        engine.apply_patch(sid, three, [Edit(old_str="# fails: runtime", new_str="# speed: 2.0")])
    ).node.id
    selection = engine.select_node(sid)
    assert selection.node.id == four and selection.action is Action.SMALL
    memory = selection.working_memory
    assert [m.node_id for m in memory] == [one, two, three, four]
    assert [m.action for m in memory] == [Action.LARGE, Action.SMALL, Action.SMALL, Action.SMALL]
    assert memory[2].status.value == "runtime_error" and "FakeError" in memory[2].feedback
    assert memory[3].feedback.startswith("correct, 2x the baseline")
    assert memory[1].edits == [Edit(old_str="x + y", new_str="y + x")]
    assert selection.pool == []
    # a large step in the chain starts a new working memory; K bounds its length
    engine.release(sid, four)
    five = run(engine.regenerate(sid, kernel(MATMUL, speed=2.5), four)).node.id
    six = run(engine.apply_patch(sid, five, [Edit(old_str="acc +=", new_str="acc = acc +")]))
    assert engine.select_node(sid).working_memory[0].node_id == five
    assert six.node.id == 6
    short = SearchEngine(store, judge, settings.model_copy(update={"working_memory_k": 2}))
    sid = short.start_search(toy_task()).id
    node = run(short.regenerate(sid, kernel(ELEMENTWISE, speed=1.0))).node.id
    for value in (2, 3, 4):
        edit = Edit(old_str=f"# speed: {value - 1}.0", new_str=f"# speed: {value}.0")
        node = run(short.apply_patch(sid, node, [edit])).node.id
    assert [m.node_id for m in short.select_node(sid).working_memory] == [node - 1, node]


def test_a_large_step_sees_the_best_kernels_that_differ_in_structure(store, judge):
    settings = SearchSettings(seed=1, p_large=1.0, pool_size=5, similarity_threshold=0.8)
    engine = SearchEngine(store, judge, settings)
    sid = engine.start_search(toy_task()).id
    best = run(engine.regenerate(sid, kernel(ELEMENTWISE, speed=4.0))).node.id
    run(engine.regenerate(sid, kernel(renamed(ELEMENTWISE), speed=3.0)))  # a near-copy
    matmul = run(engine.regenerate(sid, kernel(MATMUL, speed=2.0))).node.id
    run(engine.regenerate(sid, kernel(REDUCTION, fails="incorrect")))  # not correct: left out
    slow = run(engine.regenerate(sid, kernel(REDUCTION, speed=0.5))).node.id
    selection = engine.select_node(sid)
    assert selection.action is Action.LARGE and selection.working_memory == []
    assert [p.node_id for p in selection.pool] == [best, matmul, slow]
    assert selection.pool[0].max_similarity == 0.0
    assert all(p.max_similarity < 0.8 for p in selection.pool)
    assert selection.pool[0].speedup == 4.0 and "tl.store" in selection.pool[0].code
    small_pool = SearchEngine(store, judge, settings.model_copy(update={"pool_size": 2}))
    fork = small_pool.fork(sid, 0, settings=settings.model_copy(update={"pool_size": 2}))
    assert [p.node_id for p in small_pool.select_node(fork.id).pool] == [1, 3]


def test_the_working_memory_keeps_each_steps_note_and_the_end_of_what_its_kernel_printed(
    store, judge
):
    settings = SearchSettings(seed=1, p_large=0.0, expansion_weight=0.0, working_memory_k=5)
    engine = SearchEngine(store, judge, settings)
    sid = engine.start_search(toy_task()).id
    timings = "\n".join(f"# prints: launch {i}: {i / 10:.1f} us" for i in range(200))
    first = kernel(f"{ELEMENTWISE}\n{timings}", speed=1.5)
    one = run(engine.regenerate(sid, first, note="one program per 1024 elements")).node.id
    plan = "fuse the add into the store; " + "the reason, at length. " * 60
    two = run(engine.apply_patch(sid, one, [Edit(old_str="x + y", new_str="y + x")], note=plan))
    memory = engine.select_node(sid).working_memory
    assert [m.node_id for m in memory] == [one, two.node.id]
    ancestor, this = memory
    assert ancestor.note == "one program per 1024 elements"
    # the last lines of a long output, whole lines only, within the limit
    assert ancestor.output_tail.endswith("launch 199: 19.9 us")
    assert ancestor.output_tail.startswith("…launch ") and "launch 0:" not in ancestor.output_tail
    assert len(ancestor.output_tail) <= views.OUTPUT_LIMIT
    # the head of a long note, cut at a word
    assert this.note.startswith("fuse the add into the store;") and this.note.endswith("…")
    assert len(this.note) <= views.NOTE_LIMIT and not this.note.endswith(" …")
    assert this.output_tail == ancestor.output_tail  # the patch left the prints as they were
    # a step without a note, and a kernel that prints nothing, carry neither
    # (a kernel the search already has would be that node again: this one is new)
    three = run(engine.apply_patch(sid, two.node.id, [Edit(old_str="y + x", new_str="(y + x)")]))
    quiet = run(engine.regenerate(sid, kernel(MATMUL, speed=2.0), three.node.id, note="  "))
    assert engine.get_node(sid, three.node.id).note is None
    entry = engine.step_context(sid, quiet.node.id, Action.SMALL)[0][-1]
    assert entry.note is None and entry.output_tail is None


def test_a_report_printed_on_every_call_of_forward_is_kept_once_with_its_count():
    report = "kernel A: 3.1 us\nkernel B: 7.9 us\ntotal: 11.0 us"
    printed = "compiling...\n" + "\n".join([report] * 40)  # the judge calls forward 40 times
    assert views.trimmed_output(printed) == (
        f"compiling...\n{report}\n[the 3 lines above printed 40 times]"
    )
    assert views.trimmed_output("one\ntwo\none\n") == "one\ntwo\none"
    assert views.trimmed_output("\n \n") is None
