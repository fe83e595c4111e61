"""Forward latency of both compact networks on cuda: the profiler's timer and evaluate()."""

import json
import os

import numpy as np
import torch

from edgegym.real.models import build
from edgegym.real.profile import _latency_ms
from edgegym.real.retrain import evaluate

torch.set_num_threads(1)
out = {}
x = np.random.default_rng(0).random((32, 1, 8, 8), dtype=np.float32)
y = np.zeros(32, dtype=np.int64)
for arch in ("resnet18", "mobilenetv2"):
    m = build(arch, width=8).to("cuda")
    r = {f"forward_ms_b{b}": round(_latency_ms(m, b, "cuda", 50), 4) for b in (1, 8, 32)}
    evaluate(m, x, y, "cuda", 1)  # warm-up
    for bs in (1, 32):
        _, sec = evaluate(m, x, y, "cuda", bs)
        r[f"evaluate_ms_per_batch_b{bs}"] = round(1000 * sec / (32 // bs), 4)
    r["params"] = sum(p.numel() for p in m.parameters())
    out[arch] = r
print(json.dumps(out), flush=True)
json.dump(out, open(os.path.join(os.environ["OUT"], "latency.json"), "w"), indent=1)
