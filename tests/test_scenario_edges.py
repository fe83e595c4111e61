"""Scenario files and environment keyword arguments at their edges: every bad input gets one
clear line naming the file, the field or key and what is allowed, never a Python internal.

Each test here failed on the code before its fix (the CLI audit's items 4, 10-13, 16 and 19):
duplicate names were accepted and one tenant's results vanished, ``family: [energy]`` said
"unhashable type: 'list'", ``--set family=mig`` listed the MIG schema's errors, a bad
``real_options`` said "dictionary update sequence element #0 ...", ``record_timeline=maybe``
was accepted, an unknown ``--set`` key came wrapped in Gymnasium's "was raised from the
environment creator ... with kwargs" text, a duplicate YAML key was accepted with the last one
winning, and a 2 kB alias bomb gave a 144 kB line."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgegym import cli
from edgegym.evaluation import make_env
from edgegym.inputs import MAX_ALIAS_VALUES, StrictYAMLError, load_yaml, yaml_problem
from edgegym.scenarios import (
    MAX_LINE,
    ScenarioError,
    UnknownOverrideError,
    load,
    read_raw,
    resolve,
)

ENERGY = "edgegym/EnergyFairShare-v0"
ETF = "etf-tx2-resnet50-mobilenetv2"


def _raw(name: str) -> dict[str, Any]:
    return copy.deepcopy(read_raw(name))


def _write(tmp_path: Path, raw: Any, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


# ------------------------------------------------------------------ 4: unique names per list
def _dup_energy(r: dict[str, Any]) -> None:
    r["tenants"][1]["name"] = "A1"


def _default_clash_energy(r: dict[str, Any]) -> None:
    r["tenants"][0]["name"] = "A2"  # the second tenant's default name
    del r["tenants"][1]["name"]


def _dup_mig(r: dict[str, Any]) -> None:
    r["tenants"][1]["name"] = r["tenants"][0]["name"]


def _dup_dag(r: dict[str, Any]) -> None:
    r["applications"][2]["name"] = r["applications"][0]["name"]


@pytest.mark.parametrize(
    ("name", "edit", "needle"),
    [
        (ETF, _dup_energy, "tenants: duplicate name 'A1' (entries 0 and 1)"),
        (ETF, _default_clash_energy, "tenants: duplicate name 'A2' (entries 0 and 1)"),
        ("migrator-w1", _dup_mig, "tenants: duplicate name 'bert' (entries 0 and 1)"),
        (
            "srs-edge-5apps",
            _dup_dag,
            "applications: duplicate name 'lifelogging' (entries 0 and 2)",
        ),
    ],
)
def test_duplicate_names_in_a_name_keyed_list_are_refused(tmp_path, name, edit, needle):
    """Names key per-tenant results (``time_share_A1``), figure legends and, in the DAG
    family's ``model_scope: application``, each application's models: a second record of a
    name hid the first (the audit's JSON lost one tenant's metrics)."""
    raw = _raw(name)
    edit(raw)
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    assert str(err.value) == f"{tmp_path / 's.yaml'}: {needle}; names must be unique, as " + (
        "results and lookups are keyed by them"
    )


def test_unnamed_records_get_distinct_defaults(tmp_path):
    raw = _raw(ETF)
    for t in raw["tenants"]:
        del t["name"]
    assert [t["name"] for t in load(_write(tmp_path, raw))["tenants"]] == ["A1", "A2"]


def test_the_cli_refuses_duplicate_tenants_in_one_line(tmp_path, capsys):
    raw = _raw(ETF)
    _dup_energy(raw)
    path = _write(tmp_path, raw)
    out = tmp_path / "dn.json"
    rc = cli.main(["evaluate", ENERGY, "--scenario", str(path), "--episodes", "1",
                   "--no-progress", "--json", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "tenants: duplicate name 'A1'" in err
    assert not out.exists()


# ------------------------------------------------------------------ 11: family of another type
@pytest.mark.parametrize(
    ("family", "got"),
    [(["energy"], "['energy']"), ({"a": 1}, "{'a': 1}"), ("quantum", "'quantum'"), (3, "3")],
)
def test_a_family_that_is_not_a_family_name_lists_the_families(tmp_path, family, got):
    raw = _raw(ETF)
    raw["family"] = family
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    assert str(err.value) == (
        f"{tmp_path / 's.yaml'}: family: must be one of continual, mig, energy, dag, got {got}"
    )


def test_a_missing_family_says_nothing_was_given(tmp_path):
    raw = _raw(ETF)
    del raw["family"]
    with pytest.raises(ScenarioError, match=r"family: must be one of .*, got nothing$"):
        load(_write(tmp_path, raw))


def test_a_family_list_through_the_environment_is_not_a_type_error(tmp_path):
    raw = _raw(ETF)
    raw["family"] = ["energy"]
    with pytest.raises(ScenarioError) as err:
        make_env(ENERGY, str(_write(tmp_path, raw)))
    assert "unhashable" not in str(err.value) and "family: must be one of" in str(err.value)


# ------------------------------------------------------------------ 12: a family override
@pytest.mark.parametrize("value", ["mig", "[mig]"])
def test_a_family_override_that_does_not_fit_the_env_says_so(value):
    with pytest.raises(ScenarioError) as err:
        make_env(ENERGY, None, {"family": value})
    msg = str(err.value)
    assert msg.startswith(f"family {yaml.safe_load(value)!r} does not fit {ENERGY}")
    assert "needs family: energy" in msg and "missing required field" not in msg


def test_a_family_override_cannot_change_a_loaded_scenario():
    with pytest.raises(ScenarioError, match="override 'family': a scenario's family cannot be"):
        load(ETF, family="mig")
    assert load(ETF, family="energy")["family"] == "energy"  # its own family: a no-op
    env = make_env(ENERGY, None, {"family": "energy"})
    assert env.unwrapped.scenario["family"] == "energy"


# ------------------------------------------------------------------ 13: env keyword arguments
@pytest.mark.parametrize("value", ["5", "[1, 2]", 5, "{1: 2}"])
def test_real_options_that_are_not_a_mapping_are_named(value):
    with pytest.raises(ValueError, match=r"^real_options: must be a mapping of option names"):
        make_env(ENERGY, None, {"backend": "real", "real_options": value})


def test_real_options_with_the_simulator_are_refused():
    """They were ignored without a word (``real_options={epochs: abc}`` ran)."""
    with pytest.raises(ValueError, match="real_options: options of the real backend"):
        make_env(ENERGY, None, {"real_options": "{epochs: abc}"})
    assert make_env(ENERGY, None, {"real_options": "null"}).unwrapped.real_options == {}


@pytest.mark.parametrize(
    ("env_id", "options", "needle"),
    [
        ("edgegym/MIGReconfig-v0", "{epochs: abc}", "real_options: epochs must be an integer"),
        ("edgegym/MIGReconfig-v0", {"severity": float("nan")}, "severity must be a finite"),
        (ENERGY, "{allow_clock_changes: maybe}", "allow_clock_changes must be true or false"),
        (ENERGY, "{bogus: 1}", "real_options: unknown key(s) ['bogus']"),
    ],
)
def test_real_options_are_checked_when_the_env_is_made(env_id, options, needle):
    """Before, an unknown key surfaced at the first reset (as a failure of the policy), and
    ``epochs: abc`` as "invalid literal for int()"."""
    with pytest.raises(ValueError) as err:
        make_env(env_id, None, {"backend": "real", "real_options": options})
    assert needle in str(err.value)


def test_good_real_options_from_the_command_line_parse():
    env = make_env(ENERGY, None, {"backend": "real", "real_options": "{width: 4}"})
    assert env.unwrapped.real_options == {"width": 4}


@pytest.mark.parametrize("value", ["maybe", "1", 1, None, "[true]"])
def test_record_timeline_must_be_a_flag(value):
    from edgegym.families.energy import EnergyFairShareEnv

    with pytest.raises(ValueError, match=r"^record_timeline: must be true or false, got "):
        make_env(ENERGY, None, {"record_timeline": value})
    with pytest.raises(ValueError, match="record_timeline: must be true or false"):
        EnergyFairShareEnv(ETF, record_timeline=value)


def test_record_timeline_true_from_the_command_line_is_kept():
    assert make_env(ENERGY, None, {"record_timeline": "true"}).unwrapped.record_timeline
    assert not make_env(ENERGY, None, {"record_timeline": "false"}).unwrapped.record_timeline


def test_time_scale_from_the_command_line_is_a_number():
    """``--set time_scale=2`` was refused as the string '2'."""
    assert make_env(ENERGY, None, {"time_scale": "2"}).unwrapped.time_scale == 2
    with pytest.raises(ValueError, match="time_scale=-1; expected"):
        make_env(ENERGY, None, {"time_scale": "-1"})


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--set", "real_options=5"], "real_options: must be a mapping"),
        (["--set", "record_timeline=maybe"], "record_timeline: must be true or false"),
    ],
)
def test_the_cli_names_the_argument(capsys, argv, needle):
    rc = cli.main(["evaluate", ENERGY, "--episodes", "1", "--no-progress", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and needle in err


# ------------------------------------------------------------------ 10: an unknown keyword
@pytest.mark.parametrize("env_id", [ENERGY, "edgegym/EnergyFairShare-Flat-v0"])
def test_an_unknown_setting_names_it_and_the_valid_ones_only(env_id):
    with pytest.raises(UnknownOverrideError) as err:
        make_env(env_id, None, {"nokey": "1"})
    msg = str(err.value)
    assert msg.startswith(f"{env_id}: unknown setting 'nokey': neither an argument")
    assert "record_timeline" in msg and "real_options" in msg and "quanta" in msg
    assert "raised from the environment creator" not in msg and "kwargs" not in msg
    assert "__init__()" not in msg
    assert err.value.key == "nokey" and "quanta" in err.value.allowed


def test_the_cli_says_it_in_one_line(capsys):
    rc = cli.main(["evaluate", ENERGY, "--episodes", "1", "--no-progress", "--set", "nokey=1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"{ENERGY}: unknown setting 'nokey'" in err and "environment creator" not in err


def test_probing_clients_still_get_pythons_wording():
    """TorchRL and SB3 probe optional keywords and match Python's words (not reworded when
    the class is called directly)."""
    from edgegym.families.energy import EnergyFairShareEnv

    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'"):
        EnergyFairShareEnv(ETF, frameskip=1)


# ------------------------------------------------------------------ 16: duplicate YAML keys
def test_a_duplicate_key_names_the_key_and_both_lines(tmp_path):
    text = resolve(ETF).read_text()
    assert "\nquanta: 200\n" in text
    path = tmp_path / "dup.yaml"
    path.write_text(text.replace("\nquanta: 200\n", "\nquanta: 200\nquanta: 300\n"))
    line = text.split("\n").index("quanta: 200") + 2
    with pytest.raises(ScenarioError) as err:
        load(path)
    assert str(err.value) == (
        f"{path}: line {line}, column 1: duplicate key 'quanta' (first given on line "
        f"{line - 1}); a key may appear once in a mapping"
    )


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("a: 1\nb:\n  c: 1\n  c: 2\n", "'c'", 4),  # nested
        ("a: {x: 1, y: 2, x: 3}\n", "'x'", 1),  # flow
        ("t:\n  - {name: A1, name: A2}\n", "'name'", 2),  # in a list entry
        ("1: a\n0x1: b\n", "'0x1'", 2),  # one integer written twice
        ("yes: 1\ntrue: 2\n", "'true'", 2),  # one boolean written twice
        (f"{'k' * 60}: 1\n{'k' * 60}: 2\n", "a 60-character value", 2),  # not echoed
    ],
)
def test_load_yaml_refuses_duplicate_keys_anywhere(text, key, line):
    with pytest.raises(StrictYAMLError) as err:
        load_yaml(text)
    assert yaml_problem(err.value).startswith(f"line {line}, column")
    assert f"duplicate key {key} (first given on line" in str(err.value.problem)


def test_load_yaml_keeps_safe_load_results_and_merge_keys():
    text = "base: &b {x: 1, y: 2}\nover: {<<: *b, y: 3}\nsame: *b\nn: [1, 2.5, true, null]\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml(text)["over"] == {"x": 1, "y": 3}  # a mapping's own key beats a merged one
    for name in ("migrator-w1", ETF, "srs-edge-5apps", "ekya-cityscapes"):
        text = resolve(name).read_text()
        assert load_yaml(text) == yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError):  # still no Python objects
        load_yaml("!!python/object/apply:os.system ['true']")


def test_a_duplicate_key_in_a_set_value_names_the_override():
    with pytest.raises(
        ScenarioError, match=r"override 'objective': line 1, column 9: duplicate key 'fs'"
    ):
        load(ETF, objective="{fs: 1, fs: 0}")


# ------------------------------------------------------------------ 19: alias bombs, long lines
def _bomb(levels: int) -> str:
    lines = ["  - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_in_one_short_line(tmp_path):
    text = resolve(ETF).read_text().replace("\nquanta: 200\n", "\nquanta:\n" + _bomb(9))
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    assert path.stat().st_size < 3000
    with pytest.raises(ScenarioError) as err:
        load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: line ") and "aliases expand to more than" in msg
    assert len(msg) < 200


def test_aliases_below_the_cap_load_and_their_value_is_quoted_short(tmp_path):
    assert 1 + 10 + 110 < MAX_ALIAS_VALUES  # three levels: 10 + 10 x 11 values
    text = resolve(ETF).read_text().replace("\nquanta: 200\n", "\nquanta:\n" + _bomb(3))
    path = tmp_path / "small.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: quanta: must be an integer in [1, 1000000], got [[")
    assert len(msg) < len(str(path)) + 160


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r["tenants"][0].update(demand={"kind": "x" * 5000}), "tenants[0].demand.kind"),
        (lambda r: r["tenants"][1].update({"y" * 5000: 1}), "tenants[1].yyy"),
    ],
)
def test_every_line_of_a_scenario_error_is_capped(tmp_path, edit, field):
    """An arrival kind or an unknown key from the file was quoted whole."""
    raw = _raw(ETF)
    edit(raw)
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    lines = str(err.value).split("\n")
    assert all(len(line) <= MAX_LINE for line in lines)
    assert field in lines[0] and "characters)" in lines[0]


# ------------------------------------------------------------------ fuzz 9: clock_mhz 0 written out
@pytest.mark.parametrize("clock", [0, 0.0, [[0, 0]], [[0, 0], [1.0, 726.75]]])
def test_an_energy_tenant_can_write_its_default_clock_of_0(tmp_path, clock):
    """``clock_mhz: 0`` (the default: the GPU's top clock, as the out-of-range message says)
    was refused when written out ("must be MHz > 0 ..."); it now means what the default means.
    """
    from edgegym.families.energy.env import EnergyFairShareEnv

    raw = _raw(ETF)
    del raw["tenants"][0]["clock_mhz"]
    default = EnergyFairShareEnv(str(_write(tmp_path, raw, "default.yaml")), quanta=3)
    top = default.params.clocks[0]
    assert top == ((0.0, default.params.max_clock_mhz),)
    raw["tenants"][0]["clock_mhz"] = clock
    env = EnergyFairShareEnv(str(_write(tmp_path, raw)), quanta=3)
    assert env.params.clocks[0][0] == top[0]
    assert env.params.clocks[1:] == default.params.clocks[1:]


@pytest.mark.parametrize("clock", [-1, [[0, -5.0]], "top"])
def test_a_negative_clock_is_still_refused(tmp_path, clock):
    raw = _raw(ETF)
    raw["tenants"][0]["clock_mhz"] = clock
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    assert "tenants[0].clock_mhz: must be MHz >= 0 (0: the top clock) or a list of" in str(
        err.value
    )


def test_a_share_quantum_too_fine_for_the_gpus_is_refused_with_the_bound():
    # 64 GPUs at 1e-6 asks for 64M share levels per job (the thief's floors took ~3 GB there)
    with pytest.raises(ScenarioError) as exc:
        load("ekya-cityscapes", **{"hardware.gpus": 64, "hardware.share_quantum": 1e-6})
    assert "64,000,000 share levels" in str(exc.value)
    assert "0.00064" in str(exc.value)
    # the finest quantum the bound allows still loads and builds
    env = make_env(
        "edgegym/ContinualLearning-v0",
        "ekya-cityscapes",
        {"hardware.gpus": 1, "hardware.share_quantum": 1e-5},
        None,
    )
    env.close()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ({"token": "ghp_SECRETSECRETSECRET"}, "{'token': <a 22-character text>}"),
        ("password: hunter2 and more", "<a 26-character text>"),
        ("\x1b[2Jboom", "<a 8-character text>"),  # not a name: a terminal escape is never sent
    ],
)
def test_a_scenario_error_quotes_names_and_numbers_but_not_other_text(tmp_path, value, shown):
    raw = _raw(ETF)
    raw["family"] = value
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    msg = str(err.value)
    assert msg.endswith(f", got {shown}") and "SECRET" not in msg and "hunter" not in msg


# ------------------------------------------------------------------ YAML the reader refuses
def test_a_nul_byte_gives_its_line_and_column_not_the_readers_class_name(tmp_path):
    """Before: ``not valid YAML: ReaderError``, with no position."""
    path = tmp_path / "nul.yaml"
    path.write_text(resolve(ETF).read_text().replace("\nquanta: 200\n", "\nquanta: 2\x0000\n"))
    line = path.read_text().splitlines().index("quanta: 2\x0000") + 1
    with pytest.raises(ScenarioError) as err:
        load(path)
    assert str(err.value) == (
        f"{path}: not valid YAML: line {line}, column 10: unacceptable character #x0000: "
        "special characters are not allowed"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: 1\r\nb: [1, \x01]\n", "line 2, column 8"),  # \r\n is one break, as PyYAML counts
        ("a: 1\rb: \ufffe\n", "line 2, column 4"),
        ("\x00", "line 1, column 1"),
    ],
)
def test_load_yaml_gives_a_refused_characters_position(text, where):
    with pytest.raises(yaml.YAMLError) as err:
        load_yaml(text)
    assert yaml_problem(err.value).startswith(f"{where}: unacceptable character #x")


def test_yaml_problem_of_pyyamls_own_reader_error_gives_the_offset():
    with pytest.raises(yaml.YAMLError) as err:
        yaml.safe_load("a: 1\nb: secret\x00")
    assert yaml_problem(err.value) == (
        "character 15: unacceptable character #x0000: special characters are not allowed"
    )


# ------------------------------------------------------------------ 1e9 is text in YAML 1.1
@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("quanta", "1e2", "write 100"),  # an integer field: the digits
        ("quanta", "2.5e3", "write 2500"),
        ("quantum_s", "5e-2", "write 5.0e-2"),  # a number field: a YAML 1.1 float
        ("quantum_s", "1.0e9", "write 1.0e+9"),
        ("quantum_s", "-3E1", "write -3.0e+1"),
    ],
)
def test_a_number_written_as_1e9_gets_a_hint_that_parses(tmp_path, field, value, hint):
    raw = _raw(ETF)
    raw[field] = value  # dumped quoted: YAML 1.1 reads it back as the text it is
    path = _write(tmp_path, raw)
    with pytest.raises(ScenarioError) as err:
        load(path)
    msg = str(err.value)
    assert msg.endswith(f", got '{value}' ({hint}: YAML reads {value} as text)"), msg
    written = load_yaml(hint.removeprefix("write "))
    assert written == float(value) and isinstance(written, int if field == "quanta" else float)


def test_text_that_is_no_number_gets_no_hint(tmp_path):
    raw = _raw(ETF)
    raw["quanta"] = "lots"
    with pytest.raises(ScenarioError) as err:
        load(_write(tmp_path, raw))
    assert str(err.value).endswith("got 'lots'")
