"""The move job's analysis for ``benchmarks/_voice_sessions.py`` (a helper, not a benchmark):
per session, from what every connection heard and what every microphone sent, the drop's gap,
the goAway move, the microphone audio no connection heard and the answers a fault delayed.

Every chunk a microphone sends is unique (``_voice_mic``), so the fake's record of what each
connection received says which session it served and what no connection heard.
"""

from __future__ import annotations

import statistics
from typing import Any

from _voice_mic import utterance_text

#: Utterances whose answer a fault at F may touch: those ending from a little before F (their
#: answer may be in flight) to this many seconds after it (a goAway moves at the first safe
#: point with a fresh handle, up to a cycle later; the utterance after the move ends within
#: another cycle).
AFFECTED_AFTER = 4.4
#: The calm window's fault-free stand-in for F: this long before the goAway.
SHAM_BEFORE = 5.0


def _owners(voices: list[Any], connections: list[dict[str, Any]]) -> list[int | None]:
    """Which session each connection served: the session whose chunks it heard most (a
    connection that heard none: the session of another connection of its server session)."""
    from collections import Counter

    whose: dict[str, int] = {}
    for voice in voices:
        for key in voice.produced.keys:
            whose[key] = -1 if whose.get(key, voice.index) != voice.index else voice.index
    owners: list[int | None] = []
    for connection in connections:
        counts = Counter(whose.get(k, -1) for k in connection["keys"])
        counts.pop(-1, None)
        owners.append(counts.most_common(1)[0][0] if counts else None)
    by_server_session = {
        c["session_id"]: o for c, o in zip(connections, owners, strict=True) if o is not None
    }
    return [
        o if o is not None else by_server_session.get(c["session_id"])
        for c, o in zip(connections, owners, strict=True)
    ]


def _latencies(voice: Any) -> dict[int, float | None]:
    """Per utterance (cycle): from its last chunk sent to its answer complete (None: never
    answered within the round)."""
    out: dict[int, float | None] = {}
    answers = voice.listener.answers
    for cycle, ended in voice.produced.utterance_ends.items():
        expected = "echo: " + utterance_text(voice.index, cycle)
        out[cycle] = next(
            (
                a.complete_at - ended
                for a in answers
                if a.complete_at > ended and expected in a.text
            ),
            None,
        )
    return out


def _excess(
    voice: Any, latencies: dict[int, float | None], fault: float, calm: float, stopped: float
) -> tuple[float | None, int]:
    """The most an answer touched by a fault at ``fault`` came later than the calm median
    ``calm`` (seconds, at least 0), and how many such utterances were never answered."""
    ends = voice.produced.utterance_ends
    # (an utterance that ended too near the round's end to be answered in it is left out)
    last = min(fault + AFFECTED_AFTER, stopped - 1.5)
    touched = [c for c, e in ends.items() if fault - calm - 0.3 <= e <= last]
    delays = [latencies[c] for c in touched]
    answered = [d - calm for d in delays if d is not None]
    lost = sum(d is None for d in delays)
    return (max(0.0, max(answered)) if answered else None), lost


def analyse(
    voices: list[Any], connections: list[dict[str, Any]], times: dict[str, float], moved: bool
) -> list[dict[str, Any]]:
    """Per session: the drop's gap, the goAway move's, microphone audio no connection heard
    (per window: calm, after the goAway, after the drop), answers delayed or lost."""
    from collections import Counter

    owners = _owners(voices, connections)
    out = []
    for voice in voices:
        mine = [c for c, o in zip(connections, owners, strict=True) if o == voice.index]
        heard = {k for c in mine for k in c["keys"]}
        produced = voice.produced
        twice = {k for k, n in Counter(produced.keys).items() if n > 1}
        windows = {
            "calm": (times["calm_from"], times["go_away"]),
            "go_away": (times["go_away"], times["drop"]),
            "drop": (times["drop"], times["stopped"] - 0.5),
        }
        lost = {}
        for name, (low, high) in windows.items():
            lost[name] = sum(
                1
                for key, at in zip(produced.keys, produced.times, strict=True)
                if low <= at < high and key not in twice and key not in heard
            )
        dropped = [c for c in mine if c["ended_by"] == "restart"]
        gap = to_handshake = None
        if dropped:
            end = dropped[0]["ended_at"]
            later = [c for c in mine if c["accepted_at"] >= end and c["first_sent_at"] is not None]
            if later:
                nxt = min(later, key=lambda c: c["accepted_at"])
                gap, to_handshake = nxt["first_sent_at"] - end, nxt["accepted_at"] - end
        warned = [c for c in mine if c["go_away_at"] is not None]
        move = None
        if warned and moved:
            old = warned[0]
            later = [
                c
                for c in mine
                if c["accepted_at"] >= old["go_away_at"] and c["first_sent_at"] is not None
            ]
            if later:
                nxt = min(later, key=lambda c: c["accepted_at"])
                move = {
                    "old_ended_by": old["ended_by"],
                    "resumed": nxt["resumed"],
                    "from_go_away_s": nxt["first_sent_at"] - old["go_away_at"],
                }
        latencies = _latencies(voice)
        calm_latencies = sorted(
            d
            for c, d in latencies.items()
            if d is not None
            and times["calm_from"] <= produced.utterance_ends[c] < times["go_away"] - 0.5
        )
        calm = statistics.median(calm_latencies) if calm_latencies else float("nan")
        silence = {}
        for name, at in (
            ("sham", times["go_away"] - SHAM_BEFORE),
            ("go_away", times["go_away"]),
            ("drop", times["drop"]),
        ):
            excess, unanswered = _excess(voice, latencies, at, calm, times["stopped"])
            silence[name] = {"excess_s": excess, "unanswered": unanswered}
        out.append(
            {
                "session": voice.index,
                "connections": len(mine),
                "chunks": len(produced.keys),
                "collisions": len(twice),
                "lost_chunks": lost,
                "drop_gap_s": gap,
                "drop_to_handshake_s": to_handshake,
                "move": move,
                "calm_latency_s": calm,
                "calm_utterances": len(calm_latencies),
                "silence": silence,
                "answers": len(voice.listener.answers),
                # every utterance: when it ended (s from the start) and its answer's latency
                "latencies": [
                    [produced.utterance_ends[c] - times["start"], latencies[c]]
                    for c in sorted(latencies)
                ],
            }
        )
    return out
