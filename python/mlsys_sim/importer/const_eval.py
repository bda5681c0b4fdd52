"""Evaluates the small integer arithmetic of exported shapes (Shape, Gather, Concat, Mul, ...), so that
Slice bounds and split sizes computed from shapes are known constants once every shape is static."""

from __future__ import annotations

from typing import Dict, Optional

MAX_ELEMENTS = 4096


def evaluate(node, values: Dict[str, object], shapes: Dict[str, tuple], attribute) -> Optional[object]:
    """The value of a node's first output from constant inputs, or None when it is not simple arithmetic."""
    import numpy as np

    op = node.op_type
    if op == "Shape":
        shape = shapes.get(node.input[0])
        if shape is None:
            return None
        start, end = attribute(node, "start", 0), attribute(node, "end", None)
        return np.array(shape[start:end], dtype=np.int64)
    if op == "Size":
        shape = shapes.get(node.input[0])
        return None if shape is None else np.array(int(np.prod(shape)), dtype=np.int64)
    ins = [values.get(n) if n else None for n in node.input]
    if any(v is None for v, n in zip(ins, node.input) if n):
        return None
    try:
        if op in ("Identity", "Cast"):
            out = ins[0] if op == "Identity" else ins[0].astype(_dtype(attribute(node, "to")))
        elif op in ("Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater"):
            a, b = ins[0], ins[1]
            out = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal, "Less": np.less,
                   "Greater": np.greater}[op](a, b) if op != "Div" else (
                a // b if np.issubdtype(a.dtype, np.integer) else a / b)
        elif op == "Gather":
            out = np.take(ins[0], ins[1], axis=attribute(node, "axis", 0))
        elif op == "Concat":
            out = np.concatenate([np.atleast_1d(v) for v in ins], axis=attribute(node, "axis", 0))
        elif op in ("Unsqueeze", "Squeeze"):
            axes = attribute(node, "axes")
            if axes is None and len(ins) > 1:
                axes = [int(a) for a in ins[1].reshape(-1)]
            out = ins[0]
            if op == "Unsqueeze":
                for a in sorted(a % (out.ndim + len(axes)) for a in axes):
                    out = np.expand_dims(out, a)
            else:
                out = np.squeeze(out, axis=tuple(axes) if axes else None)
        elif op == "Slice":
            data, starts, ends = ins[0], ins[1], ins[2]
            axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
            steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            index = [slice(None)] * data.ndim
            for s, e, a, st in zip(starts, ends, axes, steps):
                index[int(a)] = slice(int(s), int(e), int(st))
            out = data[tuple(index)]
        elif op == "Reshape":
            out = ins[0].reshape([int(d) for d in ins[1]])
        elif op == "Range":
            out = np.arange(ins[0], ins[1], ins[2])
        elif op == "Where":
            out = np.where(ins[0], ins[1], ins[2])
        else:
            return None
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    out = np.asarray(out)
    return out if out.size <= MAX_ELEMENTS else None


def _dtype(to):
    import numpy as np
    from onnx import TensorProto

    return {TensorProto.INT64: np.int64, TensorProto.INT32: np.int32, TensorProto.FLOAT: np.float32,
            TensorProto.BOOL: np.bool_, TensorProto.DOUBLE: np.float64}.get(to, np.float32)
