"""The bases of the ops that are neither a plain MatMul nor a layout: groups of elementwise ops (one
Pointwise op per block), convolutions (im2col) and pooling (a MatMul by an averaging vector)."""

from __future__ import annotations

from math import gcd
from typing import List, Optional, Sequence, Tuple

from .bases import Base, Lowering, Operand, gcd_of, region_label, sum_partials
from .views import (LayoutError, Region, View, column_range, locate, map_columns, map_levels, pixel_map,
                    split_range, window_map)


class GroupBase(Base):
    """A group of elementwise ONNX ops (a bias add and GELU, a whole decomposed LayerNorm) as one Pointwise
    op per block. A row-wise group (Softmax, LayerNorm) takes whole rows: one op per row block, reading and
    writing every column block of those rows."""

    def __init__(self, lw: Lowering, name: str, kind: str, op_types: List[str], row_wise: bool,
                 act_views: List[View], data_inputs: List[str], label: str):
        # The output is laid out like the first input read by rows; an input laid out otherwise (transposed,
        # as the token mixing of MLP-Mixer) is read through its view, in square blocks.
        v0 = act_views[0]
        if any(not self._same_layout(v, v0) for v in act_views):
            v0 = next((v for v in act_views if v.orientation() == "normal"), None)
            if v0 is None:
                raise LayoutError(f"{label}: its inputs are laid out differently and none by rows")
        st = v0.storage
        storage = lw.storage_like(st)
        self.kind, self.op_types, self.row_wise, self.label_text = kind, op_types, row_wise, label
        self.v0 = v0
        self.inputs = [(lw.bases[v.storage.key], None if self._same_layout(v, v0) else v) for v in act_views]
        self.data_inputs = data_inputs
        # Blocks every input can deliver: the finest of their units (a residual Add of a tensor that another
        # consumer cuts into columns is cut alike, rather than computing that tensor twice).
        same = [lw.bases[v.storage.key] for v in act_views if self._same_layout(v, v0)]
        col_unit = gcd_of(*(b.col_unit for b in same))
        row_unit = gcd_of(*(b.row_unit for b in same))
        if any(view is not None for _, view in self.inputs):
            square = 0
            for v in act_views:
                square = gcd(square, gcd(lw.unit(v, len(v.dims) - 2), lw.unit(v, len(v.dims) - 1)))
            row_unit = col_unit = square
        self.row_span: Optional[Tuple[int, int]] = None
        if row_wise:
            if v0.orientation() != "normal":
                raise LayoutError(f"{label}: a row-wise op over a transposed tensor")
            region, _ = v0.block((0,) * (len(v0.dims) - 2), (0, 1), (0, v0.shape[-1]))
            self.row_span = (region.c0, v0.storage.padded_end(region.c1, "cols"))
        super().__init__(lw, storage, name, row_unit, col_unit)
        self.view = View(storage, v0.offset, v0.dims)

    @staticmethod
    def _same_layout(v: View, v0: View) -> bool:
        return v.dims == v0.dims and v.offset == v0.offset and (
            v.storage.batches, v.storage.rows, v.storage.cols) == (v0.storage.batches, v0.storage.rows,
                                                                   v0.storage.cols)

    def _input_block(self, base: Base, view: Optional[View], region: Region) -> int:
        if view is None:
            return base.emit(region)
        bidx, rows, cols = locate(self.v0, region)
        return self.lw.block_of(view, bidx, rows, cols)

    def emit(self, region: Region) -> int:
        if self.row_wise and not self.col_unit and region not in self.memo:
            # Whole rows are computed together; the first reader decides how they are cut into columns.
            self.col_unit = region.c1 - region.c0
        return super().emit(region)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        if self.row_wise:
            c_lo, c_hi = self.row_span
            # rows that are a run of their storage's columns (a head's part of a normalized query, Swin V2's):
            # the run holding this block, not the first one
            shift = (region.c0 - c_lo) // (c_hi - c_lo) * (c_hi - c_lo)
            c_lo, c_hi = c_lo + shift, c_hi + shift
            unit = self.col_unit
            if (region.c0 - c_lo) % unit or (region.c1 - region.c0 != unit and region.c1 != c_hi):
                unit = region.c1 - region.c0  # a reader cutting the rows otherwise gets rows of its own
            col_blocks = [(c_lo + a, c_lo + z) for a, z in split_range(c_hi - c_lo, unit)]
        else:
            col_blocks = [(region.c0, region.c1)]
        ins: List[int] = []
        outs: List[int] = []
        regions = [Region(region.batch, region.r0, region.r1, c0, c1) for c0, c1 in col_blocks]
        for r in regions:
            ins += [self._input_block(base, view, r) for base, view in self.inputs]
            ins += [lw.data_block(name, (r.batch,), (r.r0, r.r1), (r.c0, r.c1), name) for name in self.data_inputs]
            outs.append(b.tensor(*r.shape, self.label(r)))
        suffix = region_label(Region(region.batch, region.r0, region.r1, col_blocks[0][0], col_blocks[-1][1]),
                              self.storage)
        b.op("Pointwise", self.kind, ins, outs, lw.profile.pointwise_cost(self.op_types), self.label_text + suffix,
             row_wise=self.row_wise)
        for r, t in zip(regions, outs):
            self.memo[r] = t
            self.record(r)
        return self.memo[region] if region in self.memo else outs[0]


def _map_operand(lw: Lowering, x_view: View, shape: Sequence[int], phases, label: str) -> Tuple[Operand, int]:
    """A computed feature map as a window op's operand, and the space-to-depth levels its output keeps.

    Stride 1: the map's rows themselves, in whatever pixel order they are stored (the output keeps it).
    Stride 2 (phases given): the map seen as 4 phases of a quarter of its rows each; the output is one phase's
    size and keeps the remaining levels."""
    n, c, h, w = shape
    rows = n * h * w
    st = x_view.storage
    levels, c0 = map_levels(x_view, shape), 0
    if levels is None:  # a run of a map's columns (a part of a shuffled map) reads like the whole map
        found = map_columns(x_view, shape)
        if found and column_range(found[1]):
            levels, c0 = found[0], found[1][0]
    if phases is None:
        if levels is None:  # a map reached through a layout op: read through its view, plain order out
            return Operand((rows, c), view=x_view.transpose([0, 2, 3, 1]).reshape([rows, c])), 0
        return Operand((rows, c), view=View.row_major(st, [rows, st.cols]).slice(1, c0, c0 + c)), levels
    if not levels:
        raise LayoutError(f"{label}: a stride-2 window over a {h}x{w} map that is not stored in space-to-depth "
                          "phases (it is reached through a layout op)")
    return Operand((4, rows // 4, c), view=View.row_major(st, [4, rows // 4, st.cols]).slice(2, c0, c0 + c)), \
        levels - 1


def _operand_units(lw: Lowering, x: Operand) -> Tuple[int, int]:
    """Row and column block sizes a map operand delivers."""
    dims = len(x.view.dims)
    return lw.unit(x.view, dims - 2), lw.unit(x.view, dims - 1)


class ConvBase(Base):
    """A convolution as an im2col MatMul: M = N*OH*OW rows (pixels), K = C*R*S, N = C_out columns.

    On a graph input the im2col matrix is what the host provides (one MatMul, any stride and padding). On a
    computed tensor the format has no gather, so the reduction is cut into the R*S kernel offsets, each a
    MatMul of K = C that reads the input tensor itself (implicit GEMM): every offset reads the whole map at
    stride 1, and the phase of its parity at stride 2 (og.window_phases); other strides are refused. A grouped
    convolution (ResNeXt, RegNet) does this per group: its output columns are cut at the groups, and each
    block reads only its group's input columns."""

    def __init__(self, lw: Lowering, x_view: Optional[View], x_name: str, w_name: str, shapes, phases,
                 host_levels: int, label: str, groups: int = 1, x_parts: Sequence[View] = (), window: int = 0):
        """x_parts, instead of x_view: the input's channels as runs of stored maps' columns, in the order the
        host lays out the weight's input rows (a shuffled map, ChannelMap.runs): each run is its own share of
        the reduction, summed like the kernel offsets. window: on the image, the output stored window by
        window (views.window_map; the host lays the im2col rows out in that order, padding rows included)."""
        (n, c, h, w), (cout, cin, r, s), (_, _, oh, ow) = shapes
        self.label_text, self.w_name = label, w_name
        self.offsets = r * s
        self.cin, self.cout = c, cout
        self.groups, self.cin_g, self.cout_g = groups, c // groups, cout // groups
        self.host = x_view is None and not x_parts
        self.phases = phases
        rows = n * oh * ow
        row_unit = lw.row_unit(rows)
        # (operand, first input channel, channels, reduction chunk) per part of the input
        self.parts: List[Tuple[Operand, int, int, int]] = []
        self.window = window if self.host and n == 1 and oh % max(window, 1) == 0 and ow % max(window, 1) == 0 else 0
        if self.window:
            tokens = window * window
            self.x = Operand(((oh // window) * (ow // window), tokens, c * r * s), data=f"im2col({x_name})")
            super().__init__(lw, lw.storage(self.x.shape[0], tokens, cout), label, lw.row_unit(tokens), None)
            self.view = window_map(self.storage, [n, oh, ow, cout], window).transpose([0, 3, 1, 2])
            return
        if self.host:
            self.x = Operand((n * oh * ow, c * r * s), data=f"im2col({x_name})")
            levels = host_levels  # the host lays the im2col rows out in the order the map is stored
        else:
            first, levels_seen = 0, set()
            for part in (x_parts or [x_view]):
                width = part.shape[1]
                x, levels = _map_operand(lw, part, (n, width, h, w), phases, label)
                x_rows, chunk = _operand_units(lw, x)
                self.parts.append((x, first, width, gcd(chunk, self.cin_g)))
                row_unit = gcd(row_unit, x_rows)
                levels_seen.add(levels)
                first += width
            if len(levels_seen) != 1:
                raise LayoutError(f"{label}: the parts of its input store their pixels in different orders")
        super().__init__(lw, lw.storage(1, rows, cout, padded=False), label, row_unit,
                         self.cout_g if groups > 1 else None)
        self.view = pixel_map(self.storage, [n, cout, oh, ow], levels)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        rows, cols = (region.r0, region.r1), (region.c0, region.c1)
        partials = []
        if self.host:
            k = self.x.shape[-1]
            if self.window:  # the block's real rows: the host pads the window's matrix
                lhs = self.x.block(lw, (region.batch,), (rows[0], min(rows[1], self.x.shape[1])), (0, k))
            else:
                lhs = self.x.block(lw, (), rows, (0, k))
            rhs = lw.data_block(self.w_name, (), (0, k), cols, f"{self.w_name} as [C*R*S, C_out]")
            out = b.tensor(*region.shape, self.label(region))
            b.op("MatMul", "Conv", [lhs, rhs], [out], lw.profile.matmul_cost(k), self.label(region))
            return out
        group = region.c0 // self.cout_g
        if (region.c1 - 1) // self.cout_g != group:
            raise LayoutError(f"{self.label_text}: a block across its groups of {self.cout_g} output channels")
        for offset in range(self.offsets):
            phase = () if self.phases is None else (self.phases[offset][0] * 2 + self.phases[offset][1],)
            for x, first, width, chunk in self.parts:
                # a grouped convolution has one part and reads its group's input channels
                lo, hi = (group * self.cin_g, (group + 1) * self.cin_g) if self.groups > 1 else (0, width)
                for k0, k1 in split_range(hi - lo, chunk):
                    k0, k1 = lo + k0, lo + k1
                    lhs = x.block(lw, phase, rows, (k0, k1))
                    w0, w1 = (k0 - lo, k1 - lo) if self.groups > 1 else (first + k0, first + k1)
                    rhs = lw.data_block(self.w_name, (offset,), (w0, w1), cols, f"{self.w_name} offset")
                    out = b.tensor(*region.shape, f"{self.label(region)}/offset{offset}/k{w0}:{w1}")
                    b.op("MatMul", "Conv", [lhs, rhs], [out], lw.profile.matmul_cost(k1 - k0),
                         f"{self.label(region)} kernel offset {offset}")
                    partials.append(out)
        return sum_partials(lw, partials, self.label(region), self.label(region))


class WindowBase(Base):
    """A window op of the vector unit, one Pointwise op per block: MaxPool (the maximum of R*S values per
    output) or a depthwise convolution (R*S multiply-adds per output, each channel its own kernel, folded into
    the op as a constant like a bias). At stride 1 the op reads the map's block itself; at stride 2 it reads
    the distinct phases its kernel offsets fall on (og.window_phases)."""

    def __init__(self, lw: Lowering, x_view: View, shape_in: Sequence[int], shape_out: Sequence[int], phases,
                 kind: str, op_types: List[str], label: str):
        n, c, oh, ow = shape_out
        self.kind, self.op_types, self.label_text = kind, op_types, label
        self.x, levels = _map_operand(lw, x_view, shape_in, phases, label)
        self.reads = sorted({p * 2 + q for p, q in phases}) if phases is not None else [None]
        x_rows, x_cols = _operand_units(lw, self.x)
        rows = n * oh * ow
        super().__init__(lw, lw.storage(1, rows, c, padded=False), label, gcd(lw.row_unit(rows), x_rows), x_cols)
        self.view = pixel_map(self.storage, [n, c, oh, ow], levels)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        rows, cols = (region.r0, region.r1), (region.c0, region.c1)
        ins = [self.x.block(lw, () if phase is None else (phase,), rows, cols) for phase in self.reads]
        out = b.tensor(*region.shape, self.label(region))
        b.op("Pointwise", self.kind, ins, [out], lw.profile.pointwise_cost(self.op_types),
             self.label_text + region_label(region, self.storage))
        return out


class PoolBase(Base):
    """A mean over non-feature axes (GlobalAveragePool, ReduceMean over the tokens) as a MatMul of an
    averaging row vector by the rows it reduces, one output row per kept index."""

    def __init__(self, lw: Lowering, x3: View, kept_shape: Sequence[int], label: str):
        nb, red, feat = x3.shape
        self.x3, self.label_text, self.red = x3, label, red
        self.chunk = lw.unit(x3, 1)
        # feature blocks as its input delivers them (a concat of features is cut at its parts)
        super().__init__(lw, lw.storage(1, nb, feat), label, 1 if nb > 1 else None, lw.unit(x3, 2))
        self.kept_shape = list(kept_shape)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        if region.r1 - region.r0 != 1:
            raise LayoutError(f"{self.label_text}: a block of several pooled rows")
        partials = []
        for k0, k1 in split_range(self.red, self.chunk):
            st = self.x3.storage
            if k1 == self.red and st.real_rows == self.red:  # padded tokens (Swin's windows): read with the padding
                k1 = st.rows
            lhs = lw.data_block(f"mean over {self.red}", (), (0, 1), (k0, k1), f"averaging vector of {self.red}")
            rhs = lw.block_of(self.x3, (region.r0,), (k0, min(k1, self.red)), (region.c0, region.c1))
            out = b.tensor(1, region.c1 - region.c0, f"{self.label(region)}/k{k0}:{k1}")
            b.op("MatMul", "Pool", [lhs, rhs], [out], lw.profile.matmul_cost(k1 - k0), self.label(region))
            partials.append(out)
        return sum_partials(lw, partials, self.label(region), self.label_text)


def selection_product(lw: Lowering, names: Tuple[str, str, str], window: Tuple[Tuple[int, int], Tuple[int, int]],
                      data: int, picks_rows: bool, kind: str, shape: Tuple[int, int]) -> int:
    """A copy the format can express: a 0/1 matrix the host provides (names[0], its rows and columns `window`)
    times a computed block, on the left of it when the copy picks rows, on the right when it picks columns.
    One MAC per output element per row or column picked from: a stated extra (docs/import.md#concat). Returns
    the output tensor (names[1]); the op is names[2]."""
    b = lw.builder
    (r0, r1), (c0, c1) = window
    selection = lw.data_block(names[0], (), (r0, r1), (c0, c1), names[0])
    out = b.tensor(*shape, names[1])
    b.op("MatMul", kind, [selection, data] if picks_rows else [data, selection], [out],
         lw.profile.matmul_cost(c1 - c0 if picks_rows else r1 - r0), names[2])
    return out


class ConcatBase(Base):
    """A Concat along the rows (tokens) or the columns (features) of matrix-like values.

    A block inside one part is that part's block: no op. A block across parts (ViT's class token before its
    196 patches, cut into row blocks of 64) is one selection MatMul per part it reads, a 0/1 matrix the host
    provides by the whole part (one MAC per output element per row, or column, of the part), summed: a copy
    the format can express, its cost stated in docs/import.md#concat."""

    def __init__(self, lw: Lowering, parts: List[Tuple[Operand, int, int]], axis: str, shape: Tuple[int, int],
                 name: str, label: str):
        self.parts, self.axis, self.label_text = parts, axis, label
        storage = lw.storage(1, *shape)
        row_unit, col_unit = lw.row_unit(shape[0]), None
        if axis == "cols":  # feature blocks never straddle parts, nor cut a part otherwise than it is cut
            col_unit = gcd_of(shape[1], *(b for _, off, ext in parts for b in (off, ext)),
                              *(part.unit(lw, 1) for part, _, _ in parts if part.view is not None))
        super().__init__(lw, storage, name, row_unit, col_unit)

    def _aligned(self, part: Operand, lo: int, hi: int, extent: int) -> bool:
        """Whether a part's block can be taken as it is. Along the features always (the part is then cut into
        the concat's column blocks, which divide every part boundary); along the rows only where it follows the
        part's own row blocks (a class token shifts every block by one row: cutting the patches to match would
        cut them to single rows)."""
        if part.view is None or self.axis == "cols":
            return True
        unit = part.unit(self.lw, 0 if self.axis == "rows" else 1) or extent
        return lo % unit == 0 and (hi % unit == 0 or hi == extent)

    def _emit(self, region: Region) -> int:
        lw, st = self.lw, self.storage
        rows = (region.r0, min(region.r1, st.real_rows or st.rows))
        cols = (region.c0, min(region.c1, st.real_cols or st.cols))
        lo, hi = rows if self.axis == "rows" else cols
        touching = [(i, part, off, ext) for i, (part, off, ext) in enumerate(self.parts) if off < hi and lo < off + ext]
        exact = (rows, cols) == ((region.r0, region.r1), (region.c0, region.c1))
        if exact and len(touching) == 1 and touching[0][2] <= lo and hi <= touching[0][2] + touching[0][3] and (
                self._aligned(touching[0][1], lo - touching[0][2], hi - touching[0][2], touching[0][3])):
            _, part, off, _ = touching[0]
            if self.axis == "rows":
                return part.block(lw, (), (lo - off, hi - off), cols)
            return part.block(lw, (), rows, (lo - off, hi - off))
        partials = []
        for i, part, off, ext in touching:
            names = (f"selection of {self.label_text} part {i}", f"{self.label(region)}/part{i}",
                     f"{self.label_text}{region_label(region, st)} part {i}")
            if self.axis == "rows":
                partials.append(selection_product(lw, names, ((region.r0, region.r1), (0, ext)),
                                                  part.block(lw, (), (0, ext), cols), True, "Concat", region.shape))
            else:
                partials.append(selection_product(lw, names, ((0, ext), (region.c0, region.c1)),
                                                  part.block(lw, (), rows, (0, ext)), False, "Concat", region.shape))
        return sum_partials(lw, partials, self.label(region), self.label_text)


class FlattenedMapBase(Base):
    """A feature map's pixel rows read as one row (a flatten into a classifier, VGG's): each block of that row is
    one pixel's columns, copied by a selection MatMul (a 1 x R one-hot the host provides) from the block of the
    map that holds the pixel, so that the map keeps its own row blocks instead of being cut to single pixel
    rows all the way up (one MAC per element per row of the block: a stated extra, docs/import.md#ops). The
    pixels read may be some of the map's rows (the real ones of a map computed larger: AlexNet's)."""

    def __init__(self, lw: Lowering, source: View, pixel_rows: Sequence[int], name: str, label: str):
        self.source, self.pixel_rows, self.label_text = source, list(pixel_rows), label
        cols = source.shape[1]
        super().__init__(lw, lw.storage(1, 1, len(self.pixel_rows) * cols), name, 1, cols)

    def _emit(self, region: Region) -> int:
        lw = self.lw
        rows, cols = self.source.shape
        pixel = region.c0 // cols
        if region.c1 > (pixel + 1) * cols:
            raise LayoutError(f"{self.label_text}: a block across two pixels of the flattened map")
        row = self.pixel_rows[pixel]
        part = Operand((rows, cols), view=self.source)
        unit = part.unit(lw, 0) or rows
        r0 = row - row % unit
        r1 = min(r0 + unit, rows)
        rhs = part.block(lw, (), (r0, r1), (region.c0 - pixel * cols, region.c1 - pixel * cols))
        names = (f"selection of {self.label_text} pixel {row}", self.label(region),
                 f"{self.label_text}{region_label(region, self.storage)}")
        return selection_product(lw, names, ((0, 1), (0, r1 - r0)), rhs, True, "Flatten", region.shape)


class BroadcastBase(Base):
    """A computed 1 x C row spread over R rows: per block, a MatMul of the host's R x 1 column of ones by the
    row's columns (K = 1: one multiply-add per element, a documented extra), laid out like the tensor the row
    is combined with."""

    def __init__(self, lw: Lowering, row: View, like: View, name: str):
        self.row, self.label_text = row, f"{name} broadcast"
        base = lw.bases[like.storage.key]
        super().__init__(lw, lw.storage_like(like.storage), f"{name}/broadcast", base.row_unit,
                         gcd_of(base.col_unit, lw.unit(row, 1)))
        self.view = View(self.storage, like.offset, like.dims)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        ones = lw.data_block("ones", (), (0, region.r1 - region.r0), (0, 1), "column of ones")
        row = lw.block_of(self.row, (), (0, 1), (region.c0, min(region.c1, self.row.shape[-1])))
        out = b.tensor(*region.shape, self.label(region))
        b.op("MatMul", "Broadcast", [ones, row], [out], lw.profile.matmul_cost(1),
             self.label_text + region_label(region, self.storage))
        return out
