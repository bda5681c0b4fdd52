"""A decoder from ONNX as an Elk model file (mlsys-import --elk, docs/t10-traffic.md#onnx), for request
traffic (`t10 serve MODEL --requests ...`), whose iterations need shapes that follow each batch.

The Elk artifact's model files (platformxlab/elk, models/original/*.json) are lists of nodes
[id, einstein_v2 expression, type, inputs] traced at a batch of 99 and a sequence of 66, the codes its parser
(and ours, sim/t10/t10_serving_io.cpp) replaces with each iteration's requests, query positions and context.
So the model is loaded with its symbolic batch and sequence axes pinned to 99 and 66, and each operator on
activations becomes one node of the type the artifact's tracer would give it:

- MatMul (Gemm) with a constant second operand: `Dot`, a weight read from HBM; with an activation second
  operand: `BatchMatMul`, a product with the KV cache (its keys or values over the context);
- elementwise ops: the artifact's elementwise types (`Add`, `Multiply`, `Erf`, ...; Where as the binary
  `Maximum`, a select);
- Softmax: `SoftmaxBasic`; LayerNormalization and ReduceMean: `Sum` (both row-wise);
- views (Reshape, Transpose, Split, Slice, Concat, ...), shape arithmetic, casts and the embedding Gather:
  no node, as the artifact's parser drops them (and as `mlsys-import --t10` treats views).

Each converter is registered by ONNX op type in CONVERTERS; an op type outside it is refused by name.
A model constant with a dimension of 66 or a multiple of 99 would be read as the batch or the sequence, so
it is refused too.
"""

from __future__ import annotations

import json
from math import prod
from typing import Callable, Dict, List, Optional

from . import onnx_graph as og

BATCH_CODE, SEQUENCE_CODE = 99, 66

UNARY = {"Relu": "Relu", "Neg": "Negative", "Sigmoid": "Sigmoid", "Sqrt": "Sqrt", "Tanh": "Tanh", "Erf": "Erf",
         "Exp": "Tanh", "Gelu": "Erf"}
BINARY = {"Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Div": "Divide", "Pow": "Power", "Max": "Maximum",
          "Where": "Maximum"}
ROW_WISE = {"Softmax": "SoftmaxBasic", "LayerNormalization": "Sum", "ReduceMean": "Sum", "ReduceSum": "Sum"}
VIEWS = {"Reshape", "Transpose", "Split", "Slice", "Concat", "Squeeze", "Unsqueeze", "Flatten", "Identity",
         "Shape", "Constant", "ConstantOfShape", "Cast", "Range", "Expand", "Gather", "Not", "Equal", "Dropout"}


def _names(prefix: str, rank: int) -> List[str]:
    return [f"{prefix}{i}" for i in range(rank)]


def _expression(output: List[str], body: str, shapes: List[tuple]) -> str:
    inputs = " ,  ".join(f'"input{i}" : {{ "dtype" : "float32", "shape" : {list(s)}}}' for i, s in enumerate(shapes))
    return f' - einstein_v2(" output0[{", ".join(output)}] {body}; ", input_dict={{ {inputs} }})  '


def _product(graph: og.Graph, node) -> Optional[tuple]:
    a, b = graph.shapes[node.input[0]], graph.shapes[node.input[1]]
    if node.op_type == "Gemm" and (og.attribute(node, "transA", 0) or og.attribute(node, "transB", 0)):
        raise og.ImportError_(f"{og.node_label(node)}: a transposed Gemm operand (re-export without transA/transB)")
    if graph.kinds.get(node.input[1]) == "const":
        weight = tuple(d for d in b if d != 1) if len(b) > 2 else tuple(b)
        if len(weight) != 2:
            raise og.ImportError_(f"{og.node_label(node)}: a weight of shape {list(b)} (expected two dimensions)")
        rows = _names("N", len(a) - 1)
        text = _expression(rows + ["M"], f"+=! input0[{', '.join(rows + ['K'])}] * input1[K, M]", [a, weight])
        return "Dot", text
    if len(a) != len(b) or a[:-2] != b[:-2]:
        raise og.ImportError_(f"{og.node_label(node)}: a product of two activations {list(a)} and {list(b)} "
                              "whose leading dimensions differ")
    lead = _names("B", len(a) - 2)
    text = _expression(lead + ["N", "M"],
                       f"+=! input0[{', '.join(lead + ['N', 'K'])}] * input1[{', '.join(lead + ['K', 'M'])}]",
                       [a, b])
    return "BatchMatMul", text


def _operands(graph: og.Graph, node) -> List[tuple]:
    """The shapes an elementwise node reads: its activations and non-scalar constants."""
    out = []
    for name in node.input:
        if not name or name not in graph.shapes:
            continue
        shape = graph.shapes[name]
        if graph.kinds.get(name) == "act" or prod(shape or (1,)) > 1:
            out.append(tuple(shape))
    return out


def _elementwise(elk_type: str, arity: int) -> Callable:
    def convert(graph: og.Graph, node) -> tuple:
        shapes = _operands(graph, node)
        shapes.sort(key=lambda s: -prod(s or (1,)))  # the operator's shape first
        shapes = (shapes + [shapes[0]] * arity)[:arity]
        out = _names("N", len(shapes[0]))
        operator = {"Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/"}.get(elk_type, "?")
        body = (f"= input0[{', '.join(out)}] {operator} input1[{', '.join(_names('N', len(shapes[1])))}]"
                if arity == 2 else f"= input0[{', '.join(out)}].call(`{elk_type.lower()}`)")
        return elk_type, _expression(out, body, shapes)
    return convert


def _row_wise(elk_type: str) -> Callable:
    def convert(graph: og.Graph, node) -> tuple:
        shape = graph.shapes[node.input[0]]
        names = _names("N", len(shape))
        return elk_type, _expression(names[:-1], f">=! input0[{', '.join(names)}]", [shape])
    return convert


# ONNX op type -> converter(graph, node) -> (Elk type, expression).
CONVERTERS: Dict[str, Callable] = {"MatMul": _product, "Gemm": _product}
CONVERTERS.update({op: _elementwise(t, 1) for op, t in UNARY.items()})
CONVERTERS.update({op: _elementwise(t, 2) for op, t in BINARY.items()})
CONVERTERS.update({op: _row_wise(t) for op, t in ROW_WISE.items()})


def supported_ops() -> Dict[str, str]:
    """Each ONNX op type the export reads, with what it becomes."""
    out = {op: "no node (a view, shape arithmetic or the embedding gather)" for op in VIEWS}
    out.update({"MatMul": "Dot (constant operand) or BatchMatMul (KV cache)", "Gemm": "Dot"})
    out.update({**UNARY, **BINARY, **ROW_WISE})
    return out


def _check_codes(graph: og.Graph) -> None:
    # The learned parameters only: constants derived from the pinned axes (a causal mask cut to the
    # sequence) carry the codes by right.
    for name in sorted(graph.float_params):
        shape = graph.shapes.get(name, ())
        for d in shape:
            if d == SEQUENCE_CODE or (d >= BATCH_CODE and d % BATCH_CODE == 0):
                raise og.ImportError_(f"{graph.path}: constant {name} has a dimension of {d}, which an Elk model "
                                      f"file reads as the sequence ({SEQUENCE_CODE}) or a multiple of the batch "
                                      f"({BATCH_CODE})")


def export_elk(path: str, batch_dim: str = "batch", sequence_dim: str = "seq",
               dims: Optional[Dict[str, int]] = None) -> list:
    """The Elk model file's node list of the decoder at `path`, whose input has symbolic `batch_dim` and
    `sequence_dim` axes (other symbolic axes pinned by `dims`). Raises ImportError_ naming what it refuses."""
    pinned = dict(dims or {})
    for name in (batch_dim, sequence_dim):
        if name in pinned:
            raise og.ImportError_(f"--dim {name}: the batch and sequence axes are pinned to Elk's codes")
    pinned[batch_dim], pinned[sequence_dim] = BATCH_CODE, SEQUENCE_CODE
    graph = og.load(path, dims=pinned, dim_syntax="cli")
    if graph.unknown_shapes:
        raise og.ImportError_(f"{path}: shapes nothing could derive: " + "; ".join(graph.unknown_shapes))
    _check_codes(graph)
    unsupported = sorted({n.op_type for n in graph.nodes if n.op_type not in CONVERTERS and n.op_type not in VIEWS})
    if unsupported:
        raise og.ImportError_(f"{path}: op types an Elk model file has no node for: {', '.join(unsupported)} "
                              f"(supported: mlsys-import --list-elk-ops)")
    nodes, ids, attention = [], {}, 0
    for node in graph.nodes:
        if node.op_type in VIEWS or not any(graph.kinds.get(i) == "act" for i in node.input):
            continue  # a view, or arithmetic on constants only
        # A constant operand of unknown shape (a position embedding gathered by computed indices) is left out
        # of an elementwise node's operands; what the operator computes must be known.
        for name in [i for i in node.input if graph.kinds.get(i) == "act"] + list(node.output[:1]):
            if name and name not in graph.shapes:
                raise og.ImportError_(f"{og.node_label(node)}: the shape of {name} is unknown")
        elk_type, text = CONVERTERS[node.op_type](graph, node)
        attention += elk_type == "BatchMatMul"
        inputs = [[ids[i], 0] for i in node.input if i in ids]
        ids[node.output[0]] = len(nodes)
        nodes.append([len(nodes), text, elk_type, inputs])
    if attention == 0 or attention % 2:
        raise og.ImportError_(f"{path}: {attention} products of two activations; a decoder layer has two (the "
                              "scores against the keys, the weights against the values)")
    return nodes


def elk_text(nodes: list) -> str:
    return "[\n" + ",\n".join(json.dumps(n) for n in nodes) + "\n]\n"
