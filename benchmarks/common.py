"""What every benchmark shares: options, statistics, the machine, results and plots.

A benchmark is one script, ``benchmarks/<name>.py``, run with
``python3 scripts/dev.py bench <name> [--quick]``. It measures the patched loop side by side
with its baselines (stock ADK, a bare google-genai floor) in one run, interleaved so that a
noisy neighbour hits both, and reports ratios and distributions, never absolute goals.

- ``--quick`` is the smoke test CI runs: few samples, results written to a temporary
  directory (the committed figures are not touched), and only sanity checks
  (:func:`check`): the run completed and its figures are finite and plausible.
- The full mode writes ``benchmarks/results/<name>.json`` and ``benchmarks/plots/<name>*.png``;
  docs/benchmarks.md quotes them (and shows the plots).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOTS = ROOT / "benchmarks" / "plots"


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes."""
    parsed = argparse.ArgumentParser(description=description)
    parsed.add_argument(
        "--quick",
        action="store_true",
        help="smoke-test size: few samples, sanity checks only, committed results untouched",
    )
    parsed.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    return parsed


def output_dirs(quick: bool) -> tuple[Path, Path]:
    """Where results and plots go: the committed directories, or for ``--quick`` a temporary
    one, removed when the benchmark's process exits (a smoke run leaves nothing behind)."""
    if quick:
        scratch = Path(tempfile.mkdtemp(prefix="adk-live-resume-bench-"))
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        return scratch, scratch
    RESULTS.mkdir(parents=True, exist_ok=True)
    PLOTS.mkdir(parents=True, exist_ok=True)
    return RESULTS, PLOTS


@contextlib.contextmanager
def wrapped(*replacements: tuple[object, str, Callable[[Any], Any]]) -> Iterator[None]:
    """For the block, ``owner.attribute`` is ``wrap(original)`` for every ``(owner, attribute,
    wrap)`` given (a library function a benchmark observes); every original is put back after
    it, also when the block raises."""
    originals = [
        (owner, attribute, getattr(owner, attribute)) for owner, attribute, _ in replacements
    ]
    try:
        for (owner, attribute, wrap), (_, _, original) in zip(replacements, originals, strict=True):
            setattr(owner, attribute, wrap(original))
        yield
    finally:
        for owner, attribute, original in originals:
            setattr(owner, attribute, original)


@dataclass(frozen=True)
class Stats:
    """A distribution's summary. ``spread`` is the interquartile range (p75 - p25)."""

    n: int
    median: float
    p90: float
    p99: float
    spread: float
    minimum: float
    maximum: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        if not samples:
            raise ValueError("no samples: the benchmark measured nothing")
        ordered = sorted(samples)
        return cls(
            n=len(ordered),
            median=statistics.median(ordered),
            p90=percentile(ordered, 90),
            p99=percentile(ordered, 99),
            spread=percentile(ordered, 75) - percentile(ordered, 25),
            minimum=ordered[0],
            maximum=ordered[-1],
        )


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of sorted ``ordered`` (linear interpolation between ranks)."""
    if not ordered:
        raise ValueError("percentile of no samples")
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """The machine and versions a figure was measured on (quoted next to every table)."""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "google-adk": _version("google-adk"),
        "google-genai": _version("google-genai"),
        "websockets": _version("websockets"),
        "adk-live-resume": _version("adk-live-resume"),
    }


def write_result(directory: Path, name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` plus the machine description to ``<directory>/<name>.json``."""
    target = directory / f"{name}.json"
    body = {"benchmark": name, "machine": machine(), **payload}
    target.write_text(json.dumps(body, indent=2, default=_jsonable) + "\n")
    print(f"[bench] wrote {target}")
    return target


def _jsonable(value: object) -> object:
    if isinstance(value, Stats):
        return asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; floats are printed with 3 significant digits."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3g}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


class SanityError(AssertionError):
    """A ``--quick`` run's figures are not plausible."""


def check(condition: bool, message: str) -> None:
    """Fail the benchmark run with ``message`` unless ``condition`` holds (sanity only: never
    a speed goal, the machines are shared and noisy)."""
    if not condition:
        raise SanityError(message)


def finite(*values: float) -> bool:
    """Whether every value is a finite number."""
    return all(math.isfinite(v) for v in values)


def pyplot() -> Any:
    """``matplotlib.pyplot`` drawing to files only (the Agg backend; no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, target: Path) -> None:
    """Lay ``figure`` out, write it to ``target`` (PNG) and free it."""
    figure.tight_layout()
    figure.savefig(target, dpi=110)
    pyplot().close(figure)
    print(f"[bench] wrote {target}")


def print_report(title: str, table: str, verdicts: Sequence[str]) -> None:
    """Print a benchmark's Markdown table, its goal verdicts and the machine."""
    print(f"\n## {title}\n")
    print(table)
    print()
    for line in verdicts:
        print(f"- {line}")
    print(f"\nMachine: {machine()}")
