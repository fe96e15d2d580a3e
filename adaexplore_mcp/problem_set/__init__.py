"""A problem set judged in one command: every kernel of a directory against its problem.

match = match_set(problems_dir, kernels_dir)            # which kernel goes with which problem
plan = plan_set(match, problems_dir, kernels_dir, policies, read_records(out))
with open_results(out) as results:                       # appended as each verdict arrives
    await judge_set(judge, plan.pending, {"precision": p}, jobs=n, on_record=results.append)
summary = summarize(plan.done + new_records)             # fast_p, speedups, capped mean
"""

from adaexplore_mcp.problem_set.matching import SetMatch, SetPair, Unmatched, match_set
from adaexplore_mcp.problem_set.records import (
    POLICY_FIELDS,
    Policies,
    ResultsFileError,
    ResultsWriter,
    SetRecord,
    done_under,
    open_results,
    policies_of,
    read_records,
    same_policies,
)
from adaexplore_mcp.problem_set.runner import (
    NotJudged,
    SetItem,
    SetPlan,
    judge_capacity,
    judge_set,
    plan_set,
)
from adaexplore_mcp.problem_set.summary import (
    CAP,
    DEFAULT_FAST_P,
    KernelRow,
    SetSummary,
    summarize,
)

__all__ = [
    "CAP",
    "DEFAULT_FAST_P",
    "POLICY_FIELDS",
    "KernelRow",
    "NotJudged",
    "Policies",
    "ResultsFileError",
    "ResultsWriter",
    "SetItem",
    "SetMatch",
    "SetPair",
    "SetPlan",
    "SetRecord",
    "SetSummary",
    "Unmatched",
    "done_under",
    "judge_capacity",
    "judge_set",
    "match_set",
    "open_results",
    "plan_set",
    "policies_of",
    "read_records",
    "same_policies",
    "summarize",
]
