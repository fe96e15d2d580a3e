"""Which kernel file is judged against which problem file.

Three layouts are recognised, in this order, for each kernel:

1. **Same name**: ``level2/25_Conv2d_Min_Tanh_Tanh.py`` in both directories.
2. **Problem number**: the number a file name starts with, within one level. KernelBench names
   its problems ``N_Name.py``; kernels named ``N_Name.py``, ``N_Other.py`` or ``N.py`` (the
   layout of AdaExplore's released kernels, ``kernelbench/level2/25.py``) match problem ``N``.
3. **Level and number in the name**: ``level2_25.py`` (or ``level2-25``, ``level_2_25``) matches
   problem 25 of level 2.

A file's level is the nearest ``levelL`` folder on its path, the directory given on the command
line included, so ``KernelBench/level2`` and ``kernels/level2`` agree, and so do
``KernelBench`` and ``kernels`` when each holds ``level2/``. A kernel without a level matches a
problem of any level when only one fits. Anything else (no fit, or several) is listed with the
reason, never guessed.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)", re.IGNORECASE)
_LEVEL_AND_NUMBER = re.compile(r"level[_-]?(\d+)[_-](\d+)(?:[_-].*)?", re.IGNORECASE)
_NUMBER = re.compile(r"(\d+)(?:[_-].*)?")


class SetPair(BaseModel):
    """One kernel and the problem it is judged against (paths relative to their directories)."""

    problem: str
    kernel: str
    level: int | None = None
    how: str = Field(description="same name | problem number | level and number")


class Unmatched(BaseModel):
    kernel: str
    reason: str


class SetMatch(BaseModel):
    problems_dir: str
    kernels_dir: str
    pairs: list[SetPair]
    unmatched_kernels: list[Unmatched] = Field(default_factory=list)
    problems_without_kernel: list[str] = Field(default_factory=list)


class _File(BaseModel):
    relative: str
    stem: str
    level: int | None
    number: int | None


def match_set(problems_dir: Path, kernels_dir: Path) -> SetMatch:
    """Pairs every Python file under ``kernels_dir`` with its problem under ``problems_dir``."""
    problems = _files(problems_dir)
    pairs: list[SetPair] = []
    unmatched: list[Unmatched] = []
    for kernel in _files(kernels_dir):
        found = _find(kernel, problems)
        if isinstance(found, str):
            unmatched.append(Unmatched(kernel=kernel.relative, reason=found))
            continue
        problem, how = found
        pairs.append(
            SetPair(problem=problem.relative, kernel=kernel.relative, level=problem.level, how=how)
        )
    judged = {pair.problem for pair in pairs}
    return SetMatch(
        problems_dir=str(problems_dir),
        kernels_dir=str(kernels_dir),
        pairs=pairs,
        unmatched_kernels=unmatched,
        problems_without_kernel=[p.relative for p in problems if p.relative not in judged],
    )


def _find(kernel: _File, problems: list[_File]) -> tuple[_File, str] | str:
    level, number = kernel.level, kernel.number
    named = _LEVEL_AND_NUMBER.fullmatch(kernel.stem)
    if named:
        level = level if level is not None else int(named.group(1))
        number = int(named.group(2))
    criteria = [
        ("same name", lambda p: p.stem == kernel.stem),
        (
            "level and number" if named else "problem number",
            lambda p: number is not None and p.number == number,
        ),
    ]
    for how, fits in criteria:
        candidates = [p for p in problems if fits(p)]
        # The same level first; then, where one side has no level, any level.
        same_level = [p for p in candidates if p.level == level]
        either = [p for p in candidates if p.level is None or level is None]
        for group in (same_level, either):
            if len(group) == 1:
                return group[0], how
            if len(group) > 1:
                listing = ", ".join(c.relative for c in group)
                return f"several problems fit ({listing}); rename the kernel after one of them"
    where = f"level {level} " if level is not None else ""
    wanted = f"problem {number} or {kernel.stem}.py" if number is not None else f"{kernel.stem}.py"
    return f"no {where}{wanted} among the problems"


def _files(root: Path) -> list[_File]:
    root_level = _level_of([root.name])
    found = []
    for path in sorted(root.rglob("*.py"), key=_natural_key(root)):
        relative = path.relative_to(root)
        parts = relative.parts
        if path.name == "__init__.py" or any(p.startswith((".", "__")) for p in parts):
            continue
        level = _level_of(parts[:-1])
        number = _NUMBER.fullmatch(path.stem)
        found.append(
            _File(
                relative=relative.as_posix(),
                stem=path.stem,
                level=level if level is not None else root_level,
                number=int(number.group(1)) if number else None,
            )
        )
    return found


def _level_of(parts: tuple[str, ...] | list[str]) -> int | None:
    for part in reversed(parts):
        match = _LEVEL_DIR.fullmatch(part)
        if match:
            return int(match.group(1))
    return None


def _natural_key(root: Path):
    # 2_x.py before 10_x.py, as KernelBench numbers its problems
    def key(path: Path) -> list[tuple[int, int | str]]:
        text = path.relative_to(root).as_posix()
        return [(0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t]

    return key
