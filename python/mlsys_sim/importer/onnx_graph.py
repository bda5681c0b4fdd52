"""Reading an ONNX model for import: load without weights, pin symbolic dimensions, infer every shape,
classify every value, and find the groups of elementwise ops that become one Pointwise op.

Only shapes matter to a scheduler, so weights stored as external data are never read. Every failure is an
ImportError naming the file, the node or value, and what to do.
"""

from __future__ import annotations

from math import prod

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from . import const_eval

CONST, HOST, ACT = "const", "host", "act"

# Ops that move no data: the importer follows them as views (views.py).
VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Cast", "Transpose", "Slice",
            "Split", "Pad"}  # Pad: only an empty one (torch exports avg_pool2d with one)
# Elementwise ops (numpy broadcasting): one Pointwise op per group of them (see fuse_elementwise).
ELEMENTWISE_OPS = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg", "Abs", "Exp", "Log", "Erf",
                   "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Elu", "Selu", "Gelu", "HardSigmoid", "HardSwish",
                   "Softplus", "Clip", "Max", "Min", "Where", "BatchNormalization", "Softmax", "LogSoftmax",
                   "LayerNormalization", "Expand"}  # Expand: a broadcast (F.normalize's norm over its row)
# Reductions over the last axis (with keepdims): per-row statistics, folded into the op that uses them.
ROW_REDUCTIONS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceL1", "ReduceSumSquare"}
ROW_WISE_OPS = {"Softmax", "LogSoftmax", "LayerNormalization"} | ROW_REDUCTIONS
MATRIX_OPS = {"MatMul", "Gemm", "Conv", "GlobalAveragePool", "MaxPool", "AveragePool", "Concat"}
# Ops whose output is shape data, whatever their input: static once shapes are inferred.
SHAPE_OPS = {"Shape", "Size"}

MAX_FILE_BYTES = 2 ** 31  # protobuf's own limit for one message
MAX_NODES = 1_000_000


class ImportError_(ValueError):
    """A model the importer refuses, with the reason (exit code 2 in mlsys-import)."""


@dataclass
class Graph:
    path: str
    opset: int
    nodes: list  # onnx NodeProto, topologically sorted
    shapes: Dict[str, tuple]
    kinds: Dict[str, str]  # value name -> CONST | HOST | ACT
    consts: Dict[str, object]  # small constant values (numpy arrays) the lowering needs (Slice bounds ...)
    producer: Dict[str, object] = field(default_factory=dict)
    consumers: Dict[str, list] = field(default_factory=dict)
    graph_inputs: List[str] = field(default_factory=list)
    graph_outputs: List[str] = field(default_factory=list)
    float_inputs: Set[str] = field(default_factory=set)
    row_stats: Set[str] = field(default_factory=set)
    padding_refused: str = ""  # why pad_odd_maps left the odd maps alone, if it did
    # Flattens of a map computed larger (pad_odd_maps): the flatten's output -> the map's real (H, W), the
    # pixels it reads (AlexNet's classifier reads the 6x6 of a map computed 7x7).
    real_sides: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    float_params: Set[str] = field(default_factory=set)  # float initializers: the model's learned parameters
    # Values whose shapes nothing could derive, each as a sentence naming its node (listed with every other
    # blocker in one error by the lowerings, not raised at the first).
    unknown_shapes: List[str] = field(default_factory=list)


def node_label(node) -> str:
    return f"{node.op_type} node '{node.name}'" if node.name else f"{node.op_type} node writing '{node.output[0]}'"


def attribute(node, name: str, default=None):
    import onnx

    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _pin_dimensions(model, path: str, dims: Dict[str, int], dim_syntax: str = "python") -> None:
    """Pins the model inputs' symbolic dimensions; an error names what is left, with the syntax of the caller
    (dim_syntax "cli": --dim NAME=N; "python": dims={...})."""
    initializers = {t.name for t in model.graph.initializer}
    missing: List[str] = []
    params: Set[str] = set()  # symbolic names left unpinned
    used: Set[str] = set()
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            missing.append(f"{value.name} (no shape)")
            continue
        for axis, d in enumerate(tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            if d.HasField("dim_param") and d.dim_param in dims:
                used.add(d.dim_param)
                value_of = dims[d.dim_param]
                d.Clear()
                d.dim_value = value_of
            else:
                name = d.dim_param or "?"
                if d.dim_param:
                    params.add(d.dim_param)
                missing.append(f"{name} (input {value.name}, axis {axis})")
    if missing:
        params = sorted(params)
        if not params:  # no names to pin: the shapes come from ops nothing evaluates
            raise ImportError_(f"{path}: the shapes of {', '.join(missing)} are unknown even after shape "
                               "inference; they depend on ops whose values nothing here evaluates")
        hint = (" ".join(f"--dim {p}=N" for p in params) if dim_syntax == "cli"
                else "dims={" + ", ".join(f'"{p}": N' for p in params) + "}")
        raise ImportError_(f"{path}: symbolic dimensions must be pinned: {', '.join(missing)}; give {hint}")
    unknown = sorted(set(dims) - used)
    if unknown:
        what = "--dim" if dim_syntax == "cli" else "dims"
        raise ImportError_(f"{path}: {what} {', '.join(unknown)}: no input of the model has such a dimension")


def _einsum_as_matmul(model) -> None:
    """An Einsum that is a (batched) matrix product becomes the MatMul it is, so that both lowerings know it:
    `...ij,...jk->...ik`, and `...ij,...kj->...ik` (the second operand transposed first, as attention's
    q·kᵀ is often written). Batch letters must be the same leading letters on all three terms, or absent
    from the second (`bsd,de->bse`: an activation times a weight, which MatMul broadcasts); any other
    equation stays an Einsum (and is reported as unsupported, with its equation and these forms)."""
    import re

    from onnx import helper

    nodes = list(model.graph.node)
    rewritten = []
    for node in nodes:
        equation = attribute(node, "equation") if node.op_type == "Einsum" else None
        if isinstance(equation, bytes):
            equation = equation.decode()
        match = re.fullmatch(r"(\w*)(\w)(\w),(\w*)(\w)(\w)->(\w*)(\w)(\w)", (equation or "").replace(" ", ""))
        if not match or len(node.input) != 2:
            rewritten.append(node)
            continue
        b1, i, j, b2, x, y, b3, r, c = match.groups()
        if not (b1 == b3 and b2 in (b1, "") and len({i, j, *b1}) == len(b1) + 2 and r == i):
            rewritten.append(node)
            continue
        name = node.name or node.output[0]
        if x == j and c == y and y not in {i, j, *b1}:  # ...ij,...jk->...ik
            rewritten.append(helper.make_node("MatMul", list(node.input), list(node.output), name=name))
        elif y == j and c == x and x not in {i, j, *b1}:  # ...ij,...kj->...ik
            rank = len(b2) + 2
            transposed = node.output[0] + "__einsum_bt"
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            rewritten.append(helper.make_node("Transpose", [node.input[1]], [transposed], perm=perm,
                                              name=name + "/transpose"))
            rewritten.append(helper.make_node("MatMul", [node.input[0], transposed], list(node.output), name=name))
        else:
            rewritten.append(node)
    if len(rewritten) != len(nodes) or any(a is not b for a, b in zip(rewritten, nodes)):
        del model.graph.node[:]
        model.graph.node.extend(rewritten)


def _drop_weight_values(model) -> None:
    """Only shapes matter: the values of large initializers are dropped before shape inference, which
    serializes the model on every pass (a 1.6 GB GPT-2 medium took 53 s and 8 GB with them). Their dims stay;
    small ones (shape arithmetic, Slice bounds) keep their values."""
    for t in model.graph.initializer:
        if not _small(tuple(t.dims)):
            for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            if t.data_location == 1:  # EXTERNAL: its location entries name a file that is never read
                del t.external_data[:]
                t.data_location = 0


def _static_shape(value_info) -> Optional[tuple]:
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    shape = []
    for d in tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            return None
        shape.append(int(d.dim_value))
    return tuple(shape)


# Shape inference and the importer's shape arithmetic take turns until nothing changes: each turn can get one
# computed Reshape or Pad further, so a deep stack of them (Swin-S's 18 blocks of shifted windows) needs many.
SHAPE_PASSES = 64


def load(path: str, dims: Optional[Dict[str, int]] = None, max_nodes: int = MAX_NODES,
         dim_syntax: str = "python") -> Graph:
    try:
        import onnx
        from onnx import numpy_helper, shape_inference
    except ModuleNotFoundError as e:  # pragma: no cover - scripts/install-deps installs python3-onnx
        raise ImportError_(f"the ONNX importer needs Debian's python3-onnx ({e})") from e
    if not os.path.isfile(path):
        raise ImportError_(f"{path}: no such file")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise ImportError_(f"{path}: {os.path.getsize(path)} bytes, above protobuf's 2 GiB limit for one model "
                           "(store the weights as external data: only shapes are read)")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends
        raise ImportError_(f"{path}: not an ONNX model ({type(e).__name__}: {e})") from e
    if not model.opset_import and not model.graph.node:  # protobuf reads an empty file as an empty model
        raise ImportError_(f"{path}: not an ONNX model (" + ("an empty file" if os.path.getsize(path) == 0
                                                             else "no graph and no opset") + ")")
    _drop_weight_values(model)
    _einsum_as_matmul(model)
    if len(model.graph.node) > max_nodes:
        raise ImportError_(f"{path}: {len(model.graph.node)} nodes, above the limit of {max_nodes}")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 11:
        raise ImportError_(f"{path}: opset {opset}; the importer reads opsets 11 to 17 (re-export the model)")
    _pin_dimensions(model, path, dict(dims or {}), dim_syntax)
    # ONNX's inference stops at a Slice whose bounds are computed from shapes (exports with symbolic
    # dimensions); the shapes found by evaluating that arithmetic are fed back until nothing changes.
    for _ in range(SHAPE_PASSES):
        try:
            inferred = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception as e:
            raise ImportError_(f"{path}: shape inference failed: {e}") from e
        g = inferred.graph
        shapes: Dict[str, tuple] = {}
        consts: Dict[str, object] = {}
        for t in g.initializer:
            shapes[t.name] = tuple(int(d) for d in t.dims)
            if t.data_location != onnx.TensorProto.EXTERNAL and _small(shapes[t.name]):
                consts[t.name] = numpy_helper.to_array(t)
        for v in list(g.input) + list(g.value_info) + list(g.output):
            s = _static_shape(v)
            if s is not None:
                shapes.setdefault(v.name, s)
        found = _evaluate_shapes(g.node, shapes, consts)
        if not found:
            break
        known = {v.name: v for v in g.value_info}
        for name, shape in found.items():
            info = known.get(name)
            if info is None:
                info = g.value_info.add()
                info.name = name
                info.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            info.type.tensor_type.ClearField("shape")
            for d in shape:
                info.type.tensor_type.shape.dim.add().dim_value = d
        model = inferred

    initializer_names = {t.name for t in g.initializer}
    graph = Graph(path=path, opset=opset, nodes=_split_biases(g.node, shapes), shapes=shapes, kinds={},
                  consts=consts)
    graph.float_params = {t.name for t in g.initializer if t.data_type in (
        onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)}
    for v in g.input:
        if v.name in initializer_names:
            continue
        graph.graph_inputs.append(v.name)
        elem = v.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                    onnx.TensorProto.DOUBLE):
            graph.float_inputs.add(v.name)
    graph.graph_outputs = [v.name for v in g.output]
    _classify(graph, initializer_names)
    _fold_pads_into_windows(graph)
    return graph


def _evaluate_shapes(nodes, shapes: Dict[str, tuple], consts: Dict[str, object]) -> Dict[str, tuple]:
    """Shapes ONNX's inference left unknown, from evaluated shape arithmetic (const_eval)."""
    found: Dict[str, tuple] = {}
    from onnx import TensorProto, numpy_helper

    for node in nodes:
        if node.op_type == "Constant":
            value = attribute(node, "value")
            if isinstance(value, TensorProto) and _small(value.dims):
                consts[node.output[0]] = numpy_helper.to_array(value)
            continue
        if node.output and node.output[0] and node.output[0] not in consts:
            value = const_eval.evaluate(node, consts, shapes, attribute)
            if value is not None:
                consts[node.output[0]] = value
        if node.output and node.output[0] and node.output[0] not in shapes:
            shape = const_eval.shape_of(node, shapes, consts, attribute)
            if shape is not None:
                shapes[node.output[0]] = shape
                found[node.output[0]] = shape
    return found


def _split_biases(nodes, shapes: Dict[str, tuple]) -> list:
    """Gemm's C and Conv's bias become an Add after the product, so that they fuse with what follows."""
    import onnx

    out = []
    for node in nodes:
        bias_at = {"Gemm": 2, "Conv": 2}.get(node.op_type)
        if bias_at is None or len(node.input) <= bias_at or not node.input[bias_at]:
            out.append(node)
            continue
        product = onnx.NodeProto()
        product.CopyFrom(node)
        del product.input[bias_at:]
        raw = node.output[0] + "/before_bias"
        product.output[0] = raw
        if node.output[0] in shapes:
            shapes[raw] = shapes[node.output[0]]
        bias = onnx.helper.make_node("Add", [raw, node.input[bias_at]], [node.output[0]],
                                     name=(node.name or node.output[0]) + "/bias")
        out += [product, bias]
    return out


def _small(shape: Sequence[int]) -> bool:
    n = 1
    for d in shape:
        n *= d
    return n <= 4096


def _classify(graph: Graph, initializer_names: Set[str]) -> None:
    import onnx
    from onnx import numpy_helper

    kinds = graph.kinds
    tainted: Set[str] = set()
    for name in initializer_names:
        kinds[name] = CONST
    for name in graph.graph_inputs:
        kinds[name] = ACT if name in graph.float_inputs else HOST
    known = set(kinds)
    for node in graph.nodes:
        for name in node.input:
            if name and name not in known:
                raise ImportError_(f"{graph.path}: {node_label(node)} reads '{name}', which no earlier node "
                                   "writes (the graph is not topologically sorted, or has a cycle)")
        in_kinds = {kinds[n] for n in node.input if n}
        if node.op_type in SHAPE_OPS or node.op_type == "Constant":
            kind = CONST
        elif node.op_type == "Gather" and kinds[node.input[0]] == CONST and kinds[node.input[1]] != CONST:
            kind = ACT  # an embedding lookup by the model's inputs: its rows come from the host
        elif ACT in in_kinds:
            kind = ACT
        elif HOST in in_kinds:
            kind = HOST
        else:
            kind = CONST
        for name in node.output:
            if not name:
                continue
            if name in known:
                raise ImportError_(f"{graph.path}: value '{name}' is written twice ({node_label(node)})")
            kinds[name] = kind
            known.add(name)
            graph.producer[name] = node
        for name in node.input:
            if name:
                graph.consumers.setdefault(name, []).append(node)
        if node.op_type == "Constant":
            value = attribute(node, "value")
            if isinstance(value, onnx.TensorProto):
                graph.consts[node.output[0]] = numpy_helper.to_array(value)
                graph.shapes.setdefault(node.output[0], tuple(int(d) for d in value.dims))
        else:
            if node.output[0] not in graph.shapes:
                inferred = const_eval.shape_of(node, graph.shapes, graph.consts, attribute)
                if inferred is not None:
                    graph.shapes[node.output[0]] = inferred
            if kind == CONST and len(node.output) == 1:
                value = const_eval.evaluate(node, graph.consts, graph.shapes, attribute)
                if value is not None:
                    graph.consts[node.output[0]] = value
        if kind == ACT:
            inputs = [n for n in node.input if n and kinds[n] == ACT]
            if any(n in tainted for n in inputs):  # downstream of a value already reported
                tainted.update(o for o in node.output if o)
                continue
            for name in inputs + [node.output[0]]:
                if name not in graph.shapes:
                    # Every input dimension is pinned by now (_pin_dimensions): pinning is never the advice.
                    writer = graph.producer.get(name)
                    source = f"its writer, {node_label(writer)}," if writer is not None else "it"
                    graph.unknown_shapes.append(
                        f"{node_label(node)}: the shape of '{name}' is unknown: ONNX's shape inference and the "
                        f"importer's shape arithmetic could not derive {source} from the model's static input "
                        "shapes (re-export with do_constant_folding=True, or report the op)")
                    tainted.update(o for o in node.output if o)
                    break
    for name in graph.graph_outputs:
        if name not in kinds:
            raise ImportError_(f"{graph.path}: graph output '{name}' is never written")


def origin_is_graph_input(graph: Graph, value: str) -> bool:
    """Whether a value is a graph input, directly or through views (the host can lay it out as it likes)."""
    while value not in graph.graph_inputs:
        writer = graph.producer.get(value)
        if writer is None or writer.op_type not in VIEW_OPS:
            return False
        value = writer.input[0]
    return True


WINDOW_OPS = {"Conv", "MaxPool", "AveragePool"}


def window_phases(kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                  in_hw: Sequence[int], out_hw: Sequence[int]) -> Tuple[Optional[List[Tuple[int, int]]], str]:
    """How a window op (a convolution, a pooling) over a computed map reads it, or why it cannot.

    Stride 1 with 'same' padding: every kernel offset reads the whole map (None). Stride 2 halving an even map:
    the map is stored in space-to-depth phases (docs/import.md#convolutions), and kernel offset (r, s) reads
    the phase of parity ((r - pad_top) mod 2, (s - pad_left) mod 2), whose shape is the output's. In both the
    window's shift of at most a pixel or two (its halo) is below the format's resolution."""
    r, s = kernel
    (h, w), (oh, ow) = in_hw, out_hw
    if r <= 0 or s <= 0:
        return None, "a window that is not 2-D (its kernel_shape, or its kernel's, is not two positive sizes)"
    if list(dilations) == [1, 1]:
        if list(strides) == [1, 1] and (oh, ow) == (h, w):
            return None, ""
        if list(strides) == [2, 2] and h % 2 == 0 and w % 2 == 0 and (oh, ow) == (h // 2, w // 2):
            return [((dr - pads[0]) % 2, (ds - pads[1]) % 2) for dr in range(r) for ds in range(s)], ""
    return None, (f"a {r}x{s} window with strides {list(strides)} and dilations {list(dilations)} over a computed "
                  f"{h}x{w} map giving {oh}x{ow}: the problem format cannot gather its windows (stride 1 keeping "
                  "the size, and stride 2 halving an even map, are lowered)")


def window_geometry(graph: Graph, node) -> Tuple[Tuple[int, int], list, list, list]:
    """A Conv's or MaxPool's kernel, strides, pads (top, left, bottom, right) and dilations."""
    if node.op_type == "Conv":
        kernel = tuple(graph.shapes[node.input[1]][2:])
    else:
        kernel = tuple(attribute(node, "kernel_shape", [1, 1]))
    pads = list(attribute(node, "pads", [0, 0, 0, 0]) or []) + [0, 0, 0, 0]
    if len(kernel) != 2:  # a hostile or 1-D/3-D window: one that window_phases refuses
        kernel = (0, 0)
    return (kernel, list(attribute(node, "strides", [1, 1])), pads[:4], list(attribute(node, "dilations", [1, 1])))


def conv_blockers(graph: Graph) -> List[str]:
    """Convolutions and poolings the graph lowering refuses (ops.ConvBase's and WindowBase's conditions),
    each with why and what would work."""
    out = []
    for node in graph.nodes:
        if node.op_type not in WINDOW_OPS or graph.kinds.get(node.output[0]) != ACT:
            continue
        x, y = graph.shapes.get(node.input[0]), graph.shapes.get(node.output[0])
        if x is None or y is None or len(x) != 4 or (node.op_type == "Conv" and graph.shapes.get(node.input[1]) is None):
            continue
        group = attribute(node, "group", 1)
        cout = graph.shapes[node.input[1]][0] if node.op_type == "Conv" else 0
        depthwise = group == x[1] == cout
        if node.op_type == "Conv" and group != 1 and not depthwise and (
                x[1] % group or cout % group or origin_is_graph_input(graph, node.input[0])):
            out.append(f"{node_label(node)}: grouped convolution, group={group}, on the image or not dividing its "
                       f"{x[1]} input and {cout} output channels, is not lowered by the graph lowering "
                       "(mlsys-import --t10 lowers it for T10)")
        elif node.op_type != "Conv" or group != 1 or not origin_is_graph_input(graph, node.input[0]):
            _, why = window_phases(*window_geometry(graph, node), x[2:], y[2:])
            if why and graph.padding_refused and (x[2] % 2 or x[3] % 2):
                why += f" (computing the odd maps one pixel larger would, but {graph.padding_refused})"
            if why:
                out.append(f"{node_label(node)}: {why}" + ("; mlsys-import --t10 lowers any" if node.op_type == "Conv"
                                                          else ""))
    return out


def phase_levels(graph: Graph) -> Dict[Tuple[int, int], int]:
    """How many space-to-depth levels each map size is stored in: one per stride-2 window op below it."""
    halved = set()
    for node in graph.nodes:
        if node.op_type in WINDOW_OPS and graph.kinds.get(node.output[0]) == ACT and (
                node.op_type != "Conv" or not origin_is_graph_input(graph, node.input[0])):
            x = graph.shapes.get(node.input[0])
            if x is not None and len(x) == 4 and list(attribute(node, "strides", [1, 1])) == [2, 2]:
                halved.add((x[2], x[3]))
    levels: Dict[Tuple[int, int], int] = {}

    def level(hw: Tuple[int, int]) -> int:
        if hw not in levels:
            h, w = hw
            levels[hw] = 1 + level((h // 2, w // 2)) if hw in halved and h % 2 == 0 and w % 2 == 0 else 0
        return levels[hw]

    for hw in halved:
        level(hw)
    return levels


def window_sizes(graph: Graph) -> Dict[Tuple[int, int], int]:
    """The window side of each NHWC map size that a window partition reads (Swin's
    `x.view(1, H/ws, ws, W/ws, ws, C).permute(0, 1, 3, 2, 4, 5)`): such maps are stored window by window
    (docs/import.md#windows)."""
    sizes: Dict[Tuple[int, int], int] = {}
    for node in graph.nodes:
        if node.op_type != "Reshape" or graph.kinds.get(node.output[0]) != ACT:
            continue
        x, y = graph.shapes.get(node.input[0]), graph.shapes.get(node.output[0])
        if not x or not y or len(x) != 4 or len(y) != 6 or x[0] != 1:
            continue
        _, h, w, c = x
        ws = y[2]
        if list(y) != [1, h // ws, ws, w // ws, ws, c] or h % ws or w % ws or y[4] != ws:
            continue
        if any(r.op_type == "Transpose" and list(attribute(r, "perm") or []) == [0, 1, 3, 2, 4, 5]
               for r in graph.consumers.get(node.output[0], [])):
            sizes[(h, w)] = ws
    return sizes


def nchw_partition_side(x: Optional[Sequence[int]], y: Optional[Sequence[int]]) -> int:
    """p when a reshape of an NCHW map of batch 1, `x`, to `y` splits it into p x p patches
    (`[1, C, H/p, p, W/p, p]`, MaxViT's partitions), else 0."""
    if not x or not y or len(x) != 4 or len(y) != 6 or x[0] != 1 or list(y[:2]) != list(x[:2]) or y[3] != y[5]:
        return 0
    return y[3] if (y[2] * y[3], y[4] * y[5]) == (x[2], x[3]) else 0


def partition_tokens(graph: Graph, windows: Dict[Tuple[int, int], int]) -> Set[int]:
    """The token counts of window partitions: ws² for Swin's (`windows`, from window_sizes), and for a partition
    of an NCHW map (nchw_partition_side) both p² (its windows) and (H/p)·(W/p) (its grid)."""
    tokens = {ws * ws for ws in windows.values()}
    for node in graph.nodes:
        if node.op_type != "Reshape" or graph.kinds.get(node.output[0]) != ACT:
            continue
        y = graph.shapes.get(node.output[0])
        if nchw_partition_side(graph.shapes.get(node.input[0]), y):
            tokens |= {y[3] * y[5], y[2] * y[4]}
    return {t for t in tokens if t > 1}


def unsupported_nodes(graph: Graph) -> List[str]:
    """Every node computing on device values that the graph lowering has no rule for, by name."""
    supported = VIEW_OPS | ELEMENTWISE_OPS | ROW_REDUCTIONS | MATRIX_OPS | SHAPE_OPS | {"Constant"}
    out = []
    for node in graph.nodes:
        lookup = node.op_type == "Gather" and (graph.kinds.get(node.input[0]) == CONST or (
            node.input[1] in graph.consts and graph.consts[node.input[1]].size == 1))
        if graph.kinds.get(node.output[0]) == ACT and node.op_type not in supported and not lookup:
            if node.op_type == "Einsum":
                equation = attribute(node, "equation")
                equation = equation.decode() if isinstance(equation, bytes) else equation
                out.append(f"{node_label(node)}: Einsum '{equation}' is not a matrix product; the forms that "
                           "import are '...ij,...jk->...ik', '...ij,...kj->...ik' and '...ij,jk->...ik'")
            else:
                out.append(f"{node_label(node)}: {node.op_type} is not supported")
    return out


def unsupported_ops(graph: Graph) -> Counter:
    """Op types that compute on device values and that the importer cannot lower, with their counts."""
    supported = VIEW_OPS | ELEMENTWISE_OPS | ROW_REDUCTIONS | MATRIX_OPS | SHAPE_OPS | {"Constant"}
    counts: Counter = Counter()
    for node in graph.nodes:
        lookup = node.op_type == "Gather" and (graph.kinds[node.input[0]] == CONST or (
            node.input[1] in graph.consts and graph.consts[node.input[1]].size == 1))
        if graph.kinds.get(node.output[0]) == ACT and node.op_type not in supported and not lookup:
            counts[node.op_type] += 1
    return counts


def reduction_axes(graph: Graph, node) -> List[int]:
    rank = len(graph.shapes[node.input[0]])
    axes = attribute(node, "axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        if node.input[1] not in graph.consts:
            raise ImportError_(f"{graph.path}: {node_label(node)}: its axes are not a constant")
        axes = [int(a) for a in graph.consts[node.input[1]].reshape(-1)]
    if axes is None:
        axes = list(range(rank))
    return sorted(a % rank for a in axes)


def find_row_stats(graph: Graph) -> None:
    """Marks the per-row statistics: [..., 1] values from a reduction over the last axis (keepdims), and
    elementwise results of only such statistics and constants. They are folded into the op that uses them."""
    for node in graph.nodes:
        out = node.output[0]
        if graph.kinds.get(out) != ACT:
            continue
        if node.op_type in ROW_REDUCTIONS:
            rank = len(graph.shapes[node.input[0]])
            if reduction_axes(graph, node) == [rank - 1] and attribute(node, "keepdims", 1):
                graph.row_stats.add(out)
        elif node.op_type in ELEMENTWISE_OPS - ROW_WISE_OPS:
            acts = [n for n in node.input if n and graph.kinds[n] == ACT]
            if acts and all(n in graph.row_stats for n in acts):
                graph.row_stats.add(out)


def fuse_elementwise(graph: Graph, elementwise: Set[str]) -> Dict[str, str]:
    """Assigns every elementwise node (by its first output) to the node whose output its group materializes.

    A value is folded into its consumer when every use of it, directly or through per-row statistics, ends in
    the same group: LayerNorm and GELU exported as a dozen small ops become one op each, while a value read
    by two groups (the residual stream) stays a tensor.
    """
    sink: Dict[str, str] = {}
    outputs = set(graph.graph_outputs)

    def sinks_of(value: str, seen: Set[str]) -> Set[str]:
        found: Set[str] = set()
        if value in outputs:
            return {"<materialize>"}
        for consumer in graph.consumers.get(value, []):
            out = consumer.output[0]
            if out not in elementwise:
                return {"<materialize>"}
            if out in graph.row_stats:
                if out in seen:
                    continue
                seen.add(out)
                found |= sinks_of(out, seen)
            else:
                found.add(sink[out])
        return found

    for node in reversed(graph.nodes):
        out = node.output[0]
        if out not in elementwise or out in graph.row_stats:
            continue
        targets = sinks_of(out, set())
        sink[out] = next(iter(targets)) if len(targets) == 1 and "<materialize>" not in targets else out
    return sink


def is_depthwise(graph: Graph, node) -> bool:
    """A convolution with one input and one output channel per group: vector work, not a product."""
    group = attribute(node, "group", 1)
    x, w = graph.shapes.get(node.input[0], ()), graph.shapes.get(node.input[1], ())
    return group != 1 and len(x) > 1 and len(w) > 0 and group == x[1] == w[0]


def dense_macs(graph: Graph) -> int:
    """The multiply-adds of the graph's MatMul, Gemm and Conv nodes that compute on device values, from the
    inferred shapes: what the model computes in matrix products, counted without the lowering. A grouped
    convolution counts its groups' products (C_in / group per output); a depthwise one (group = C_in = C_out)
    is lowered without products and is not counted."""
    total = 0
    for node in graph.nodes:
        out = node.output[0] if node.output else ""
        if graph.kinds.get(out) != ACT or out not in graph.shapes:
            continue
        shape_out = graph.shapes[out]
        if node.op_type == "MatMul" and graph.shapes.get(node.input[0]):
            total += prod(shape_out) * graph.shapes[node.input[0]][-1]
        elif node.op_type == "Gemm" and len(graph.shapes.get(node.input[0], ())) == 2:
            a = graph.shapes[node.input[0]]
            total += prod(shape_out) * (a[0] if attribute(node, "transA", 0) else a[1])
        elif node.op_type == "Conv" and graph.shapes.get(node.input[1]) and not is_depthwise(graph, node):
            total += prod(shape_out) * prod(graph.shapes[node.input[1]][1:])
    return total



def pad_odd_maps(graph: Graph) -> Dict[int, int]:
    """Computed feature maps with an odd side that a stride-2 window halves are computed one pixel larger, so
    that their space-to-depth phases are equal (docs/import.md#convolutions): every map of that side is
    stored at the even side, and each window op gets the bottom and right padding that makes its output the
    padded side its consumers expect (an output side that must grow to half its padded input grows too). A
    stride-1 window without padding (Inception's stem), which shrinks its map, computes its input's size.
    Rewrites the graph's shapes and the window ops' pads in place; returns {side: padded side}, empty when no
    map needs it. A map side the windows cannot agree on is left as it was (conv_blockers then names it)."""
    padded: Dict[int, int] = {}

    def side(s: int) -> int:
        return padded.get(s, s)

    windows = [n for n in graph.nodes if n.op_type in WINDOW_OPS and graph.kinds.get(n.output[0]) == ACT
               and len(graph.shapes.get(n.input[0], ())) == 4 and len(graph.shapes.get(n.output[0], ())) == 4]
    for _ in range(32):  # a fixpoint: padding one side can ask the window below it for a larger output
        changed = False
        for node in windows:
            kernel, strides, pads, dilations = window_geometry(graph, node)
            if kernel == (0, 0) or list(dilations) != [1, 1] or list(strides) not in ([1, 1], [2, 2]):
                continue
            if node.op_type == "Conv" and origin_is_graph_input(graph, node.input[0]):
                continue  # the host lays the image's im2col out, for any shape
            x, y = graph.shapes[node.input[0]], graph.shapes[node.output[0]]
            if list(strides) == [1, 1]:  # a window without padding shrinks its map: computed at its input's size
                for axis in (2, 3):
                    if side(y[axis]) != side(x[axis]):
                        grown = max(side(x[axis]), side(y[axis]))
                        padded[x[axis]] = padded[y[axis]] = grown
                        changed = True
                continue
            for axis in (2, 3):  # the input even and exactly twice the output: grow whichever is short
                grown = max(side(x[axis]) + side(x[axis]) % 2, 2 * side(y[axis]))
                if grown != side(x[axis]):
                    padded[x[axis]] = grown
                    changed = True
                if side(y[axis]) != grown // 2:
                    padded[y[axis]] = grown // 2
                    changed = True
        if not changed:
            break
    padded = {s: p for s, p in padded.items() if s != p}
    if not padded:
        return padded
    # Only where every reader of a grown map takes any size: windows, elementwise ops, concats and pooling
    # over the whole map; and a flatten into a classifier (AlexNet), which reads the real pixels only.
    real_sides: Dict[str, Tuple[int, int]] = {}
    for name, shape in graph.shapes.items():
        if len(shape) != 4 or graph.kinds.get(name) != ACT or (side(shape[2]), side(shape[3])) == shape[2:]:
            continue
        for reader in graph.consumers.get(name, []):
            pads = graph.consts.get(reader.input[1]) if reader.op_type == "Pad" and len(reader.input) > 1 else None
            empty_pad = reader.op_type == "Pad" and pads is not None and not pads.any()
            flatten = reader.op_type in ("Flatten", "Reshape") and reader.input[0] == name and tuple(
                graph.shapes.get(reader.output[0], ())) == (shape[0], prod(shape[1:]))
            if flatten:
                real_sides[reader.output[0]] = (shape[2], shape[3])
            elif not empty_pad and reader.op_type not in WINDOW_OPS | ELEMENTWISE_OPS | {
                    "Concat", "GlobalAveragePool", "Identity", "Dropout", "Split"}:
                graph.padding_refused = (f"{node_label(reader)} reads the {shape[2]}x{shape[3]} map "
                                         f"'{name}' as it is, so it cannot be computed one pixel larger")
                return {}
    graph.real_sides.update(real_sides)
    for name, shape in list(graph.shapes.items()):
        if len(shape) == 4 and graph.kinds.get(name) == ACT:
            graph.shapes[name] = (shape[0], shape[1], side(shape[2]), side(shape[3]))
    for node in windows:
        _pad_to_output(graph, node)
    return padded


def _replace_attributes(node, dropped, added) -> None:
    """The node's attributes named in `dropped` removed and `added` (AttributeProtos) appended."""
    kept = [a for a in node.attribute if a.name not in dropped]
    del node.attribute[:]
    node.attribute.extend(kept + list(added))


def _pad_to_output(graph: Graph, node) -> None:
    """The window op's bottom and right pads set so that its output has the (padded) shape graph.shapes
    gives, from its (padded) input; ceil_mode is folded into them. Left alone when no pads reach it."""
    import onnx

    kernel, strides, pads, dilations = window_geometry(graph, node)
    if kernel == (0, 0):
        return
    x, y = graph.shapes[node.input[0]], graph.shapes[node.output[0]]
    new = list(pads)
    for i, axis in enumerate((2, 3)):
        span = dilations[i] * (kernel[i] - 1) + 1
        for extra in range(0, 2 * strides[i] + 2):
            end = pads[i + 2] + extra
            if (x[axis] + pads[i] + end - span) // strides[i] + 1 == y[axis]:
                new[i + 2] = end
                break
        else:
            return
    if new == list(pads) and not attribute(node, "ceil_mode", 0):
        return
    _replace_attributes(node, ("pads", "ceil_mode", "auto_pad"), [onnx.helper.make_attribute("pads", new)])


def _fold_pads_into_windows(graph: Graph) -> None:
    """A zero Pad of a map's sides read only by convolutions and average poolings (torch exports avg_pool2d
    with count_include_pad this way: Inception's) is those windows' own padding: folded into their pads (an
    AveragePool then counts the padding, count_include_pad=1), and the Pad node dropped."""
    import onnx

    for pad in [n for n in graph.nodes if n.op_type == "Pad"]:
        readers = graph.consumers.get(pad.output[0], [])
        amounts = graph.consts.get(pad.input[1]) if len(pad.input) > 1 and pad.input[1] else None
        value = graph.consts.get(pad.input[2]) if len(pad.input) > 2 and pad.input[2] else None
        mode = attribute(pad, "mode", b"constant")
        if (graph.kinds.get(pad.output[0]) != ACT or amounts is None or amounts.size != 8 or
                (value is not None and value.any()) or mode not in (b"constant", "constant") or
                len(pad.input) > 3 and pad.input[3] or pad.output[0] in graph.graph_outputs or not readers):
            continue
        a = [int(v) for v in amounts.reshape(-1)]
        if a[0] or a[1] or a[4] or a[5] or min(a) < 0 or any(
                r.op_type not in ("Conv", "AveragePool") or r.input[0] != pad.output[0] for r in readers):
            continue
        for reader in readers:
            pads = list(attribute(reader, "pads", [0, 0, 0, 0]) or [0, 0, 0, 0])
            pads = [pads[0] + a[2], pads[1] + a[3], pads[2] + a[6], pads[3] + a[7]]
            added = [onnx.helper.make_attribute("pads", pads)]
            if reader.op_type == "AveragePool":
                added.append(onnx.helper.make_attribute("count_include_pad", 1))
            _replace_attributes(reader, ("pads", "auto_pad", "count_include_pad"), added)
            reader.input[0] = pad.input[0]
            graph.consumers.setdefault(pad.input[0], []).append(reader)
        graph.consumers[pad.input[0]] = [c for c in graph.consumers[pad.input[0]] if c is not pad]
        graph.consumers.pop(pad.output[0], None)
        graph.producer.pop(pad.output[0], None)
        graph.nodes.remove(pad)


def clamp_slice(start: int, end: int, extent: int) -> Tuple[int, int]:
    """A Slice's [start, end) on an axis of `extent`: negative indices count from the end, then both are
    clamped to the axis (ONNX's rule for steps of 1)."""
    start = max(0, min(extent, start + extent if start < 0 else start))
    end = max(0, min(extent, end + extent if end < 0 else end))
    return start, end

