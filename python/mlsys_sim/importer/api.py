"""import_onnx, import_torch: a model file (or a torch.nn.Module) and a hardware profile in, a problem of the
contest format out, with a `names` section that carries the model's node and value names."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import onnx_graph as og
from .lowering import GraphLowering
from .profiles import load_profile
from .views import LayoutError

# Above every torchvision classifier (ViT-H/14 at 518x518: 426,818 ops; solved in 10 s and 1.0 GB, verified in
# 11 s and 1.9 GB) and low enough that reaching it takes under 10 s on a quiet machine (docs/import.md#reading).
DEFAULT_MAX_OPS = 450_000


@dataclass
class ImportReport:
    """What import_onnx made, for the command line's summary and for tests."""

    problem: dict
    ops: int
    tensors: int
    macs: int
    warnings: List[str] = field(default_factory=list)
    model_macs: int = 0  # the ONNX graph's own matrix-product multiply-adds (og.dense_macs)


def mac_count(problem: dict) -> int:
    """Multiply-accumulates of a problem's MatMuls: rows(LHS) * cols(LHS) * cols(RHS)."""
    total = 0
    for op, ins in zip(problem["op_types"], problem["inputs"]):
        if op == "MatMul":
            lhs, rhs = ins
            total += problem["heights"][lhs] * problem["widths"][lhs] * problem["widths"][rhs]
    return total


DEEP_CALLS = 1_000_000  # Python calls the lowering may nest (ViT-H/14's 32 layers at 1,440 tokens need more than
DEEP_STACK = 1 << 30  # the default 1,000); in a thread with a 1 GiB stack for the interpreter's own frames


def _deep(work):
    """Runs work() where a block's request may recurse through every layer's blocks: in a thread with a large
    stack and recursion limit. Returns its result or raises its exception."""
    result: dict = {}

    def run():
        try:
            result["value"] = work()
        except BaseException as e:  # handed to the caller, as raised
            result["error"] = e

    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(limit, DEEP_CALLS))
    threading.stack_size(DEEP_STACK)
    try:
        thread = threading.Thread(target=run, name="mlsys-import lowering", daemon=True)
        thread.start()
    finally:
        threading.stack_size(stack)
    thread.join()
    sys.setrecursionlimit(limit)
    if "error" in result:
        raise result["error"]
    return result["value"]


def import_onnx(model, hardware, dims: Optional[Dict[str, int]] = None,
                passthrough: Optional[Dict[str, float]] = None, max_ops: int = DEFAULT_MAX_OPS,
                report: bool = False, dim_syntax: str = "python"):
    """The problem (a dict) of an ONNX model on a hardware profile (a preset name, a path, a dict).

    dims pins symbolic dimensions ({"batch": 1, "seq": 512}); passthrough maps op types the importer does not
    know to Pointwise ops of the given weight (vector operations per element). Raises ModelImportError (a
    ValueError) naming the file, the node and the reason; with report=True returns an ImportReport.
    dim_syntax says how errors name the pins: "python" (dims={...}) or "cli" (mlsys-import's --dim).
    """
    profile = load_profile(hardware)
    path = os.fspath(model)
    graph = og.load(path, dims, dim_syntax=dim_syntax)
    passthrough = dict(passthrough or {})
    unknown_passthrough = [op for op in passthrough if op in og.ELEMENTWISE_OPS | og.MATRIX_OPS | og.VIEW_OPS]
    if unknown_passthrough:
        raise og.ImportError_(f"--passthrough {', '.join(unknown_passthrough)}: the importer lowers these itself")
    model_macs = og.dense_macs(graph)  # the model's own count, before any map is padded
    padded = og.pad_odd_maps(graph)
    # Every blocker at once: unknown shapes, ops without a rule, convolutions the format cannot express.
    blockers = list(graph.unknown_shapes)
    blockers += [b for b in og.unsupported_nodes(graph) if b.split(" node ")[0] not in passthrough]
    blockers += og.conv_blockers(graph)
    if blockers:
        counts = og.unsupported_ops(graph)
        for op in passthrough:
            counts.pop(op, None)
        listing = ", ".join(f"{op} x{count}" for op, count in sorted(counts.items()))
        unsupported = [b for b in blockers if b.endswith(" is not supported")]
        advice = ("\n(an unsupported op that keeps its input's shape can be lowered as a Pointwise op "
                  "with --passthrough OP=WEIGHT, vector operations per element)") if unsupported else ""
        plural = "" if len(blockers) == 1 else "s"
        raise og.ImportError_(f"{path}: {len(blockers)} blocker{plural}" +
                              (f" (unsupported ops: {listing})" if listing else "") +
                              ", nothing was imported:\n  " + "\n  ".join(blockers) + advice)
    for node in graph.nodes:  # a passthrough op becomes a Pointwise op: it must keep its input's shape
        if node.op_type in passthrough and graph.kinds.get(node.output[0]) == og.ACT:
            acts = [n for n in node.input if n and graph.kinds.get(n) == og.ACT]
            shape_in = graph.shapes.get(acts[0]) if acts else None
            shape_out = graph.shapes.get(node.output[0])
            if shape_in != shape_out:
                raise og.ImportError_(f"{path}: {og.node_label(node)}: --passthrough {node.op_type} needs an op "
                                      f"that keeps its input's shape, but it maps {shape_in} to {shape_out}")
    og.find_row_stats(graph)
    for name in graph.row_stats:
        for consumer in graph.consumers.get(name, []):
            if consumer.op_type not in og.ELEMENTWISE_OPS | og.ROW_REDUCTIONS:
                raise og.ImportError_(f"{path}: {og.node_label(consumer)} reads the per-row statistic '{name}'; "
                                      "only elementwise ops may")
    try:
        lowering = _deep(lambda: GraphLowering.run(graph, profile, passthrough, max_ops))
    except LayoutError as e:
        raise og.ImportError_(f"{path}: {e}") from e
    except RecursionError as e:
        raise og.ImportError_(f"{path}: a chain of blocks, each waiting for the one before, deeper than "
                              f"{DEEP_CALLS:,} calls") from e
    b = lowering.builder
    if not b.op_types:
        raise og.ImportError_(f"{path}: the model computes nothing on the device")
    warnings = list(lowering.lw.warnings)
    if passthrough:
        warnings.append("passthrough (priced by the given weight, not modelled): " +
                        ", ".join(f"{op}={w:g}" for op, w in sorted(passthrough.items())))
    macs = mac_count({"op_types": b.op_types, "inputs": b.inputs, "heights": b.heights, "widths": b.widths})
    if padded:
        sides = ", ".join(f"{s} to {p}" for s, p in sorted(padded.items(), reverse=True))
        warnings.append(f"feature maps computed larger than the model's (sides {sides}), since the format's windows "
                        f"keep a map's size or halve an even one: {macs:,} matrix multiply-adds for the model's "
                        f"{model_macs:,}")
    if macs < model_macs:  # nothing silently partial
        warnings.append(f"computes {macs:,} of the model's {model_macs:,} matrix multiply-adds "
                        f"({100 * macs / model_macs:.1f} %): only what the outputs read is computed (a "
                        "classifier on one token computes its block of rows, not the others)")
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    problem = {
        "widths": b.widths, "heights": b.heights, "inputs": b.inputs, "outputs": b.outputs,
        "base_costs": b.base_costs, "op_types": b.op_types,
        "fast_memory_capacity": profile.fast_memory_capacity,
        "slow_memory_bandwidth": profile.slow_memory_bandwidth,
        "native_granularity": list(profile.native_tile),
        "names": {
            "model": os.path.basename(path), "model_sha256": digest, "opset": graph.opset,
            "hardware": profile.name, "dims": dict(sorted((dims or {}).items())),
            "row_block": lowering.lw.row_block,
            "ops": b.op_names, "op_kinds": b.op_kinds, "row_wise_ops": b.row_wise, "tensors": b.tensor_names,
            "warnings": warnings, "model_macs": model_macs,
        },
    }
    if not report:
        return problem
    return ImportReport(problem, len(b.op_types), len(b.widths), macs, warnings, model_macs)


def import_torch(module, example_inputs, hardware, opset: int = 17, dims: Optional[Dict[str, int]] = None,
                 dynamic_axes: Optional[dict] = None, input_names: Optional[List[str]] = None,
                 onnx_path: Optional[str] = None, **kwargs):
    """Exports a torch.nn.Module with torch.onnx.export (eval mode, no gradients, constants folded) and
    imports the file. opset 17 keeps LayerNorm one op (13 decomposes it; the importer re-fuses both)."""
    import torch

    if not 13 <= opset <= 17:
        raise og.ImportError_(f"opset {opset}: Debian's torch 1.13 exports opsets 13 to 17 for these models")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    names = input_names or [f"input{i}" for i in range(len(example_inputs))]
    was_training = module.training
    module.eval()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = onnx_path or os.path.join(tmp, type(module).__name__ + ".onnx")
            # With gradients on even when the caller is under torch.no_grad(): without them
            # nn.MultiheadAttention and nn.TransformerEncoderLayer take their fused fast paths
            # (aten::_native_multi_head_attention, aten::_transformer_encoder_layer_fwd), which torch 1.13
            # cannot export.
            with torch.enable_grad():
                torch.onnx.export(module, example_inputs, path, opset_version=opset, do_constant_folding=True,
                                  input_names=names, output_names=["output"], dynamic_axes=dynamic_axes)
            return import_onnx(path, hardware, dims=dims, **kwargs)
    finally:
        module.train(was_training)
