"""``edgegym`` command line: evaluate policies and list environments, scenarios and policies.

Examples::

    edgegym evaluate edgegym/ContinualLearning-v0 --scenario ekya-table1 \\
        --policy thief --policy uniform --episodes 5 --json out.json --plot out.png
    edgegym evaluate edgegym/ContinualLearning-v0 --policy all --set gpus=2
    edgegym evaluate edgegym/MIGReconfig-v0 --policy all --episodes 20 --ray   # Ray tasks
    edgegym train edgegym/EnergyFairShare-v0 --timesteps 100000 --n-envs 2 --seed 0 \\
        --out runs/energy
    edgegym evaluate edgegym/EnergyFairShare-v0 --policy ppo:runs/energy/model.zip --policy etf
    edgegym leaderboard --families energy --episodes 3
    edgegym envs
    edgegym scenarios
    edgegym policies --env edgegym/ContinualLearning-v0
    edgegym profile --device cpu --out profiles/cpu.yaml
    edgegym fidelity edgegym/ContinualLearning-v0 --policy thief --device cpu

Exit codes: 0 success, 1 a policy raised during evaluation (the partial results are still
printed and written), 2 bad arguments or an output that could not be written (saved to the
rescue file the message names instead), 130 Ctrl-C, 143 SIGTERM (a batch scheduler's stop:
handled as Ctrl-C is, so training checkpoints and evaluation keeps its finished episodes).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from edgegym.outputs import sigterm_as_interrupt, stopped

PROG = "edgegym"


class UsageError(Exception):
    """Bad command-line arguments (reported as one ``edgegym: error:`` line, exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser that raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# ----------------------------------------------------------------------------- helpers
def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


_ABBREVIATIONS = ("fig.", "e.g.", "i.e.", "cf.", "vs.", "al.", "eq.", "sec.", "tab.", "no.")


def _first_sentence(text: str, limit: int = 100) -> str:
    """First sentence of ``text`` (abbreviations such as "Fig." do not end one), shortened."""
    words = str(text or "").split()
    out: list[str] = []
    for j, word in enumerate(words):
        out.append(word)
        ends = word.endswith(".") and word.lower() not in _ABBREVIATIONS
        if ends and (j + 1 == len(words) or words[j + 1][:1].isupper()):
            break
    sentence = " ".join(out)
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


#: Most episodes one command runs per policy (every episode's record is kept for the JSON).
MAX_EPISODES = 1_000_000
#: Most training environments (one environment object each: beyond this memory runs out
#: long before PPO's batches gain from it).
MAX_N_ENVS = 4096


def int_in(lo: int, hi: int | None = None) -> Any:
    """An ``argparse`` type: an integer in ``lo .. hi`` (``hi`` ``None``: no upper bound),
    refused in one line naming the value and the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lo or (hi is not None and value > hi):
            where = f">= {lo}" if hi is None else f"in {lo} .. {hi:,}"
            raise argparse.ArgumentTypeError(f"{value} is not {where}")
        return value

    parse.__name__ = "integer"
    return parse


def float_in(lo: float, hi: float = 3600.0) -> Any:
    """An ``argparse`` type: a finite number in ``lo .. hi``, refused in one line naming the
    value and the range."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not lo <= value <= hi:  # NaN fails too
            raise argparse.ArgumentTypeError(f"{value} is not in {lo:g} .. {hi:g}")
        return value

    parse.__name__ = "number"
    return parse


def parse_sets(items: Sequence[str] | None) -> dict[str, str]:
    """Parse ``--set key=value`` items (values stay strings; the scenario loader types them).

    Raises:
        UsageError: An item is not ``key=value`` with a non-empty key.
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key or not value.strip():
            raise UsageError(f"malformed --set {item!r} (expected key=value, e.g. gpus=4)")
        out[key] = value.strip()
    return out


def _env_family(env_id: str) -> str | None:
    """The family of an edgegym id (a ``-Flat`` view has its base id's), else ``None``."""
    from edgegym.core.registry import family_of_id

    family = family_of_id(env_id)
    return family.name if family is not None else None


def _is_flat_view(env_id: str) -> bool:
    from edgegym.core.registry import FLAT_IDS

    return env_id in FLAT_IDS


def _default_policy(env_id: str) -> str:
    """The family's flagship scheduler (``random`` on the ``-Flat`` views, where the published
    schedulers do not act).

    Raises:
        UsageError: An id outside edgegym (no policy of edgegym's schedules it).
    """
    from edgegym.baselines import DEFAULT_POLICY, not_edgegym

    if _is_flat_view(env_id):
        return "random"
    family = _env_family(env_id)
    if family is None:
        raise UsageError(not_edgegym(env_id))
    return DEFAULT_POLICY.get(family, "thief")


def expand_policies(specs: Sequence[str], env_id: str) -> list[str]:
    """Expand ``all`` into every built-in policy of the env's family; dedupe.

    Raises:
        UsageError: ``all`` for an environment outside edgegym.
    """
    from edgegym.baselines import expand_all

    try:
        specs = expand_all(specs, env_id)
    except ValueError as e:
        raise UsageError(str(e)) from None
    return list(dict.fromkeys(specs))


def _check_outputs(
    *paths: tuple[str | None, str] | tuple[str | None, str, str],
    folder: bool = False,
    force: bool = False,
    inputs: Sequence[str | None] = (),
) -> None:
    """Fail before any work when an output path is unusable: ``(path, flag)`` or ``(path,
    flag, kind)`` (``None`` paths are unset); with a kind, an existing file there must be an
    edgegym output of that kind unless ``force``; never one of ``inputs``, never the path of
    another output of the same command."""
    from edgegym.outputs import check_distinct_outputs, check_output_path

    sources = [s for s in inputs if s]
    for path, flag, *kind in paths:
        if path is not None:
            try:
                check_output_path(path, folder=folder, flag=flag, kind=kind[0] if kind else None,
                                  force=force, inputs=sources)  # fmt: skip
            except ValueError as exc:
                raise UsageError(str(exc)) from None
    try:
        check_distinct_outputs((path, flag) for path, flag, *_ in paths)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _named(exc: BaseException, flag: str) -> str:
    """``exc``'s message; an output that could not be written
    (:class:`~edgegym.outputs.OutputWriteError`) is named by ``flag`` too."""
    from edgegym.outputs import OutputWriteError

    if isinstance(exc, OutputWriteError) and not exc.flag:
        exc.flag = flag
    return str(exc)


def _input_files(scenario: str | None, policies: Sequence[str]) -> list[str]:
    """Files a command reads: a scenario path, the paths of ``ppo:``/``rllib:`` policies and
    of ``file.py:Name`` schedulers."""
    out = [scenario] if scenario else []
    for spec in policies:
        head, _, rest = spec.partition(":")
        if head in ("ppo", "rllib") and rest:
            out.append(rest)
        elif head.endswith(".py"):
            out.append(head)
    return out


# ----------------------------------------------------------------------------- commands
def cmd_evaluate(args: argparse.Namespace) -> int:
    """``edgegym evaluate``: run the evaluator, print the table, write JSON and a plot."""
    from edgegym.evaluation import (
        EvaluationInterrupted,
        check_env_id,
        default_scenario,
        evaluate,
    )
    from edgegym.outputs import OutputWriteError

    try:
        check_env_id(args.env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    overrides = parse_sets(args.set)
    _check_outputs(
        (args.json, "--json", "evaluation"),
        (args.plot, "--plot", "figure"),
        force=args.force,
        inputs=_input_files(args.scenario, args.policy or []),
    )
    policies = expand_policies(args.policy or [_default_policy(args.env_id)], args.env_id)
    for name in args.timeline or []:
        if args.plot is None:
            raise UsageError("--timeline adds time panels to the --plot figure; give --plot too")
        if name not in policies:
            raise UsageError(f"--timeline {name}: not an evaluated policy ({', '.join(policies)})")
    scenario = args.scenario or default_scenario(args.env_id)
    from edgegym.parallel import ray_problem

    if problem := ray_problem(args.ray):
        raise UsageError(problem)
    try:
        result = evaluate(
            args.env_id,
            policies,
            scenario=scenario,
            episodes=args.episodes,
            seed=args.seed,
            overrides=overrides,
            progress=not args.no_progress,
            timeline=args.plot is not None,
            max_streams=args.max_streams,
            workers=args.workers,
            ray=args.ray,
            setup=not args.same_setup,
        )
    except ValueError as exc:  # unknown policy / scenario, bad override (ScenarioError)
        raise UsageError(str(exc)) from None
    except EvaluationInterrupted as stop:
        done = sum(len(r.get("per_episode", [])) for r in stop.result.results)
        word, code = stopped()
        if done:  # the finished episodes' table, as a run that ends prints it
            print(stop.result.table())
        if args.json and done:
            try:
                stop.result.to_json(args.json, flag="--json")
                print(f"{PROG}: {word}; kept {done} finished episode(s) in {args.json}",
                      file=sys.stderr)  # fmt: skip
            except OutputWriteError as exc:  # the episodes are in the rescue file it names
                print(f"{PROG}: {word}; {exc}", file=sys.stderr)
        elif done:
            print(f"{PROG}: {word}; the table above holds the {done} finished episode(s) "
                  "(--json keeps them in a file)", file=sys.stderr)  # fmt: skip
        else:
            print(f"{PROG}: {word}", file=sys.stderr)
        return code
    print(result.table())
    problems: list[str] = []  # outputs not written (each kept in a rescue file it names)
    if args.json:
        try:
            result.to_json(args.json, flag="--json")
            print(f"wrote {args.json}")
        except OutputWriteError as exc:  # still draw the figure
            problems.append(str(exc))
    if args.plot:
        problems += _plot(result, args.plot, args.timeline or ())
    for name, err in result.errors.items():
        print(f"{PROG}: error: policy {name!r} failed: {err}", file=sys.stderr)
        if args.plot and name in (args.timeline or ()) and not result.timelines.get(name):
            print(f"{PROG}: error: --timeline {name}: the policy failed, so the --plot figure "
                  "was drawn without its time panels", file=sys.stderr)  # fmt: skip
    for problem in problems:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
    return 2 if problems else 0 if result.ok else 1


def _plot(result: Any, path: str, timeline: Sequence[str]) -> list[str]:
    """Draw ``evaluate``'s ``--plot`` figure; return what went wrong (one line each). A
    ``--timeline`` policy that failed before keeping a timeline gets no time panels, and the
    rest of the figure is drawn (``cmd_evaluate`` says so under the policy's failure)."""
    from edgegym.plotting import plot_evaluation

    failed = result.errors
    kept = [n for n in timeline if n not in failed or result.timelines.get(n)]
    try:
        plot_evaluation(result, path, timeline=kept)
    except ValueError as exc:  # OutputWriteError: the figure is in the rescue file it names
        return [_named(exc, "--plot")]
    print(f"wrote {path}")
    return []


def cmd_train(args: argparse.Namespace) -> int:
    """``edgegym train``: train the family's PPO agent, write model.zip and config.yaml
    (``--backend rllib``: RLlib's PPO, model/ and config.yaml, docs/ray.md)."""
    from edgegym.agents.config import ConfigError
    from edgegym.agents.sb3.train import train
    from edgegym.core.registry import ENV_IDS
    from edgegym.evaluation import check_env_id
    from edgegym.parallel import RayMissingError, require_ray

    if args.backend == "rllib":
        try:
            require_ray(rllib=True)
        except RayMissingError as exc:
            raise UsageError(f"--backend rllib: {exc}") from None
    elif args.num_env_runners is not None or args.address is not None:
        raise UsageError("--num-env-runners and --address need --backend rllib")
    try:
        check_env_id(args.env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.env_id not in ENV_IDS:
        if _is_flat_view(args.env_id):
            from edgegym.core.registry import FLAT_IDS

            raise UsageError(
                f"train on {FLAT_IDS[args.env_id]}: edgegym train adds the flat observation and "
                "Discrete action wrappers itself (agents/hyperparams/<family>.yaml)"
            )
        raise UsageError(f"edgegym train needs an edgegym id: {', '.join(ENV_IDS)}")
    overrides = parse_sets(args.set)
    out = args.out or f"runs/{ENV_IDS[args.env_id][1]}-seed{args.seed or 0}"
    _check_outputs((out, "--out"), folder=True)
    kwargs: dict[str, Any] = {
        "scenario": args.scenario,
        "overrides": overrides or None,
        "timesteps": args.timesteps,
        "n_envs": args.n_envs,
        "seed": args.seed,
        "out": out,
        "resume": args.resume,
        "hyperparams": args.hp,
        "hyperparams_file": args.config,
        "progress": not args.no_progress,
    }
    runs_before = len(_run_records(out))
    try:
        if args.backend == "rllib":
            from edgegym.agents.rllib.train import train_rllib

            kwargs["num_env_runners"] = args.num_env_runners or 0
            kwargs["address"] = args.address
            result = train_rllib(args.env_id, init_from=args.init_from, **kwargs)
        else:
            result = train(args.env_id, init_from=args.init_from, **kwargs)
    except (ConfigError, ValueError, RayMissingError) as exc:  # ScenarioError, PolicyLoadError
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: training saved a checkpoint where it stopped
        word, code = stopped()
        note = _train_stopped(args, out, runs_before)
        print(f"{PROG}: {word}" + (f"; {note}" if note else ""), file=sys.stderr)
        return code
    asked = args.timesteps
    more = (
        f" (asked for {asked}: training runs whole rollouts of n_steps x n_envs steps)"
        if asked is not None and result.timesteps > asked
        else ""
    )
    print(f"trained {result.timesteps} timesteps in {result.wall_s:.1f} s{more}")
    if result.evaluations:
        last = result.evaluations[-1]
        line = f"evaluation ({last['episodes']} episodes): PPO return {last['ppo_return']:.3f}"
        if last.get("baseline_return") is not None:
            line += f", {last['baseline']} {last['baseline_return']:.3f}"
        print(line)
    print(f"wrote {result.model_path} and {result.config_path}")
    return 0


def _run_records(out: str) -> list[dict[str, Any]]:
    """The ``runs`` records of the training run in ``out`` (none: no run, or unreadable)."""
    import yaml

    from edgegym.inputs import load_yaml, read_text

    try:  # a regular file of bounded size: a FIFO there would hang the error report
        cfg = load_yaml(read_text(Path(out) / "config.yaml", "training config", "config"))
    except (OSError, ValueError, yaml.YAMLError, RecursionError):  # InputError: a ValueError
        return []
    runs = cfg.get("runs") if isinstance(cfg, dict) else None
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _train_stopped(args: argparse.Namespace, out: str, runs_before: int) -> str:
    """What an interrupted ``edgegym train`` left in ``out`` (``runs_before``: the run records
    there before it started) and the command that continues it; empty when it stopped before
    writing anything."""
    runs = _run_records(out)
    if len(runs) <= runs_before:
        return ""  # stopped while checking and setting up: nothing written
    again = [PROG, "train", args.env_id, "--out", out, "--resume"]
    if args.backend == "rllib":
        again += ["--backend", "rllib"]
    resume = f"continue with: {shlex.join(again)}"
    steps = runs[-1].get("interrupted_at")
    folder = Path(out) / "checkpoints"
    if isinstance(steps, int):
        name = f"ckpt_{steps:010d}" + (".zip" if args.backend == "sb3" else "")
        return f"saved checkpoint {folder / name} at {steps:,} timesteps; {resume}"
    final = Path(out) / ("model.zip" if args.backend == "sb3" else "model")
    if final.exists() or any(folder.glob("ckpt_*")):
        return f"stopped before this run's first checkpoint; {out} keeps its last one; {resume}"
    return (
        f"stopped before its first checkpoint, so there is nothing to resume: delete {out} to "
        "start again"
    )


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """``edgegym leaderboard``: every policy on every family's scenarios -> docs/leaderboard.md."""
    from edgegym.leaderboard import run_args

    try:
        return run_args(args, ["edgegym", *getattr(args, "argv", ["leaderboard"])])
    except ValueError as exc:  # LeaderboardError, ScenarioError
        raise UsageError(str(exc)) from None


def cmd_envs(args: argparse.Namespace) -> int:
    """``edgegym envs``: the registered environment ids (and their flat views)."""
    from edgegym.core.registry import ENV_IDS, FLAT_IDS

    rows = [(env_id, fam, scen, summ) for env_id, (_, fam, scen, summ) in ENV_IDS.items()]
    for flat_id, base in FLAT_IDS.items():
        _, fam, scen, _ = ENV_IDS[base]
        rows.append((flat_id, fam, scen, f"{base} as flat Box + Discrete (edgegym.wrappers)"))
    print(_table(["id", "family", "default scenario", "summary"], rows))
    return 0


def _scenario_shape(d: dict) -> tuple[str, str, str]:
    """(tenants, GPUs, horizon) of a validated scenario, as the family words them."""
    from edgegym.core.registry import get_family

    return get_family(d["family"]).shape(d)


def cmd_scenarios(args: argparse.Namespace) -> int:
    """``edgegym scenarios``: the bundled scenarios; ``--show NAME``: one scenario whole, as the
    environment gets it (its ``extends`` resolved, ``--set`` overrides applied, defaults
    filled in, validated), as YAML."""
    from edgegym.scenarios import ScenarioError, bundled, load

    if args.show is not None:
        import yaml

        try:
            sc = load(args.show, **parse_sets(args.set))
        except ScenarioError as exc:
            raise UsageError(str(exc)) from None
        print(f"# {sc.source}, as loaded (extends resolved, overrides applied, defaults filled)")
        print(yaml.safe_dump(sc.data, sort_keys=False, width=100, allow_unicode=True), end="")
        return 0
    if args.set:
        raise UsageError("--set needs --show NAME (the scenario to override)")
    rows = []
    for name in bundled():
        try:
            d = load(name).data
        except ScenarioError as exc:
            rows.append((name, "?", "?", "?", "?", f"(invalid: {exc})"))
            continue
        rows.append((name, d["family"], *_scenario_shape(d), _first_sentence(d["description"])))
    print(_table(["name", "family", "tenants", "GPUs", "horizon", "description"], rows))
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    """``edgegym profile``: measure on a device and write a measured scenario file."""
    from edgegym.real import TINY_SCENARIO

    if args.family != "mig" and (args.mig_required or args.beside_retraining):
        raise UsageError("--mig-required and --beside-retraining are options of --family mig")
    _check_outputs((args.out, "--out", "scenario"), force=args.force, inputs=[args.base])
    if args.family != "continual":
        return _profile_family(args)
    from edgegym.real.profile import profile

    options = {} if args.width is None else {"width": args.width}
    try:
        sc = profile(
            args.out,
            device=args.device,
            base_scenario=args.base or TINY_SCENARIO,
            seed=args.seed,
            options=options,
            repeats=args.repeats or 20,
        )
    except (RuntimeError, ValueError, OSError) as exc:  # a failed write: kept in a rescue file
        raise UsageError(_named(exc, "--out")) from exc
    measured = sc["provenance"]["measured"]
    print(
        f"wrote {args.out}: {sc['name']} measured on {measured['device']} "
        f"({measured['device_name']}), {len(measured['retraining'])} retraining runs"
    )
    return 0


def _profile_family(args: argparse.Namespace) -> int:
    """``edgegym profile --family mig|energy|dag``."""
    from edgegym.real.profile_families import Settings, profile_family

    settings = Settings(
        device=args.device,
        repeats=args.repeats or 20,
        width=args.width or 8,
        side=args.input_size,
        seed=args.seed,
        power_s=args.power_seconds,
        mig_required=args.mig_required,
        beside_s=args.beside_retraining or 0.0,
    )
    try:
        sc, notes = profile_family(args.family, args.out, args.base, settings)
    except (RuntimeError, ValueError, OSError) as exc:  # a failed write: kept in a rescue file
        raise UsageError(_named(exc, "--out")) from exc
    for note in notes:
        print(f"note: {note}")
    measured = sc["provenance"]["measured"]
    print(
        f"wrote {args.out}: {sc['name']} ({args.family}) measured on {measured['device_name']}; "
        f"replaced: {', '.join(measured['replaced'])}"
    )
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    """``edgegym fidelity``: sim vs real, per window."""

    from edgegym.real.fidelity import fidelity, format_report

    _check_outputs((args.json, "--json", "fidelity"), force=args.force, inputs=[args.scenario])
    try:
        report = fidelity(
            args.env_id,
            args.scenario,
            args.policy,
            seed=args.seed,
            device=args.device,
            time_scale=args.time_scale,
        )
    except (RuntimeError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
    print(format_report(report))
    if args.json:
        from edgegym.outputs import OutputWriteError, write_json

        try:
            write_json(args.json, report, "fidelity", flag="--json")
        except OutputWriteError as exc:  # the report is in the rescue file it names
            raise UsageError(str(exc)) from None
    return 0


def cmd_policies(args: argparse.Namespace) -> int:
    """``edgegym policies``: the registered policies (for one env's family with ``--env``)."""
    from edgegym.baselines import POLICIES

    family = None
    if args.env is not None:
        from edgegym.evaluation import check_env_id

        try:
            check_env_id(args.env)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        family = _env_family(args.env)
        if family is None:  # a Gymnasium id outside edgegym: only the user's own code runs
            from edgegym.baselines import not_edgegym

            print(not_edgegym(args.env))
            return 0
    flat = args.env is not None and _is_flat_view(args.env)
    rows = [
        (name, ", ".join(fams), desc)
        for name, (_, fams, desc) in POLICIES.items()
        if (family is None or family in fams) and (name == "random" or not flat)
    ]
    fams = family or "every family"
    if flat:
        rows.append(
            ("ppo:PATH", fams, "a run trained with --hp policy=MlpPolicy and flat wrappers")
        )
    else:
        rows += [
            ("ppo", fams, "the PPO agent shipped for the family (agents/trained/)"),
            ("ppo:PATH", fams, "a run of 'edgegym train' (its folder or model.zip)"),
        ]
    rows.append(("rllib:PATH", fams, "a run of 'edgegym train --backend rllib' (needs Ray)"))
    rows.append(
        (
            "FILE.py:NAME",
            fams,
            "your own scheduler: a class, factory or object (docs/own-scheduler.md)",
        )
    )
    rows.append(
        ("MODULE:NAME", fams, "the same from an importable module, e.g. mypkg.sched:Greedy")
    )
    print(_table(["policy", "families", "description"], rows))
    return 0


# ----------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The ``edgegym`` argument parser."""
    from edgegym import __version__

    parser = _Parser(
        prog=PROG,
        description="Gymnasium environments and baselines for scheduling DNN inference and "
        "continual retraining on shared GPUs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    _add_evaluate(sub)
    _add_train(sub)
    _add_leaderboard(sub)
    _add_listings(sub)
    _add_profile(sub)
    _add_fidelity(sub)
    _add_policies(sub)
    return parser


def _add_evaluate(sub: Any) -> None:
    """``edgegym evaluate``."""
    ev = sub.add_parser(
        "evaluate",
        help="score policies on the same seeded episodes",
        description="Run every policy on the same seeded episodes and print a table.",
    )
    ev.add_argument("env_id", metavar="ENV_ID", help="environment id (see 'edgegym envs')")
    ev.add_argument("--scenario", help="scenario name or .yaml path (default: the env's)")
    ev.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help="policy spec, e.g. thief or 'thief:delta=0.2,oracle=true'; ppo (the shipped "
        "trained policy) or ppo:PATH (a model.zip); FILE.py:NAME or MODULE:NAME for your own "
        "scheduler (docs/own-scheduler.md); repeat for more; 'all' for every "
        "applicable baseline (default: the family's published scheduler: thief, migrator, "
        "etf or mrs)",
    )
    ev.add_argument(
        "--episodes",
        type=int_in(1, MAX_EPISODES),
        default=5,
        help="episodes per policy (default 5)",
    )
    ev.add_argument(
        "--seed", type=int_in(0), default=0, help="seed of the first episode (default 0)"
    )
    ev.add_argument("--json", metavar="OUT.json", help="write the results as JSON")
    ev.add_argument(
        "--plot",
        metavar="OUT.png",
        help="draw the policies ranked with 95%% confidence intervals, and over time the "
        "published scheduler and the best policy (allocations and their effect, per family)",
    )
    ev.add_argument(
        "--timeline",
        action="append",
        metavar="POLICY",
        help="with --plot: time panels for POLICY too (repeatable)",
    )
    ev.add_argument(
        "--force",
        action="store_true",
        help="overwrite --json / --plot files that are not edgegym outputs of that kind",
    )
    ev.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="scenario override, e.g. gpus=4, drift.drift=[0.1,0.2] or tenants[1].slo_ms=80 "
        "(a list entry by its index); repeatable",
    )
    ev.add_argument("--max-streams", type=int_in(1), help="stream slots of the env (padding)")
    ev.add_argument(
        "--same-setup",
        action="store_true",
        help="run every policy on the scenario as given; by default the published schedulers' "
        "baselines run where their paper evaluates them (Ekya's uniform baselines and "
        "no-retrain without the micro-profiler, MIGRator's ekya-mig and astraea on MPS "
        "shares), as the table's notes say",
    )
    ev.add_argument(
        "--trust-artifact",
        action="store_true",
        help="let model files and checkpoints unpickle what they hold (runs their code: only "
        "for files from a source you trust; see docs/security.md)",
    )
    from edgegym.parallel import add_parallel_arguments

    add_parallel_arguments(ev)
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ev.set_defaults(func=cmd_evaluate)


def _add_train(sub: Any) -> None:
    """``edgegym train``."""
    tr = sub.add_parser(
        "train",
        help="train a PPO agent (MaskablePPO where the env has masks)",
        description="Train the family's PPO agent with the hyperparameters of "
        "agents/hyperparams/<family>.yaml; writes model.zip, config.yaml, checkpoints and "
        "logs (TensorBoard, CSV) to --out. Evaluate the result with --policy ppo:DIR/model.zip.",
    )
    tr.add_argument("env_id", metavar="ENV_ID", help="environment id (see 'edgegym envs')")
    tr.add_argument("--scenario", help="scenario name or .yaml path (default: the env's)")
    tr.add_argument(
        "--timesteps", type=int_in(1), help="total timesteps (default: the family's file)"
    )
    tr.add_argument(
        "--n-envs",
        type=int_in(1, MAX_N_ENVS),
        help="parallel environments (default: the file's)",
    )
    tr.add_argument("--seed", type=int_in(0), help="seed of the run (default 0)")
    tr.add_argument("--out", metavar="DIR", help="output folder (default runs/<family>-seed<S>)")
    tr.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its checkpoint"
    )
    tr.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="scenario override, e.g. quanta=50; repeatable",
    )
    tr.add_argument(
        "--hp",
        action="append",
        metavar="KEY=VALUE",
        help="hyperparameter override, e.g. ppo.learning_rate=1e-3 or eval.freq=0; repeatable",
    )
    tr.add_argument("--config", metavar="FILE.yaml", help="hyperparameter file instead")
    tr.add_argument(
        "--init-from",
        metavar="MODEL",
        help="start a new run from this trained model's weights (fine-tuning: same policy "
        "and spaces; no behaviour cloning)",
    )
    tr.add_argument(
        "--backend",
        choices=("sb3", "rllib"),
        default="sb3",
        help="sb3: Stable-Baselines3 (default); rllib: RLlib's PPO with action masks, needs "
        'Ray (pip install -e ".[ray]"); writes model/ (--policy rllib:DIR), see docs/ray.md',
    )
    tr.add_argument(
        "--num-env-runners",
        type=int_in(0),
        metavar="K",
        help="rllib: env runners sampling in parallel as Ray actors (default 0: in-process)",
    )
    tr.add_argument(
        "--address",
        metavar="ADDR",
        help="rllib: Ray cluster to run on: local (default, started here), auto, host:port",
    )
    tr.add_argument(
        "--trust-artifact",
        action="store_true",
        help="let model files and checkpoints unpickle what they hold (runs their code: only "
        "for files from a source you trust; see docs/security.md)",
    )
    tr.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    tr.set_defaults(func=cmd_train)


def _add_leaderboard(sub: Any) -> None:
    """``edgegym leaderboard`` (the options of ``python -m edgegym.leaderboard``)."""
    lb = sub.add_parser(
        "leaderboard",
        help="evaluate every policy on every family's scenarios, write docs/leaderboard.md",
        description="Evaluate every registered policy (baselines, random, the shipped PPO) of "
        "every family on its bundled scenarios over the same seeds; write leaderboard.md, "
        "leaderboard.json and one figure per family (python -m edgegym.leaderboard is the "
        "same).",
    )
    from edgegym.leaderboard import add_arguments

    add_arguments(lb)
    lb.set_defaults(func=cmd_leaderboard)


def _add_listings(sub: Any) -> None:
    """``edgegym envs`` and ``scenarios``."""
    envs = sub.add_parser("envs", help="list the registered environment ids")
    envs.set_defaults(func=cmd_envs)

    sc = sub.add_parser("scenarios", help="list the bundled scenarios, or show one whole")
    sc.add_argument(
        "--show",
        metavar="NAME",
        help="print scenario NAME (a bundled name or a .yaml path) whole, as the environment "
        "gets it: its extends resolved, --set overrides applied, defaults filled in",
    )
    sc.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="with --show: a scenario override, e.g. gpus=4; repeatable",
    )
    sc.set_defaults(func=cmd_scenarios)


def _add_profile(sub: Any) -> None:
    """``edgegym profile``."""
    pr = sub.add_parser(
        "profile",
        help="measure models and retraining for real; write a measured scenario",
        description="Run the real backend's models (compact stand-ins) on a device and write a "
        "scenario of the family with the measured profiles; what is not measured keeps the base "
        "scenario's numbers and provenance (docs/real.md).",
    )
    pr.add_argument(
        "--family",
        choices=("continual", "mig", "energy", "dag"),
        default="continual",
        help="family of the scenario to write (default: continual)",
    )
    pr.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default: cpu)")
    pr.add_argument("--out", required=True, metavar="PATH", help="scenario file to write")
    pr.add_argument(
        "--force", action="store_true", help="overwrite an --out file edgegym did not write"
    )
    pr.add_argument(
        "--base",
        metavar="SCENARIO",
        help="scenario of the family to measure (default: the tiny real scenario for continual, "
        "else the family's default bundled scenario)",
    )
    pr.add_argument("--seed", type=int_in(0), default=0, help="seed of data and networks")
    pr.add_argument(
        "--repeats", type=int_in(1, 100_000), help="timed passes per measurement (default: 20)"
    )
    pr.add_argument(
        "--width",
        type=int_in(1, 512),
        help="base channels of the stand-in networks (default: 8; 64 is ResNet-18's widths)",
    )
    pr.add_argument(
        "--input-size",
        type=int_in(4, 1024),
        default=8,
        help="input side in pixels of the timed passes (mig, energy, dag; default: 8)",
    )
    pr.add_argument(
        "--power-seconds",
        type=float_in(0.0),
        default=2.0,
        help="seconds per utilisation level of the power measurement (energy; default: 2)",
    )
    pr.add_argument(
        "--mig-required",
        action="store_true",
        help="fail unless MIG instance latencies can be measured (mig; default: derive them "
        "from the whole device where MIG is not enabled)",
    )
    pr.add_argument(
        "--beside-retraining",
        type=float_in(0.05),
        metavar="SECONDS",
        help="mig: also measure inference beside a retraining job in another process (under "
        "MPS where its daemon runs) for SECONDS, and write the mps slowdowns (default: kept)",
    )
    pr.set_defaults(func=cmd_profile)


def _add_fidelity(sub: Any) -> None:
    """``edgegym fidelity``."""
    fi = sub.add_parser(
        "fidelity",
        help="run a scenario and policy in sim and real mode; per-window differences",
        description="Run the same scenario, policy and seed with the simulator and with the "
        "real backend and report the reward and its terms per window (docs/real.md).",
    )
    fi.add_argument(
        "env_id",
        metavar="ENV_ID",
        help="environment id with a real backend: edgegym/ContinualLearning-v0, "
        "edgegym/MIGReconfig-v0, edgegym/EnergyFairShare-v0 or edgegym/DAGOffload-v0",
    )
    fi.add_argument(
        "--scenario",
        help="scenario name or .yaml path (default: the id's tiny real scenario; energy: "
        "etf-tx2-resnet50-mobilenetv2)",
    )
    fi.add_argument(
        "--policy", help="policy spec (default: the family's scheduler: thief, migrator, etf, mrs)"
    )
    fi.add_argument("--seed", type=int_in(0), default=0, help="episode seed")
    fi.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default: cpu)")
    fi.add_argument("--time-scale", type=float, default=None, help="scenario s per wall s")
    fi.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    fi.add_argument(
        "--force", action="store_true", help="overwrite a --json file that is not a fidelity report"
    )
    fi.set_defaults(func=cmd_fidelity)


def _add_policies(sub: Any) -> None:
    """``edgegym policies``."""
    po = sub.add_parser("policies", help="list the policies")
    po.add_argument("--env", metavar="ENV_ID", help="only policies applicable to this env")
    po.set_defaults(func=cmd_policies)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``edgegym`` console script.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0 success, 1 a policy failed mid-run, 2 bad arguments.
    """
    with sigterm_as_interrupt():  # SIGTERM stops a command as Ctrl-C does (exit 143)
        try:
            parser = build_parser()
            argv = list(argv) if argv is not None else sys.argv[1:]
            args = parser.parse_args(argv)
            args.argv = argv
            if getattr(args, "trust_artifact", False):
                from edgegym.agents.sb3.artifacts import trusting

                with trusting():
                    return int(args.func(args))
            return int(args.func(args))
        except UsageError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else 0
        except KeyboardInterrupt:
            word, code = stopped()
            print(f"{PROG}: {word}", file=sys.stderr)
            return code


if __name__ == "__main__":
    sys.exit(main())
