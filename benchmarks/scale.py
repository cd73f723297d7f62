"""Scale: N live sessions in one process, every socket dropped at once, pacing off and on.

Each round starts the fake server in a process of its own (``_scale_server.py``) and N real
``Runner.run_live`` sessions, patched, in another (``_scale_sessions.py``): each session
answers a turn and gets its handle, then the server drops every socket at once (no close
frame), and each session at once asks a turn that checks the conversation survived. Rounds
alternate pacing off (``process_reconnect_rate=0``: today's storm) and on (the defaults).
The sessions' process tunes its garbage collector once they are up (``gc.freeze()`` and
higher thresholds, ``_scale_sessions.tune_gc``; ``--gc-tuning off`` not to): a user-side
setting for a process that holds many long-lived sessions.

Reported per round: sessions resumed (state restored from the handle), turns lost, time from
the drop until every session resumed (reconnected with its state) and until every session
recalled (its turn after the drop answered: back for its user; the median too), the CPU
of one turn of every session at once before the drop (what the ``recall`` costs anyway: the
CPU per reconnect less it is the reconnect's own), connection attempts (``Gemini.connect``
calls) per second and the largest share of them in any 100 ms window (sliding), memory per
session (RSS growth over the N sessions / N), and the client's CPU and full garbage
collections during the recovery. Goals (issue 10, at 500 sessions): no 100 ms window above
10% of the attempts, all resumed within 3 s, no turn lost.

    python3 scripts/dev.py bench scale            # 500 and 1,000 sessions, each pacing twice
    python3 scripts/dev.py bench scale --quick    # 20 sessions, one round each way
    python3 scripts/dev.py bench scale --sessions 200 --repeat 1 --gc-tuning off
    python3 scripts/dev.py bench scale --sessions 500 --floor --trial-share 0.09
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _scale_server
from common import check, finite, machine, markdown_table, output_dirs, parser, write_result

HERE = Path(__file__).resolve().parent
WINDOW = 0.1  # seconds: "attempts per 100 ms"
GOAL_SESSIONS = 500


def run_round(
    sessions: int,
    pacing: bool,
    gc_tuning: bool,
    timeout: float,
    *,
    bare: bool = False,
    share: float | None = None,
) -> dict[str, Any]:
    """One round in fresh processes: the server's and the sessions' (patched, or the bare
    google-genai floor with ``bare``; ``share``: the pacer's share, if not the default)."""
    with _scale_server.running() as hello:
        client = subprocess.run(
            [
                sys.executable,
                str(HERE / "_scale_sessions.py"),
                "--sessions",
                str(sessions),
                "--pacing",
                "on" if pacing else "off",
                "--gc-tuning",
                "on" if gc_tuning else "off",
                "--client",
                "bare" if bare else "patched",
                "--server",
                json.dumps(hello),
                *(["--share", str(share)] if share is not None else []),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if client.returncode != 0:
        raise RuntimeError(
            f"the sessions process failed ({sessions} sessions, pacing {pacing}):\n"
            + client.stderr[-3000:]
        )
    result: dict[str, Any] = json.loads(client.stdout.strip().splitlines()[-1])
    result["share"] = share
    return result


def most_in_any_window(times: list[float], width: float) -> int:
    """The largest number of ``times`` inside any half-open window ``width`` long."""
    ordered = sorted(times)
    best = first = 0
    for last, moment in enumerate(ordered):
        while moment - ordered[first] >= width:
            first += 1
        best = max(best, last - first + 1)
    return best


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    attempts = sorted(result["attempts"])
    resumed = sorted(result["resumed"])
    recalled = sorted(result.get("recalled", []))
    span = attempts[-1] - attempts[0] if len(attempts) > 1 else 0.0
    sessions = result["sessions"]
    return {
        "sessions": sessions,
        "client": result.get("client", "patched"),
        "pacing": result["pacing"],
        "share": result.get("share"),
        "gc_tuning": result["gc_tuning"],
        "started": result["started"],
        "resumed": result["state_restored"],
        "turns_lost": sessions - result["turns_ok"],
        "all_resumed_s": resumed[-1] if resumed else float("nan"),
        "median_resumed_s": resumed[len(resumed) // 2] if resumed else float("nan"),
        "all_recalled_s": recalled[-1] if recalled else float("nan"),
        "median_recalled_s": recalled[len(recalled) // 2] if recalled else float("nan"),
        "attempts": len(attempts),
        "attempts_per_s": len(attempts) / span if span > 0 else float("nan"),
        "max_window_share": most_in_any_window(attempts, WINDOW) / max(1, len(attempts)),
        "memory_per_session_kib": result["memory_per_session"] / 1024,
        "cpu_recovery_s": result["cpu_recovery"],
        "cpu_per_reconnect_ms": 1000 * result["cpu_recovery"] / max(1, len(resumed)),
        # a turn of every session at once without a drop: what the recall costs anyway
        "cpu_per_turn_ms": 1000 * result.get("cpu_turn", float("nan")) / max(1, sessions),
        "loop_lag_worst_s": result["loop_lag_worst"],
        "gc_full_s": result["gc_full_seconds"],
        "errors": result["errors"],
        "pacer": result.get("pacer", {}),
    }


def kind(round_: dict[str, Any]) -> str:
    """``off``, ``on`` (the default share), ``on@<share>`` (a trial share) or ``bare``, of a
    round's summary or its raw result (older results name no client: patched)."""
    if round_.get("client", "patched") == "bare":
        return "bare"
    if not round_["pacing"]:
        return "off"
    return "on" if round_.get("share") is None else f"on@{round_['share']:g}"


def median_of(rounds: list[dict[str, Any]], which: str, key: str) -> float:
    """The median of ``key`` over the rounds of kind ``which`` (NaN if none)."""
    values = sorted(s[key] for s in rounds if kind(s) == which)
    return values[len(values) // 2] if values else float("nan")


def _kind_order(which: str) -> tuple[int, str]:
    """Unpaced, paced, the bare SDK, then trial shares."""
    order = ("off", "on", "bare")
    return (order.index(which) if which in order else len(order), which)


def medians_table(summaries: list[dict[str, Any]]) -> str:
    """Per size and kind of round: the medians over its rounds (with their range for the
    times), the most any of its 100 ms windows held."""
    header = [
        "sessions",
        "client",
        "rounds",
        "all resumed (s)",
        "all recalled (s)",
        "median recalled (s)",
        "max share in 100 ms",
        "CPU per reconnect (ms)",
        "CPU per turn, no drop (ms)",
        "full GC in the recovery (s)",
    ]
    names = {"off": "patched, unpaced", "on": "patched, paced", "bare": "bare SDK"}
    rows = []
    for size in sorted({s["sessions"] for s in summaries}):
        of_size = [s for s in summaries if s["sessions"] == size]
        for which in sorted({kind(s) for s in of_size}, key=_kind_order):
            chosen = [s for s in of_size if kind(s) == which]

            def spread(key: str, chosen: list[dict[str, Any]] = chosen, which: str = which) -> str:
                low, high = min(s[key] for s in chosen), max(s[key] for s in chosen)
                return f"{median_of(chosen, which, key):.2f} ({low:.2f}-{high:.2f})"

            rows.append(
                [
                    size,
                    names.get(which, f"patched, paced at {which[3:]}"),
                    len(chosen),
                    spread("all_resumed_s"),
                    spread("all_recalled_s"),
                    f"{median_of(chosen, which, 'median_recalled_s'):.2f}",
                    f"{100 * max(s['max_window_share'] for s in chosen):.1f}%",
                    f"{median_of(chosen, which, 'cpu_per_reconnect_ms'):.2f}",
                    f"{median_of(chosen, which, 'cpu_per_turn_ms'):.2f}",
                    f"{median_of(chosen, which, 'gc_full_s'):.2f}",
                ]
            )
    return markdown_table(header, rows)


def table(summaries: list[dict[str, Any]]) -> str:
    header = [
        "sessions",
        "client",
        "pacing",
        "gc tuning",
        "resumed",
        "turns lost",
        "all resumed (s)",
        "median resumed (s)",
        "all recalled (s)",
        "median recalled (s)",
        "attempts",
        "attempts/s",
        "max share in 100 ms",
        "memory/session (KiB)",
        "client CPU (s)",
        "CPU per reconnect (ms)",
        "CPU per turn, no drop (ms)",
        "full GC (s)",
    ]
    rows = [
        [
            s["sessions"],
            s["client"],
            "-" if s["client"] == "bare" else kind(s),
            "on" if s["gc_tuning"] else "off",
            f"{s['resumed']}/{s['sessions']}",
            s["turns_lost"],
            s["all_resumed_s"],
            s["median_resumed_s"],
            s["all_recalled_s"],
            s["median_recalled_s"],
            s["attempts"],
            s["attempts_per_s"],
            f"{100 * s['max_window_share']:.1f}%",
            round(s["memory_per_session_kib"]),
            s["cpu_recovery_s"],
            round(s["cpu_per_reconnect_ms"], 2),
            round(s["cpu_per_turn_ms"], 2),
            s["gc_full_s"],
        ]
        for s in summaries
    ]
    return markdown_table(header, rows)


def ratios(summaries: list[dict[str, Any]]) -> list[str]:
    """Per size, all resumed paced over unpaced (the pacer's cost) and each patched kind over
    the bare SDK (the floor), median over the rounds; CPU per reconnect likewise."""
    lines = []
    for size in sorted({s["sessions"] for s in summaries}):
        of_size = [s for s in summaries if s["sessions"] == size]

        def median(which: str, key: str, rounds: list[dict[str, Any]] = of_size) -> float:
            return median_of(rounds, which, key)

        off, on, bare = (median(k, "all_resumed_s") for k in ("off", "on", "bare"))
        back = {k: median(k, "all_recalled_s") for k in ("off", "on", "bare")}
        half = {k: median(k, "median_recalled_s") for k in ("off", "on", "bare")}
        cpu = {k: median(k, "cpu_per_reconnect_ms") for k in ("off", "on", "bare")}
        turn = {k: median(k, "cpu_per_turn_ms") for k in ("off", "on", "bare")}
        own = {k: cpu[k] - turn[k] for k in cpu}
        lines.append(
            f"{size} sessions: all resumed paced / unpaced {on / off:.2f}x "
            f"({on:.2f} s / {off:.2f} s); all recalled paced / unpaced "
            f"{back['on'] / back['off']:.2f}x ({back['on']:.2f} s / {back['off']:.2f} s), "
            f"median recalled {half['on'] / half['off']:.2f}x ({half['on']:.2f} s / "
            f"{half['off']:.2f} s); paced / bare SDK {on / bare:.2f}x, unpaced / bare "
            f"SDK {off / bare:.2f}x (bare {bare:.2f} s; all recalled {back['bare']:.2f} s); "
            f"CPU per reconnect (ms) paced {cpu['on']:.2f}, unpaced {cpu['off']:.2f}, bare "
            f"SDK {cpu['bare']:.2f} ({cpu['on'] / cpu['bare']:.2f}x); less a turn without a "
            f"drop (paced {turn['on']:.2f}, bare {turn['bare']:.2f}): paced {own['on']:.2f}, "
            f"unpaced {own['off']:.2f}, bare SDK {own['bare']:.2f} "
            f"({own['on'] / own['bare']:.2f}x)"
        )
        for trial in sorted({kind(s) for s in of_size} - {"off", "on", "bare"}):
            peak = max(s["max_window_share"] for s in of_size if kind(s) == trial)
            lines.append(
                f"{size} sessions, paced at share {trial[3:]} / at the default: all resumed "
                f"{median(trial, 'all_resumed_s') / on:.2f}x, all recalled "
                f"{median(trial, 'all_recalled_s') / back['on']:.2f}x, median recalled "
                f"{median(trial, 'median_recalled_s') / half['on']:.2f}x; its max share in "
                f"100 ms {100 * peak:.1f}%"
            )
    return lines


def verdicts(summaries: list[dict[str, Any]]) -> list[str]:
    """The issue's goals, for the paced rounds at 500 sessions (worst round)."""
    paced = [s for s in summaries if kind(s) == "on" and s["sessions"] == GOAL_SESSIONS]
    if not paced:
        return [f"(no paced round at {GOAL_SESSIONS} sessions: goals not assessed)"]
    share = max(s["max_window_share"] for s in paced)
    slowest = max(s["all_resumed_s"] for s in paced)
    lost = sum(s["turns_lost"] for s in paced)
    resumed = min(s["resumed"] for s in paced)

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    return [
        f"max share of attempts in a 100 ms window {100 * share:.1f}%: goal <= 10%: "
        + met(share <= 0.10),
        f"all resumed within {slowest:.2f} s of the drop: goal <= 3 s: " + met(slowest <= 3.0),
        f"turns lost {lost}: goal 0: " + met(lost == 0),
        f"sessions resumed {resumed}/{GOAL_SESSIONS}: goal all: " + met(resumed == GOAL_SESSIONS),
    ]


def plot(rounds: list[dict[str, Any]], target: Path) -> None:
    """Per size: the attempts per 100 ms of the first unpaced and paced rounds (left), and
    how many sessions had resumed and recalled over time in them and in the first bare-SDK
    round (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["sessions"] for r in rounds})
    figure, axes = plt.subplots(len(sizes), 2, figsize=(14, 3.4 * len(sizes)), squeeze=False)
    colours = {"off": "tab:red", "on": "tab:blue", "bare": "tab:grey"}
    names = {"off": "pacing off", "on": "pacing on", "bare": "bare SDK"}
    for (left, right), size in zip(axes, sizes, strict=True):
        for which, colour in colours.items():
            chosen = [r for r in rounds if r["sessions"] == size and kind(r) == which]
            if not chosen:
                continue
            first = chosen[0]  # the first round of each kind
            attempts = first["attempts"]
            if which != "bare":
                end = max(attempts) + WINDOW
                bins = [i * WINDOW for i in range(int(end / WINDOW) + 2)]
                label = f"{names[which]} ({len(attempts)} attempts)"
                left.hist(attempts, bins=bins, histtype="step", color=colour, label=label)
            for key, style in (("resumed", "--"), ("recalled", "-")):
                times = sorted(first.get(key, []))
                if times:
                    counts = range(1, len(times) + 1)
                    right.step(
                        times,
                        counts,
                        where="post",
                        color=colour,
                        linestyle=style,
                        label=f"{names[which]}: {key}",
                    )
        left.axhline(0.10 * size, color="grey", linestyle=":", label="10% of the sessions")
        left.set_title(f"{size} sessions, every socket dropped at t = 0")
        left.set_xlabel("seconds after the drop")
        left.set_ylabel("attempts per 100 ms")
        left.legend(loc="upper right")
        right.set_title(f"{size} sessions: resumed (reconnected) and recalled (turn answered)")
        right.set_xlim(left=0)
        right.set_xlabel("seconds after the drop")
        right.set_ylabel("sessions")
        right.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plt.close(figure)
    print(f"[bench] wrote {target}")


def main() -> None:
    options = parser(__doc__ or "")
    options.add_argument(
        "--sessions",
        type=int,
        action="append",
        help="sessions per round (repeatable; default 500 and 1000, --quick 20)",
    )
    options.add_argument(
        "--repeat", type=int, help="rounds per size and pacing (default 2, --quick 1)"
    )
    options.add_argument(
        "--gc-tuning",
        choices=("on", "off"),
        default="on",
        help="gc.freeze() and higher gc thresholds in the sessions' process once they are up",
    )
    options.add_argument(
        "--busy",
        type=int,
        default=0,
        help="processes spinning on the CPU beside every round (a busy machine; default 0)",
    )
    options.add_argument(
        "--floor",
        action="store_true",
        help="a round of bare google-genai sessions (no ADK) beside each pair: the floor",
    )
    options.add_argument(
        "--trial-share",
        type=float,
        help="a fourth kind of round, paced with this process_reconnect_share (side by side)",
    )
    args = options.parse_args()
    from adk_live_resume.testing.children import busy_processes

    sizes = args.sessions or ([20] if args.quick else [GOAL_SESSIONS, 1000])
    repeat = args.repeat or (1 if args.quick else 2)
    results_dir, plots_dir = output_dirs(args.quick)
    rounds: list[dict[str, Any]] = []
    kinds = [
        "off",
        "on",
        *(["bare"] if args.floor else []),
        *(["trial"] if args.trial_share is not None else []),
    ]
    with busy_processes(args.busy):
        for size in sizes:
            for i in range(repeat):
                # the order rotates, so that a noisy neighbour hits every kind alike
                for which in kinds[i % len(kinds) :] + kinds[: i % len(kinds)]:
                    began = time.monotonic()
                    result = run_round(
                        size,
                        which in ("on", "trial"),
                        args.gc_tuning == "on",
                        timeout=120 + 0.5 * size,
                        bare=which == "bare",
                        share=args.trial_share if which == "trial" else None,
                    )
                    result["load"] = os.getloadavg()[0]
                    rounds.append(result)
                    brief = summarize(result)
                    what = {"bare": "bare SDK", "trial": f"pacing at share {args.trial_share}"}.get(
                        which, f"pacing {which}"
                    )
                    print(
                        f"[bench] {size} sessions, {what}: {brief['resumed']} resumed, "
                        f"{brief['turns_lost']} turns lost, all within "
                        f"{brief['all_resumed_s']:.2f} s (all recalled "
                        f"{brief['all_recalled_s']:.2f} s), max "
                        f"{100 * brief['max_window_share']:.1f}% of attempts in 100 ms, CPU "
                        f"{brief['cpu_per_reconnect_ms']:.2f} ms per reconnect, pacer "
                        f"{brief['pacer']}, load {result['load']:.1f} "
                        f"({time.monotonic() - began:.0f} s)",
                        flush=True,
                    )
                    if brief["turns_lost"]:
                        print(
                            f"[bench]   {result['error_count']} errors, the first: "
                            + "; ".join(brief["errors"][:3]),
                            flush=True,
                        )
    summaries = [summarize(r) for r in rounds]
    print()
    print(table(summaries))
    print()
    print(medians_table(summaries))
    print()
    for line in ratios(summaries):
        print(line)
    print()
    for line in verdicts(summaries):
        print(line)
    print(f"({args.busy} busy processes beside the rounds)")
    about = machine()
    print(
        f"\nmachine: {about['cpus']} CPUs, {about['platform']}, Python {about['python']}, "
        f"google-adk {about['google-adk']}, google-genai {about['google-genai']}, "
        f"websockets {about['websockets']} ({about['date']}; shared with other work)"
    )
    # written before the checks, so that a round that lost sessions can be read afterwards
    write_result(results_dir, "scale", {"rounds": rounds, "summaries": summaries})
    plot(rounds, plots_dir / "scale.png")
    for s in summaries:
        check(s["started"] == s["sessions"], f"only {s['started']} of {s['sessions']} started")
        check(s["resumed"] == s["sessions"], f"{s['resumed']} of {s['sessions']} resumed")
        check(s["turns_lost"] == 0, f"{s['turns_lost']} turns lost: {s['errors'][:3]}")
        check(s["attempts"] >= s["resumed"], "fewer connection attempts than resumes")
        check(
            finite(s["all_resumed_s"], s["max_window_share"], s["memory_per_session_kib"]),
            "a figure is not a number",
        )
        check(0 < s["max_window_share"] <= 1, "window share out of range")


if __name__ == "__main__":
    main()
