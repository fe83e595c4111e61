"""A GPU's DVFS clock changes both speed and power in the Ekya family."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.families.continual import ContinualLearningEnv
from edgegym.hardware.gpus import get_gpu, speed_factor
from edgegym.scenarios import ScenarioError


def _first_completion(clock: float) -> tuple[float, float]:
    env = ContinualLearningEnv("ekya-table1", clock_mhz=clock)
    env.reset(seed=0)
    action = np.zeros(8, dtype=np.int64)
    action[:4] = [2, 0, 20, 20]  # stream 0 retrains Cfg2 (65 GPU-s) on 1 GPU
    action[4:] = [0, 0, 0, 20]
    _, _, _, _, info = env.step(action)
    return info["time_s"], info["energy_j"] / info["time_s"]


def test_lower_clock_retrains_slower_at_lower_power():
    gpu = get_gpu("V100-16GB")
    t_top, p_top = _first_completion(0)
    low = gpu.clocks_mhz[2]
    t_low, p_low = _first_completion(low)
    assert t_top == pytest.approx(65.0)
    speed = float(speed_factor(low, gpu.max_clock_mhz, 0.3))
    assert t_low == pytest.approx(65.0 / speed)
    assert p_low < p_top


def test_clock_out_of_range_is_rejected():
    with pytest.raises(ScenarioError, match="clock_mhz"):
        ContinualLearningEnv("ekya-table1", clock_mhz=99999)
