"""From an ONNX graph (onnx_graph.Graph) to a problem file of the contest format (docs/import.md).

One walk over the nodes in order builds a view or a base for every value computed on the device; then the
graph outputs ask for their blocks, which emits exactly the ops they need, in dependency order.
"""

from __future__ import annotations

import dataclasses
from math import gcd, prod
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import onnx_graph as og
from .channel_maps import ChannelMap
from .bases import InputBase, Lowering, MatMulBase, OpLimit, Operand, ProblemBuilder
from .gathers import GatherBase, MapLayout, PixelSelection
from .ops import BroadcastBase, ConcatBase, ConvBase, FlattenedMapBase, GroupBase, PoolBase, WindowBase
from .views import LayoutError, View, _merge, map_levels, pixel_map, split_range, unravel, window_map


def _group_kind(op_types: List[str]) -> str:
    types = set(op_types)
    if "LayerNormalization" in types or {"ReduceMean", "Sqrt"} <= types:
        return "LayerNorm"
    if "Softmax" in types or "LogSoftmax" in types or ("Exp" in types and types & og.ROW_REDUCTIONS):
        return "Softmax"
    if "Gelu" in types or "Erf" in types or {"Tanh", "Pow"} <= types:
        return "GELU" + ("+" + "+".join(sorted(types - {"Gelu", "Erf", "Tanh", "Pow", "Mul", "Div"}))
                         if types - {"Gelu", "Erf", "Tanh", "Pow", "Mul", "Div", "Add"} else "")
    return "+".join(dict.fromkeys(op_types))


def stored_view(storage, shape: List[int]) -> View:
    """A new value's view over its own storage: row-major, or by the storage's padded extents."""
    matrices = storage.batches == prod(shape[:-2]) and (shape[-2], shape[-1]) == (
        storage.real_rows or storage.rows, storage.real_cols or storage.cols)
    return View.of_storage(storage, shape) if matrices else View.row_major(storage, shape)


class GraphLowering:
    def __init__(self, graph: og.Graph, profile, passthrough: Dict[str, float], max_ops: int,
                 forced_units: Optional[Dict[str, Tuple[int, int]]] = None):
        self.g = graph
        # A passthrough op is priced like any other: by its weight, in vector operations per element.
        profile = dataclasses.replace(profile, op_weights={**profile.op_weights, **passthrough})
        self.profile = profile
        self.passthrough = passthrough
        self.builder = ProblemBuilder(max_ops, 2 ** 60)
        self.views: Dict[str, View] = {}
        self.channel_maps: Dict[str, ChannelMap] = {}  # maps whose channels are shuffled (channel_maps.py)
        self.elementwise = {n.output[0] for n in graph.nodes if graph.kinds.get(n.output[0]) == og.ACT and (
            n.op_type in og.ELEMENTWISE_OPS or n.op_type in passthrough or n.output[0] in graph.row_stats)}
        self.sink = og.fuse_elementwise(graph, self.elementwise)
        row_block, tokens = self._row_block()
        self.lw = Lowering(self.builder, profile, row_block, forced_units, tokens)
        self.levels = og.phase_levels(graph)  # space-to-depth levels by map size, for stride-2 windows
        self.windows = og.window_sizes(graph)  # window side by NHWC map size, for window partitions
        self.partition_tokens = og.partition_tokens(graph, self.windows)
        self.selections: Dict[str, PixelSelection] = {}  # rearranged pixels not yet copied (gathers.py)
        self.relayouts: Dict[Tuple[str, MapLayout], View] = {}  # maps copied into another storage order

    def _row_block(self) -> Tuple[Optional[int], Tuple[int, int]]:
        """Attention's K^T is transposed in square blocks: every token-row tensor is cut into blocks of
        gcd(sequence, head dimension) rows so that those squares exist (docs/import.md#attention). Where that
        gcd is under a quarter of the head dimension (ViT's 197 tokens and heads of 64 give 1), the sequence
        is padded to a multiple of the head dimension instead: blocks of the head dimension, and the padding's
        rows computed like the others. Returns the block and (sequence, padded sequence), or (0, 0)."""
        rb, seqs, others = 0, set(), 0
        for node in self.g.nodes:
            if node.op_type == "MatMul" and all(self.g.kinds[n] == og.ACT for n in node.input):
                a, b = self.g.shapes[node.input[0]], self.g.shapes[node.input[1]]
                rb = gcd(gcd(rb, a[-2]), gcd(a[-1], b[-1]))
                seqs.add(a[-2])
                others = gcd(others, *(d for d in (a[-1], b[-1]) if d != a[-2]))
        if len(seqs) == 1 and others and 4 * rb < others:
            seq = seqs.pop()
            padded = -(-seq // others) * others
            # a batch folded into the rows (B*seq) would be padded once, not per sequence: keep the gcd then.
            # Only the row axis can hold a folded batch: a column count that happens to be a multiple of the
            # sequence (ViT-B/32's 1,000 classes over 50 tokens) is not one.
            folded = any(len(shape) >= 2 and shape[-2] != seq and shape[-2] % seq == 0
                         for name, shape in self.g.shapes.items() if self.g.kinds.get(name) == og.ACT)
            if not folded:
                return others, (seq, padded)
        return rb or None, (0, 0)

    def fail(self, node, message: str):
        raise og.ImportError_(f"{self.g.path}: {og.node_label(node)}: {message}")

    def operand(self, name: str) -> Operand:
        if self.g.kinds[name] == og.ACT:
            return Operand(self.views[name].shape, view=self.views[name])  # a class-token block may be wider
        return Operand(self.g.shapes[name], data=name)

    def lower_concat(self, node) -> None:
        """Concat along the feature axis (the last, or a map's channels) or the rows of a token tensor."""
        g, out = self.g, node.output[0]
        shape = list(g.shapes[out])
        axis = og.attribute(node, "axis", 0) % len(shape)
        names = [n for n in node.input if n]
        levels = None
        if len(shape) == 4 and axis != 0 and any(n in self.selections for n in names) or (
                axis in (1, 2) and all(self._selection(n) is not None for n in names)):
            parts = [self._selection(n) for n in names]
            if None in parts:
                self.fail(node, f"a Concat along axis {axis} of {shape} of rearranged pixels with a tensor that "
                          "is not an NHWC map stored pixel by pixel")
            try:
                self.selections[out] = PixelSelection.concat(parts, axis)
            except LayoutError as e:
                self.fail(node, str(e))
            return
        along_rows = lambda v: bool(v.dims[axis]) and all(  # noqa: E731
            stride % v.storage.cols == 0 for _, stride in v.dims[axis])
        if len(shape) == 4 and axis != 3 and any(n in self.views and along_rows(self.views[n]) for n in names) and not all(
                g.shapes[n][axis] == shape[axis] for n in names if n in self.views):
            self.fail(node, f"a Concat along axis {axis} of {shape}, the pixels of a map stored as rows: its "
                      "blocks would take rows from two places of one tensor, a copy (by selection products) that "
                      "is lowered only for NHWC maps whose channels are storage columns (torch.roll of Swin's "
                      "shifted windows: docs/import.md#windows); permute the map to NHWC before the shift")
        if len(shape) == 4 and axis == 1:
            levels = {map_levels(self.views[n], g.shapes[n]) if n in self.views else None for n in names}
            if len(levels) != 1 or None in levels:
                try:
                    self._store_map(out, ChannelMap.concat([self._channel_map(node, n) for n in names], 1))
                except LayoutError as e:
                    self.fail(node, str(e))
                return
            levels = levels.pop()
            matrix = lambda n: (self.views[n].storage.rows, g.shapes[n][1])  # noqa: E731
            along, rows, cols = "cols", prod(shape) // shape[1], shape[1]
        elif axis == len(shape) - 1 or (axis == len(shape) - 2 and all(d == 1 for d in shape[:axis])):
            matrix = lambda n: (prod(g.shapes[n][:-1]), g.shapes[n][-1])  # noqa: E731
            along, rows, cols = ("cols" if axis == len(shape) - 1 else "rows"), prod(shape[:-1]), shape[-1]
        else:
            self.fail(node, f"a Concat along axis {axis} of {shape}: only features, or the rows of a token tensor")
        parts, offset = [], 0
        try:
            for n in names:
                r, c = matrix(n)
                if g.kinds[n] == og.ACT:
                    view = self.views[n]
                    part = Operand((r, c), view=View.row_major(view.storage, [r, c]) if levels is not None
                                   else view.reshape([r, c]))
                else:
                    part = Operand((r, c), data=n)
                extent = c if along == "cols" else r
                parts.append((part, offset, extent))
                offset += extent
            base = ConcatBase(self.lw, parts, along, (rows, cols), out, node.name or out)
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[out] = pixel_map(base.storage, shape, levels) if levels is not None else stored_view(
            base.storage, shape)

    def _channel_map(self, node, name: str) -> ChannelMap:
        """A computed map as a table of its channels' stored columns (channel_maps.py), or the refusal."""
        if name in self.channel_maps:
            return self.channel_maps[name]
        cm = ChannelMap.of_view(self.views[name], self.g.shapes[name]) if name in self.views else None
        if cm is None:
            self.fail(node, f"a channel concat of '{name}', which is not a computed feature map of batch 1 stored "
                      "pixel by pixel (maps concatenated along the channels are read as runs of stored columns)")
        return cm

    def _store_map(self, name: str, cm: ChannelMap) -> None:
        view = cm.as_view()
        if view is not None:
            self.views[name] = view
        else:
            self.channel_maps[name] = cm

    def _shuffled(self, name: str) -> Optional[ChannelMap]:
        """The channel table of a map a window op or convolution reads, when its channels are not one run of
        stored columns in order (those are read as they are)."""
        if name in self.channel_maps:
            return self.channel_maps[name]
        view, shape = self.views[name], self.g.shapes[name]
        if len(shape) != 4 or map_levels(view, shape) is not None:
            return None
        cm = ChannelMap.of_view(view, shape)
        return cm if cm is not None and cm.as_view() is None else None

    def lower_on_channel_map(self, node) -> None:
        """A window op over a shuffled map, once per run of stored columns (its output is a shuffled map too);
        layout ops over one are lower_view's."""
        cm = self.channel_maps[node.input[0]]
        if node.op_type not in ("Conv", "MaxPool", "AveragePool"):
            self.fail(node, f"a {node.op_type} of a map whose channels are shuffled (runs of {len(cm.sources)} "
                      "stored maps): only layout ops, concats, convolutions and window ops read such maps")
        try:
            self.lower_window_runs(node, cm)
        except LayoutError as e:
            self.fail(node, str(e))

    def lower_window_runs(self, node, cm: ChannelMap) -> None:
        """A convolution over a shuffled map sums one share of its reduction per run of stored columns; a
        depthwise convolution or a pooling keeps channels apart and runs once per run."""
        g, out = self.g, node.output[0]
        x_shape, y_shape = g.shapes[node.input[0]], g.shapes[out]
        runs = cm.runs()
        label = node.name or out
        depthwise = node.op_type == "Conv" and og.attribute(node, "group", 1) != 1
        if node.op_type == "Conv" and not depthwise:
            if g.kinds[node.input[1]] != og.CONST:
                self.fail(node, "a convolution by a computed kernel is not lowered")
            _, phases = self._window(node)
            base = ConvBase(self.lw, None, node.input[0], node.input[1], (x_shape, g.shapes[node.input[1]], y_shape),
                            phases, 0, label, x_parts=[view for view, _ in runs])
            self.views[out] = base.view
            return
        if depthwise and (og.attribute(node, "group", 1) != x_shape[1] or g.shapes[node.input[1]][0] != x_shape[1]):
            self.fail(node, "a grouped convolution over a map whose channels are shuffled (depthwise ones are "
                      "lowered)")
        (r, s), phases = self._window(node)
        kind, op_types = (("DepthwiseConv", ["Mul", "Add"] * (r * s)) if depthwise else
                          (node.op_type, ["Max"] * (r * s - 1) if node.op_type == "MaxPool" else
                           ["Add"] * (r * s - 1) + ["Mul"]))
        outputs = []
        for i, (view, channels) in enumerate(runs):
            width = len(channels)
            base = WindowBase(self.lw, view, [1, width, *x_shape[2:]], [1, width, *y_shape[2:]], phases, kind,
                              op_types, f"{label} run {i}")
            outputs.append(base.view)
        levels = map_levels(outputs[0], [1, outputs[0].shape[1], *y_shape[2:]])
        self._store_map(out, ChannelMap.of_runs(outputs, runs, y_shape, levels))

    def lower_gather(self, node) -> None:
        """One index of a computed tensor (ViT's class token, x[:, 0]) is a slice. Cut into blocks along that
        axis (token rows), it is the whole block holding the index, so the rows around it are computed with
        it rather than every producer cut to single rows; the result keeps that axis (a warning says so)."""
        g, out = self.g, node.output[0]
        if node.input[1] not in g.consts or g.consts[node.input[1]].size != 1:
            self.fail(node, "a Gather of a computed tensor by anything but one constant index")
        src = self.views[node.input[0]]
        axis = og.attribute(node, "axis", 0) % len(src.shape)
        index = int(g.consts[node.input[1]].reshape(-1)[0]) % src.shape[axis]
        unit = self.lw.unit(src, axis) if src.storage_axis(axis) == "rows" else 1
        if unit <= 1:
            view = src.slice(axis, index, index + 1)
            self.views[out] = view.reshape([d for i, d in enumerate(view.shape) if i != axis])
            return
        start = index - index % unit
        self.views[out] = src.slice(axis, start, min(start + unit, src.shape[axis]))
        self.lw.warnings.append(f"{og.node_label(node)}: index {index} is read as rows {start}:{start + unit} "
                                f"(its block), so what follows computes {unit} rows, {unit - 1} of them extra")

    def _partition_layout(self, node, x: List[int], y: List[int]) -> Optional[MapLayout]:
        """MaxViT's partitions of an NCHW map: `x.reshape(1, C, H/p, p, W/p, p).permute(0, 2, 4, 3, 5, 1)`, then
        `reshape(1, (H/p)·(W/p), p², C)`. Window by window when attention runs over a window's p² pixels, grid
        by grid when the result is swapped (`transpose(1, 2)`) so that it runs over the (H/p)·(W/p) pixels p
        apart. None for any other reshape."""
        g = self.g
        if not og.nchw_partition_side(x, y):
            return None
        permuted = [r for r in g.consumers.get(node.output[0], []) if r.op_type == "Transpose" and list(
            og.attribute(r, "perm") or []) == [0, 2, 4, 3, 5, 1]]
        merged = [r for t in permuted for r in g.consumers.get(t.output[0], []) if r.op_type == "Reshape"]
        if not permuted or not merged:
            return None
        swapped = any(r.op_type == "Transpose" and list(og.attribute(r, "perm") or []) == [0, 2, 1, 3]
                      for m in merged for r in g.consumers.get(m.output[0], []))
        return MapLayout("grid" if swapped else "windows", y[3])

    def _stored_as(self, node, name: str, view: View, layout: MapLayout) -> View:
        """An NCHW map copied (by selection products) into another storage order; once per map and order."""
        key = (name, layout)
        if key not in self.relayouts:
            selection = PixelSelection.of_view(view.transpose([0, 2, 3, 1]))
            if selection is None:
                self.fail(node, f"'{name}' is not a map whose channels are storage columns: it cannot be copied "
                          f"into {layout.kind} order")
            base = GatherBase(self.lw, selection, layout, f"{name} in {layout.kind} order",
                              f"{og.node_label(node)} input {name} copied into {layout.kind} order")
            self.relayouts[key] = base.view.transpose([0, 3, 1, 2])
        return self.relayouts[key]

    def _as_pixel_map(self, node, name: str) -> None:
        """A map stored window by window or grid by grid (MaxViT's, after its partitions) read by a convolution,
        a pooling or beside a map stored pixel by pixel: copied into the convolutions' order (space-to-depth
        phases), which then stands for the map."""
        view, shape = self.views.get(name), self.g.shapes.get(name)
        if view is None or shape is None or len(shape) != 4 or (
                view.storage.batches == 1 and not view.storage.real_rows) or map_levels(view, shape) is not None:
            return
        self.views[name] = self._stored_as(node, name, view, MapLayout("phases", self.levels.get(
            tuple(shape[2:]), 0)))

    def _slice_cuts(self, node, shape) -> List[Tuple[int, int, int, int]]:
        """A Slice's (axis, start, end, step) per axis, clamped to the shape."""
        starts = self._const_ints(node, 1, "starts") or og.attribute(node, "starts")
        ends = self._const_ints(node, 2, "ends") or og.attribute(node, "ends")
        axes = self._const_ints(node, 3, "axes") or og.attribute(node, "axes") or list(range(len(starts)))
        steps = self._const_ints(node, 4, "steps") or [1] * len(starts)
        cuts = []
        for s, e, a, st in zip(starts, ends, axes, steps):
            if st < 1:
                self.fail(node, f"a step of {st}: only forward slices are lowered")
            cuts.append((a % len(shape), *og.clamp_slice(s, e, shape[a]), st))
        return cuts

    def _selection(self, name: str) -> Optional[PixelSelection]:
        """The pixels of a value as a table (gathers.py): a rearranged one, or an NHWC map stored pixel by
        pixel; None for anything else."""
        if name in self.selections:
            return self.selections[name]
        view = self.views.get(name)
        return PixelSelection.of_view(view) if view is not None else None

    def materialize(self, node, name: str) -> None:
        """Rearranged pixels read by anything but a slice or a concat: copied into a map of their own, stored
        window by window where a window partition reads maps of that size."""
        selection = self.selections.pop(name)
        _, h, w, _ = selection.shape
        window = self.windows.get((h, w))
        try:
            base = GatherBase(self.lw, selection, MapLayout("windows", window) if window else MapLayout("rows"),
                              name, f"{og.node_label(node)} input {name} gathered")
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[name] = base.view

    def input_view(self, name: str) -> View:
        shape = list(self.g.shapes[name]) or [1]
        window = self.windows.get(tuple(shape[1:3])) if len(shape) == 4 and shape[0] == 1 else None
        if window:  # an NHWC map a window partition reads: the host lays it out window by window
            storage = self.lw.storage((shape[1] // window) * (shape[2] // window), window * window, shape[3])
            InputBase(self.lw, storage, name)
            return window_map(storage, shape, window)
        cols = shape[-1]
        storage = self.lw.storage(1, prod(shape[:-1]), cols)
        InputBase(self.lw, storage, name)
        return stored_view(storage, shape)

    # ---- layout ops -------------------------------------------------------------------------------------

    def _const_ints(self, node, index: int, what: str) -> Optional[List[int]]:
        if len(node.input) <= index or not node.input[index]:
            return None
        name = node.input[index]
        if name not in self.g.consts:
            self.fail(node, f"its {what} ('{name}') is not a constant")
        return [int(v) for v in self.g.consts[name].reshape(-1)]

    def lower_view(self, node) -> None:
        """A layout op, followed on the value's view, or on the channel table of a shuffled map (both have
        shape, reshape, transpose and slice)."""
        g, op = self.g, node.op_type
        if op == "Slice" and node.input[0] in self.selections:
            src = self.selections[node.input[0]]
            for a, s, e, st in self._slice_cuts(node, src.shape):
                src = src.slice(a, s, e, st)
            self.selections[node.output[0]] = src
            return
        src = self.channel_maps.get(node.input[0]) or self.views[node.input[0]]
        store = self._store_map if isinstance(src, ChannelMap) else self.views.__setitem__
        out_shape = list(g.shapes[node.output[0]]) if node.output[0] in g.shapes else None
        if op == "Transpose":
            perm = og.attribute(node, "perm") or list(reversed(range(len(src.shape))))
            store(node.output[0], src.transpose(list(perm)))
        elif op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
            if node.output[0] in g.real_sides:  # a map computed larger: its real pixels are flattened
                h, w = g.real_sides[node.output[0]]
                src = src.slice(2, 0, h).slice(3, 0, w)
            layout = self._partition_layout(node, list(src.shape), out_shape) if isinstance(src, View) else None
            if layout is not None:
                # MaxViT's: the map stored in the partition's order (copied there unless it is), then a view
                tokens = layout.size ** 2 if layout.kind == "windows" else src.shape[2] * src.shape[3] // (
                    layout.size ** 2)
                if not layout.holds(src.transpose([0, 2, 3, 1]), self.lw.padded(tokens)):
                    src = self._stored_as(node, node.input[0], src, layout)
                store(node.output[0], src.reshape(out_shape))
                return
            try:
                store(node.output[0], src.reshape(out_shape))
            except LayoutError as e:
                if og.nchw_partition_side(src.shape, out_shape):
                    raise LayoutError(
                        f"{e}: a window partition of an NCHW map stored in space-to-depth phases, not followed by "
                        "a partition's permute. What would work: MaxViT's form, `reshape(1, C, H/p, p, W/p, p)."
                        "permute(0, 2, 4, 3, 5, 1).reshape(1, (H/p)*(W/p), p*p, C)`, whose map is copied into "
                        "window or grid order (docs/import.md#windows)") from None
                raise
        elif op == "Pad":
            pads = self._const_ints(node, 1, "pads") or og.attribute(node, "pads") or []
            if any(pads):
                self.fail(node, f"padding {pads}: the problem format cannot place a tensor inside a larger one")
            store(node.output[0], src)
        elif op in ("Identity", "Dropout", "Cast"):
            store(node.output[0], src)
            if op == "Dropout" and len(node.output) > 1 and node.output[1] and g.consumers.get(node.output[1]):
                self.fail(node, "its mask output is used (export in eval mode)")
        elif op == "Slice":
            cuts = self._slice_cuts(node, src.shape)
            try:
                for a, s, e, st in cuts:
                    if st != 1:
                        raise LayoutError(f"a step of {st}")
                    src = src.slice(a, s, e)
                store(node.output[0], src)
            except LayoutError as e:
                # pixels no strided view holds (a roll's, every other pixel): followed as a table of them
                selection = self._selection(node.input[0])
                if selection is None:
                    raise LayoutError(f"{e}: strided slices and slices across a stride are lowered only on "
                                      "NHWC maps stored pixel by pixel (as copies)") from None
                for a, s, e, st in cuts:
                    selection = selection.slice(a, s, e, st)
                self.selections[node.output[0]] = selection
                return
        elif op == "Split":
            axis = og.attribute(node, "axis", 0) % len(src.shape)
            sizes = self._const_ints(node, 1, "split") or og.attribute(node, "split")
            if not sizes:
                sizes = [src.shape[axis] // len(node.output)] * len(node.output)
            start = 0
            for name, size in zip(node.output, sizes):
                store(name, src.slice(axis, start, start + size))
                start += size
        for name in node.output:
            value = self.channel_maps.get(name) or self.views.get(name)
            if value is not None and name in g.shapes and list(value.shape) != list(g.shapes[name]):
                self.fail(node, f"the view of '{name}' has shape {list(value.shape)}, the model says "
                          f"{list(g.shapes[name])}")

    # ---- compute ops ------------------------------------------------------------------------------------

    def lower_matmul(self, node) -> None:
        g = self.g
        a_name, b_name = node.input[0], node.input[1]
        a, b = self.operand(a_name), self.operand(b_name)
        if node.op_type == "Gemm":
            if og.attribute(node, "transA", 0):
                a = Operand(a.shape[::-1], view=a.view.transpose([1, 0]) if a.view else None, data=a.data)
            if og.attribute(node, "transB", 0):
                b = Operand(b.shape[::-1], view=b.view.transpose([1, 0]) if b.view else None, data=b.data)
        if len(a.shape) < 2 or len(b.shape) < 2:
            self.fail(node, "a MatMul of a vector: export with 2-D operands")
        if b.view is None and a.view is not None:
            # Against a weight, the reduction may run in any order: the host lays the weight's rows out in the
            # order the activation is stored (docs/import.md#ops).
            a = Operand(a.shape, view=a.view.in_storage_order(len(a.shape) - 1))
            flattened = self._flattened_map(a)
            if flattened is not None:  # one row over a map's pixel rows: copied pixel by pixel
                base = FlattenedMapBase(self.lw, *flattened, node.output[0] + "/flattened",
                                        (node.name or node.output[0]) + " flattened input")
                a = Operand(a.shape, view=View.row_major(base.storage, list(a.shape)))
        out_shape = list(g.shapes[node.output[0]])
        permuted = self._rows_permuted(a) if b.view is None and len(b.shape) == 2 else None
        if permuted is not None and len(out_shape) == len(a.shape):
            # The rows of an activation stored in another order (a feature map's pixels in space-to-depth
            # phases, read as NHWC by a LayerNorm and a Linear: ConvNeXt): against a weight every row is
            # independent, so the product runs over the storage's rows in their order, and its output keeps
            # the activation's row order (docs/import.md#ops).
            # (a map stored window by window: each window's matrix, its padding rows computed with it)
            st = a.view.storage
            try:
                base = MatMulBase(self.lw, Operand(permuted.shape, view=permuted), b, permuted.shape[:-2],
                                  node.output[0], node.name or node.output[0])
            except LayoutError as e:
                self.fail(node, str(e))
            cols = base.storage.cols
            rows = tuple(tuple((e, s_ // st.cols * cols) for e, s_ in d) for d in a.view.dims[:-1])
            self.views[node.output[0]] = View(base.storage, 0, rows + (((b.shape[-1], 1),),))
            return
        if b.view is None and len(b.shape) == 2 and len(out_shape) == len(a.shape) and self._weight_on_the_left(
                node, a, b, out_shape):
            return
        st = a.view.storage if a.view is not None else None
        if b.view is None and len(b.shape) == 2 and len(a.shape) >= 3 and st.batches > 1 and (
                a.shape[-2] in self.partition_tokens and prod(a.shape[:-2]) > 1):
            # The windows of a partition (Swin's): one product per window, stored as the windows' map is, with
            # the padding of a padded sequence kept.
            out_batch = list(a.shape[:-2])
        elif b.view is None and len(b.shape) == 2 and len(a.shape) >= 3:
            # A weight: leading dimensions collapse into rows, (batch*seq) x K @ K x N.
            if len(out_shape) == len(a.shape) - 1:  # the rows of a class-token block (lower_gather)
                out_shape = list(a.shape[:-1]) + [b.shape[-1]]
            a = Operand((prod(a.shape[:-1]), a.shape[-1]), view=a.view.reshape([prod(a.shape[:-1]), a.shape[-1]]))
            out_batch: List[int] = []
        else:
            out_batch = out_shape[:-2]
        try:
            base = MatMulBase(self.lw, a, b, out_batch, node.output[0], node.name or node.output[0])
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[node.output[0]] = stored_view(base.storage, out_shape)

    def _weight_on_the_left(self, node, a: Operand, b: Operand, out_shape: List[int]) -> bool:
        """An activation read transposed times a weight (MLP-Mixer's token mixing, LN(x)ᵀ·W1ᵀ). The format can
        transpose a computed tensor only in square blocks, one op each, so the product is computed the other way
        round: Wᵀ·LN(x), a weight the host lays out times the activation as it is stored, and the result is read
        transposed in turn (the Transpose back to tokens is then a view). Same MACs, no Transpose op. Only where
        the squares of the operand, or of the result read back, would be smaller than the native tile (196
        tokens by 512 channels: squares of 4, 18,816 Transpose ops); squares of a whole tile (256 by 512) stay
        transposes, which the search fuses well; and only where the result is read back transposed (by a
        Transpose, or by such a product again), else its reader would need the squares instead. Returns False,
        doing nothing, for any other operand."""
        try:
            a2 = a.view.reshape([prod(a.shape[:-1]), a.shape[-1]])
        except LayoutError:
            return False
        m, k = a2.shape
        n = b.shape[-1]
        if a2.orientation() != "transposed" or m == 1 or k == 1 or min(gcd(m, k), gcd(m, n)) >= min(
                self.profile.native_tile) or not self._read_back_transposed(node.output[0]):
            return False
        try:
            base = MatMulBase(self.lw, Operand((n, k), data=b.data + "ᵀ"), Operand((k, m), view=a2.transpose([1, 0])),
                              [], node.output[0], node.name or node.output[0])
            self.views[node.output[0]] = stored_view(base.storage, [n, m]).transpose([1, 0]).reshape(out_shape)
        except LayoutError as e:
            self.fail(node, str(e))
        return True

    def _read_back_transposed(self, name: str, depth: int = 0) -> bool:
        """Whether every reader of a product's result, past elementwise groups, swaps its last two axes back:
        a Transpose, or a product by a weight that is itself read back transposed."""
        g = self.g
        readers = g.consumers.get(name, [])
        if not readers or depth > 16 or name in g.graph_outputs:
            return False
        rank = len(g.shapes[name])
        for reader in readers:
            out = reader.output[0]
            if reader.op_type == "Transpose":
                perm = list(og.attribute(reader, "perm") or reversed(range(rank)))
                if perm[-2:] != [rank - 1, rank - 2]:
                    return False
            elif reader.op_type in ("MatMul", "Gemm") and reader.input[0] == name and (
                    g.kinds.get(reader.input[1]) == og.CONST):
                if not self._read_back_transposed(out, depth + 1):
                    return False
            elif out in self.elementwise and out not in g.row_stats and g.shapes.get(out) == g.shapes[name]:
                sink = self.sink.get(out, out)
                if sink != name and not self._read_back_transposed(sink, depth + 1):
                    return False
            else:
                return False
        return True

    @staticmethod
    def _flattened_map(a: Operand) -> Optional[Tuple[View, List[int]]]:
        """For a single row that reads whole rows of a storage, several of them, in stored order (a feature map
        flattened into a classifier, or the real pixels of one computed larger): that storage as its rows x
        columns matrix and the rows read, in order. Otherwise None."""
        v = a.view
        if len(a.shape) != 2 or a.shape[0] != 1 or v.dims[0] not in ((), ((1, 1),)):
            return None
        st = v.storage
        subdims = _merge(list(v.dims[-1]))
        if st.batches != 1 or st.rows < 2 or st.real_rows or st.real_cols or v.offset % st.cols or not subdims:
            return None
        extent, stride = subdims[-1]
        if stride != 1 or extent % st.cols:
            return None
        subdims[-1] = (extent // st.cols, st.cols)  # runs of whole rows
        if any(s % st.cols for _, s in subdims):
            return None
        rows = [v.offset // st.cols]
        for extent, stride in subdims:  # outer first: each outer row, then the inner ones under it
            rows = [r + i * (stride // st.cols) for r in rows for i in range(extent)]
        if len(rows) < 2 or max(rows) >= st.rows:
            return None
        return View.row_major(st, [st.rows, st.cols]), rows

    @staticmethod
    def _rows_permuted(a: Operand) -> Optional[View]:
        """For an activation whose view covers its storage's rows once each, columns in place, but not in the
        rows' stored order: the storage's rows as a matrix, in stored order. Of a storage of several matrices
        whose real rows it covers once each (a map stored window by window): those matrices, [B, rows, C].
        Otherwise None."""
        v = a.view
        if v is None or len(a.shape) < 3 or v.offset:
            return None
        st = v.storage
        real = st.real_rows or st.rows
        if st.real_cols or prod(a.shape[:-1]) != st.batches * real or a.shape[-1] != st.cols or v.dims[-1] not in (
                ((st.cols, 1),), ()):
            return None
        subdims = [sd for d in v.dims[:-1] for sd in d]
        if any(stride % st.cols for _, stride in subdims):
            return None
        if st.batches > 1 or st.real_rows:
            if st.batches == 1 and _merge(subdims) == [(real, st.cols)]:
                return None  # a padded sequence in stored order: the plain path
            rows = np.zeros(1, dtype=np.int64)
            for extent, stride in subdims:
                rows = (rows[:, None] + np.arange(extent, dtype=np.int64) * (stride // st.cols)).reshape(-1)
            expected = (np.arange(st.batches, dtype=np.int64)[:, None] * st.rows + np.arange(real)).reshape(-1)
            if not np.array_equal(np.sort(rows), expected):
                return None
            return View.of_storage(st, [st.batches, real, st.cols])
        if _merge(subdims) == [(st.rows, st.cols)]:
            return None  # in stored order already: the plain path
        # Every row once: the strides, in units of rows, are a mixed radix of the row count.
        radix = sorted(subdims, key=lambda sd: sd[1])
        step = st.cols
        for extent, stride in radix:
            if stride != step:
                return None
            step *= extent
        return View.row_major(st, [st.rows, st.cols])

    def _window(self, node):
        """The window geometry of a Conv or MaxPool over a computed map, and how it reads it (its phases)."""
        g = self.g
        x, y = g.shapes[node.input[0]], g.shapes[node.output[0]]
        if len(x) != 4:
            self.fail(node, "only 2-D windows (NCHW) are lowered")
        kernel, strides, pads, dilations = og.window_geometry(g, node)
        phases, why = og.window_phases(kernel, strides, pads, dilations, x[2:], y[2:])
        if why:
            self.fail(node, why)
        return kernel, phases

    def lower_conv(self, node) -> None:
        g = self.g
        x, w = node.input[0], node.input[1]
        if g.kinds[w] != og.CONST:
            self.fail(node, "a convolution by a computed kernel is not lowered")
        x_shape, w_shape, y_shape = g.shapes[x], g.shapes[w], g.shapes[node.output[0]]
        if len(x_shape) != 4:
            self.fail(node, "only 2-D convolutions (NCHW) are lowered")
        group = og.attribute(node, "group", 1)
        label = node.name or node.output[0]
        host = isinstance(self.lw.bases.get(self.views[x].storage.key), InputBase)
        try:
            if group != 1 and not og.is_depthwise(g, node):
                if host or x_shape[1] % group or w_shape[0] % group:
                    self.fail(node, f"grouped convolution, group={group}, on the image or not dividing its "
                              f"{x_shape[1]} input and {w_shape[0]} output channels")
                _, phases = self._window(node)
                base = ConvBase(self.lw, self.views[x], x, w, (x_shape, w_shape, y_shape), phases, 0, label, group)
            elif group != 1:
                (r, s), phases = self._window(node)
                base = WindowBase(self.lw, self.views[x], x_shape, y_shape, phases, "DepthwiseConv",
                                  ["Mul", "Add"] * (r * s), label)
            elif host:
                base = ConvBase(self.lw, None, x, w, (x_shape, w_shape, y_shape), None,
                                self.levels.get(tuple(y_shape[2:]), 0), label,
                                window=self.windows.get(tuple(y_shape[2:]), 0))
            else:
                _, phases = self._window(node)
                base = ConvBase(self.lw, self.views[x], x, w, (x_shape, w_shape, y_shape), phases, 0, label)
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[node.output[0]] = base.view

    def lower_window_pool(self, node) -> None:
        """MaxPool (R*S-1 maxima per output) and AveragePool (R*S-1 additions and a scaling) as vector ops."""
        g = self.g
        x_shape, y_shape = g.shapes[node.input[0]], g.shapes[node.output[0]]
        (r, s), phases = self._window(node)
        op_types = ["Max"] * (r * s - 1) if node.op_type == "MaxPool" else ["Add"] * (r * s - 1) + ["Mul"]
        try:
            base = WindowBase(self.lw, self.views[node.input[0]], x_shape, y_shape, phases, node.op_type, op_types,
                              node.name or node.output[0])
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[node.output[0]] = base.view

    def lower_pool(self, node, axes: List[int]) -> None:
        """A mean over axes that do not hold the features (those run along storage columns)."""
        g = self.g
        src = self.views[node.input[0]]
        rank = len(src.shape)
        feature = next((d for d in range(rank) if src.dims[d] and src.dims[d][-1][1] == 1), None)
        if feature is None or feature in axes:
            self.fail(node, "a reduction over the feature axis that is not the last axis")
        kept = [d for d in range(rank) if d not in axes and d != feature]
        perm = kept + axes + [feature]
        n_kept, n_red = prod(src.shape[d] for d in kept), prod(src.shape[d] for d in axes)
        try:
            if rank == 4 and sorted(axes) == [2, 3] and feature == 1 and src.shape[0] == 1 and (
                    map_levels(src, src.shape) is not None):
                # a whole map of one image: its pixels in whatever order they are stored (a mean ignores it)
                x3 = View.row_major(src.storage, [1, src.storage.rows, src.storage.cols])
            else:
                x3 = src.transpose(perm).reshape([n_kept, n_red, src.shape[feature]])
            base = PoolBase(self.lw, x3, [src.shape[d] for d in kept], node.name or node.output[0])
        except LayoutError as e:
            self.fail(node, str(e))
        # The storage holds (kept..., feature) row-major; the model's output keeps its own axis order.
        strides = {}
        step = 1
        for d in reversed(kept + [feature]):
            strides[d] = step
            step *= src.shape[d]
        out_shape = list(g.shapes[node.output[0]])
        keepdims = len(out_shape) == rank
        shape_full = [1 if d in axes else src.shape[d] for d in range(rank)]
        view = View.of_strides(base.storage, shape_full, [strides.get(d, 0) for d in range(rank)])
        self.views[node.output[0]] = view if keepdims else view.reshape(out_shape)

    def lower_group(self, node) -> None:
        """The elementwise ops whose values all end in this node's output, as one Pointwise op per block."""
        g, out = self.g, node.output[0]
        members, stack, seen = [], [node], {out}
        acts: List[str] = []
        data: List[str] = []
        broadcasts: Dict[str, object] = {}  # computed tensors read with broadcasting, and the member reading them
        out_shape = g.shapes[out]
        while stack:
            member = stack.pop()
            members.append(member)
            for name in member.input:
                if not name:
                    continue
                if g.kinds[name] == og.ACT:
                    inner = name in g.row_stats or (name in self.elementwise and self.sink.get(name) == out)
                    if inner:
                        if name not in seen:
                            seen.add(name)
                            stack.append(g.producer[name])
                    elif name not in acts:
                        if g.shapes[name] != out_shape:
                            broadcasts[name] = member
                        acts.append(name)
                elif g.shapes.get(name) == out_shape and name not in data:
                    data.append(name)
        members.reverse()
        if not acts:
            self.fail(node, "an elementwise op over constants only")
        op_types = [m.op_type for m in members if m.output[0] not in g.row_stats or m.op_type in og.ROW_REDUCTIONS]
        row_wise = any(m.op_type in og.ROW_WISE_OPS for m in members)
        for m in members:
            if m.op_type in ("Softmax", "LogSoftmax", "LayerNormalization"):
                axis = og.attribute(m, "axis", -1)
                if axis % len(g.shapes[m.input[0]]) != len(g.shapes[m.input[0]]) - 1:
                    self.fail(m, f"axis {axis}: only the last axis is lowered")
        passthrough = [t for t in op_types if t in self.passthrough]
        kind = "Passthrough:" + "+".join(passthrough) if passthrough else _group_kind([m.op_type for m in members])
        label = "+".join(m.name or m.output[0] for m in members) if len(members) <= 3 else (
            f"{members[0].name or members[0].output[0]} .. {node.name or out} ({len(members)} ops)")
        if any(a in self.channel_maps for a in acts):
            self._lower_group_runs(node, acts, kind, op_types, row_wise or bool(data) or bool(broadcasts), label)
            return
        if len(acts) > 1 and any(self.views[a].storage.batches > 1 or self.views[a].storage.real_rows
                                 for a in acts) and any(
                len(g.shapes[a]) == 4 and map_levels(self.views[a], g.shapes[a]) is not None for a in acts):
            for a in acts:  # beside a map stored as convolutions store them, maps stored otherwise are copied
                self._as_pixel_map(node, a)
        views = [self.views[a] for a in acts]
        whole = [v for a, v in zip(acts, views) if a not in broadcasts]
        for i, name in enumerate(acts):
            if name in broadcasts:
                views[i] = self._broadcast(broadcasts[name], name, out_shape, whole[0] if whole else None)
        try:
            base = GroupBase(self.lw, out, kind, op_types, row_wise, views, data, label)
        except LayoutError as e:
            self.fail(node, str(e))
        self.views[out] = base.view

    def _lower_group_runs(self, node, acts: List[str], kind: str, op_types: List[str], mixed: bool,
                          label: str) -> None:
        """Elementwise ops of one shuffled map (a bias, a ReLU after a depthwise convolution), once per run."""
        if len(acts) != 1 or mixed:
            self.fail(node, "elementwise ops reading a map whose channels are shuffled together with other "
                      "tensors, or row by row: only ops of that map alone (and per-channel constants) are lowered")
        cm = self.channel_maps[acts[0]]
        runs = cm.runs()
        outputs = []
        try:
            for i, (view, channels) in enumerate(runs):
                width = len(channels)
                rows = View.row_major(view.storage, [view.storage.rows, view.storage.cols]).slice(
                    1, view.offset, view.offset + width)
                base = GroupBase(self.lw, f"{node.output[0]} run {i}", kind, op_types, False, [rows], [],
                                 f"{label} run {i}")
                st = base.storage  # as wide as the run's source: the run's columns are computed
                outputs.append(pixel_map(st, [1, st.cols, *cm.shape[-2:]], cm.levels).slice(
                    1, view.offset, view.offset + width))
        except LayoutError as e:
            self.fail(node, str(e))
        self._store_map(node.output[0], ChannelMap.of_runs(outputs, runs, cm.shape, cm.levels))

    def _broadcast(self, member, name: str, out_shape, like: Optional[View]) -> View:
        """A computed row of features (squeeze-and-excite's [1, C, 1, 1], a [1, 1, D] gate) spread over the
        rows of the tensor it scales: a MatMul of a host column of ones by the row, K = 1, laid out like that
        tensor, so that the elementwise op reads operands of one shape (docs/import.md#elementwise)."""
        shape = list(self.g.shapes[name])
        shape = [1] * (len(out_shape) - len(shape)) + shape
        feature = next((d for d in range(len(out_shape)) if like is not None and like.dims[d]
                        and like.dims[d][-1][1] == 1), None)
        varying = [d for d, e in enumerate(shape) if e != 1]
        if like is None or feature is None or varying != [feature] or shape[feature] != out_shape[feature] or (
                like.storage.cols != out_shape[feature] or like.storage.batches != 1 or like.offset):
            self.fail(member, f"broadcasts the computed tensor '{name}' {list(self.g.shapes[name])} to "
                      f"{list(out_shape)}: only a row of features over the rows of a tensor is lowered (the "
                      "problem format's Pointwise ops keep shapes)")
        row = self.views[name].reshape([1, out_shape[feature]])
        try:
            base = BroadcastBase(self.lw, row, like, name)
        except LayoutError as e:
            self.fail(member, str(e))
        return base.view

    def walk(self) -> None:
        g = self.g
        for name in g.graph_inputs:
            if g.kinds[name] == og.ACT:
                self.views[name] = self.input_view(name)
        for node in g.nodes:
            out = node.output[0]
            if g.kinds.get(out) != og.ACT:
                continue
            op = node.op_type
            if op not in ("Slice", "Concat"):
                for name in dict.fromkeys(n for n in node.input if n in self.selections):
                    self.materialize(node, name)
            if op != "Concat" and op not in og.VIEW_OPS and out not in self.elementwise and any(
                    n in self.channel_maps for n in node.input):
                self.lower_on_channel_map(node)
                continue
            if op in ("Conv", "MaxPool", "AveragePool") and node.input[0] in self.views:
                self._as_pixel_map(node, node.input[0])
            if op in ("Conv", "MaxPool", "AveragePool") and self._shuffled(node.input[0]) is not None:
                try:
                    self.lower_window_runs(node, self._shuffled(node.input[0]))
                except LayoutError as e:
                    self.fail(node, str(e))
                continue
            if op == "Gather" and g.kinds[node.input[0]] == og.ACT:
                self.lower_gather(node)
            elif op == "Gather":
                self.views[out] = self.input_view(out)  # an embedding lookup: the host gathers the rows
            elif op == "Concat":
                self.lower_concat(node)
            elif op in og.VIEW_OPS:
                try:
                    self.lower_view(node)
                except LayoutError as e:
                    self.fail(node, str(e))
            elif op in ("MatMul", "Gemm"):
                self.lower_matmul(node)
            elif op == "Conv":
                self.lower_conv(node)
            elif op in ("MaxPool", "AveragePool"):
                self.lower_window_pool(node)
            elif op == "GlobalAveragePool":
                self.lower_pool(node, [2, 3])
            elif op in og.ROW_REDUCTIONS and out not in g.row_stats:
                if op != "ReduceMean":
                    self.fail(node, "only means are lowered over axes other than the last")
                self.lower_pool(node, og.reduction_axes(g, node))
            elif out in self.elementwise:
                if out not in g.row_stats and self.sink.get(out) == out:
                    self.lower_group(node)
            else:  # pragma: no cover - unsupported_ops() refused the model before
                self.fail(node, "not lowered")

    MAX_PASSES = 16

    @classmethod
    def run(cls, graph: og.Graph, profile, passthrough: Dict[str, float], max_ops: int) -> "GraphLowering":
        """Walks the graph and asks for its outputs; where consumers cut a value differently, walks again
        with that value (and so its producers and consumers) cut into the blocks common to all of them."""
        forced: Dict[str, Tuple[int, int]] = {}
        for _ in range(cls.MAX_PASSES):
            lowering = cls(graph, profile, passthrough, max_ops, forced)
            try:
                lowering.walk()
                lowering.request_outputs()
            except OpLimit:
                raise LayoutError(cls._too_many_ops(graph, profile, passthrough, max_ops, forced)) from None
            refined = {name: units for name, units in lowering.lw.refinements.items() if forced.get(name) != units}
            if not refined:
                return lowering
            forced.update(refined)
        return lowering

    PREDICTION_FACTOR = 5
    PREDICTION_SECONDS = 1.0  # the refusal comes soon after the limit is hit, not after a second long walk

    @classmethod
    def _too_many_ops(cls, graph: og.Graph, profile, passthrough: Dict[str, float], max_ops: int,
                      forced: Dict[str, Tuple[int, int]]) -> str:
        """Why the problem is too large: its op count (lowered again up to 5x the limit, for at most
        PREDICTION_SECONDS) and its blocks."""
        limit = cls.PREDICTION_FACTOR * max_ops
        lowering = cls(graph, profile, passthrough, limit, forced)
        lowering.builder.deadline = time.monotonic() + cls.PREDICTION_SECONDS
        try:
            lowering.walk()
            lowering.request_outputs()
            size = f"{len(lowering.builder.op_types):,} ops"
        except OpLimit:
            size = f"more than {max(len(lowering.builder.op_types), max_ops):,} ops"
        lw = lowering.lw
        blocks = (f"; token rows are cut into blocks of {lw.row_block}" + (
            f" (the sequence of {lw.tokens[0]} padded to {lw.tokens[1]})" if lw.tokens[0] else
            " (the gcd of the sequence and the head dimension)") if lw.row_block else "")
        emitted = [(min(r.r1 - r.r0 for r in base.memo), base.name) for base in lw.bases.values()
                   if base.computed and base.memo]
        if emitted:
            rows, name = min(emitted)
            blocks += f"; the finest blocks asked for have {rows} row{'s' if rows > 1 else ''} ({name})"
        return (f"the problem would have {size}, over --max-ops {max_ops:,}{blocks}: raise --max-ops, or import "
                "a shorter sequence or a smaller batch")

    def request_outputs(self) -> None:
        lw = self.lw
        for name in self.g.graph_outputs:
            if self.g.kinds[name] != og.ACT:
                lw.warnings.append(f"graph output '{name}' is computed by the host only; it has no op")
                continue
            if name in self.channel_maps:
                raise og.ImportError_(f"{self.g.path}: graph output '{name}' is a map whose channels are shuffled "
                                      "across stored maps: the problem's outputs are whole tensors")
            view = self.views[name]
            shape = list(view.shape)
            if len(shape) == 4 and map_levels(view, shape) is not None:
                # A feature map is stored pixel-major: the output is its (N*H*W) x C rows, as stored.
                view = View.row_major(view.storage, [view.storage.rows, view.storage.cols])
                shape = list(view.shape)
            if len(shape) < 2:
                view = view.reshape([1] * (2 - len(shape)) + shape)
                shape = list(view.shape)
            batch = shape[:-2]
            row_unit = lw.unit(view, len(shape) - 2)
            col_unit = lw.unit(view, len(shape) - 1)
            for bi in range(prod(batch)):
                bidx = unravel(bi, batch)
                for rows in split_range(shape[-2], row_unit):
                    for cols in split_range(shape[-1], col_unit):
                        lw.block_of(view, bidx, rows, cols)
