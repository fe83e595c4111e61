"""Sharing detection with an MPS control daemon running (started by run.sh, then quit)."""

import dataclasses
import json
import os
import sys

from edgegym.real.sharing import detect

s = detect(0)
out = {
    "env": {k: os.environ.get(k) for k in ("CUDA_MPS_PIPE_DIRECTORY",)},
    "detect(0)": dataclasses.asdict(s),
    "notes": s.notes(),
}
print(json.dumps(out), flush=True)
if "--env" in sys.argv:
    from edgegym.families.continual.env import ContinualLearningEnv
    from edgegym.real import TINY_SCENARIO

    env = ContinualLearningEnv(TINY_SCENARIO, backend="real", device="cuda", time_scale=None)
    _, info = env.reset(seed=0)
    out["env_emulated"] = info["real"]["emulated"]
    out["env_sharing"] = info["real"]["sharing"]
    import torch

    out["cuda_sum"] = float(torch.ones(1000, device="cuda").sum())
    print(json.dumps(out), flush=True)
with open(os.path.join(os.environ["OUT"], "mps.json"), "w") as fh:
    json.dump(out, fh, indent=1)
