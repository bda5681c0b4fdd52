"""Evaluates the small integer arithmetic of exported shapes (Shape, Gather, Concat, Mul, ...), so that
Slice bounds and split sizes computed from shapes are known constants once every shape is static."""

from __future__ import annotations

from typing import Dict, Optional

MAX_ELEMENTS = 4096


def evaluate(node, values: Dict[str, object], shapes: Dict[str, tuple], attribute) -> Optional[object]:
    """The value of a node's first output from constant inputs, or None when it is not simple arithmetic."""
    import numpy as np
    from onnx import numpy_helper

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
    BINARY, UNARY = _tables()
    ins = [values.get(n) if n else None for n in node.input]
    if any(v is None for v, n in zip(ins, node.input) if n):
        return None
    try:
        if op in ("Identity", "Cast"):
            out = ins[0] if op == "Identity" else ins[0].astype(_dtype(attribute(node, "to")))
        elif op in BINARY:
            a, b = ins[0], ins[1]
            if op == "Div":
                out = _integer_div(a, b) if np.issubdtype(a.dtype, np.integer) else a / b
            elif op == "Mod":  # fmod=0: the sign of the divisor (Python's %); fmod=1: C's fmod
                if np.any(b == 0):
                    return None
                out = np.fmod(a, b) if attribute(node, "fmod", 0) else np.mod(a, b)
            else:
                out = BINARY[op](a, b)
        elif op in UNARY:
            out = UNARY[op](ins[0])
        elif op in ("Max", "Min", "Sum") and all(v is not None for v in ins):
            out = ins[0]
            for v in ins[1:]:
                out = {"Max": np.maximum, "Min": np.minimum, "Sum": np.add}[op](out, v)
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
        elif op == "Transpose":
            perm = attribute(node, "perm")
            out = np.transpose(ins[0], perm) if perm is not None else ins[0].T
        elif op == "Range":
            out = np.arange(ins[0], ins[1], ins[2])
        elif op == "Where":
            out = np.where(ins[0], ins[1], ins[2])
        elif op == "ConstantOfShape":
            value = attribute(node, "value")
            fill = numpy_helper.to_array(value).reshape(-1)[0] if value is not None else np.float32(0)
            dims = [int(d) for d in ins[0].reshape(-1)]
            if int(np.prod(dims)) > MAX_ELEMENTS:
                return None
            out = np.full(dims, fill)
        elif op == "Expand":
            shape = tuple(int(d) for d in ins[1].reshape(-1))
            if int(np.prod(np.broadcast_shapes(ins[0].shape, shape))) > MAX_ELEMENTS:
                return None
            out = ins[0] * np.ones(shape, dtype=ins[0].dtype)
        else:
            return None
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    out = np.asarray(out)
    return out if out.size <= MAX_ELEMENTS else None


def _integer_div(a, b):
    """ONNX's integer Div truncates toward zero (as C does), unlike NumPy's floor division."""
    import numpy as np

    if np.any(b == 0):
        raise ZeroDivisionError
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(np.result_type(a, b))


def _tables():
    """The element-wise operators by name (NumPy is imported only when a model is read)."""
    import numpy as np

    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": None, "Mod": None, "Pow": np.power,
              "Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
              "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or}
    unary = {"Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Abs": np.abs, "Neg": np.negative,
             "Sqrt": np.sqrt, "Sign": np.sign, "Not": np.logical_not, "Reciprocal": np.reciprocal}
    return binary, unary


def _dtype(to):
    import numpy as np
    from onnx import TensorProto

    return {TensorProto.INT64: np.int64, TensorProto.INT32: np.int32, TensorProto.FLOAT: np.float32,
            TensorProto.BOOL: np.bool_, TensorProto.DOUBLE: np.float64}.get(to, np.float32)


UNARY_SAME_SHAPE = {"Identity", "Cast", "Dropout", "Relu", "Softmax", "LogSoftmax", "Sqrt", "Exp", "Erf", "Tanh",
                    "Sigmoid", "Neg", "Abs", "Reciprocal", "LayerNormalization", "Gelu", "Log", "Not", "Sign",
                    "Floor", "Ceil", "Round", "IsNaN", "IsInf"}
BROADCASTING = {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Where", "Max", "Min", "Equal", "Less", "Greater",
                "LessOrEqual", "GreaterOrEqual", "And", "Or"}


def shape_of(node, shapes: Dict[str, tuple], values: Dict[str, object], attribute) -> Optional[tuple]:
    """The first output's shape where ONNX's inference left it unknown (a Slice whose bounds are computed
    from shapes, in exports with symbolic dimensions), for the ops that commonly follow one."""
    import numpy as np

    ins = [shapes.get(n) for n in node.input if n]
    if node.op_type in UNARY_SAME_SHAPE and ins and ins[0] is not None:
        return ins[0]
    if node.op_type in BROADCASTING and ins and all(s is not None for s in ins):
        try:
            return tuple(int(d) for d in np.broadcast_shapes(*ins))
        except ValueError:
            return None
    if node.op_type == "MatMul" and len(ins) == 2 and all(s is not None and len(s) >= 2 for s in ins):
        try:
            batch = np.broadcast_shapes(ins[0][:-2], ins[1][:-2])
        except ValueError:
            return None
        return tuple(int(d) for d in batch) + (ins[0][-2], ins[1][-1])
    if node.op_type == "Expand" and len(node.input) > 1 and ins and ins[0] is not None:
        target = values.get(node.input[1])
        if target is None:
            return None
        try:
            return tuple(int(d) for d in np.broadcast_shapes(ins[0], tuple(int(d) for d in target.reshape(-1))))
        except ValueError:
            return None
    if node.op_type == "Tile" and len(node.input) > 1 and ins and ins[0] is not None:
        repeats = values.get(node.input[1])
        return None if repeats is None else tuple(int(d) * int(r) for d, r in zip(ins[0], repeats.reshape(-1)))
    if node.op_type == "Reshape" and len(node.input) > 1 and ins and ins[0] is not None:
        target = values.get(node.input[1])
        if target is None:
            return None
        dims = [int(d) for d in target.reshape(-1)]
        if not attribute(node, "allowzero", 0):  # 0 copies the input's dimension
            dims = [ins[0][i] if d == 0 and i < len(ins[0]) else d for i, d in enumerate(dims)]
        total = int(np.prod(ins[0]))
        if dims.count(-1) == 1:
            known = int(np.prod([d for d in dims if d != -1]))
            if known == 0 or total % known:
                return None
            dims[dims.index(-1)] = total // known
        return tuple(dims) if int(np.prod(dims)) == total and min(dims, default=0) >= 0 else None
    if node.op_type == "Pad" and ins and ins[0] is not None:  # pads: the begins of every axis, then the ends
        pads = values.get(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        pads = [int(p) for p in pads.reshape(-1)] if pads is not None else attribute(node, "pads")
        axes = values.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
        rank = len(ins[0])
        axes = [int(a) % rank for a in axes.reshape(-1)] if axes is not None else list(range(rank))
        if pads is None or len(pads) != 2 * len(axes):
            return None
        shape = list(ins[0])
        for i, a in enumerate(axes):
            shape[a] += pads[i] + pads[i + len(axes)]
        return tuple(shape)
    if node.op_type == "Concat" and ins and all(s is not None for s in ins):
        axis = attribute(node, "axis", 0) % len(ins[0])
        shape = list(ins[0])
        shape[axis] = sum(s[axis] for s in ins)
        return tuple(shape)
    if node.op_type == "Slice" and ins and ins[0] is not None:
        bounds = [values.get(n) if i < len(node.input) and n else None
                  for i, n in enumerate(list(node.input) + [""] * 5) if 1 <= i <= 4]
        starts, ends, axes, steps = bounds[:4]
        if starts is None or ends is None:
            return None
        shape = list(ins[0])
        axes = range(len(starts)) if axes is None else axes
        steps = [1] * len(starts) if steps is None else steps
        for s, e, a, st in zip(starts, ends, axes, steps):
            a = int(a) % len(shape)
            shape[a] = len(range(*slice(int(s), int(e), int(st)).indices(shape[a])))
        return tuple(shape)
    return None
