"""Stable-Baselines3 model files are untrusted: load them without unpickling anything.

SB3 keeps a model's settings in the zip's ``data`` entry as JSON, and every value JSON cannot
hold (the policy class, its keyword arguments, the spaces, the schedules, the last observation,
the episode buffers) as a cloudpickled blob that ``PPO.load`` unpickles: a crafted blob runs
code the moment the file is loaded. SB3 leaves a key alone when ``custom_objects`` names it,
and reads the weights (``*.pth``) with ``torch.load(weights_only=True)``. So :func:`load`
rebuilds every pickled value from edgegym's own training config (``config.yaml``, read as plain
YAML) and the environment that config names, and passes them all: nothing in the zip is
unpickled. A pickled key edgegym cannot rebuild is refused in one line, unless the user trusts
the file (``--trust-artifact``, or :data:`TRUST_ENV` set to 1 for worker processes).

Every rebuilt key is the rebuilt value whether the file pickles it, gives it as plain JSON or
leaves it out (a ``policy_kwargs`` written as JSON would otherwise be taken as it is: layers
16,000 wide, built in minutes and gigabytes), and before SB3 builds anything the network the
config describes is built on torch's ``meta`` device and checked against the tensors the file
stores in ``policy.pth`` (:mod:`edgegym.agents.shapes`): a network that does not fit is
refused in one line, however large. The zip itself is read only as SB3 writes it
(:func:`model_entries`): the entries of :data:`ENTRY_LIMITS`, each within its cap and at most
:data:`MAX_RATIO` times its packed size (a 1 MB entry of a gigabyte of zeros kept torch busy
for minutes), and SB3 loads those bytes, repacked, never the file again.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import os
import pickle
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from edgegym.inputs import LIMITS, InputError

#: Set to 1 (``--trust-artifact`` does) to let SB3 and RLlib unpickle what a file holds.
TRUST_ENV = "EDGEGYM_TRUST_ARTIFACTS"

_KB, _MB = 1 << 10, 1 << 20
#: Largest ``data`` entry read from a model zip (a real one is a few kB to a few hundred kB).
MAX_DATA_BYTES = 64 * _MB
#: The entries Stable-Baselines3 writes into a PPO or MaskablePPO model zip, and the most
#: bytes each may unpack to; a zip with any other entry is refused. The weights may take the
#: cap of a weights file (:data:`edgegym.inputs.LIMITS`), the rest far less.
ENTRY_LIMITS: dict[str, int] = {
    "data": MAX_DATA_BYTES,
    "policy.pth": LIMITS["weights"],
    "policy.optimizer.pth": LIMITS["weights"],
    "pytorch_variables.pth": 1 * _MB,
    "_stable_baselines3_version": 1 * _KB,
    "system_info.txt": 64 * _KB,
}
#: Most bytes all entries of a model zip may unpack to together.
MAX_UNPACKED_BYTES = LIMITS["weights"]
#: Most an entry of over :data:`RATIO_FLOOR` bytes may unpack to per packed byte. SB3 stores
#: its entries unpacked (1:1); deflate packs weights about 1.1:1 and JSON 3-10:1, and a
#: gigabyte of zeros 1000:1.
MAX_RATIO = 100
RATIO_FLOOR = 1 * _MB


class UntrustedArtifact(ValueError):
    """A model file that would need arbitrary unpickling, or that cannot be read safely."""


def trusted() -> bool:
    """Whether the user allowed unpickling artifacts (:data:`TRUST_ENV`)."""
    return os.environ.get(TRUST_ENV, "").strip() not in ("", "0")


@contextlib.contextmanager
def trusting(allow: bool = True) -> Iterator[None]:
    """Inside (with ``allow``): unpickling allowed in this process and the worker processes
    it starts (``--trust-artifact``); the setting before comes back after."""
    before = os.environ.get(TRUST_ENV)
    if allow:
        os.environ[TRUST_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TRUST_ENV, None)
        else:
            os.environ[TRUST_ENV] = before


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < _MB else f"{n / _MB:,.1f} MB"


def _open(path: str | Path) -> BinaryIO:
    """The model file opened for reading: a regular file within the weights cap, checked
    before and after opening (a FIFO swapped in between cannot block)."""
    from edgegym.agents.policy import open_weights

    try:
        return open_weights(Path(path), "model file")
    except (FileNotFoundError, InputError) as exc:
        raise UntrustedArtifact(str(exc)) from None


def _checked_entries(z: zipfile.ZipFile, path: str | Path) -> list[zipfile.ZipInfo]:
    """The entries of a model zip, from its directory, each one SB3 writes (once), within its
    cap and its packing ratio, all within :data:`MAX_UNPACKED_BYTES`.

    Raises:
        UntrustedArtifact: One line naming the file and the entry (only names of
            :data:`ENTRY_LIMITS` are named: any other is the file's content).
    """
    infos = z.infolist()
    names = [info.filename for info in infos]
    unknown = sum(name not in ENTRY_LIMITS for name in names)
    if unknown:
        raise UntrustedArtifact(
            f"{path}: holds {unknown} {'entry' if unknown == 1 else 'entries'} an SB3 model "
            f"does not (it holds {', '.join(ENTRY_LIMITS)}); not read"
        )
    if len(set(names)) != len(names):
        raise UntrustedArtifact(f"{path}: names an entry twice; not an SB3 model zip")
    total = 0
    for info in infos:
        name, size, packed = info.filename, info.file_size, info.compress_size
        if info.flag_bits & 0x1:
            raise UntrustedArtifact(f"{path}: its {name} entry is encrypted")
        if size > ENTRY_LIMITS[name]:
            raise UntrustedArtifact(
                f"{path}: its {name} entry unpacks to {_size(size)}, over the "
                f"{_size(ENTRY_LIMITS[name])} read for it"
            )
        if size > RATIO_FLOOR and size > MAX_RATIO * max(packed, 1):
            raise UntrustedArtifact(
                f"{path}: its {name} entry unpacks {_size(packed)} to {_size(size)} "
                f"({size // max(packed, 1):,}:1; a zip bomb?); at most {MAX_RATIO}:1 is read "
                f"for an entry over {_size(RATIO_FLOOR)}"
            )
        total += size
    if total > MAX_UNPACKED_BYTES:
        raise UntrustedArtifact(
            f"{path}: its entries unpack to {_size(total)}, over the "
            f"{_size(MAX_UNPACKED_BYTES)} read for a model"
        )
    return infos


def _read_entry(z: zipfile.ZipFile, info: zipfile.ZipInfo, path: str | Path) -> bytes:
    """An entry's bytes, read in pieces and stopped past the size the directory gives (a
    lying directory cannot make it unpack more)."""
    limit = min(info.file_size, ENTRY_LIMITS[info.filename])
    parts, size = [], 0
    with z.open(info) as fh:
        while part := fh.read(min(_MB, limit + 1 - size)):
            size += len(part)
            if size > limit:
                raise UntrustedArtifact(
                    f"{path}: its {info.filename} entry unpacks to more than its zip directory says"
                )
            parts.append(part)
    return b"".join(parts)


def _entries(path: str | Path, only: str | None = None) -> dict[str, bytes]:
    """The entries of a model zip (``only``: that one, if there), checked and read
    (:func:`_checked_entries`, :func:`_read_entry`).

    Raises:
        UntrustedArtifact: Not a zip, or an entry that is not SB3's or over its caps.
    """
    fh = _open(path)
    try:
        with fh, zipfile.ZipFile(fh) as z:
            infos = _checked_entries(z, path)
            return {
                info.filename: _read_entry(z, info, path)
                for info in infos
                if only is None or info.filename == only
            }
    except (
        OSError,
        EOFError,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
    ) as exc:
        # NotImplementedError: a compression method zipfile lacks
        raise UntrustedArtifact(f"{path}: not an SB3 model zip ({type(exc).__name__})") from None


def model_entries(path: str | Path) -> dict[str, bytes]:
    """Every entry of an SB3 model zip, read within the caps of :data:`ENTRY_LIMITS`,
    :data:`MAX_RATIO` and :data:`MAX_UNPACKED_BYTES`: what :func:`load` hands SB3.

    Raises:
        UntrustedArtifact: Not a zip, an entry SB3 does not write, or one over its caps.
    """
    return _entries(path)


def check_zip(path: str | Path) -> None:
    """Check a model zip's directory (:func:`model_entries`'s rules) without unpacking it.

    Raises:
        UntrustedArtifact: Not a zip, an entry SB3 does not write, or one over its caps.
    """
    fh = _open(path)
    try:
        with fh, zipfile.ZipFile(fh) as z:
            _checked_entries(z, path)
    except (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise UntrustedArtifact(f"{path}: not an SB3 model zip ({type(exc).__name__})") from None


def _parse_data(raw: bytes | None, path: str | Path) -> dict[str, Any]:
    if raw is None:
        raise UntrustedArtifact(f"{path}: not an SB3 model (no data entry)")
    try:
        data = json.loads(raw)
    except ValueError:  # not UTF-8, not JSON: the parser's message may quote the entry
        raise UntrustedArtifact(f"{path}: its data entry is not JSON") from None
    except RecursionError:
        raise UntrustedArtifact(f"{path}: its data entry is nested too deeply") from None
    if not isinstance(data, dict):
        raise UntrustedArtifact(f"{path}: its data entry is not a mapping")
    return data


def zip_data(path: str | Path) -> dict[str, Any]:
    """The JSON ``data`` entry of an SB3 model zip, read without unpickling (the zip checked
    as :func:`model_entries` checks it; only ``data`` is unpacked).

    Raises:
        UntrustedArtifact: Not a zip, an entry SB3 does not write, one over its caps, no
            ``data`` entry, or one that is not a JSON mapping.
    """
    return _parse_data(_entries(path, only="data").get("data"), path)


def pickled_keys(data: Mapping[str, Any]) -> list[str]:
    """The keys of a model's ``data`` that SB3 would unpickle."""
    return sorted(k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v)


def num_timesteps(path: str | Path) -> int:
    """The timesteps a model zip records, read without unpickling."""
    value = zip_data(path).get("num_timesteps", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UntrustedArtifact(f"{path}: num_timesteps is not a count")
    return value


def _default(cls: type, name: str) -> Any:
    return inspect.signature(cls.__init__).parameters[name].default


def rebuilt_objects(cfg: Mapping[str, Any], cls: type) -> dict[str, Any]:
    """Every value SB3 pickles into a model of ``cls``, rebuilt from the training config
    ``cfg`` (the policy class and keyword arguments and the spaces from the environment the
    config names, the schedules from its ``ppo`` section, the run-time buffers empty: SB3 makes
    them again when training starts)."""
    from stable_baselines3.common.utils import FloatSchedule

    from edgegym.agents.sb3.envs import make_env, policy_for, wrap
    from edgegym.agents.sb3.train import ppo_arguments

    cfg = copy.deepcopy(dict(cfg))
    hp = cfg["hyperparams"]
    probe = wrap(
        make_env(cfg["env_id"], cfg.get("scenario"), cfg.get("overrides") or {}), hp["wrappers"]
    )
    try:
        policy, policy_kwargs = policy_for(cfg, probe)
        obs_space, act_space = probe.observation_space, probe.action_space
    finally:
        probe.close()
    if isinstance(policy, str):
        policy = cls.policy_aliases[policy]
    args = ppo_arguments(hp["ppo"])
    learning_rate = args.get("learning_rate", _default(cls, "learning_rate"))
    clip_range = args.get("clip_range", _default(cls, "clip_range"))
    clip_range_vf = args.get("clip_range_vf", _default(cls, "clip_range_vf"))
    return {
        "policy_class": policy,
        "policy_kwargs": policy_kwargs,
        "observation_space": obs_space,
        "action_space": act_space,
        "learning_rate": learning_rate,
        "lr_schedule": FloatSchedule(learning_rate),
        "clip_range": FloatSchedule(clip_range),
        "clip_range_vf": None if clip_range_vf is None else FloatSchedule(clip_range_vf),
        "target_kl": args.get("target_kl", _default(cls, "target_kl")),
        "use_sde": False,  # edgegym's actions are discrete: no state-dependent exploration
        "rollout_buffer_class": None,
        "rollout_buffer_kwargs": {},
        "action_noise": None,
        "_last_obs": None,
        "_last_episode_starts": None,
        "_last_original_obs": None,
        "ep_info_buffer": None,
        "ep_success_buffer": None,
    }


def _packed(entries: Mapping[str, bytes]) -> io.BytesIO:
    """A model zip of ``entries`` in memory (stored, unpacked): what SB3 reads."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, raw in entries.items():
            z.writestr(name, raw)
    buffer.seek(0)
    return buffer


def _count(data: Mapping[str, Any], key: str, path: str | Path) -> int | None:
    value = data.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise UntrustedArtifact(f"{path}: its {key} is not a count")
    return value


def _check_rollout(data: Mapping[str, Any], env: Any, path: str | Path) -> None:
    """Refuse a rollout buffer (``n_steps x n_envs`` transitions, which SB3 allocates when
    it makes the model) over :data:`edgegym.agents.config.MAX_ROLLOUT`."""
    from edgegym.agents.config import MAX_ROLLOUT

    n_steps = _count(data, "n_steps", path)
    n_envs = int(getattr(env, "num_envs", 1)) if env is not None else _count(data, "n_envs", path)
    if n_steps is not None and n_envs is not None and n_steps * n_envs > MAX_ROLLOUT:
        raise UntrustedArtifact(
            f"{path}: its n_steps x n_envs is {n_steps:,} x {n_envs:,}, over the "
            f"{MAX_ROLLOUT:,} transitions a rollout may hold"
        )


def _weights_refused(path: str | Path) -> UntrustedArtifact:
    return UntrustedArtifact(
        f"{path}: its weights hold pickled Python objects other than tensors; loading "
        "them would run whatever they hold. Pass --trust-artifact if you trust its source"
    )


def _check_network(
    objects: Mapping[str, Any], entries: Mapping[str, bytes], path: str | Path
) -> None:
    """Refuse a model whose stored policy weights do not fit the network SB3 would build from
    ``objects`` (built on the ``meta`` device first: nothing allocated)."""
    from edgegym.agents.shapes import NetworkMismatch, check_fits, network_shapes, stored_shapes

    raw = entries.get("policy.pth")
    if raw is None:
        raise UntrustedArtifact(f"{path}: not an SB3 model (no policy.pth entry)")
    kwargs = copy.deepcopy(objects["policy_kwargs"])

    def build() -> Any:
        return objects["policy_class"](
            objects["observation_space"], objects["action_space"], objects["lr_schedule"], **kwargs
        )

    try:
        have = stored_shapes(raw, "policy.pth")
        check_fits(network_shapes(build), have, "policy.pth")
    except pickle.UnpicklingError:  # torch.load(weights_only=True) met something else
        raise _weights_refused(path) from None
    except NetworkMismatch as exc:
        raise UntrustedArtifact(f"{path}: {exc}; refused before building it") from None


def load(
    path: str | Path,
    cfg: Mapping[str, Any],
    cls: type,
    *,
    env: Any = None,
    device: str = "cpu",
) -> Any:
    """``cls.load(path)`` with nothing in the file unpickled (see the module docstring), or
    SB3's own load when the user trusts artifacts (:func:`trusted`). Either way SB3 reads the
    entries :func:`model_entries` read and checked, never the file itself.

    Raises:
        UntrustedArtifact: The file pickles a value edgegym does not rebuild (naming it), its
            network does not fit its weights, or it is not a readable model zip.
    """
    entries = model_entries(path)
    data = _parse_data(entries.get("data"), path)
    if trusted():
        return cls.load(_packed(entries), env=env, device=device)
    keys = pickled_keys(data)
    objects = rebuilt_objects(cfg, cls)
    unknown = [k for k in keys if k not in objects]
    if unknown:
        raise UntrustedArtifact(  # how many only: the names are the file's content
            f"{path}: holds {len(unknown)} pickled Python "
            f"{'object' if len(unknown) == 1 else 'objects'} edgegym does not rebuild; loading "
            "it would run whatever they hold. Pass --trust-artifact if you trust its source"
        )
    _check_rollout(data, env, path)
    _check_network(objects, entries, path)
    # Every rebuilt key is ours, whether the file pickles it, writes it as JSON or leaves it
    # out: SB3 takes custom_objects for the keys data names, so each is named (as null).
    data.update(dict.fromkeys(objects))
    repacked = {**entries, "data": json.dumps(data).encode()}
    try:
        return cls.load(_packed(repacked), env=env, device=device, custom_objects=objects)
    except pickle.UnpicklingError:  # torch.load(weights_only=True) met something else
        raise _weights_refused(path) from None


__all__ = [
    "ENTRY_LIMITS",
    "MAX_RATIO",
    "TRUST_ENV",
    "UntrustedArtifact",
    "check_zip",
    "load",
    "model_entries",
    "num_timesteps",
    "pickled_keys",
    "rebuilt_objects",
    "trusted",
    "trusting",
    "zip_data",
]
