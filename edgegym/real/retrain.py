"""Real retraining (SGD under a retraining configuration) and held-out accuracy.

A retraining configuration (:class:`edgegym.workload.continual.RetrainConfig`) maps onto real
hyperparameters: ``epochs``, ``batch_size``, ``layers_retrained`` (the last fraction of the
network's layers is trained, the rest frozen; batch-norm statistics of every layer adapt to
the window's data) and ``data_fraction`` (the first fraction of the window's train samples).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from torch import nn

from edgegym.real.data import DigitStream, Window
from edgegym.real.models import build, set_trainable
from edgegym.workload.continual import RetrainConfig

#: Learning rate and momentum of every retraining (SGD).
LR = 0.05
MOMENTUM = 0.9


def _tensor(a: np.ndarray, device: str) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def sync(device: str) -> None:
    """Wait for ``device``'s queued work (a no-op off CUDA): the end of a served batch or step."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@torch.no_grad()
def evaluate(
    model: nn.Module, x: np.ndarray, y: np.ndarray, device: str = "cpu", batch_size: int = 256
) -> tuple[float, float]:
    """Accuracy of ``model`` on (x, y) and the wall seconds the forward passes took."""
    model.eval()
    t0 = time.perf_counter()
    correct = 0
    for i in range(0, len(y), batch_size):
        out = model(_tensor(x[i : i + batch_size], device))
        correct += int((out.argmax(1).cpu().numpy() == y[i : i + batch_size]).sum())
    sync(device)
    return correct / max(len(y), 1), time.perf_counter() - t0


@dataclass
class RetrainJob:
    """One retraining job, run epoch by epoch (so an executor can interleave it).

    Args:
        model: The network to retrain (modified in place).
        window: The window whose train samples it learns and held-out samples it is judged on.
        config: The retraining configuration.
        seed: Seed of the mini-batch order.
        device: Torch device.
        lr: SGD learning rate.
    """

    model: nn.Module
    window: Window
    config: RetrainConfig
    seed: int = 0
    device: str = "cpu"
    lr: float = LR
    epochs_done: int = 0
    seconds: float = 0.0  # wall seconds spent training
    curve: list[float] = field(default_factory=list)  # held-out accuracy after each epoch

    def __post_init__(self) -> None:
        self.trainable = set_trainable(self.model, self.config.layers_retrained)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.SGD(params, lr=self.lr, momentum=MOMENTUM)
        n = max(1, round(self.config.data_fraction * len(self.window.y_train)))
        self.x = _tensor(self.window.x_train[:n], self.device)
        self.y = _tensor(self.window.y_train[:n], self.device)
        self.gen = torch.Generator().manual_seed(int(self.seed))

    @property
    def done(self) -> bool:
        """All epochs have run."""
        return self.epochs_done >= self.config.epochs

    def run_epochs(self, n: int, measure: bool = True) -> None:
        """Run up to ``n`` more epochs (and record the held-out accuracy after each)."""
        loss_fn = nn.CrossEntropyLoss()
        bs = int(self.config.batch_size)
        for _ in range(max(0, min(n, self.config.epochs - self.epochs_done))):
            self.model.train()
            t0 = time.perf_counter()
            perm = torch.randperm(len(self.y), generator=self.gen).to(self.device)
            for i in range(0, len(perm), bs):
                idx = perm[i : i + bs]
                if len(idx) < 2:  # batch norm needs two samples
                    continue
                self.opt.zero_grad(set_to_none=True)
                loss_fn(self.model(self.x[idx]), self.y[idx]).backward()
                self.opt.step()
            sync(self.device)
            self.seconds += time.perf_counter() - t0
            self.epochs_done += 1
            if measure:
                self.curve.append(self.accuracy())
        for p in self.model.parameters():
            p.requires_grad_(True)
        set_trainable(self.model, self.config.layers_retrained)

    def accuracy(self) -> float:
        """Held-out accuracy of the model now."""
        return evaluate(self.model, self.window.x_test, self.window.y_test, self.device)[0]


def retrain(
    model: nn.Module, window: Window, config: RetrainConfig, seed: int = 0, device: str = "cpu"
) -> RetrainJob:
    """Run a whole retraining job and return it (``curve``, ``seconds``, final accuracy)."""
    job = RetrainJob(model, window, config, seed=seed, device=device)
    job.run_epochs(config.epochs)
    return job


#: Pretraining of the deployed models on a stream's clean base data.
PRETRAIN = RetrainConfig(name="pretrain", epochs=6, batch_size=32)


@lru_cache(maxsize=16)
def _pretrained_state(arch: str, width: int, stream: DigitStream) -> dict[str, Any]:
    x, y = stream.base()
    model = build(arch, width=width, seed=stream.seed)
    window = Window(x, y, x[:0], y[:0], (), "none", 0.0)
    retrain(model, window, PRETRAIN, seed=stream.seed, device="cpu").model.eval()
    return {k: v.clone() for k, v in model.state_dict().items()}


def pretrained(arch: str, stream: DigitStream, width: int = 8, device: str = "cpu") -> nn.Module:
    """A model pretrained on ``stream``'s clean base data (cached per architecture and split).

    Pretraining runs on the CPU once per process and split; the weights are then copied.
    """
    model = build(arch, width=width, seed=stream.seed)
    base = DigitStream(
        windows=stream.windows, kind=stream.kind, base_classes=stream.base_classes, seed=stream.seed
    )
    model.load_state_dict(_pretrained_state(arch, width, base))
    return model.to(device)
