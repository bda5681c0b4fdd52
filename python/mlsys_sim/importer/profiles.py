"""Hardware profiles: the machine an imported model is scheduled on, and how each op's base cost follows.

A profile gives throughputs, not costs. The importer derives every op's `base_costs` entry (the time of one
native output tile, rule M24 of docs/model.md) from it: a MatMul with reduction depth K costs
n_h * n_w * K / matrix_macs_per_cycle * op_weights["MatMul"] cycles; a Pointwise op costs
n_h * n_w * sum(op_weights of its ONNX ops) / vector_elements_per_cycle. Memory sizes are in bytes and are
divided by bytes_per_element, since the problem format counts elements. Time is in cycles.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

PRESET_DIR = os.path.join(os.path.dirname(__file__), "presets")

# Vector operations per output element of each ONNX op (transcendentals take several); a profile may
# override any of them under "op_weights". "MatMul" scales the matrix unit's time; "Transpose" is the
# transpose the importer inserts for attention's K^T (docs/import.md); "Sum" adds split-K partial sums.
DEFAULT_OP_WEIGHTS: Dict[str, float] = {
    "MatMul": 1.0, "Transpose": 1.0, "Sum": 1.0,
    "Add": 1.0, "Sub": 1.0, "Mul": 1.0, "Div": 1.0, "Neg": 1.0, "Abs": 1.0, "Max": 1.0, "Min": 1.0,
    "Where": 1.0, "Clip": 1.0, "Relu": 1.0, "LeakyRelu": 1.0, "Reciprocal": 1.0, "Pow": 2.0, "Sqrt": 4.0,
    "Exp": 4.0, "Log": 4.0, "Erf": 8.0, "Tanh": 4.0, "Sigmoid": 4.0, "Elu": 4.0, "Selu": 4.0, "Gelu": 8.0,
    "HardSigmoid": 2.0, "HardSwish": 3.0, "Softplus": 5.0, "BatchNormalization": 2.0,
    "Softmax": 5.0, "LogSoftmax": 6.0, "LayerNormalization": 8.0,
    "ReduceMean": 1.0, "ReduceSum": 1.0, "ReduceMax": 1.0, "ReduceMin": 1.0,
    "ReduceL2": 2.0, "ReduceL1": 2.0, "ReduceSumSquare": 2.0, "Expand": 0.0,
}

REQUIRED = ("name", "native_tile", "matrix_macs_per_cycle", "vector_elements_per_cycle", "fast_memory_bytes",
            "slow_memory_bytes_per_cycle", "bytes_per_element")


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    native_tile: Tuple[int, int]  # [n_w, n_h], as the problem's native_granularity
    matrix_macs_per_cycle: float
    vector_elements_per_cycle: float
    fast_memory_bytes: int
    slow_memory_bytes_per_cycle: float
    bytes_per_element: int
    op_weights: Dict[str, float] = field(default_factory=dict)
    source: str = ""

    @property
    def fast_memory_capacity(self) -> int:
        return self.fast_memory_bytes // self.bytes_per_element

    @property
    def slow_memory_bandwidth(self) -> float:
        return self.slow_memory_bytes_per_cycle / self.bytes_per_element

    def weight(self, op_type: str) -> float:
        if op_type in self.op_weights:
            return self.op_weights[op_type]
        return DEFAULT_OP_WEIGHTS.get(op_type, 1.0)

    def matmul_cost(self, depth: int) -> float:
        n_w, n_h = self.native_tile
        return n_w * n_h * depth / self.matrix_macs_per_cycle * self.weight("MatMul")

    def pointwise_cost(self, op_types: List[str]) -> float:
        n_w, n_h = self.native_tile
        return n_w * n_h * sum(self.weight(t) for t in op_types) / self.vector_elements_per_cycle

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "native_tile": list(self.native_tile),
                "matrix_macs_per_cycle": self.matrix_macs_per_cycle,
                "vector_elements_per_cycle": self.vector_elements_per_cycle,
                "fast_memory_bytes": self.fast_memory_bytes,
                "slow_memory_bytes_per_cycle": self.slow_memory_bytes_per_cycle,
                "bytes_per_element": self.bytes_per_element, "op_weights": dict(self.op_weights)}


def presets() -> List[str]:
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".json"))


def _positive(doc: dict, key: str, where: str, integer: bool = False):
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ProfileError(f"{where}: '{key}' must be a positive number, got {value!r}")
    if integer and value != int(value):
        raise ProfileError(f"{where}: '{key}' must be an integer, got {value!r}")
    return int(value) if integer else float(value)


def profile_from_dict(doc: dict, where: str = "profile") -> HardwareProfile:
    if not isinstance(doc, dict):
        raise ProfileError(f"{where}: a profile is a JSON object")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise ProfileError(f"{where}: missing {', '.join(repr(k) for k in missing)}")
    tile = doc["native_tile"]
    if (not isinstance(tile, list) or len(tile) != 2
            or any(isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= 2 ** 30 for t in tile)):
        raise ProfileError(f"{where}: 'native_tile' must be [n_w, n_h], two integers in [1, 2^30]")
    weights = doc.get("op_weights", {})
    if not isinstance(weights, dict):
        raise ProfileError(f"{where}: 'op_weights' must be an object of op type -> number")
    for op, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
            raise ProfileError(f"{where}: 'op_weights.{op}' must be a positive number, got {w!r}")
    if not isinstance(doc["name"], str):
        raise ProfileError(f"{where}: 'name' must be a string")
    profile = HardwareProfile(
        name=doc["name"], native_tile=(tile[0], tile[1]),
        matrix_macs_per_cycle=_positive(doc, "matrix_macs_per_cycle", where),
        vector_elements_per_cycle=_positive(doc, "vector_elements_per_cycle", where),
        fast_memory_bytes=_positive(doc, "fast_memory_bytes", where, integer=True),
        slow_memory_bytes_per_cycle=_positive(doc, "slow_memory_bytes_per_cycle", where),
        bytes_per_element=_positive(doc, "bytes_per_element", where, integer=True),
        op_weights={k: float(v) for k, v in weights.items()}, source=str(doc.get("source", "")))
    if not 1 <= profile.fast_memory_capacity <= 2 ** 62:
        raise ProfileError(f"{where}: 'fast_memory_bytes' must hold 1 to 2^62 elements of "
                           f"{profile.bytes_per_element} bytes (M1's range)")
    if not 1e-9 <= profile.slow_memory_bandwidth <= 1e18:
        raise ProfileError(f"{where}: 'slow_memory_bytes_per_cycle' must give 1e-9 to 1e18 elements per cycle "
                           "(M1's range)")
    return profile


def load_profile(spec) -> HardwareProfile:
    """A profile from a preset name (see presets()), a path to a JSON file, a dict, or a HardwareProfile."""
    if isinstance(spec, HardwareProfile):
        return spec
    if isinstance(spec, dict):
        return profile_from_dict(spec)
    path = str(spec)
    if not os.path.exists(path) and os.path.exists(os.path.join(PRESET_DIR, path + ".json")):
        path = os.path.join(PRESET_DIR, path + ".json")
    if not os.path.isfile(path):
        raise ProfileError(f"{spec}: neither a profile file nor a preset ({', '.join(presets())})")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProfileError(f"{path}: {e}") from e
    return profile_from_dict(doc, path)


def override_profile(profile: HardwareProfile, overrides: Dict[str, float]) -> HardwareProfile:
    """The profile with some of its numbers replaced (mlsys-import --set KEY=VALUE), checked like a file."""
    doc = profile.to_dict()
    for key, value in overrides.items():
        if key not in doc or key in ("name", "source", "native_tile", "op_weights"):
            numbers = [k for k in doc if k not in ("name", "source", "native_tile", "op_weights")]
            raise ProfileError(f"--set {key}: not a number of the profile ({', '.join(numbers)})")
        doc[key] = int(value) if key in ("fast_memory_bytes", "bytes_per_element") and value == int(value) else value
    doc["name"] = profile.name + "+" + ",".join(f"{k}={v:.15g}" for k, v in sorted(overrides.items()))
    return profile_from_dict(doc, f"{profile.name} with --set")
