"""Which setups a model family refuses with 1007, and why: the Gemini 3.8 setup rules.

Pure: no I/O. :func:`broken_rule` reads the setup's body (what is inside ``{"setup": ...}``)
with its model family (:mod:`~adk_live_resume.testing.families`) and names the rule it
breaks, or returns ``None``. The connection then closes with 1007 "Request contains an invalid
argument." (the only words a 1007 carries: the rule is in ``record.setup_refused``).

The rules (``gemini-live-protocol.md``, "Field facts of 2026-11-29": ProfSynapse/nexus PR 389
with a real-socket smoke test, google-gemini/cookbook PR 1379, promptfoo PR 10956,
MemberJunction PR 4512):

* ``gemini-3.8-live`` closes with 1007 if ``generationConfig.thinkingConfig`` is present;
* ``gemini-3.8-live-extended-thinking`` closes unless a ``thinkingConfig`` present says
  ``thinkingLevel`` low, medium or high (``minimal`` and ``thinkingBudget`` are refused). A
  setup without ``thinkingConfig`` is taken: the fake's reading (no source says what a
  missing one does, and the thinking guide's examples leave it out);
* extended thinking needs OpenAPI ``parameters``: a function declared with
  ``parametersJsonSchema`` is refused (google-adk's ``FunctionTool`` declares Python
  functions that way).

Extended thinking "needs NON_BLOCKING functions" too, by the same sources; the Live API
thinking guide says its function calling is "async only" whatever the declaration. The fake
keeps the guide's reading (a ``BLOCKING`` declaration is taken and called asynchronously,
:mod:`~adk_live_resume.testing.families`); the conformance suite records which way the
service goes.
"""

from __future__ import annotations

from .families import Family
from .protocol import JsonDict, has, pick, pick_dict, pick_list

__all__ = ["broken_rule"]


def broken_rule(setup: JsonDict, family: Family) -> str | None:
    """The rule of ``family`` the ``setup`` body breaks, in words (``None``: none)."""
    config = pick_dict(setup, "generationConfig") or {}
    thinking = pick(config, "thinkingConfig")
    present = has(config, "thinkingConfig")
    if family.refuses_thinking_config and present:
        return f"{family.name} takes no generationConfig.thinkingConfig"
    if family.thinking_levels is not None and present:
        level = str(pick(thinking, "thinkingLevel") or "").lower()
        if has(thinking or {}, "thinkingBudget"):
            return f"{family.name} takes no thinkingConfig.thinkingBudget"
        if level not in family.thinking_levels:
            wanted = ", ".join(sorted(family.thinking_levels))
            return f"{family.name} takes thinkingConfig.thinkingLevel {wanted}, not {level!r}"
    if family.needs_openapi_parameters:
        for tool in pick_list(setup, "tools"):
            for declaration in pick_list(tool, "functionDeclarations"):
                if has(declaration, "parametersJsonSchema"):
                    name = pick(declaration, "name")
                    return (
                        f"{family.name} needs OpenAPI parameters, not parametersJsonSchema"
                        f" (function {name!r})"
                    )
    return None
