"""What a client's ``setup`` message asks of one fake-server connection, read once.

Pure: no I/O. :func:`read_setup` turns the setup into a frozen :class:`SetupChoices` that the
connection's parts read (never write): the response modality, the model family
(:mod:`~adk_live_resume.testing.families`) and Gemini 3.x Live dialect
(:mod:`~adk_live_resume.testing.dialect`), the declared and NON_BLOCKING functions,
transcriptions (the service sends them only when the setup asks for them: the Live API
capabilities guide, "Audio transcriptions"), context window compression, voice activity
detection and session resumption.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from .dialect import history_in_client_content, is_gemini_3_live, model_name
from .families import GEMINI_2_LIVE, GEMINI_3_1_LIVE, Family, family_for
from .protocol import JsonDict, has, pick, pick_dict, pick_list
from .vad import VadConfig

__all__ = ["SetupChoices", "read_setup"]

Modality = Literal["TEXT", "AUDIO"]


@dataclass(frozen=True)
class SetupChoices:
    """What one setup asked for; the defaults are those of a setup that says nothing."""

    modality: Modality = "TEXT"
    family: Family = GEMINI_2_LIVE
    #: ADK's Gemini 3.x Live rule holds for the model name (see the dialect module).
    gemini3: bool = False
    #: ``historyConfig.initialHistoryInClientContent``.
    history_in_client_content: bool = False
    #: ``contextWindowCompression`` is set (the session limit of audio sessions is lifted).
    compression: bool = False
    #: ``inputAudioTranscription`` / ``outputAudioTranscription`` are present.
    input_transcription: bool = False
    output_transcription: bool = False
    #: Every declared function, and those whose calls are NON_BLOCKING in this family.
    functions: frozenset[str] = frozenset()
    non_blocking: frozenset[str] = frozenset()
    vad: VadConfig = field(default_factory=VadConfig)
    #: ``sessionResumption`` is present (an object or null): handles are issued.
    resumption: bool = False
    #: The handle to resume, when ``sessionResumption.handle`` is a non-empty string.
    resume_handle: str | None = None
    #: ``sessionResumption.transparent`` (Vertex AI: handles carry the consumed index).
    transparent: bool = False

    @property
    def audio_out(self) -> bool:
        """The model answers in AUDIO (the session carries audio from its start)."""
        return self.modality == "AUDIO"


def read_setup(setup: JsonDict, *, refuse_3_1_content: bool = False) -> SetupChoices:
    """The choices of the ``setup`` message's body (what is inside ``{"setup": ...}``).

    ``refuse_3_1_content``: the Gemini 3.1 Live family refuses mid-session ``clientContent``
    as it was reported to until May 2026 (see :mod:`~adk_live_resume.testing.wire_shapes`)."""
    config = pick_dict(setup, "generationConfig") or {}
    modalities = pick_list(config, "responseModalities") or pick_list(setup, "responseModalities")
    model = model_name(setup)
    family = family_for(model)
    if refuse_3_1_content and family == GEMINI_3_1_LIVE:
        family = dataclasses.replace(family, client_content_mid_session=False)
    functions: list[str] = []
    non_blocking: list[str] = []
    for tool in pick_list(setup, "tools"):
        for declaration in pick_list(tool, "functionDeclarations"):
            name = pick(declaration, "name")
            if isinstance(name, str):
                functions.append(name)
                if family.non_blocking(pick(declaration, "behavior")):
                    non_blocking.append(name)
    resumption = pick(setup, "sessionResumption")
    resumable = has(setup, "sessionResumption") and (
        resumption is None or isinstance(resumption, dict)
    )
    handle = pick(resumption, "handle") if resumable else None
    return SetupChoices(
        modality="AUDIO" if any(str(m).upper() == "AUDIO" for m in modalities) else "TEXT",
        family=family,
        gemini3=is_gemini_3_live(model),
        history_in_client_content=history_in_client_content(setup),
        compression=bool(pick(setup, "contextWindowCompression")),
        input_transcription=has(setup, "inputAudioTranscription"),
        output_transcription=has(setup, "outputAudioTranscription"),
        functions=frozenset(functions),
        non_blocking=frozenset(non_blocking),
        vad=VadConfig.from_setup(setup),
        resumption=resumable,
        resume_handle=handle if isinstance(handle, str) and handle else None,
        transparent=bool(pick(resumption, "transparent")) if resumable else False,
    )
