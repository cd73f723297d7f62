"""What the service says a live session's turns cost in tokens, summed as it says it.

The service sends ``usageMetadata`` once per turn (with its ``turnComplete``), and each
message counts that turn only: it is **not cumulative**. Its ``promptTokenCount`` counts the
whole context again every turn (measured on Gemini 3.1 Live: 143, 181, 224; on 2.5 native
audio: 373, 413, 452), so the sum of the prompt counts is what the turns were billed for,
not the size of the context; the size of the context is the latest prompt count alone.
Some modes send none at all (Gemini 3.1 Live in a microphone conversation). Sources:
``gemini-live-protocol.md``, "Field facts of 2026-11-29" (pydantic-ai PR 7269, a probe
against the service; kazunori279/interpretab README).

:class:`TokenUsage` is one message's counts or a sum of them (``+``);
:func:`context_survived` reads, after a resume, whether the session still holds its context.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: The modality a count without a breakdown is given under (google-genai's
#: ``MediaModality.MODALITY_UNSPECIFIED``).
UNSPECIFIED = "MODALITY_UNSPECIFIED"

#: A resumed session whose first prompt counts fewer than this share of the last prompt
#: before the reconnect has lost its context (see :func:`context_survived`).
CONTEXT_KEPT_SHARE = 0.5

Modalities = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class TokenUsage:
    """Tokens the service counted for one or more turns (``usageMetadata``), summed as sent.

    Every count is ``0`` where the service sent none. The ``*_by_modality`` fields are
    ``(modality, tokens)`` pairs sorted by modality (``"AUDIO"``, ``"TEXT"``, ...), where the
    service broke a count down (``promptTokensDetails`` and the like); ``()`` where it did not.
    """

    #: Prompt tokens: each turn counts the whole context again (not the context's size).
    prompt_tokens: int = 0
    #: Tokens of the model's answers.
    response_tokens: int = 0
    #: Prompt tokens served from the cache (``cachedContentTokenCount``).
    cached_tokens: int = 0
    #: Tokens of the model's thinking (``thoughtsTokenCount``).
    thoughts_tokens: int = 0
    #: Prompt tokens of tool results (``toolUsePromptTokenCount``).
    tool_use_prompt_tokens: int = 0
    #: The service's own total (``totalTokenCount``).
    total_tokens: int = 0
    prompt_by_modality: Modalities = ()
    response_by_modality: Modalities = ()
    cached_by_modality: Modalities = ()
    tool_use_prompt_by_modality: Modalities = ()
    #: How many ``usageMetadata`` messages were summed.
    reports: int = 0

    @classmethod
    def of(cls, metadata: Any) -> TokenUsage:
        """The counts of one ``usageMetadata`` (google-genai's ``UsageMetadata``)."""
        return cls(
            prompt_tokens=_count(metadata, "prompt_token_count"),
            response_tokens=_count(metadata, "response_token_count"),
            cached_tokens=_count(metadata, "cached_content_token_count"),
            thoughts_tokens=_count(metadata, "thoughts_token_count"),
            tool_use_prompt_tokens=_count(metadata, "tool_use_prompt_token_count"),
            total_tokens=_count(metadata, "total_token_count"),
            prompt_by_modality=_details(metadata, "prompt_tokens_details"),
            response_by_modality=_details(metadata, "response_tokens_details"),
            cached_by_modality=_details(metadata, "cache_tokens_details"),
            tool_use_prompt_by_modality=_details(metadata, "tool_use_prompt_tokens_details"),
            reports=1,
        )

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            response_tokens=self.response_tokens + other.response_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            thoughts_tokens=self.thoughts_tokens + other.thoughts_tokens,
            tool_use_prompt_tokens=self.tool_use_prompt_tokens + other.tool_use_prompt_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            prompt_by_modality=_merged(self.prompt_by_modality, other.prompt_by_modality),
            response_by_modality=_merged(self.response_by_modality, other.response_by_modality),
            cached_by_modality=_merged(self.cached_by_modality, other.cached_by_modality),
            tool_use_prompt_by_modality=_merged(
                self.tool_use_prompt_by_modality, other.tool_use_prompt_by_modality
            ),
            reports=self.reports + other.reports,
        )

    def by_modality(self) -> dict[str, dict[str, int]]:
        """Each kind of count (``"prompt"``, ``"response"``, ``"cached"``, ``"thoughts"``,
        ``"tool_use_prompt"``) by modality, the part the service did not break down under
        :data:`UNSPECIFIED`: the counts of each kind add up to its total. Kinds at 0 are
        left out."""
        kinds = {
            "prompt": (self.prompt_tokens, self.prompt_by_modality),
            "response": (self.response_tokens, self.response_by_modality),
            "cached": (self.cached_tokens, self.cached_by_modality),
            "thoughts": (self.thoughts_tokens, ()),
            "tool_use_prompt": (self.tool_use_prompt_tokens, self.tool_use_prompt_by_modality),
        }
        split: dict[str, dict[str, int]] = {}
        for kind, (total, details) in kinds.items():
            parts = {modality: tokens for modality, tokens in details if tokens}
            rest = total - sum(parts.values())
            if rest > 0:
                parts[UNSPECIFIED] = parts.get(UNSPECIFIED, 0) + rest
            if parts:
                split[kind] = parts
        return split


def total(usages: Iterable[TokenUsage | None]) -> TokenUsage | None:
    """The sum of ``usages`` (``None`` where none of them is a usage)."""
    found = [usage for usage in usages if usage is not None]
    if not found:
        return None
    summed = found[0]
    for usage in found[1:]:
        summed = summed + usage
    return summed


def context_survived(before: int | None, after: int | None) -> bool | None:
    """Whether a resumed session kept its context: ``before`` is the last prompt count the
    run saw before the reconnect, ``after`` the resumed session's first one (each
    ``promptTokenCount`` counts the whole context). ``False`` when ``after`` fell below
    :data:`CONTEXT_KEPT_SHARE` of ``before``, ``True`` when it did not, ``None`` when either
    is missing (no usage to tell)."""
    if before is None or after is None or before <= 0:
        return None
    return after >= before * CONTEXT_KEPT_SHARE


def _count(metadata: Any, name: str) -> int:
    value = getattr(metadata, name, None)
    return int(value) if isinstance(value, int) and value > 0 else 0


def _details(metadata: Any, name: str) -> Modalities:
    found: dict[str, int] = {}
    for item in getattr(metadata, name, None) or ():
        tokens = getattr(item, "token_count", None)
        if not isinstance(tokens, int) or tokens <= 0:
            continue
        modality = getattr(item, "modality", None)
        key = str(getattr(modality, "value", modality) or UNSPECIFIED)
        found[key] = found.get(key, 0) + tokens
    return tuple(sorted(found.items()))


def _merged(left: Modalities, right: Modalities) -> Modalities:
    if not right:
        return left
    if not left:
        return right
    found = dict(left)
    for modality, tokens in right:
        found[modality] = found.get(modality, 0) + tokens
    return tuple(sorted(found.items()))
