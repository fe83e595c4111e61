"""The trace workloads' command line: write the bundled Azure Functions sample, or print the
synthetic generators' statistics against their targets::

    python -m edgegym.workload.traces --write-sample \
        scenarios/traces/azure-functions-2019-sample.csv --force
    python -m edgegym.workload.traces --stats

The workloads themselves live by role: the synthetic MIGRator-style generators
(:mod:`edgegym.workload.generators`), the Azure Functions 2019 format and the sample's writer
(:mod:`edgegym.workload.tracefiles`), the replay processes (:mod:`edgegym.workload.processes`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from edgegym.workload.generators import AlibabaLike, AzureLike, trace_stats
from edgegym.workload.tracefiles import (
    write_azure_functions_sample,
)

# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------


def _stats_table(seconds: int, seed: int) -> str:
    """Markdown table of target vs measured stats of the default generators."""
    keys = ("mean", "cv", "lag1_autocorr", "p99_over_mean", "bursts_per_min", "burst_peak_ratio")
    lines = [
        "| generator | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for proc in (AzureLike(), AlibabaLike()):
        got = trace_stats(proc.counts(seconds, 1.0, np.random.default_rng(seed)))
        want = proc.target_stats()
        cells = [
            f"{got[k]:.3g} (target {want[k]:.3g})" if k in want else f"{got[k]:.3g}" for k in keys
        ]
        lines.append(f"| {type(proc).__name__} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the bundled sample, or print the generators' statistics.

    Returns:
        The exit code: 0 success, 2 bad arguments (one ``error:`` line on stderr).
    """
    from edgegym.outputs import check_output_path

    prog = "python -m edgegym.workload.traces"
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Synthetic inference traces and the Azure Functions 2019 sample.",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--write-sample", metavar="PATH", help="write the synthetic Azure Functions sample"
    )
    group.add_argument(
        "--stats", action="store_true", help="print measured vs target stats of the generators"
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite an existing --write-sample file"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (>= 0, default 0)")
    parser.add_argument(
        "--seconds",
        type=int,
        default=1_000_000,
        help="sample length for --stats (>= 2, default 1e6)",
    )
    args = parser.parse_args(argv)

    def fail(message: str) -> int:
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2

    if args.seed < 0:
        return fail(f"--seed must be >= 0, got {args.seed}")
    if args.write_sample is not None:
        try:
            path = check_output_path(
                args.write_sample, flag="--write-sample", kind="trace", force=args.force
            )
        except ValueError as exc:
            return fail(str(exc))
        print(write_azure_functions_sample(path, seed=args.seed))
    else:
        if args.seconds < 2:
            return fail(
                f"--seconds must be >= 2 (the statistics need 2 intervals), got {args.seconds}"
            )
        print(_stats_table(args.seconds, args.seed))
    return 0


__all__ = ["main"]

if __name__ == "__main__":
    from edgegym.outputs import run_command  # an output that cannot be written: one line

    sys.exit(run_command(main, "python -m edgegym.workload.traces"))
