"""What a rule's text must look like, how two texts are compared, and when a rule is about one
kernel rather than a mistake anyone can make."""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "You cannot"
MAX_WORDS = 60

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_SENTENCE_END = re.compile(r"[.!?](?:\s+|$)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_DIMENSIONS = re.compile(r"\b([1-9])-?D\b", re.I)
_MIN_PROHIBITION_TERMS = 3

# Words that carry no part of a prohibition; dropped before comparing two rules.
STOPWORDS = frozenset(
    """a an the you cannot can not no it its is are be been being to of in on at by for with
    from as or and but if when while that this these those which what than then so such any
    each every all some into onto inside instead use using used your their there here do does
    must should may might will would only also without within per""".split()
)

# Names every Triton kernel shares, or that name an API: a rule may mention them freely.
_SHARED_VOCABULARY = frozenset(
    """BLOCK_SIZE BLOCK_M BLOCK_N BLOCK_K BLOCK_D BLOCK_V GROUP_M GROUP_SIZE_M num_warps
    num_stages num_ctas constexpr program_id num_programs arange load store dot where maximum
    minimum exp exp2 log log2 sqrt rsqrt sigmoid sum max min argmax argmin cumsum reshape view
    trans permute broadcast_to expand_dims static_range range next_power_of_2 cdiv jit autotune
    Config heuristics input_precision allow_tf32 out_dtype other mask eviction_policy
    cache_modifier float16 float32 bfloat16 float64 int8 int16 int32 int64 uint8 fp16 fp32 bf16
    tf32 fp8 contiguous stride strides is_contiguous data_ptr empty empty_like zeros zeros_like
    ModelNew forward kwargs args None True False inf nan""".split()
)
_API_PREFIXES = ("tl.", "triton.", "torch.", "F.", "nn.", "libdevice.", "math.")
_CODE_TOKEN = re.compile(r"`([^`]+)`|\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\b")
_LINE_REFERENCE = re.compile(r"\b(?:line|lines)\s+\d+|\bkernel\.py:\d+|\bL\d+\b", re.I)


class RuleTextError(ValueError):
    """A rule text that is not one "You cannot …" sentence; the message says how to fix it."""


def clean(text: str) -> str:
    """A valid rule text, or ``RuleTextError`` saying what is wrong with it."""
    text = " ".join(text.strip().strip('"').split())
    if not text:
        raise RuleTextError("the rule is empty; write one sentence starting 'You cannot'")
    if not text.startswith(PREFIX + " "):
        raise RuleTextError(
            f"a rule must be one sentence starting exactly 'You cannot', got {text[:60]!r}; "
            "state the prohibited action, e.g. 'You cannot call torch functions inside a "
            "@triton.jit kernel.'"
        )
    ends = [m.end() for m in _SENTENCE_END.finditer(text) if not _inside_code(text, m.start())]
    if ends and ends[0] < len(text.rstrip()):
        raise RuleTextError(
            "a rule must be exactly one sentence; join the clauses with ';' or drop the second "
            f"sentence: {text!r}"
        )
    if len(text.split()) > MAX_WORDS:
        raise RuleTextError(f"a rule must stay under {MAX_WORDS} words; shorten it")
    if text[-1] not in ".!":
        text += "."
    return text


def words(text: str) -> list[str]:
    """Lower-case words of a text or of code: identifiers split at '_', '.' and camelCase."""
    out: list[str] = []
    for token in _WORD.findall(text):
        for part in _CAMEL.sub("_", token).split("_"):
            if part:
                out.append(part.lower())
    return out


def key_terms(text: str) -> frozenset[str]:
    """The words two rules must share to state the same prohibition (light stemming)."""
    terms = {stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1}
    # "1-D" splits into words too short to keep, yet it is what tells "tl.dot on 1-D blocks"
    # from "tl.dot on 3-D blocks".
    terms.update(f"{m.group(1)}d" for m in _DIMENSIONS.finditer(text))
    return frozenset(terms)


def prohibition(text: str) -> str:
    """The part of a rule that states what is forbidden: up to the first ';' outside code.
    What follows is the remedy, which a restatement of the rule often leaves out."""
    for match in re.finditer(";", text):
        if not _inside_code(text, match.start()):
            return text[: match.start()]
    return text


class RuleTerms(NamedTuple):
    whole: frozenset[str]
    prohibition: frozenset[str]


def rule_terms(text: str) -> RuleTerms:
    return RuleTerms(key_terms(text), key_terms(prohibition(text)))


def rule_similarity(a: RuleTerms, b: RuleTerms) -> float:
    """How nearly two rules state the same prohibition: the overlap of their whole texts, or
    of their prohibitions when that is higher (the same prohibition with different remedies
    is one rule)."""
    whole = similarity(a.whole, b.whole)
    # Two or fewer words ("You cannot use tl.dot; …") do not make a prohibition to compare.
    if min(len(a.prohibition), len(b.prohibition)) < _MIN_PROHIBITION_TERMS:
        return whole
    return max(whole, similarity(a.prohibition, b.prohibition))


def normalized(text: str) -> str:
    """Equal for texts that differ only in case, spacing and punctuation."""
    return " ".join(words(text))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two rules' key terms."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def kernel_specific(
    text: str, code: str | None = None, names: set[str] | None = None
) -> str | None:
    """Why a rule is tied to one kernel (a line number, one of its own names), or None.

    Such rules are kept as evidence but never become active: they cannot help another task.
    """
    reference = _LINE_REFERENCE.search(text)
    if reference:
        return f"it refers to a line of one kernel ({reference.group(0)!r})"
    own = set(names or ())
    if code is not None:
        from adaexplore_mcp.memory.signature import kernel_names

        own |= kernel_names(code)
    for match in _CODE_TOKEN.finditer(text):
        token = match.group(1) or match.group(2)
        if token.startswith(_API_PREFIXES):
            continue
        quoted = match.group(1) is not None
        for name in re.findall(r"[A-Za-z_]\w*", token):
            if name in _SHARED_VOCABULARY:
                continue
            # A plain word ("offsets", "scale") is English even when a kernel uses it as a name.
            if name in own and (quoted or _code_like(name)):
                return f"it names {name!r}, which that kernel defines"
            if _looks_like_a_local(name):
                return f"it names {name!r}, an identifier of one kernel"
    return None


def _looks_like_a_local(name: str) -> bool:
    # snake_case with a digit or two underscores (x_row_ptr, offs_m2) reads as a variable;
    # plain words, API names and UPPER_CASE block sizes do not.
    if name.isupper() or name in _SHARED_VOCABULARY:
        return False
    return name.count("_") >= 2 or ("_" in name and any(ch.isdigit() for ch in name))


def _code_like(name: str) -> bool:
    return "_" in name or any(ch.isdigit() for ch in name) or name != name.lower()


def _inside_code(text: str, position: int) -> bool:
    # A period inside `tl.arange` or tl.constexpr does not end the sentence.
    if text[:position].count("`") % 2 == 1:
        return True
    return position + 1 < len(text) and not text[position + 1].isspace()


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
