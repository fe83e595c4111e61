"""Inference and retraining costs of a full-size ResNet18 under MPS shares (docs/real-gpu.md).

The Ekya regime rests on two inputs the simulator takes from the authors' code: a
ResNet18 stream's inference needs a fixed GPU share, and a retraining job's progress is
proportional to the GPU share it is given (the thief's GPU-time rescaling). This script measures
both on the GPU it runs on, with torch only (no edgegym import, no torchvision):

* ``alone``: one process, the whole GPU: inference latency at batch 1/8/32 and training
  throughput at batch 32 (all layers, and the last stage only), each with NVML energy;
* ``curve``: one process per MPS share p (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=p), alone on the GPU:
  the same three measurements, i.e. throughput as a function of the share;
* ``pairs``: an inference process (share 100-p) and a retraining process (share p) at once,
  both unthrottled, under MPS; then the same pair time-sliced (no MPS daemon).

Inputs are random 3x224x224 tensors (the cost of a forward/backward pass does not depend on the
pixels). fp32 with PyTorch's defaults (cuDNN may use TF32). Run: ``python3 mps_regime.py`` with
$OUT set; it writes $OUT/mps_regime_resnet18.json. ``--model resnet50|vit_b16 --plan interference``
measures only the co-location slowdown: each workload alone at MPS share p (25/50/75) against the
pair at p / 100-p. ``--plan shares`` measures one process alone at every share in sevenths of the
GPU (14, 29, 43, 57, 71, 86, 100 %): batch-1 and batch-8 inference and batch-32 retraining, the
share-efficiency curve of an MPS share mode whose steps match MIG's GPCs. ``--quick`` shrinks
everything for a CPU dry run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import torch
from torch import nn

QUICK = "--quick" in sys.argv
DEV = "cuda" if torch.cuda.is_available() else "cpu"
SIDE = 64 if QUICK else 224
SECONDS = 0.5 if QUICK else 2.5


class Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(c_out)
        self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


def resnet18(classes: int = 1000) -> nn.Module:
    """ResNet18 as He et al. define it (11.7M parameters at 1000 classes)."""
    layers = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    c = 64
    for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(c, width, stride), Block(width, width, 1)]
        c = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, stride, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


def resnet50(classes: int = 1000) -> nn.Module:
    """ResNet50 (25.6M parameters at 1000 classes)."""
    layers = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
    ]
    c = 64
    for width, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(n):
            layers.append(Bottleneck(c, width, stride if i == 0 else 1))
            c = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, classes)]
    return nn.Sequential(*layers)


class ViT(nn.Module):
    """ViT-B/16 (86M parameters): 16x16 patches, 12 pre-norm encoder layers of width 768."""

    def __init__(
        self, classes: int = 1000, side: int = 224, dim: int = 768, depth: int = 12
    ) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 16, 16)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (side // 16) ** 2 + 1, dim))
        layer = nn.TransformerEncoderLayer(
            dim, 12, 4 * dim, 0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def build(name: str) -> nn.Module:
    return {"resnet18": resnet18, "resnet50": resnet50, "vit_b16": lambda: ViT(side=SIDE)}[name]()


def option(flag: str, default: str) -> str:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


MODEL = option("--model", "resnet18")


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


class Energy:
    """NVML's total-energy counter around a measurement (None where it is unavailable)."""

    def __init__(self) -> None:
        self.h = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self.h)
        except Exception:
            self.h = None

    def read(self) -> float | None:
        return (
            None if self.h is None else self.nv.nvmlDeviceGetTotalEnergyConsumption(self.h) / 1000.0
        )


def infer(model: nn.Module, batch: int, seconds: float, meter: Energy) -> dict:
    x = torch.randn(batch, 3, SIDE, SIDE, device=DEV)
    model.eval()
    lat = []
    with torch.no_grad():
        for _ in range(10):
            model(x)
        sync()
        e0, t0 = meter.read(), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            s = time.perf_counter()
            model(x)
            sync()
            lat.append(time.perf_counter() - s)
        wall = time.perf_counter() - t0
        e1 = meter.read()
    lat.sort()
    return {
        "batch": batch,
        "iters": len(lat),
        "wall_s": wall,
        "ms_median": 1e3 * lat[len(lat) // 2],
        "ms_p95": 1e3 * lat[int(0.95 * (len(lat) - 1))],
        "images_per_s": batch * len(lat) / wall,
        "energy_j": None if e0 is None else e1 - e0,
        "mean_w": None if e0 is None else (e1 - e0) / wall,
    }


def train(
    model: nn.Module, batch: int, seconds: float, meter: Energy, last_stage_only: bool
) -> dict:
    for p in model.parameters():
        p.requires_grad_(True)
    if last_stage_only and isinstance(
        model, nn.Sequential
    ):  # Ekya's cheaper configurations retrain the last layers only
        for m in list(model)[:-5]:
            for p in m.parameters():
                p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    x = torch.randn(batch, 3, SIDE, SIDE, device=DEV)
    y = torch.randint(0, 1000, (batch,), device=DEV)
    model.train()

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    sync()
    n, e0, t0 = 0, meter.read(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
        if n % 5 == 0:
            sync()
    sync()
    wall = time.perf_counter() - t0
    e1 = meter.read()
    return {
        "batch": batch,
        "last_stage_only": last_stage_only,
        "steps": n,
        "wall_s": wall,
        "samples_per_s": batch * n / wall,
        "ms_per_step": 1e3 * wall / n,
        "energy_j": None if e0 is None else e1 - e0,
        "mean_w": None if e0 is None else (e1 - e0) / wall,
    }


def measure_all() -> dict:
    meter = Energy()
    model = build(MODEL).to(DEV)
    if "--sevenths" in sys.argv:  # the shares plan: what a share mode's capacity and speed need
        return {
            "infer": [infer(model, b, SECONDS * 0.6, meter) for b in (1, 8)],
            "train": [train(model, 32, SECONDS, meter, False)],
        }
    if "--short" in sys.argv:  # the interference plan: the two workloads a pair runs
        return {
            "infer": [infer(model, 8, 2 * SECONDS, meter)],
            "train": [train(model, 32, 2 * SECONDS, meter, False)],
        }
    out = {"infer": [infer(model, b, SECONDS, meter) for b in (1, 8, 32)]}
    out["train"] = [train(model, 32, SECONDS, meter, False), train(model, 32, SECONDS, meter, True)]
    return out


def worker(role: str, start_at: float, seconds: float) -> dict:
    """One side of a co-located pair: warm up, wait for the common start, run for `seconds`."""
    meter = Energy()
    model = build(MODEL).to(DEV)
    if role == "infer":
        infer(model, 8, 0.3, meter)  # warm-up
        while time.time() < start_at:
            time.sleep(0.005)
        return infer(model, 8, seconds, meter)
    train(model, 32, 0.3, meter, False)
    while time.time() < start_at:
        time.sleep(0.005)
    return train(model, 32, seconds, meter, False)


def spawn(args: list[str], pct: int | None) -> subprocess.Popen:
    env = dict(os.environ)
    if pct is not None:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(pct)
    extra = ["--model", MODEL] + (["--quick"] if QUICK else [])
    return subprocess.Popen(
        [sys.executable, __file__, *args, *extra], env=env, stdout=subprocess.PIPE, text=True
    )


def result(p: subprocess.Popen, timeout: float = 90) -> dict:
    try:
        text, _ = p.communicate(timeout=timeout)
        return json.loads(text.strip().splitlines()[-1])
    except Exception as exc:
        p.kill()
        return {"error": repr(exc)}


def pair(p_train: int | None, seconds: float) -> dict:
    start = time.time() + (4 if QUICK else 12)  # both processes import torch and warm up first
    a = spawn(
        ["--worker", "infer", str(start), str(seconds)], None if p_train is None else 100 - p_train
    )
    b = spawn(["--worker", "train", str(start), str(seconds)], p_train)
    return {"train_pct": p_train, "infer": result(a), "train": result(b)}


def mps(cmd: str) -> bool:
    try:
        r = subprocess.run(
            ["nvidia-cuda-mps-control", *([] if cmd == "quit" else ["-d"])],
            input="quit\n" if cmd == "quit" else None,
            text=True,
            timeout=20,
        )
        time.sleep(1)
        return r.returncode == 0
    except Exception as exc:
        print("mps", cmd, "failed:", exc, flush=True)
        return False


#: MPS thread percentages in sevenths of the GPU (a MIG GPC is a seventh of an A100's or H200's).
SEVENTHS = (14, 29, 43, 57, 71, 86, 100)


def interference(save) -> None:
    """Under one MPS daemon: each workload alone at share p, then the pair at p / 100-p."""
    curve, pairs = {}, []
    for pct in (25, 50, 75):
        curve[pct] = result(spawn(["--alone", "--short"], pct))
        save("curve", curve)
    for p_train in (25, 50, 75):
        pairs.append(pair(p_train, 2 * SECONDS))
        save("pairs_mps", pairs)


def main() -> None:
    if "--worker" in sys.argv:
        i = sys.argv.index("--worker")
        role, start, secs = sys.argv[i + 1], float(sys.argv[i + 2]), float(sys.argv[i + 3])
        print(json.dumps(worker(role, start, secs)), flush=True)
        return
    if "--alone" in sys.argv:
        print(json.dumps(measure_all()), flush=True)
        return
    rep = {
        "device": torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu",
        "torch": torch.__version__,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
        "side": SIDE,
        "seconds": SECONDS,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    rep["model"] = MODEL
    plan = option("--plan", "regime")
    outfile = os.path.join(os.environ.get("OUT", "."), f"mps_{plan}_{MODEL}.json")

    def save(key, value):
        rep[key] = value
        print(key, json.dumps(value), flush=True)
        with open(outfile, "w") as fh:
            json.dump(rep, fh, indent=1)

    if plan == "regime":
        save("alone", result(spawn(["--alone"], None)))
        save("pair_timesliced", pair(None, 2 * SECONDS))
    if DEV != "cuda":
        return
    pipe = os.environ.setdefault("CUDA_MPS_PIPE_DIRECTORY", "/tmp/mps-pipe")
    os.environ.setdefault("CUDA_MPS_LOG_DIRECTORY", "/tmp/mps-log")
    os.makedirs(pipe, exist_ok=True)
    os.makedirs(os.environ["CUDA_MPS_LOG_DIRECTORY"], exist_ok=True)
    if not mps("start"):
        save("mps", "daemon did not start")
        return
    try:
        if plan == "interference":
            interference(save)
            return
        if plan == "shares":
            curve = {}
            for pct in SEVENTHS:
                curve[pct] = result(spawn(["--alone", "--sevenths"], pct))
                save("curve", curve)
            return
        curve = {}
        for pct in (10, 25, 50, 100):
            curve[pct] = result(spawn(["--alone"], pct))
            save("curve", curve)
        pairs = []
        for p_train in (25, 50, 75):
            pairs.append(pair(p_train, 2 * SECONDS))
            save("pairs_mps", pairs)
        save("pair_mps_no_limit", pair(None, 2 * SECONDS))
    finally:
        mps("quit")


if __name__ == "__main__":
    main()
