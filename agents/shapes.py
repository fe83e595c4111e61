"""A network an untrusted file describes is checked against the weights it stores, before it
is built.

A trained model is two things: a description of its network (SB3's ``policy_kwargs``, a
run's ``config.yaml``: ``policy_kwargs.net_arch``, RLlib's ``fcnet_hiddens``) and the tensors
of its weights. Building the network first and loading the weights after is what SB3 and RLlib
do, and a description of layers 30,000 wide allocates gigabytes (and spends minutes
initialising them) before the weights are found not to fit. :func:`network_shapes` builds the
network on torch's ``meta`` device instead (parameters with shapes and no storage: nothing is
allocated, nothing initialised), and :func:`check_fits` compares those shapes with the stored
tensors (:func:`stored_shapes`), so a network that does not fit its weights, however large, is
refused in one line before it is built. A network that fits is no larger than its weights,
which the caps on weight files bound (:data:`edgegym.inputs.LIMITS`).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

#: Tensor methods that move a tensor to a device: on a ``meta`` tensor they are no-ops while
#: :func:`network_shapes` builds (SB3's ``MlpExtractor`` moves its layers to the policy's
#: device, which a policy without parameters of its own says is the CPU).
_MOVES = (torch.Tensor.to, torch.Tensor.cpu, torch.Tensor.cuda)


class _StayOnMeta(TorchFunctionMode):
    """Keeps a ``meta`` tensor where it is when code moves it to a device."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        if func in _MOVES and args and isinstance(args[0], torch.Tensor) and args[0].is_meta:
            return args[0]
        return func(*args, **(kwargs or {}))


class NetworkMismatch(ValueError):
    """A network description that does not fit the stored weights (the message says how)."""


Shapes = dict[str, tuple[int, ...]]


def network_shapes(build: Callable[[], torch.nn.Module]) -> Shapes:
    """``{name: shape}`` of the state dict of the module ``build()`` makes, built on torch's
    ``meta`` device: no storage is allocated however large its layers are.

    Raises:
        NetworkMismatch: The module cannot be built from its description (the message names
            the exception's type only: its text may repeat the description).
    """
    try:
        with torch.device("meta"), _StayOnMeta():
            module = build()
        return {name: tuple(t.shape) for name, t in module.state_dict().items()}
    except Exception as exc:  # whatever the description makes the constructor raise
        raise NetworkMismatch(
            f"the network it describes cannot be built ({type(exc).__name__})"
        ) from None


def stored_shapes(raw: bytes | Any, what: str) -> Shapes:
    """``{name: shape}`` of a stored state dict: ``raw`` the bytes of a ``torch.save`` file
    (read with ``weights_only=True``) or the loaded mapping itself.

    Raises:
        pickle.UnpicklingError: The file holds Python objects other than tensors.
        NetworkMismatch: Not a mapping of names to tensors.
    """
    state = raw
    if isinstance(raw, bytes | bytearray):
        try:
            state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            raise
        except Exception as exc:  # a damaged file: torch's message may quote it
            raise NetworkMismatch(
                f"{what} cannot be read as torch weights ({type(exc).__name__})"
            ) from None
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise NetworkMismatch(f"{what} is not a mapping of parameter names to tensors")
    return {name: tuple(t.shape) for name, t in state.items()}


def _count(shapes: Shapes) -> int:
    total = 0
    for shape in shapes.values():
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def _text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def check_fits(want: Shapes, have: Shapes, what: str) -> None:
    """Refuse a network (``want``, :func:`network_shapes`) that does not fit the stored
    weights (``have``, :func:`stored_shapes` of ``what``): the same names with the same shapes.

    Raises:
        NetworkMismatch: One line: the first of the network's own parameters that differs (its
            name is the network's, never the file's), and both sizes in parameters.
    """
    if want == have:
        return
    sizes = f"{_count(want):,} parameters described, {_count(have):,} stored"
    for name, shape in want.items():
        stored = have.get(name)
        if stored != shape:
            got = "not stored" if stored is None else f"{_text(stored)} stored"
            raise NetworkMismatch(
                f"the network it describes does not fit the weights in {what} ({name}: "
                f"{_text(shape)} described, {got}; {sizes})"
            )
    extra = len(set(have) - set(want))
    raise NetworkMismatch(
        f"the network it describes does not fit the weights in {what} ({what} holds {extra} "
        f"{'tensor' if extra == 1 else 'tensors'} the network does not have; {sizes})"
    )


__all__ = ["NetworkMismatch", "check_fits", "network_shapes", "stored_shapes"]
