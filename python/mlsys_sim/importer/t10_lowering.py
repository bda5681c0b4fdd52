"""The T10 lowering of an ONNX model (mlsys-import --t10, docs/t10-programs.md#import): the network as a
sequence of T10 operators for `t10 compile`.

Unlike the graph lowering, nothing is cut into blocks: a batched MatMul (attention heads) stays one operator
with a batch dimension, and the compute-shift plan splits it over the cores. The operator types are those the
calibrated model prices:

- MatMul and Gemm: `matmul`; leading dimensions of an activation times a weight fold into m, leading
  dimensions shared by two activations become the batch.
- Conv: `matmul` as im2col (m = N*Ho*Wo, k = C/groups*kh*kw, n = Co/groups, batch = groups): the published
  model's own convolution predictor is a fitted regression that is not in its repository.
- Each fused group of elementwise ops (the groups of the graph lowering): `rowwise` if it normalizes rows
  (Softmax, LayerNorm, or reads a per-row statistic), `relu` for a lone Relu, else `elementwise`, reading
  its activations and non-scalar constants from outside the group.
- Gather (embedding rows, the class token), Concat, Expand and Tile: `elementwise` writing the output once,
  reading its activations.
- MaxPool, AveragePool: `elementwise` reading kh*kw operands per output; GlobalAveragePool and reductions
  that are not per-row statistics (mean pooling over tokens): `rowwise`, a row per output element, marked
  `"reduces": true` (its output is one value per row).
- Reshape, Transpose and the other views: no operator (the layout change is the next operator's warm-up).

Each operator reads its operands (`reads`) from the operator that wrote them, or from a graph input (named by
`input`), through the views between; each vector operator says what it computes (`function`: the ONNX types of
its group), for `t10 compile --functional`.

For serving with HBM (`t10 serve`, docs/t10-serving.md#onnx), each MatMul also says what its second operand is
loaded from: `"hbm": "weight"` for a constant, `"hbm": "kv_cache"` for a cache the model takes as graph inputs
(reached through views and the Concat that appends this step's new rows), with `hbm_bytes` the bytes read from
HBM (the cache's graph-input part only: the new rows are computed on chip). Such a Concat is the cache append,
written in place beside the cached rows, so it is a view here, not an operator.
"""

from __future__ import annotations

import math
from math import prod
from typing import Dict, List, Optional

from . import onnx_graph as og

POOLS = {"MaxPool", "AveragePool"}
DTYPE_BYTES = 2  # the calibrated model's FP16


def _rows_cols(shape) -> tuple:
    shape = tuple(shape) or (1,)
    return (prod(shape[:-1]) if len(shape) > 1 else 1), shape[-1]


def _matmul(graph: og.Graph, node) -> dict:
    a, b, out = (graph.shapes[node.input[0]], graph.shapes[node.input[1]], graph.shapes[node.output[0]])
    if node.op_type == "Gemm":
        trans_a = og.attribute(node, "transA", 0)
        return {"type": "matmul", "m": out[0], "k": a[0] if trans_a else a[1], "n": out[1]}
    k = a[-1] if len(a) > 1 else a[0]
    n = b[-1] if len(b) > 1 else 1
    if len(b) <= 2 or prod(b[:-2]) == 1:  # activation x weight: the leading dimensions are rows
        return {"type": "matmul", "m": max(prod(a[:-1]), 1), "k": k, "n": n}
    return {"type": "matmul", "batch": prod(out[:-2]), "m": out[-2], "k": k, "n": n}


def _cache_inputs(graph: og.Graph, value: str) -> List[str]:
    """The graph inputs a value is made of through views and Concats: the KV cache behind a product's operand.
    Parts written by other ops (this step's new rows) are computed on chip and not listed."""
    found, stack, seen = [], [value], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        writer = graph.producer.get(v)
        if v in graph.graph_inputs:
            found.append(v)
        elif writer is not None and writer.op_type in og.VIEW_OPS:
            stack.append(writer.input[0])
        elif writer is not None and writer.op_type == "Concat":
            stack.extend(i for i in writer.input if i and graph.kinds.get(i) == og.ACT)
    return found


def _is_cache_append(graph: og.Graph, node) -> bool:
    """A Concat of a cache given as a graph input with rows computed this step (the KV cache append)."""
    acts = [v for v in node.input if v and graph.kinds.get(v) == og.ACT]
    from_inputs = [og.origin_is_graph_input(graph, v) for v in acts]
    return node.op_type == "Concat" and any(from_inputs) and not all(from_inputs)


def _hbm_operand(graph: og.Graph, node, dtype_bytes: int) -> dict:
    """What a product's second operand is read from when serving: a weight (a constant), the KV cache (graph
    inputs, through views and the cache append), or nothing (an activation computed on chip)."""
    b = node.input[1]
    if graph.kinds.get(b) == og.CONST:
        return {"hbm": "weight", "hbm_bytes": prod(graph.shapes[b]) * dtype_bytes}
    cache = _cache_inputs(graph, b)
    if cache:
        return {"hbm": "kv_cache", "hbm_bytes": sum(prod(graph.shapes[v]) for v in cache) * dtype_bytes}
    return {}


def _const_ints(graph: og.Graph, node, index: int) -> Optional[List[int]]:
    if len(node.input) <= index or not node.input[index] or node.input[index] not in graph.consts:
        return None
    return [int(v) for v in graph.consts[node.input[index]].reshape(-1)]


def _view_step(graph: og.Graph, node, output: str) -> dict:
    """What a view does to the indices, for the replay of the layout change through it (t10 compile): the
    output's shape and, for a Transpose its perm, for a Slice or a Split the ranges it keeps. A view the replay
    cannot map says why ("unmapped")."""
    shape = list(graph.shapes.get(output, ()))
    src = list(graph.shapes.get(node.input[0], ()))
    step = {"op": node.op_type, "shape": shape}
    if node.op_type == "Transpose":
        step["perm"] = list(og.attribute(node, "perm") or reversed(range(len(src))))
    elif node.op_type == "Slice":
        starts, ends = _const_ints(graph, node, 1), _const_ints(graph, node, 2)
        axes = _const_ints(graph, node, 3) or list(range(len(starts or [])))
        steps = _const_ints(graph, node, 4) or [1] * len(starts or [])
        if starts is None or ends is None or any(st != 1 for st in steps):
            step["unmapped"] = "a strided or non-constant slice"
        else:
            ranges = []
            for s_, e_, a in zip(starts, ends, axes):
                a %= len(src)
                ranges.append([a, *og.clamp_slice(s_, e_, src[a])])
            step["slices"] = ranges
    elif node.op_type == "Split":
        axis = og.attribute(node, "axis", 0) % len(src)
        sizes = _const_ints(graph, node, 1) or og.attribute(node, "split") or \
            [src[axis] // len(node.output)] * len(node.output)
        start = sum(sizes[:list(node.output).index(output)])
        step["slices"] = [[axis, start, start + sizes[list(node.output).index(output)]]]
    elif node.op_type == "Pad" and any(_const_ints(graph, node, 1) or og.attribute(node, "pads") or []):
        step["unmapped"] = "padding"
    return step


def _window_read(graph: og.Graph, node, op: str, shape) -> dict:
    """A 2-D window op's read of its input as a view step: `shape(x, out, kernel)` gives the step's shape, and
    the geometry (kernel, strides, top and left pads, dilations, output map) travels with it."""
    x, out = graph.shapes[node.input[0]], graph.shapes[node.output[0]]
    kernel, strides, pads, dilations = og.window_geometry(graph, node)
    if len(x) != 4 or len(out) != 4 or kernel == (0, 0):
        return {"op": op, "shape": [], "unmapped": "not a 2-D " + ("convolution" if op == "Im2col" else "pooling")}
    return {"op": op, "shape": shape(x, out, kernel), "kernel": list(kernel), "strides": list(strides),
            "pads": list(pads[:2]), "dilations": list(dilations), "out": [out[2], out[3]]}


def _im2col_step(graph: og.Graph, node) -> dict:
    """A convolution's read of its input as the im2col matrix its MatMul multiplies: row (n, ho, wo) and column
    (c, i, j) of group b hold input[n, b*C/g + c, ho*stride - pad + i*dilation, wo*...] (0 in the padding)."""
    groups = og.attribute(node, "group", 1)
    return _window_read(graph, node, "Im2col", lambda x, out, kernel: [
        groups, out[0] * out[2] * out[3], x[1] // groups * kernel[0] * kernel[1]])


def _placed_reads(graph: og.Graph, node):
    """A Concat's or a constant-index Gather's reads as index maps: each activation with the views that place
    it in the output (a Concat's part along its axis; a Gather of one index along an axis is a one-wide slice
    and the reshape that drops the axis). None for other ops, or when the shapes are not known."""
    out = list(graph.shapes.get(node.output[0], ()))
    if node.op_type == "Concat" and out:
        axis, start, placed = og.attribute(node, "axis", 0) % len(out), 0, []
        for v in node.input:
            shape = list(graph.shapes.get(v, ()))
            if len(shape) != len(out):
                return None
            placed.append((v, [{"op": "Concat", "shape": out, "slices": [[axis, start, start + shape[axis]]]}]))
            start += shape[axis]
        return placed if start == out[axis] else None
    if node.op_type == "Gather" and len(node.input) == 2:
        data, index = list(graph.shapes.get(node.input[0], ())), graph.consts.get(node.input[1])
        if not data or index is None or getattr(index, "size", 0) != 1:
            return None
        axis = og.attribute(node, "axis", 0) % len(data)
        i = int(index.reshape(-1)[0])
        i += data[axis] if i < 0 else 0
        kept = data[:axis] + [1] + data[axis + 1:]
        return [(node.input[0], [{"op": "Slice", "shape": kept, "slices": [[axis, i, i + 1]]},
                                 {"op": "Reshape", "shape": out}])]
    return None


MAX_COMPUTE_VALUES = 1 << 20  # a constant embedded in a computation (a mask): at most this many values


def _number(v: float):
    """A value JSON can carry: non-finite ones as the strings "inf", "-inf", "nan"."""
    return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def _compute(graph: og.Graph, group: list, acts: List[str]) -> dict:
    """What a fused group computes, for `t10 compile --functional`: its nodes in order, each input a node's
    output ({"node": j}), the operator's j-th activation read ({"read": j}), a learned parameter to be drawn
    by name ({"param": name}), or a constant's values ({"value": [...]}), each with its shape; the attributes
    that are numbers, strings or lists of numbers. An input nothing here knows is {"unknown": name}."""
    import numpy as np
    from onnx import helper

    written = {n.output[0]: j for j, n in enumerate(group)}
    nodes = []
    for n in group:
        args = []
        for v in n.input:
            shape = list(graph.shapes.get(v, ())) if v else []
            if not v:
                args.append(None)
            elif v in written:
                args.append({"node": written[v]})
            elif v in acts:
                args.append({"read": acts.index(v), "shape": shape})
            elif v in graph.float_params and prod(shape) > 1:  # a scalar stays the constant it is
                args.append({"param": v, "shape": shape})
            elif v in graph.consts and np.asarray(graph.consts[v]).size <= MAX_COMPUTE_VALUES:
                value = np.asarray(graph.consts[v])
                args.append({"value": [_number(float(x)) for x in value.astype(np.float64).reshape(-1)],
                             "shape": list(value.shape)})
            else:
                args.append({"unknown": v})
        if n.name.endswith("/bias") and len(graph.shapes.get(n.input[0], ())) == 4 and args[1] and \
                len(args[1].get("shape", [])) == 1:  # a convolution's split bias: one value per channel (axis 1)
            args[1]["shape"] = args[1]["shape"] + [1, 1]
        attrs = {}
        for a in n.attribute:
            value = helper.get_attribute_value(a)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if isinstance(value, (int, float, str)) or (isinstance(value, list) and all(
                    isinstance(x, (int, float)) for x in value)):
                attrs[a.name] = value
        nodes.append({"op": n.op_type, "in": args, "attrs": attrs})
    return {"nodes": nodes, "shape": list(graph.shapes.get(group[-1].output[0], ()))}


def _window_step(graph: og.Graph, node) -> dict:
    """A pooling's read of its input as kh*kw operands, one per window position: element (s, n, c, ho, wo) is
    input[n, c, ho*stride - pad + i*dilation, wo*stride - pad + j*dilation] with s = i*kw + j (nothing in the
    padding: the pooling skips it). Its output shape is [kh*kw, N, C, Ho, Wo]."""
    return _window_read(graph, node, "Window", lambda x, out, kernel: [kernel[0] * kernel[1], *out])


def _weight(graph: og.Graph, node) -> dict:
    """A product's B operand when it is a learned parameter (`t10 compile --functional` draws it by name): its
    initializer and how B is read from it ("kn": as it is; "nk": transposed, a Gemm's transB; "conv": a
    convolution's weight, B's row (c, i, j) and column o being weight[o, c, i, j], per group)."""
    if len(node.input) < 2 or node.input[1] not in graph.float_params:
        return {}
    shape = graph.shapes.get(node.input[1], ())
    if node.op_type == "Conv":
        layout = "conv"
    elif len(shape) != 2:
        return {}
    else:
        layout = "nk" if node.op_type == "Gemm" and og.attribute(node, "transB", 0) else "kn"
    if node.op_type == "Gemm" and og.attribute(node, "transA", 0):
        return {}
    return {"weight": {"name": node.input[1], "shape": list(shape), "layout": layout}}


def _conv(graph: og.Graph, node) -> dict:
    x, w, out = (graph.shapes[node.input[0]], graph.shapes[node.input[1]], graph.shapes[node.output[0]])
    groups = og.attribute(node, "group", 1)
    op = {"type": "matmul", "m": out[0] * prod(out[2:]), "k": prod(w[1:]), "n": out[1] // groups}
    if groups > 1:
        op["batch"] = groups
    return op


def lower(graph: og.Graph, name: str) -> dict:
    """The T10 model file of a loaded graph; raises ImportError_ listing every op it cannot lower."""
    if graph.unknown_shapes:
        raise og.ImportError_(f"{graph.path}: {len(graph.unknown_shapes)} values of unknown shape:\n  " +
                              "\n  ".join(graph.unknown_shapes))
    og.find_row_stats(graph)
    elementwise = {n.output[0] for n in graph.nodes if graph.kinds.get(n.output[0]) == og.ACT
                   and (n.op_type in og.ELEMENTWISE_OPS or n.output[0] in graph.row_stats)}
    sink = og.fuse_elementwise(graph, elementwise)
    members: Dict[str, list] = {}
    for node in graph.nodes:
        out = node.output[0]
        if out in sink:
            members.setdefault(sink[out], []).append(node)
    producer_op: Dict[str, str] = {}  # value -> the operator that writes it (views pass it on)
    view_path: Dict[str, List[dict]] = {}  # value -> the views between that operator's output and it
    source: Dict[str, str] = {}  # value -> the operator's output it is a view of
    channels_last: Dict[str, bool] = {}  # an operator's output whose matrix is N*H*W x C (a convolution's)
    input_origin: Dict[str, str] = {v: v for v in graph.graph_inputs}  # value -> the graph input it views
    ops: List[dict] = []
    blockers: List[str] = []
    used_names = set()

    def add(node, op: dict, reads: List[str]) -> None:
        base = node.name or node.output[0]
        label, i = base, 1
        while label in used_names:
            i += 1
            label = f"{base}#{i}"
        used_names.add(label)
        op = {"name": label, **op}
        after = sorted({producer_op[v] for v in reads if v in producer_op})
        if after:
            op["after"] = after
        # Operand by operand (a product's A then B; a vector operator's inputs): the operator that wrote it
        # (null for a graph input) and the views it passed through on the way.
        op["reads"] = [read(v) for v in reads if graph.kinds.get(v) == og.ACT]
        ops.append(op)
        producer_op[node.output[0]] = label
        source[node.output[0]] = node.output[0]
        view_path[node.output[0]] = []

    def read(v: str, *extra: dict) -> dict:
        r = {"from": producer_op.get(v), "through": view_path.get(v, []) + list(extra)}
        # The producer's tensor before the views, where its matrix and the operand's are not the same
        # row-major reading of one tensor (views, a convolution's pixels x channels, an im2col).
        if r["from"] is not None and (r["through"] or channels_last.get(source[v])):
            r["from_shape"] = list(graph.shapes.get(source[v], ()))
            if channels_last.get(source[v]):  # its matrix is pixels x channels, not the tensor's row-major order
                r["from_order"] = "nhwc"
        elif r["from"] is None and v in input_origin:  # which graph input, and its shape before the views
            r["input"] = input_origin[v]
            r["from_shape"] = list(graph.shapes.get(input_origin[v], ()))
        return r

    for node in graph.nodes:
        out = node.output[0]
        if graph.kinds.get(out) != og.ACT:
            continue
        acts = [v for v in node.input if v and graph.kinds.get(v) == og.ACT]
        if node.op_type in og.VIEW_OPS:
            for o in node.output:
                if acts and acts[0] in producer_op:
                    producer_op[o] = producer_op[acts[0]]
                    source[o] = source[acts[0]]
                elif acts and acts[0] in input_origin:
                    input_origin[o] = input_origin[acts[0]]
                if acts and o:
                    view_path[o] = view_path.get(acts[0], []) + [_view_step(graph, node, o)]
            continue
        if out in sink:
            if sink[out] != out:  # folded into the group's last node
                continue
            group = members.get(out, [node])
            inside = {n.output[0] for n in group} | graph.row_stats
            reads = [v for n in group for v in n.input if v and v not in inside
                     and (graph.kinds.get(v) == og.ACT or not og._small(graph.shapes.get(v, ())))]
            row_wise = any(n.op_type in og.ROW_WISE_OPS for n in group) or any(
                v in graph.row_stats for n in group for v in n.input)
            kind = "rowwise" if row_wise else "relu" if [n.op_type for n in group] == ["Relu"] else "elementwise"
            m, n = _rows_cols(graph.shapes[out])
            add(node, {"type": kind, "m": m, "n": n, "inputs": max(len(set(reads)), 1),
                       "function": [n.op_type for n in group]}, list(dict.fromkeys(reads)))
            ops[-1]["compute"] = _compute(graph, group, [v for v in dict.fromkeys(reads)
                                                         if graph.kinds.get(v) == og.ACT])
        elif node.op_type in ("MatMul", "Gemm"):
            add(node, {**_matmul(graph, node), **_hbm_operand(graph, node, DTYPE_BYTES), **_weight(graph, node)}, acts)
        elif _is_cache_append(graph, node):  # written in place beside the cached rows: a view
            computed = [v for v in acts if not og.origin_is_graph_input(graph, v) and v in producer_op]
            if computed:
                producer_op[out] = producer_op[computed[0]]
                source[out] = source[computed[0]]
                view_path[out] = view_path.get(computed[0], []) + [
                    {"op": "Concat", "shape": list(graph.shapes.get(out, ())), "unmapped": "the cache append"}]
        elif node.op_type == "Conv":
            add(node, {**_conv(graph, node), **_weight(graph, node)}, acts)
            if acts:  # it reads its input as the im2col matrix
                ops[-1]["reads"] = [read(acts[0], _im2col_step(graph, node))]
            channels_last[out] = True
        elif node.op_type in ("Gather", "Concat", "Expand", "Tile"):
            # A table lookup, a selection of rows, a concatenation, a broadcast: the output written once.
            m, n = _rows_cols(graph.shapes[out])
            add(node, {"type": "elementwise", "m": m, "n": n, "inputs": max(len(acts), 1),
                       "function": [node.op_type]}, acts)
            placed = _placed_reads(graph, node)  # where each activation lands in the output, when known
            if placed is not None:
                ops[-1]["reads"] = [read(v, *steps) for v, steps in placed if graph.kinds.get(v) == og.ACT]
        elif node.op_type in POOLS:
            shape = graph.shapes[out]
            window = prod(og.attribute(node, "kernel_shape", [1]))
            add(node, {"type": "elementwise", "m": prod(shape[:-1]), "n": shape[-1], "inputs": window,
                       "function": [node.op_type]}, acts)
            if acts:  # it reads its input as one operand per window position
                ops[-1]["reads"] = [read(acts[0], _window_step(graph, node))]
        elif node.op_type in og.ROW_REDUCTIONS:  # not a per-row statistic: a reduction of its own
            inside, outside = prod(graph.shapes[node.input[0]]), max(prod(graph.shapes[out]), 1)
            add(node, {"type": "rowwise", "m": outside, "n": max(inside // outside, 1), "inputs": 1,
                       "reduces": True, "function": [node.op_type]}, acts)
        elif node.op_type == "GlobalAveragePool":
            x = graph.shapes[node.input[0]]
            add(node, {"type": "rowwise", "m": prod(x[:2]), "n": prod(x[2:]), "inputs": 1, "reduces": True,
                       "function": [node.op_type]}, acts)
        elif node.op_type in og.SHAPE_OPS or node.op_type == "Constant":
            continue
        else:
            blockers.append(f"{og.node_label(node)}: {node.op_type} has no T10 operator type")
    if blockers:
        raise og.ImportError_(f"{graph.path}: {len(blockers)} ops cannot be lowered for T10:\n  " +
                              "\n  ".join(blockers))
    if not ops:
        raise og.ImportError_(f"{graph.path}: no operator computes on device values")
    return {"t10_program": {"name": name, "dtype_bytes": DTYPE_BYTES, "ops": ops}}


def import_onnx_t10(model: str, dims: Optional[Dict[str, int]] = None, dim_syntax: str = "python") -> dict:
    """The T10 model file of an ONNX model (a dict, as `t10 compile` reads it)."""
    import os
    graph = og.load(model, dims=dims, dim_syntax=dim_syntax)
    return lower(graph, os.path.splitext(os.path.basename(model))[0])
