"""Import cost: what ``import adk_live_resume`` and the pytest plugin add to a process.

Two figures, each measured in fresh interpreters, many rounds, the kinds of process run in a
shuffled order every round so that a busy neighbour slows all of them alike:

1. ``import adk_live_resume`` over ADK's own ``import google.adk.agents, google.adk.runners``:
   the time of ``import adk_live_resume`` in a process that has just imported ADK (the goal's
   figure: exactly what the import adds), and as a cross-check the time of both imports in
   one process against ADK's imports alone in another (the median of the per-round
   differences; far noisier, both sides take about a second). Also shown, not a goal:
   ``adk_live_resume.install()`` right after (it imports the live loop and the ADK flow
   internals it patches), and ``import adk_live_resume`` in a process without ADK.
2. A pytest run of a one-test file that uses none of the plugin's fixtures, with the plugin
   (loaded through its ``pytest11`` entry point, as for every user of the ``testing`` extra)
   and with ``-p no:adk_live_resume``: the wall-clock time of the whole ``python -m pytest``;
   the goal's figure is the median of the per-round differences.

Goals (issue 10): each adds at most 50 ms. Bytecode is cached as for an installed package
(``PYTHONPYCACHEPREFIX`` in a temporary directory, one warm-up round not counted), so the
figures do not include compiling.

    python3 scripts/dev.py bench import_cost [--quick] [--rounds N]
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from common import Stats, check, finite, markdown_table, output_dirs, parser, write_result

NAME = "import_cost"
GOAL_MS = 50.0
ADK_IMPORT = "import google.adk.agents, google.adk.runners"

#: Run in a fresh interpreter: times the imports named by argv[1], prints them as JSON (s).
CHILD = f"""
import json, sys, time
steps = {{}}
if sys.argv[1] != "ours-alone":
    start = time.perf_counter()
    {ADK_IMPORT}
    steps["adk"] = time.perf_counter() - start
if sys.argv[1] != "adk":
    start = time.perf_counter()
    import adk_live_resume
    steps["ours"] = time.perf_counter() - start
if sys.argv[1] == "adk+ours":
    start = time.perf_counter()
    adk_live_resume.install()
    steps["install"] = time.perf_counter() - start
print(json.dumps(steps))
"""

#: The test file of the pytest runs: it asserts that the plugin is (or is not) loaded, so the
#: benchmark cannot time a run that is not what it claims.
TRIVIAL_TEST = """
import os


def test_nothing_of_the_plugin_is_used(request):
    expected = os.environ["IMPORT_COST_PLUGIN"] == "on"
    assert request.config.pluginmanager.has_plugin("adk_live_resume") is expected
"""

PYTEST_ON = "pytest, plugin loaded"
PYTEST_OFF = "pytest -p no:adk_live_resume"

ROWS = {
    "adk": f"ADK alone: `{ADK_IMPORT}`",
    "adk+ours": "ADK, then `import adk_live_resume` (one process, both imports)",
    "ours": "`import adk_live_resume` after ADK (same process, alone)",
    "install": "info: `adk_live_resume.install()` after that",
    "ours-alone": "info: `import adk_live_resume` without ADK",
}


def child_environment(pycache: Path) -> dict[str, str]:
    """The environment of every measured process: bytecode cached in ``pycache``, and none of
    the variables that would change what is imported or loaded."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if key
        not in {
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONPATH",
            "PYTEST_ADDOPTS",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
            "PYTEST_PLUGINS",
        }
    }
    environ["PYTHONPYCACHEPREFIX"] = str(pycache)
    return environ


def run_child(kind: str, environ: Mapping[str, str]) -> dict[str, float]:
    """One fresh interpreter timing the imports of ``kind``; seconds per step."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, kind],
        env=dict(environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the {kind!r} import process failed:\n{proc.stderr[-3000:]}")
    steps: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return steps


def run_pytest(plugin: bool, folder: Path, environ: Mapping[str, str]) -> float:
    """Wall-clock seconds of one ``python -m pytest`` of the trivial test file."""
    options = ["-q", "-p", "no:cacheprovider"]
    if not plugin:
        options += ["-p", "no:adk_live_resume"]
    env = {**environ, "IMPORT_COST_PLUGIN": "on" if plugin else "off"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "test_trivial.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"pytest ({'with' if plugin else 'without'} the plugin) failed:\n"
            f"{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )
    return elapsed


def measure(rounds: int, seed: int) -> dict[str, list[float]]:
    """Every kind of process once per round, in a shuffled order; the first round (which
    compiles the bytecode) is not counted. Milliseconds per figure."""
    samples: dict[str, list[float]] = {key: [] for key in [*ROWS, PYTEST_ON, PYTEST_OFF]}
    rng = random.Random(seed)
    pycache = Path(tempfile.mkdtemp(prefix="adk-live-resume-pycache-"))
    folder = Path(tempfile.mkdtemp(prefix="adk-live-resume-pytest-"))
    try:
        environ = child_environment(pycache)
        (folder / "pytest.ini").write_text(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )
        (folder / "test_trivial.py").write_text(TRIVIAL_TEST)
        jobs: dict[str, Callable[[], dict[str, float]]] = {
            "adk": lambda: run_child("adk", environ),
            "adk+ours": lambda: run_child("adk+ours", environ),
            "ours-alone": lambda: {"ours-alone": run_child("ours-alone", environ)["ours"]},
            PYTEST_ON: lambda: {PYTEST_ON: run_pytest(True, folder, environ)},
            PYTEST_OFF: lambda: {PYTEST_OFF: run_pytest(False, folder, environ)},
        }
        for number in range(rounds + 1):
            order = list(jobs)
            rng.shuffle(order)
            for job in order:
                steps = jobs[job]()
                if number == 0:
                    continue  # warm-up: compiles and caches the bytecode
                if job == "adk+ours":
                    samples["adk+ours"].append((steps["adk"] + steps["ours"]) * 1000)
                    samples["ours"].append(steps["ours"] * 1000)
                    samples["install"].append(steps["install"] * 1000)
                else:
                    for key, seconds in steps.items():
                        samples[key].append(seconds * 1000)
            if number:
                print(f"[bench] round {number}/{rounds}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(pycache, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    return samples


def paired_differences(baseline: Sequence[float], measured: Sequence[float]) -> list[float]:
    """``measured - baseline`` round by round (both ran in the same round)."""
    check(len(baseline) == len(measured), "every round runs every kind of process once")
    return [after - before for before, after in zip(baseline, measured, strict=True)]


def verdict(what: str, added: float, base: float) -> tuple[str, bool]:
    """The goal line of one figure: ``added`` ms over a ``base`` of that many ms."""
    met = added <= GOAL_MS
    line = (
        f"{what} adds {added:.1f} ms ({(base + added) / base:.3f}x the baseline's {base:.0f} ms): "
        f"goal <= {GOAL_MS:.0f} ms: {'met' if met else 'NOT met'}"
    )
    return line, met


def plot(samples: Mapping[str, Sequence[float]], path: Path) -> None:
    """Both comparisons side by side: the distributions of the process times."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (imports, runs) = plt.subplots(1, 2, figsize=(9, 3.6))
    pairs = [
        (imports, ["adk", "adk+ours"], ["ADK alone", "ADK +\nadk_live_resume"], "imports"),
        (runs, [PYTEST_OFF, PYTEST_ON], ["-p no:adk_live_resume", "plugin loaded"], "pytest run"),
    ]
    for axis, keys, labels, title in pairs:
        axis.boxplot([samples[key] for key in keys], showfliers=True)
        axis.set_xticks([1, 2], labels)
        axis.set_title(title)
        axis.set_ylabel("ms")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle("Import cost: fresh processes, interleaved rounds")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print(f"[bench] wrote {path}")


def main(argv: list[str] | None = None) -> int:
    options = parser(__doc__ or NAME)
    options.add_argument(
        "--rounds", type=int, default=None, help="rounds counted (default 40, --quick 3)"
    )
    args = options.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 40)
    check(rounds >= 1, "--rounds must be at least 1")
    results, plots = output_dirs(args.quick)

    samples = measure(rounds, args.seed)
    stats = {key: Stats.of(values) for key, values in samples.items()}
    for key, summary in stats.items():
        check(
            finite(summary.median, summary.maximum) and 0 < summary.minimum < 120_000,
            f"{key}: implausible times {summary}",
        )

    header = ["", "median ms", "p90 ms", "p99 ms", "spread ms", "N"]

    def row(label: str, summary: Stats) -> list[object]:
        return [label, summary.median, summary.p90, summary.p99, summary.spread, summary.n]

    import_table = markdown_table(header, [row(ROWS[key], stats[key]) for key in ROWS])
    pytest_table = markdown_table(
        header,
        [
            row(f"`{PYTEST_OFF}` (baseline)", stats[PYTEST_OFF]),
            row("`pytest`, the plugin loaded, none of its fixtures used", stats[PYTEST_ON]),
        ],
    )
    import_cross_check = Stats.of(paired_differences(samples["adk"], samples["adk+ours"]))
    plugin_added = Stats.of(paired_differences(samples[PYTEST_OFF], samples[PYTEST_ON]))
    import_line, import_met = verdict(
        "`import adk_live_resume` after ADK's imports", stats["ours"].median, stats["adk"].median
    )
    import_line += (
        f"; cross-check, process totals: {import_cross_check.median:+.1f} ms "
        f"(median of per-round differences, IQR {import_cross_check.spread:.0f} ms)"
    )
    plugin_line, plugin_met = verdict(
        "the pytest plugin, to a run that uses none of its fixtures,",
        plugin_added.median,
        stats[PYTEST_OFF].median,
    )
    plugin_line += f" (median of per-round differences, IQR {plugin_added.spread:.0f} ms)"
    print(import_table, end="\n\n")
    print(pytest_table, end="\n\n")
    print(import_line)
    print(plugin_line)

    write_result(
        results,
        NAME,
        {
            "rounds": rounds,
            "seed": args.seed,
            "stats_ms": stats,
            "goals": {
                "goal_ms": GOAL_MS,
                "import_added_ms": stats["ours"].median,
                "import_goal_met": import_met,
                "import_cross_check_ms": import_cross_check,
                "plugin_added_ms": plugin_added,
                "plugin_goal_met": plugin_met,
            },
            "verdicts": [import_line, plugin_line],
            "samples_ms": samples,
        },
    )
    plot(samples, plots / f"{NAME}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
