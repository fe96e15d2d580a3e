"""Prompt templates: plain-text Jinja files beside this module, rendered with ``render``.

The MCP server exposes the same templates as MCP prompts and the driver sends them to its model,
so an external agent and the built-in driver read exactly the same words.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # jinja2 is imported by the first rendering: the MCP server answers initialize without it
    import jinja2

__all__ = ["PromptNotFound", "render", "template_names"]


class PromptNotFound(LookupError):
    pass


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    # StrictUndefined: a missing variable is a bug in the caller, not an empty line in a prompt.
    return jinja2.Environment(
        loader=jinja2.PackageLoader("adaexplore_mcp", "prompts"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def template_names() -> list[str]:
    """The prompts shipped with the package, without the ``.txt`` suffix."""
    folder = resources.files("adaexplore_mcp") / "prompts"
    return sorted(p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt"))


def render(name: str, /, **variables: Any) -> str:
    """The prompt ``name`` (``prompts/NAME.txt``) with ``variables`` filled in."""
    import jinja2

    try:
        template = _environment().get_template(f"{name}.txt")
    except jinja2.TemplateNotFound:
        raise PromptNotFound(
            f"no prompt named {name!r}; the package has: {', '.join(template_names())}"
        ) from None
    return template.render(**variables).strip() + "\n"
