"""``contextUpdate``: a client message that changes a session's system instruction and tools.

Source: google-genai 2.32.0 ``AsyncSession.send_context_update`` (notes, "Field facts that
contradict or extend the above": "processed in order with other input; ``tools=[]``
clears"). The message is ``{"contextUpdate": {"systemInstruction": <Content>, "tools":
{"tools": [<Tool>...]}}}``; a field that is absent is left as it was.

Pure: no I/O. Guarantees:

* :func:`read_context_update` reads what the message sets and nothing else: ``tools`` absent
  leaves the functions as they were, ``tools`` empty clears them;
* :meth:`SessionContext.updated` applies an update on top of a session's context, and
  :meth:`SessionContext.choices` gives a connection's choices with the session's functions
  and instruction in place of its setup's (a session resumed from a handle issued after an
  update has it; one resumed from an older handle has the setup's, until the update comes
  again).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .families import Family
from .protocol import JsonDict, has, pick, pick_dict, pick_list
from .setup_choices import SetupChoices

__all__ = ["NO_UPDATE", "SessionContext", "read_context_update"]


@dataclass(frozen=True)
class SessionContext:
    """What context updates set in a session (``None``: as the setup said)."""

    #: Every declared function, and those whose calls are NON_BLOCKING (``None``: unchanged).
    functions: frozenset[str] | None = None
    non_blocking: frozenset[str] = frozenset()
    #: The system instruction's text (``None``: unchanged).
    system_instruction: str | None = None

    def updated(self, update: SessionContext) -> SessionContext:
        """This context with what ``update`` sets on top."""
        functions = self.functions if update.functions is None else update.functions
        non_blocking = self.non_blocking if update.functions is None else update.non_blocking
        instruction = (
            self.system_instruction
            if update.system_instruction is None
            else update.system_instruction
        )
        return SessionContext(functions, non_blocking, instruction)

    def choices(self, choices: SetupChoices) -> SetupChoices:
        """``choices`` with this context's functions in place of the setup's."""
        if self.functions is None:
            return choices
        return dataclasses.replace(
            choices, functions=self.functions, non_blocking=self.non_blocking
        )


#: The context of a session no ``contextUpdate`` changed.
NO_UPDATE = SessionContext()


def read_context_update(body: JsonDict, family: Family) -> SessionContext:
    """What the ``contextUpdate`` ``body`` sets, for a session of ``family``."""
    functions: frozenset[str] | None = None
    non_blocking: set[str] = set()
    if has(body, "tools"):
        wrapper = pick(body, "tools")
        tools = pick_list(wrapper, "tools") if isinstance(wrapper, dict) else wrapper
        names: set[str] = set()
        for tool in tools if isinstance(tools, list) else []:
            for declaration in pick_list(tool, "functionDeclarations"):
                name = pick(declaration, "name")
                if isinstance(name, str):
                    names.add(name)
                    if family.non_blocking(pick(declaration, "behavior")):
                        non_blocking.add(name)
        functions = frozenset(names)
    instruction: str | None = None
    if has(body, "systemInstruction"):
        content = pick(body, "systemInstruction")
        if isinstance(content, str):
            instruction = content
        else:
            parts = pick_list(pick_dict(body, "systemInstruction") or {}, "parts")
            instruction = "".join(
                text for part in parts if isinstance(text := pick(part, "text"), str)
            )
    return SessionContext(functions, frozenset(non_blocking), instruction)
