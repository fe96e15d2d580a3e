from adaexplore_mcp.memory import FailureReport
from adaexplore_mcp.memory.retrieval import estimate_tokens

from .conftest import memory_in

RULES = [
    "You cannot read a module-level Python variable inside a @triton.jit kernel unless it is a "
    "tl.constexpr.",
    "You cannot give tl.arange a range that is not a power of two; round up with "
    "triton.next_power_of_2 and mask the tail.",
    "You cannot call tl.dot on blocks with a dimension below 16.",
    "You cannot leave masked lanes of a max reduction at 0; load them with other=-inf.",
    "You cannot index a block with Python subscripts such as x[0] inside a kernel; use tl.where "
    "or tl.sum with a mask.",
]


def seeded(tmp_path, **settings):
    memory = memory_in(tmp_path, **settings)
    for text in RULES:
        memory.add_rule(text)
    return memory


def test_a_query_ranks_the_relevant_rule_first(tmp_path):
    memory = seeded(tmp_path)
    answer = memory.get_rules("my dot product of 8x8 tiles fails to compile")
    assert answer.rules[0].text == RULES[2]
    assert answer.rules[0].score > 0
    assert answer.active_total == len(RULES)
    assert len(answer.rules) == len(RULES)  # the rest follow, ranked by support


def test_a_kernel_is_a_query(tmp_path):
    memory = seeded(tmp_path)
    kernel = (
        "@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    cols = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + cols, mask=cols < n)\n"
        "    m = tl.max(x, axis=0)\n"
    )
    ranked = [hit.text for hit in memory.get_rules(kernel).rules]
    assert ranked.index(RULES[3]) < ranked.index(RULES[0])
    assert ranked.index(RULES[1]) < ranked.index(RULES[0])


def test_the_limit_and_the_token_budget_are_honoured(tmp_path):
    memory = seeded(tmp_path)
    assert len(memory.get_rules(limit=2).rules) == 2
    budget = estimate_tokens(RULES[2]) + 1
    answer = memory.get_rules("tl.dot 16", token_budget=budget)
    assert [hit.text for hit in answer.rules] == [RULES[2]]
    assert answer.omitted_for_budget == len(RULES) - 1


def test_rules_seen_on_the_task_come_first_without_a_query(tmp_path):
    import asyncio

    memory = seeded(tmp_path, threshold=1)
    asyncio.run(
        memory.add_failure(
            FailureReport(task="softmax", code="", error="E: masked lanes 0"), RULES[3]
        )
    )
    assert memory.get_rules(task="softmax").rules[0].text == RULES[3]
    assert memory.get_rules(task="gelu").rules[0].text == RULES[3]  # broadest support otherwise


def test_a_rule_added_through_another_memory_object_is_seen(tmp_path):
    reader = seeded(tmp_path)
    assert reader.get_rules().active_total == len(RULES)
    writer = memory_in(tmp_path)  # another process would open the same file the same way
    writer.add_rule("You cannot store float32 values through a float16 pointer without a cast.")
    assert reader.get_rules().active_total == len(RULES) + 1
    writer.retire(1)
    assert RULES[0] not in [hit.text for hit in reader.get_rules().rules]


def test_an_empty_memory_answers_with_no_rules(tmp_path):
    answer = memory_in(tmp_path).get_rules("anything")
    assert answer.rules == [] and answer.active_total == 0 and answer.as_prompt() == ""
