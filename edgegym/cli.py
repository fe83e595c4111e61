"""The ``edgegym`` command line: evaluate policies, list environments, scenarios and policies."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from edgegym.envs import ENV_IDS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2, no traceback
        self.exit(2, f"edgegym: error: {message}\n")


def _parse_sets(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--set {item!r} is not key=value (e.g. --set gpus=4)")
        out[key.strip()] = value.strip()
    return out


def _families_policies(env_id: str) -> list[str]:
    from edgegym.baselines import POLICIES

    family = ENV_IDS[env_id][1]
    return [name for name, (_, fams, _) in POLICIES.items() if family in fams]


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from edgegym.evaluate import evaluate

    if args.env_id not in ENV_IDS:
        raise ValueError(f"unknown environment {args.env_id!r}; registered: {', '.join(ENV_IDS)}")
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    policies: list[str] = []
    for spec in args.policy or ["all"]:
        policies += _families_policies(args.env_id) if spec == "all" else [spec]
    result = evaluate(
        args.env_id,
        policies,
        scenario=args.scenario,
        episodes=args.episodes,
        seed=args.seed,
        overrides=_parse_sets(args.set),
        progress=not args.no_progress,
        timeline=args.plot is not None,
    )
    print(result.table())
    if args.json:
        result.to_json(args.json)
        print(f"wrote {args.json}")
    if args.plot:
        from edgegym.plotting import plot_evaluation

        plot_evaluation(result, args.plot)
        print(f"wrote {args.plot}")
    for name, err in result.errors.items():
        print(f"edgegym: error: policy {name} failed: {err}", file=sys.stderr)
    return 0 if result.ok else 1


def _rows(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _cmd_envs(_: argparse.Namespace) -> int:
    rows = [[i, fam, sc, desc] for i, (_, fam, sc, desc) in ENV_IDS.items()]
    print(_rows(["id", "family", "default scenario", "summary"], rows))
    return 0


def _cmd_scenarios(_: argparse.Namespace) -> int:
    from edgegym.scenarios import bundled, load

    rows = []
    for name in bundled():
        sc = load(name)
        hw = sc["hardware"]
        first = sc.get("description", "").split(". ")[0].strip()
        rows.append(
            [
                name,
                sc["family"],
                str(sc["streams"]),
                f"{hw['gpus']} x {hw['gpu']}",
                f"{sc['windows']} x {sc['window_s']:g} s",
                first[:70],
            ]
        )
    print(_rows(["name", "family", "streams", "GPUs", "windows", "description"], rows))
    return 0


def _cmd_policies(args: argparse.Namespace) -> int:
    from edgegym.baselines import POLICIES

    if args.env and args.env not in ENV_IDS:
        raise ValueError(f"unknown environment {args.env!r}; registered: {', '.join(ENV_IDS)}")
    names = _families_policies(args.env) if args.env else list(POLICIES)
    print(_rows(["policy", "description"], [[n, POLICIES[n][2]] for n in names]))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = _Parser(prog="edgegym", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ev = sub.add_parser("evaluate", help="score policies over the same seeded episodes")
    ev.add_argument("env_id", help="environment id, e.g. edgegym/ContinualLearning-v0")
    ev.add_argument("--scenario", default=None, help="bundled name or YAML path")
    ev.add_argument("--policy", action="append", help="policy spec (repeatable; 'all')")
    ev.add_argument("--episodes", type=int, default=5)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--json", default=None, help="write results as JSON")
    ev.add_argument("--plot", default=None, help="write a PNG figure")
    ev.add_argument("--set", action="append", default=[], help="scenario override key=value")
    ev.add_argument("--no-progress", action="store_true")
    ev.set_defaults(func=_cmd_evaluate)
    sub.add_parser("envs", help="registered environment ids").set_defaults(func=_cmd_envs)
    sub.add_parser("scenarios", help="bundled scenarios").set_defaults(func=_cmd_scenarios)
    pol = sub.add_parser("policies", help="available policies")
    pol.add_argument("--env", default=None)
    pol.set_defaults(func=_cmd_policies)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``edgegym`` command."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as exc:  # ScenarioError is a ValueError
        print(f"edgegym: error: {exc}", file=sys.stderr)
        return 2
