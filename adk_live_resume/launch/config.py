"""``ADK_LIVE_RESUME_*`` environment variables: the policy they describe, and their spelling.

Read by :func:`adk_live_resume.install` (when it is given no policy), by the
``adk-live-resume`` launcher and by the start-up hook of the processes it starts. Precedence,
later ones winning::

    defaults < ADK_LIVE_RESUME_POLICY_JSON < ADK_LIVE_RESUME_<FIELD> < --policy-json < flags

where ``<FIELD>`` is any :class:`~adk_live_resume.ResumePolicy` field in upper case
(``ADK_LIVE_RESUME_MAX_ATTEMPTS=5``, ``ADK_LIVE_RESUME_GO_AWAY_MARGIN=10``,
``ADK_LIVE_RESUME_RETRYABLE_CLOSE_CODES=1000,1006,1011``). A policy passed to ``install()``
in code wins over all of them (they are then reported as ignored, never silently).
``ADK_LIVE_RESUME_STRICT=0`` allows a google-adk release older than the supported minimum.

A renamed field's old name (:data:`~adk_live_resume.rules.policy.RENAMED_FIELDS`) still works for
one release, as a variable (``ADK_LIVE_RESUME_RESTART_WHEN_HANDLE_DEAD``) and as a JSON key,
with a :class:`DeprecationWarning` naming the new one; where both are given, the new one wins.

An ``ADK_LIVE_RESUME_*`` variable that is none of these is reported once with a WARNING
(with the closest known name), so a misspelt variable never goes unnoticed.

An optional field (annotated ``X | None``) is set to ``None`` with the word ``none`` (any case)
in its variable or launcher flag (``ADK_LIVE_RESUME_<FIELD>=none``, ``--<field> none``) and
with ``null`` in JSON; an empty variable means "not set" (the default stays). Any other value
must be an ``X``, and an error says so and shows how to write ``none``.

Standard library only at import time: the start-up hook imports this in child processes.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import types
import typing
from collections.abc import Mapping
from typing import Any

from ..rules.policy import RENAMED_FIELDS, ResumePolicy, warn_renamed

logger = logging.getLogger("adk_live_resume")

ENV_PREFIX = "ADK_LIVE_RESUME_"
POLICY_JSON_ENV = "ADK_LIVE_RESUME_POLICY_JSON"
STRICT_ENV = "ADK_LIVE_RESUME_STRICT"
#: The fully resolved policy the launcher hands to child processes (takes precedence there).
BOOTSTRAP_POLICY_ENV = "ADK_LIVE_RESUME_BOOTSTRAP_POLICY"

#: ``ADK_LIVE_RESUME_*`` names read elsewhere, not misspellings (add yours here).
OTHER_VARIABLES: set[str] = {"ADK_LIVE_RESUME_HANDLE_KEY"}  # stored_handle.py reads it
#: Prefixes of variables read elsewhere, e.g. by this repository's own test suite.
OTHER_PREFIXES: tuple[str, ...] = ("ADK_LIVE_RESUME_CHAOS_", "ADK_LIVE_RESUME_VOICE_CHAOS_")

#: How an optional (``X | None``) field is set to ``None`` in a variable or a launcher flag.
NONE_WORD = "none"
_FALSE = frozenset({"0", "false", "no", "off"})
_TRUE = frozenset({"1", "true", "yes", "on"})

_reported: set[str] = set()


class ConfigError(ValueError):
    """A policy setting that cannot be used; the message names the source and the fix."""


def policy_fields() -> dict[str, dataclasses.Field[Any]]:
    """The :class:`ResumePolicy` fields by name."""
    return {f.name: f for f in dataclasses.fields(ResumePolicy)}


def policy_variables() -> dict[str, str]:
    """``ADK_LIVE_RESUME_<FIELD>`` -> field name, for every policy field."""
    return {ENV_PREFIX + name.upper(): name for name in policy_fields()}


def renamed_variables() -> dict[str, str]:
    """``ADK_LIVE_RESUME_<OLD FIELD>`` -> the new field name, for every renamed field."""
    return {ENV_PREFIX + old.upper(): new for old, new in RENAMED_FIELDS.items()}


def known_variables() -> set[str]:
    """Every ``ADK_LIVE_RESUME_*`` name this package reads."""
    return {
        *policy_variables(),
        *renamed_variables(),
        POLICY_JSON_ENV,
        STRICT_ENV,
        BOOTSTRAP_POLICY_ENV,
        *OTHER_VARIABLES,
    }


def _hint(name: str) -> Any:
    return typing.get_type_hints(ResumePolicy)[name]


def is_optional(name: str) -> bool:
    """Whether the policy field ``name`` accepts ``None`` (it is annotated ``X | None``)."""
    hint = _hint(name)
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return union and type(None) in typing.get_args(hint)


def field_kind(name: str) -> Any:
    """The field's annotated type, ``X | None`` reduced to ``X``, generics to their origin."""
    hint = _hint(name)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            hint = args[0]
    return typing.get_origin(hint) or hint


def default_policy() -> ResumePolicy:
    """The policy with every field at its default."""
    return ResumePolicy()


def coerce(name: str, value: object, source: str) -> object:
    """Check and convert one policy value from JSON, an environment string or a flag's text.

    Guarantees: an optional field (``X | None``) takes ``None`` (JSON ``null``) and the word
    ``none`` in any case, and nothing else that is not an ``X``; a field that is not optional
    never becomes ``None``; a value that cannot be used raises :class:`ConfigError` naming
    ``source``, the field, what it must be and (for an optional field) how to write none.
    """
    kind = field_kind(name)
    text = value.strip() if isinstance(value, str) else None
    optional = is_optional(name)
    if optional and (value is None or (text is not None and text.lower() == NONE_WORD)):
        return None
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            if text is not None and text.lower() in _TRUE | _FALSE:
                return text.lower() in _TRUE
        elif kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if text is not None:
                return int(text)
        elif kind is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if text is not None:
                return float(text)
        elif kind in (frozenset, set, list, tuple):
            items: object = value
            if text is not None:
                items = [piece for piece in text.replace(" ", "").split(",") if piece]
            if isinstance(items, (list, tuple)):
                return frozenset(int(item) for item in items)
        elif kind is str:
            if isinstance(value, str):
                return value
        elif isinstance(value, str):
            return value
    except (TypeError, ValueError):
        pass
    if optional:
        raise ConfigError(
            f"{source}: {name} must be {_describe(kind)} or {NONE_WORD}, not {value!r} "
            f"(write {NONE_WORD} to set it to None: {_how_to_write_none(name, source)})"
        )
    raise ConfigError(f"{source}: {name} must be {_describe(kind)}, not {value!r}")


def _how_to_write_none(name: str, source: str) -> str:
    """How ``source`` spells none for the field ``name``."""
    if source.startswith(ENV_PREFIX) and source not in (POLICY_JSON_ENV, BOOTSTRAP_POLICY_ENV):
        return f"{source}={NONE_WORD}"
    if source.startswith("--") and source != "--policy-json":
        return f"{source} {NONE_WORD}"
    return f'{{"{name}": null}}'


def _describe(kind: Any) -> str:
    names = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        frozenset: "a list of close codes",
        str: "a string",
    }
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def from_json(text: str, source: str) -> dict[str, object]:
    """The policy fields of the JSON object ``text`` (``source`` names it in errors)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{source} is not valid JSON: give a JSON object of ResumePolicy fields ({error})"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a JSON object of ResumePolicy fields")
    for old, new in RENAMED_FIELDS.items():
        if old in data:
            warn_renamed(f"{source}: the key {old!r}", repr(new))
            value = data.pop(old)
            data.setdefault(new, value)  # the new name wins where both are given
    known = policy_fields()
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"{source}: unknown ResumePolicy field(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    return {name: coerce(name, value, source) for name, value in data.items()}


def changes_from_environment(environ: Mapping[str, str]) -> dict[str, object]:
    """The policy fields set by ``ADK_LIVE_RESUME_POLICY_JSON`` and ``ADK_LIVE_RESUME_<FIELD>``."""
    changes: dict[str, object] = {}
    if environ.get(POLICY_JSON_ENV, "").strip():
        changes.update(from_json(environ[POLICY_JSON_ENV], POLICY_JSON_ENV))
    for variable, name in policy_variables().items():
        if variable in environ and environ[variable].strip():
            changes[name] = coerce(name, environ[variable], variable)
    for variable, name in renamed_variables().items():
        if variable in environ and environ[variable].strip():
            new_variable = ENV_PREFIX + name.upper()
            warn_renamed(variable, new_variable)
            if not environ.get(new_variable, "").strip():  # the new name wins where both are set
                changes[name] = coerce(name, environ[variable], variable)
    return changes


def resolve_policy(
    environ: Mapping[str, str],
    *,
    policy_json: str | None = None,
    flags: Mapping[str, object] | None = None,
) -> ResumePolicy:
    """The policy from defaults, environment, ``--policy-json`` and flags (later wins).

    ``flags`` maps field names to the launcher flags' values: the text as typed (read like a
    variable's, so ``none`` sets an optional field to ``None``) or a typed value; ``None``
    means the flag was not given. A bad value raises :class:`ConfigError` naming the flag.
    """
    warn_unknown_variables(environ)
    changes = changes_from_environment(environ)
    if policy_json:
        changes.update(from_json(policy_json, "--policy-json"))
    for name, value in (flags or {}).items():
        if value is not None:
            changes[name] = coerce(name, value, flag_for(name))
    try:
        return ResumePolicy(**changes)  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None


def flag_for(name: str) -> str:
    """The launcher flag that sets the policy field ``name`` (``--max-attempts``)."""
    return "--" + name.replace("_", "-")


def policy_to_json(policy: ResumePolicy) -> str:
    """A JSON object that :func:`resolve_policy` turns back into ``policy``."""
    data: dict[str, object] = {}
    for name in policy_fields():
        value = getattr(policy, name)
        data[name] = sorted(value) if isinstance(value, frozenset) else value
    return json.dumps(data, sort_keys=True)


def policy_from_json(text: str, source: str) -> ResumePolicy:
    """The policy :func:`policy_to_json` wrote."""
    try:
        return ResumePolicy(**from_json(text, source))  # type: ignore[arg-type]
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{source}: {error}") from None


def strict_from(environ: Mapping[str, str]) -> bool:
    """``ADK_LIVE_RESUME_STRICT``: anything but 0/false/no/off means strict."""
    return environ.get(STRICT_ENV, "1").strip().lower() not in _FALSE


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """``(name, closest known name or None)`` for every unknown ``ADK_LIVE_RESUME_*`` name."""
    known = known_variables()
    found = []
    for variable in sorted(environ):
        if not variable.startswith(ENV_PREFIX) or variable in known:
            continue
        if variable.startswith(OTHER_PREFIXES):
            continue
        close = difflib.get_close_matches(variable, sorted(known), n=1, cutoff=0.75)
        found.append((variable, close[0] if close else None))
    return found


def warn_unknown_variables(environ: Mapping[str, str]) -> None:
    """Log a WARNING, once per name per process, for each unknown ``ADK_LIVE_RESUME_*``."""
    for variable, close in unknown_variables(environ):
        if variable in _reported:
            continue
        _reported.add(variable)
        hint = (
            f"did you mean {close}?" if close else f"known: {', '.join(sorted(known_variables()))}"
        )
        logger.warning("unknown environment variable %s is ignored; %s", variable, hint)
