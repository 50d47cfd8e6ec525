"""hetbench values in Flower records, bit for bit: tensors as float32/int64 ``Array`` entries of an
``ArrayRecord``, numbers, strings and booleans as ``ConfigRecord`` entries, None as a name in a list.

Which algorithm state travels where is each algorithm's own declaration (``Algorithm.server_to_client``,
``Algorithm.client_state``); this module only turns values into records and back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_NONE = "__none__"


def pack(values: dict[str, Any]):
    """``values`` (tensors, arrays, numbers, strings, booleans, None) as (ArrayRecord, ConfigRecord).

    Examples
    --------
    >>> import torch
    >>> arrays, config = pack({"dc": torch.tensor([0.5, -1.0]), "f_k": 0.25, "switch1": True, "l_ema": None})
    >>> sorted(unpack(arrays, config).items(), key=lambda kv: kv[0])
    [('dc', tensor([ 0.5000, -1.0000])), ('f_k', 0.25), ('l_ema', None), ('switch1', True)]
    """
    import torch
    from flwr.app import Array, ArrayRecord, ConfigRecord

    arrays, config, nones = {}, {}, []
    for key, value in values.items():
        if value is None:
            nones.append(key)
        elif isinstance(value, torch.Tensor):
            arrays[key] = Array(np.ascontiguousarray(value.detach().cpu().numpy()))
        elif isinstance(value, np.ndarray):
            arrays[key] = Array(np.ascontiguousarray(value))
        elif isinstance(value, (bool, int, float, str)):
            config[key] = value
        elif isinstance(value, np.generic):
            config[key] = value.item()
        else:
            raise TypeError(f"cannot send {key}={type(value).__name__} through Flower")
    if nones:
        config[_NONE] = nones
    return ArrayRecord(arrays), ConfigRecord(config)


def unpack(arrays, config) -> dict[str, Any]:
    """The values :func:`pack` packed (arrays back as CPU tensors)."""
    import torch

    out: dict[str, Any] = {key: torch.from_numpy(arrays[key].numpy().copy()) for key in arrays}
    for key, value in config.items():
        if key == _NONE:
            out.update({k: None for k in value})
        else:
            out[key] = value
    return out
