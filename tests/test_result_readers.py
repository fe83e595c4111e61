"""Results read back are untrusted inputs of a known shape: ``leaderboard.json``
(``--render-only``, ``--resume``), a reproduction's saved runs and ``claims.json``, and an
evaluation result. A file of another shape (a number where a cell should be, a mapping where
a policy name should be, lists nested thousands deep, bytes that are not UTF-8, a FIFO) is
refused at once in one line that names the file and the field and never repeats its content.
Before, each of these ended in a traceback (``AttributeError``, ``KeyError``,
``RecursionError``, ``TypeError``), a message that named no file, or a read that never ended.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from edgegym import leaderboard as lb
from edgegym.evaluation import EvalResult
from edgegym.inputs import LIMITS
from edgegym.jsonshape import INT, NUM, TEXT, ListOf, Record, ShapeError, Tree, check
from edgegym.leaderboard.selection import natural_key
from edgegym.reproduce import claims, ekya, migrator, srs
from edgegym.reproduce.claims import load, read_runs, record
from edgegym.reproduce.ekya import _int_keys
from tests.test_untrusted_readers import _quickly

SECRET = "hunter2-s3cret-token-value"
DOCS = Path(__file__).resolve().parents[1] / "docs"
MAX_DEPTH = 40  # past the 32 levels read, short of json's recursion limit
DEEP = "[" * 100_000 + "]" * 100_000  # past json's recursion limit


def _one_line(text: str, *words: str) -> None:
    text = text.strip()
    assert "\n" not in text and "Traceback" not in text, text
    assert SECRET not in text, text
    assert all(w in text for w in words), text


# ----------------------------------------------------------------------------- leaderboard
def _board(tmp_path: Path, data: Any = None, text: str | None = None) -> Path:
    path = tmp_path / "leaderboard.json"
    if text is None:
        text = json.dumps({"edgegym_output": "leaderboard", "edgegym_leaderboard": 1, **data})
    path.write_text(text)
    return path


def _render_only(tmp_path: Path, capsys) -> str:
    assert lb.main(["--render-only", "--force", "--out", str(tmp_path)]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("cells", "says"),
    [
        ({"energy/x": 5}, "cells['energy/x']: must be a mapping, got a number"),
        ({"energy/x": {"results": []}}, "cells['energy/x']: has no 'scenario'"),
        ({"energy/x": {"scenario": "x", "results": "str"}}, "results: must be a list"),
        (
            {"energy/x": {"scenario": "x", "results": [{"policy": {"a": SECRET}}]}},
            "cells['energy/x'].results[0].policy: must be a text",
        ),
        (
            {"energy/x": {"scenario": "x", "results": [{"policy": "p", "mean_return": SECRET}]}},
            "results[0].mean_return: must be a finite number or null, got a text",
        ),
        (
            {"energy/x": {"scenario": "x", "results": [], "ppo": {"timesteps": "1e999"}}},
            "ppo.timesteps: must be a finite number or null",
        ),
        ({SECRET: {"scenario": 5}}, "cells[a 26-character key, entry 0].scenario: must be a text"),
    ],
)
def test_render_only_refuses_cells_of_another_shape_in_one_line(tmp_path, capsys, cells, says):
    path = _board(tmp_path, {"cells": cells})
    _one_line(_render_only(tmp_path, capsys), str(path), says)
    assert not (tmp_path / "leaderboard.md").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"edgegym_output": "leaderboard", "cells": {"a": ' + DEEP + "}}", "nested too deeply"),
        ('{"cells": {"a": ' + "[" * (MAX_DEPTH) + "]" * (MAX_DEPTH) + "}}", "levels deep"),
        ("[1, 2]", "must be a mapping, got a list"),
        ('{"cells": {}, "runs": 7}', "runs: must be a list, got a number"),
    ],
)
def test_render_only_refuses_a_json_of_another_shape_in_one_line(tmp_path, capsys, text, says):
    path = _board(tmp_path, text=text)
    _one_line(_render_only(tmp_path, capsys), str(path), says)


def test_render_only_names_a_leaderboard_that_is_not_utf8_or_too_large(
    tmp_path, capsys, monkeypatch
):
    path = tmp_path / "leaderboard.json"
    path.write_bytes(b'{"cells": {"\xff": 1}}')
    _one_line(_render_only(tmp_path, capsys), str(path), "not a text file")
    path.write_text(json.dumps({"cells": {}}) + " " * 200)
    monkeypatch.setitem(LIMITS, "result", 100)
    _one_line(_render_only(tmp_path, capsys), str(path), "over the")


def test_load_results_refuses_a_fifo_at_once(tmp_path):
    os.mkfifo(tmp_path / "leaderboard.json")
    exc = _quickly(lambda: lb.load_results(tmp_path / "leaderboard.json"))
    assert isinstance(exc, lb.LeaderboardError) and "FIFO" in str(exc)


def test_the_committed_leaderboard_is_of_the_shape_read():
    data = lb.load_results(DOCS / "leaderboard.json")
    assert data["cells"] and data["runs"]


def test_scenario_names_with_other_digits_sort():
    assert natural_key("migrator-w10") == ("migrator-w", 10, "")
    assert natural_key("w1²") == ("w", 1, "²")  # int("²") raised ValueError


# ----------------------------------------------------------------------------- saved runs
def _srs(tmp_path: Path, data: Any = None, text: str | None = None) -> Path:
    path = tmp_path / "srs-runs.json"
    path.write_text(json.dumps(data) if text is None else text)
    return path


def _srs_render_only(tmp_path: Path, capsys) -> str:
    assert srs.main(["--render-only", "--out", str(tmp_path)]) == 2
    return capsys.readouterr().err


_META = {"seeds": 1, "sweep_seeds": 1, "quick": False, "elapsed": 1.0, "date": "d", "machine": "m"}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"rows": [{"x": 1}], "meta": {}}, "rows: must be a mapping, got a list"),
        ({"rows": {"main": [{"x": SECRET}]}, "meta": _META}, "rows.main[0]: has no 'objective'"),
        ({"rows": {"main": [], "theta": {}}, "meta": _META}, "rows.theta: must be a list"),
        ({"rows": {}, "meta": {**_META, "seeds": SECRET}}, "meta.seeds: must be an integer"),
        ({"rows": {"robust": {SECRET: 5}}, "meta": _META}, "rows.robust[a 26-character key, "),
    ],
)
def test_srs_render_only_refuses_saved_runs_of_another_shape(tmp_path, capsys, data, says):
    path = _srs(tmp_path, data)
    _one_line(_srs_render_only(tmp_path, capsys), str(path), "--render-only", says)
    assert not (tmp_path / "srs.md").exists()


def test_srs_render_only_refuses_deep_nesting_and_a_fifo(tmp_path, capsys):
    path = _srs(tmp_path, text='{"rows": ' + DEEP + "}")
    _one_line(_srs_render_only(tmp_path, capsys), str(path), "nested too deeply")
    path.unlink()
    os.mkfifo(path)
    out = _quickly(lambda: _srs_render_only(tmp_path, capsys))
    _one_line(out, str(path), "FIFO")


def test_srs_render_only_of_runs_that_make_no_report_is_one_line(tmp_path, capsys):
    """Values of the right kinds that are no run (no episode at all) stop the report in one
    line, not in a traceback from the first figure."""
    rows = {"main": [], "apps": [], "servers": [], "theta": []}
    path = _srs(tmp_path, {"rows": rows, "meta": _META})
    _one_line(_srs_render_only(tmp_path, capsys), str(path), "cannot draw the report")


def test_rendering_from_saved_runs_keeps_the_claims_tables_own_message(tmp_path):
    runs = tmp_path / "srs-runs.json"
    (tmp_path / "claims.json").write_text("{not json")
    with pytest.raises(claims.ClaimsTableError, match="not a claims table"):
        with claims.rendering(runs):
            load(tmp_path)
    with pytest.raises(
        claims.SavedRunsError, match=r"saved runs in .*srs-runs.json \(IndexError\)"
    ):
        with claims.rendering(runs):
            [][0]
    with pytest.raises(IndexError):  # a run's own results: a bug, not a file
        with claims.rendering(runs, saved=False):
            [][0]


def test_read_runs_never_quotes_the_file(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text('{"\u00b2\u00b3": 1}')  # digits to str.isdigit, not to int()
    with pytest.raises(claims.SavedRunsError) as err:
        read_runs(path, lambda saved: saved, object_pairs_hook=_int_keys)
    _one_line(str(err.value), str(path), "ValueError")
    assert "\u00b2" not in str(err.value)


def _saved(tmp_path: Path, paper: str, change: Any) -> Path:
    """The committed saved runs of ``paper`` in ``tmp_path``, after ``change(runs)``."""
    data = json.loads((DOCS / "reproduction" / f"{paper}-runs.json").read_text())
    change(data)
    path = tmp_path / f"{paper}-runs.json"
    path.write_text(json.dumps(data))
    return path


def _paper_render_only(module: Any, tmp_path: Path, capsys) -> str:
    assert module.main(["--render-only", "--out", str(tmp_path)]) == 2
    assert not (tmp_path / f"{module.__name__.rsplit('.', 1)[1]}.md").exists()
    return capsys.readouterr().err


def _set(path: tuple, value: Any) -> Any:
    def change(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("rows", "main", 0, "goodput"), SECRET, "rows['main'][0]['goodput']: must be a finite"),
        (("rows", "main", 3), [SECRET], "rows['main'][3]: must be a mapping, got a list"),
        (("rows", "oracle", 1, "solve_s"), [0.1, {}], "rows['oracle'][1].solve_s[1]: must be"),
        (("rows", "calibration", "fig2"), {"6-1": [[SECRET]]}, "fig2['6-1'][0][0]: must be"),
        (("rows", "calibration", "claims", 0, "holds"), "yes", ".claims[0].holds: must be true"),
        (("workloads",), ["w1", 5], "workloads[1]: must be a text"),
        (("elapsed",), None, "elapsed: must be a finite number, got null"),
    ],
)
def test_migrator_render_only_refuses_saved_runs_of_another_shape(
    tmp_path, capsys, path, value, says
):
    """A wrong kind anywhere the report reads is one line naming the field; before, it was a
    ``TypeError`` traceback from numpy or the claims (found by mutating the committed run)."""
    runs = _saved(tmp_path, "migrator", _set(path, value))
    _one_line(_paper_render_only(migrator, tmp_path, capsys), str(runs), "--render-only", says)


def test_migrator_render_only_of_runs_that_make_no_report_is_one_line(tmp_path, capsys):
    """Values of the right kinds that are no run (no experiment's rows) stop in one line."""
    runs = _saved(
        tmp_path, "migrator", lambda d: d.update(rows={"calibration": d["rows"]["calibration"]})
    )
    out = _paper_render_only(migrator, tmp_path, capsys)
    _one_line(out, str(runs), "cannot draw the report", "KeyError: 'main'")


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("sections", "a", "acc", "1", "thief", "3"), [0.5, "x"], "['thief']['3'][1]: must be a"),
        (("sections", "b", "margin"), {"1": [SECRET]}, "sections['b']['margin']['1'][0]: must be"),
        (("sections", "g", "best"), ["x" * 1001], "sections.g['best'][0]: must be a finite"),
        (("run", "episodes"), "3", "run.episodes: must be an integer, got a text"),
        (("below_a_min", "thief"), [], "below_a_min['thief']: must be a finite number"),
    ],
)
def test_ekya_render_only_refuses_saved_runs_of_another_shape(tmp_path, capsys, path, value, says):
    runs = _saved(tmp_path, "ekya", _set(path, value))
    _one_line(_paper_render_only(ekya, tmp_path, capsys), str(runs), "--render-only", says)


def test_ekya_render_only_names_a_missing_section(tmp_path, capsys):
    runs = _saved(tmp_path, "ekya", lambda d: d["sections"].pop("t1"))
    _one_line(_paper_render_only(ekya, tmp_path, capsys), str(runs), "sections: has no 't1'")


def test_a_tree_names_its_first_bad_leaf_in_the_files_order():
    tree = Tree(NUM)
    value = {"a": [1.0, {"b": 2}], "c": {"d": [3, "x"], "e": None}}
    with pytest.raises(ShapeError, match=r"^f: \['c'\]\['d'\]\[1\]: must be a finite number"):
        check(value, tree, "f")
    assert check({"a": [[1, 2.5], {"b": -3}], "c": []}, tree, "f")
    rec = Record({"n": TEXT}, rest=ListOf(INT))
    assert check({"n": "x", "m": [1, 2]}, rec, "f")
    with pytest.raises(ShapeError, match=r"^f: \['m'\]\[1\]: must be an integer"):
        check({"n": "x", "m": [1, 2.5]}, rec, "f")


def test_the_committed_saved_runs_are_of_the_shape_read():
    for folder in (DOCS / "reproduction").glob("**/"):
        if (folder / "migrator-runs.json").exists():
            assert migrator._load_runs(folder)["rows"]["main"]
        if (folder / "ekya-runs.json").exists():
            assert ekya._load_runs(folder)["sections"]["t1"]


# ----------------------------------------------------------------------------- claims.json
def _table(tmp_path: Path, recs: Any) -> Path:
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"edgegym_output": "claims", "claims": recs}))
    return path


def _good() -> dict[str, Any]:
    c = claims.Claim("srs", "Fig. 3", "c", "m", 1.0, 1.0, "held-out", True)
    return record(c)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"figure": [SECRET]}, "claims[0].figure: must be a text"),
        ({"points": [True]}, "claims[0].points: must be a mapping, got a list"),
        ({"holds": "yes"}, "claims[0].holds: must be true or false, got a text"),
        ({"paper": SECRET}, "claims[0].paper: must be one of 'ekya'"),
        ({"claim": SECRET, "holds": False, "why": ""}, "claims[0]: not a claims table record"),
        ({"edgegym_value": {"a": 1}}, "claims[0].edgegym_value: must be"),
    ],
)
def test_a_claims_table_of_another_shape_is_one_line(tmp_path, change, says):
    path = _table(tmp_path, [{**_good(), **change}])
    with pytest.raises(ValueError) as err:
        load(tmp_path)
    _one_line(str(err.value), str(path), says)


def test_a_claims_table_missing_a_field_deep_or_a_fifo_is_one_line(tmp_path):
    rec = _good()
    del rec["role"]
    path = _table(tmp_path, [rec])
    with pytest.raises(ValueError) as err:
        load(tmp_path)
    _one_line(str(err.value), str(path), "claims[0]: has no 'role'")
    path.write_text('{"claims": ' + DEEP + "}")
    with pytest.raises(ValueError) as err:
        load(tmp_path)
    _one_line(str(err.value), str(path), "nested too deeply")
    path.unlink()
    os.mkfifo(path)
    exc = _quickly(lambda: load(tmp_path))
    assert isinstance(exc, ValueError) and "FIFO" in str(exc) and str(path) in str(exc)


def test_the_committed_claims_table_is_of_the_shape_read():
    assert len(load(DOCS / "reproduction")) > 10


# ----------------------------------------------------------------------------- evaluation
@pytest.mark.parametrize(
    ("data", "says"),
    [
        (
            {"env": "edgegym/EnergyFairShare-v0", "results": [{"policy": {"a": SECRET}}]},
            "results[0].policy: must be a text",
        ),
        ({"env": [1], "results": [{"policy": "x"}], "seeds": 5}, "env: must be a text"),
        (
            {"env": "e", "results": [{"policy": "x", "per_episode": 5}]},
            "results[0].per_episode: must be a list or null",
        ),
        (
            {"env": "e", "results": [{"policy": "x", "metrics": {"accuracy": SECRET}}]},
            "results[0].metrics['accuracy']: must be a mapping, got a text",
        ),
        ({"env": "e", "results": [], "seeds": [0.5]}, "seeds[0]: must be an integer"),
    ],
)
def test_eval_result_from_json_checks_the_kinds_table_reads(tmp_path, data, says):
    path = tmp_path / "res.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as err:
        EvalResult.from_json(path)
    _one_line(str(err.value), str(path), says)


def test_eval_result_from_json_reads_and_tabulates_its_own_output(tmp_path):
    res = EvalResult(env="edgegym/ContinualLearning-v0", scenario=None, overrides={}, seeds=[0])
    res.results = [
        {
            "policy": "thief",
            "episodes": 1,
            "mean_return": 1.0,
            "std_return": 0.0,
            "metrics": {"accuracy": {"mean": 0.5, "std": 0.0}},
            "per_episode": [{"seed": 0, "return": 1.0}],
            "decision_time_s": None,
        }
    ]
    res.to_json(tmp_path / "res.json")
    assert EvalResult.from_json(tmp_path / "res.json").table() == res.table()
