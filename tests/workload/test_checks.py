"""The one parameter-checking rule (edgegym.workload.checks) and the module split by role."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from edgegym.workload.checks import (
    Flag,
    Floats,
    NonNegative,
    OneOf,
    Range,
    Text,
    check,
    error_lines,
)
from edgegym.workload.generators import AlibabaLike, AzureLike
from edgegym.workload.processes import MMPP, Diurnal, Poisson, TraceReplay

UNIT = Annotated[float, Range(0.0, 1.0)]
GPUS = Annotated[int, Range(1, 64)]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_nan_and_inf_are_not_numbers(value) -> None:
    with pytest.raises(ValueError, match=r"^x: must be a finite number in \[0\.0, 1\.0\], got"):
        check(value, UNIT, "x")


@pytest.mark.parametrize("value", [True, "0.5", None, [0.5]])
def test_only_real_numbers_are_numbers(value) -> None:
    with pytest.raises(ValueError, match=r"^x: must be a finite number"):
        check(value, UNIT, "x")


def test_ranges_keep_ints_and_take_numpy_scalars() -> None:
    assert check(1, UNIT, "x") == 1 and isinstance(check(1, UNIT, "x"), int)
    assert check(np.float32(0.5), UNIT, "x") == 0.5
    assert check(np.int64(3), GPUS, "gpus") == 3
    with pytest.raises(ValueError, match=r"gpus: must be an integer in \[1, 64\], got 1\.5"):
        check(1.5, GPUS, "gpus")
    with pytest.raises(ValueError, match=r"gpus: must be an integer in \[1, 64\], got 0"):
        check(0, GPUS, "gpus")
    # Integer bounds of a float range: x >= 0.1 holds for the int 1, not for 0.
    point_one = Annotated[float, Range(0.1, 1.0)]
    assert check(1, point_one, "a") == 1
    with pytest.raises(ValueError, match=r"\[0\.1, 1\.0\]"):
        check(0, point_one, "a")


@pytest.mark.parametrize(
    ("rng", "text"),
    [
        (Range(0), ">= 0"),
        (Range(0, lo_open=True), "> 0"),
        (Range(hi=1, hi_open=True), "< 1"),
        (Range(0, 1, hi_open=True), "in [0, 1)"),
        (Range(0.0, 1.0, lo_open=True), "in (0.0, 1.0]"),
        (Range(), ""),
    ],
)
def test_range_text(rng: Range, text: str) -> None:
    assert rng.text() == text


def test_arrays_are_checked_in_one_pass() -> None:
    rates = Annotated[np.ndarray, Floats(Range(0))]
    np.testing.assert_array_equal(check([1, 2], rates, "r"), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"r: every entry .* >= 0, got nan at 1"):
        check([1, math.nan], rates, "r")
    with pytest.raises(ValueError, match=r"r: must be a non-empty 1-d array"):
        check([], rates, "r")
    with pytest.raises(ValueError, match=r"r: must be a list of finite numbers"):
        check([True, False], rates, "r")


class _Tenant(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slo_ms: Annotated[float, Range(0.0, 1e5, lo_open=True)]
    gpu: Annotated[str, OneOf(lambda: ["A100", "H100"])] = "A100"
    name: Text = "t"
    preinit: Flag = False


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tenants: list[_Tenant]
    rate: NonNegative = 1.0


def _lines(raw: Any) -> list[str]:
    with pytest.raises(ValidationError) as err:
        _File.model_validate(raw)
    return error_lines(err.value, "f.yaml", model=_File, sep=": ")


def test_error_lines_name_file_path_value_and_range() -> None:
    lines = _lines(
        {
            "tenants": [
                {"slo_ms": 5},
                {"slo_ms": math.nan, "gpu": "V100", "name": "", "preinit": 1, "slo": 3},
            ],
            "rate": -1,
        }
    )
    assert lines == [
        "f.yaml: tenants[1].slo_ms: must be a finite number in (0.0, 100000.0], got nan",
        "f.yaml: tenants[1].gpu: must be one of A100, H100, got 'V100'",
        "f.yaml: tenants[1].name: must be a non-empty string, got ''",
        "f.yaml: tenants[1].preinit: must be true or false, got 1",
        "f.yaml: tenants[1].slo: unknown field 'slo' (allowed: slo_ms, gpu, name, preinit)",
        "f.yaml: ... and 1 more errors",
    ]
    assert _lines({"tenants": [{}]}) == ["f.yaml: tenants[0].slo_ms: missing required field"]
    assert _lines({"tenants": 3}) == ["f.yaml: tenants: must be a list, got 3"]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: Poisson(math.nan), r"^rate: must be a finite number >= 0, got nan$"),
        (lambda: Poisson(math.inf), r"^rate: .*got inf$"),
        (lambda: MMPP([1.0, math.nan], [1.0, 1.0]), r"^rates: every entry .*nan at 1$"),
        (lambda: MMPP([1.0, 2.0], [1.0, math.inf]), r"^dwell_s: every entry .*> 0"),
        (lambda: Diurnal(1.0, 0.5, math.nan), r"^period_s: .*> 0, got nan$"),
        (lambda: TraceReplay([1, 2], 1.0, loop=1), r"^loop: must be true or false, got 1$"),  # type: ignore[arg-type]
        (lambda: AzureLike(corr_s=math.inf), r"^corr_s: .*got inf$"),
        (lambda: AlibabaLike(phase=math.nan), r"^phase: must be a finite number, got nan$"),
    ],
)
def test_constructors_reject_nan_and_inf(make, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        make()


def test_role_modules_have_no_import_cycle() -> None:
    """Each role module imports only the ones before it in this order."""
    order = ["checks", "tracefiles", "processes", "generators", "arrival_specs"]
    for i, name in enumerate(order):
        src = importlib.import_module(f"edgegym.workload.{name}").__file__
        text = Path(str(src)).read_text(encoding="utf-8")
        for later in order[i + 1 :]:
            assert f"edgegym.workload.{later} import" not in text, (name, later)
