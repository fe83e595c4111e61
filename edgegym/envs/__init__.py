"""Thin Gymnasium adapters over the simulation core, and the one place env ids are registered."""

from __future__ import annotations

import gymnasium as gym

#: Registered environment ids -> (entry point, family, default scenario, summary).
ENV_IDS: dict[str, tuple[str, str, str, str]] = {
    "edgegym/ContinualLearning-v0": (
        "edgegym.envs.continual.env:ContinualLearningEnv",
        "continual",
        "ekya-cityscapes",
        "Ekya: retraining + inference configurations and GPU shares per stream",
    ),
    "edgegym/MIGReconfig-v0": (
        "edgegym.envs.mig.env:MIGReconfigEnv",
        "mig",
        "migrator-w1",
        "MIGRator: MIG layout and instance-to-task assignment every basis second",
    ),
    "edgegym/EnergyFairShare-v0": (
        "edgegym.envs.energy.env:EnergyFairShareEnv",
        "energy",
        "etf-tx2-resnet50-mobilenetv2",
        "ETF: time slices per quantum for tenants at their own DVFS clocks",
    ),
    "edgegym/DAGOffload-v0": (
        "edgegym.envs.dag.env:DAGOffloadEnv",
        "dag",
        "srs-edge-5apps",
        "SRS/MRS: edge server per DAG task and retraining configuration per model",
    ),
}


#: Flat views (``Box`` observation, ``Discrete`` action, :mod:`edgegym.wrappers`) -> base id.
#: Kept out of :data:`ENV_IDS` (which lists the environments themselves); MIGReconfig-v0 is
#: flat already.
FLAT_IDS: dict[str, str] = {
    "edgegym/ContinualLearning-Flat-v0": "edgegym/ContinualLearning-v0",
    "edgegym/EnergyFairShare-Flat-v0": "edgegym/EnergyFairShare-v0",
    "edgegym/DAGOffload-Flat-v0": "edgegym/DAGOffload-v0",
}


def register_all() -> None:
    """Register every edgegym id with Gymnasium (idempotent)."""
    for env_id, (entry_point, *_rest) in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)
    for flat_id, base_id in FLAT_IDS.items():
        if flat_id not in gym.registry:
            # The base id brings order enforcing; Gymnasium's passive checker wraps the flat
            # view (what the user steps), so ``disable_env_checker`` reaches it as usual.
            gym.register(
                id=flat_id,
                entry_point="edgegym.wrappers:make_flat_registered",
                kwargs={"env_id": base_id},
                order_enforce=False,
            )
