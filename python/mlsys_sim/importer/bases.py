"""The problem being built, and the materialized values ("bases") that emit its ops on demand.

Nothing is emitted until a graph output asks for it: a base is asked for a block (a region of its storage)
and emits the ops that compute exactly that block, asking its operands for theirs. Blocks follow each base's
units (row and column block sizes), so that every consumer asks for the same blocks and nothing is computed
twice; a request that does not follow them is a LayoutError, not a silent recomputation.
"""

from __future__ import annotations

import bisect
from math import gcd
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .views import LayoutError, Region, Storage, View, broadcast_index, split_range, unravel


MAX_DIMENSION = 2 ** 30  # M1's accepted range for widths and heights


class OpLimit(LayoutError):
    """The problem outgrew --max-ops (GraphLowering.run then predicts its size)."""


class UnreadableOperand(LayoutError):
    """A block an op needs cannot be read, said with the op's name (raised once, by the innermost op)."""


class ProblemBuilder:
    """The problem file's lists, with the names section that travels beside them."""

    def __init__(self, max_ops: int, max_elements: int):
        self.widths: List[int] = []
        self.heights: List[int] = []
        self.inputs: List[List[int]] = []
        self.outputs: List[List[int]] = []
        self.base_costs: List[float] = []
        self.op_types: List[str] = []
        self.tensor_names: List[str] = []
        self.op_names: List[str] = []
        self.op_kinds: List[str] = []
        self.row_wise: List[int] = []
        self.max_ops = max_ops
        self.max_elements = max_elements
        self.elements = 0
        self.deadline: Optional[float] = None  # time.monotonic() past which op() stops the walk (a prediction)

    def tensor(self, rows: int, cols: int, name: str) -> int:
        if max(rows, cols) > MAX_DIMENSION:
            raise LayoutError(f"{name}: a {rows} x {cols} tensor; the problem format takes sides up to 2^30 (M1)")
        self.elements += rows * cols
        if self.elements > self.max_elements:
            raise LayoutError(f"the problem would hold more than {self.max_elements} elements")
        self.heights.append(rows)
        self.widths.append(cols)
        self.tensor_names.append(name)
        return len(self.widths) - 1

    def op(self, op_type: str, kind: str, ins: Sequence[int], outs: Sequence[int], cost: float, name: str,
           row_wise: bool = False) -> int:
        if not 0 < cost <= 1e15:
            raise LayoutError(f"{name}: a base cost of {cost:g} cycles, outside M1's (0, 1e15]: check the profile")
        if len(self.op_types) >= self.max_ops:
            raise OpLimit(f"the problem would have more than {self.max_ops} ops (raise --max-ops)")
        if self.deadline is not None and len(self.op_types) % 1024 == 0 and time.monotonic() > self.deadline:
            raise OpLimit(f"more than {len(self.op_types)} ops when the prediction's time ran out")
        self.op_types.append(op_type)
        self.op_kinds.append(kind)
        self.inputs.append(list(ins))
        self.outputs.append(list(outs))
        self.base_costs.append(cost)
        self.op_names.append(name)
        if row_wise:
            self.row_wise.append(len(self.op_types) - 1)
        return len(self.op_types) - 1


def region_label(region: Region, storage: Storage) -> str:
    parts: List[str] = []
    if storage.batches > 1:
        parts.append(f"b{region.batch}")
    if (region.r0, region.r1) != (0, storage.rows):
        parts.append(f"r{region.r0}:{region.r1}")
    if (region.c0, region.c1) != (0, storage.cols):
        parts.append(f"c{region.c0}:{region.c1}")
    return f"[{','.join(parts)}]" if parts else ""


def _boundary_gcd(unit: Optional[int], extent: int, bounds: Sequence[int]) -> int:
    """The largest block size that divides every boundary (and the extent): the finest common blocks."""
    out = gcd(unit or extent, extent)
    for b in bounds:
        out = gcd(out, b)
    return out or extent


class Lowering:
    """Shared state of one import: the builder, the bases by storage, the profile, the block size."""

    def __init__(self, builder: ProblemBuilder, profile, row_block: Optional[int],
                 forced_units: Optional[Dict[str, Tuple[int, int]]] = None, tokens: Tuple[int, int] = (0, 0)):
        self.builder = builder
        # (sequence length, padded length): token axes of that length are stored padded to whole row blocks
        self.tokens = tokens
        # Block sizes that an earlier pass found two consumers to need (name -> (row unit, col unit)); a
        # value cut differently by its consumers is refined to the blocks common to all, and the import is
        # run again (GraphLowering.run), so that nothing is computed twice.
        self.forced_units: Dict[str, Tuple[int, int]] = dict(forced_units or {})
        self.refinements: Dict[str, Tuple[int, int]] = {}
        self.profile = profile
        self.row_block = row_block
        self.bases: Dict[int, "Base"] = {}
        self.data_blocks: Dict[tuple, int] = {}
        self.transposes: Dict[int, int] = {}
        self.warnings: List[str] = []
        self._next_key = 0

    def padded(self, extent: int) -> int:
        return self.tokens[1] if self.tokens[0] and extent == self.tokens[0] else extent

    def storage(self, batches: int, rows: int, cols: int, padded: bool = True) -> Storage:
        """A new storage; a token axis (the padded sequence's length) is stored padded, unless its rows are a
        feature map's pixels (a 7x7 map of a network whose windows have 49 tokens)."""
        self._next_key += 1
        pr, pc = (self.padded(rows), self.padded(cols)) if padded else (rows, cols)
        return Storage(self._next_key, batches, pr, pc, rows if pr != rows else 0, cols if pc != cols else 0)

    def storage_like(self, other: Storage) -> Storage:
        self._next_key += 1
        return Storage(self._next_key, other.batches, other.rows, other.cols, other.real_rows, other.real_cols)

    def row_unit(self, rows: int) -> int:
        rb, rows = self.row_block, self.padded(rows)
        return rb if rb and rows % rb == 0 else rows

    def data_block(self, name: str, batch_index: Sequence[int], rows: Tuple[int, int], cols: Tuple[int, int],
                   label: str) -> int:
        """A block of a weight or of host data: a graph input of its own, shared by every op that reads it."""
        key = (name, tuple(batch_index), rows, cols)
        if key not in self.data_blocks:
            b = f"b{','.join(map(str, batch_index))}," if batch_index else ""
            self.data_blocks[key] = self.builder.tensor(
                rows[1] - rows[0], cols[1] - cols[0], f"{label}[{b}r{rows[0]}:{rows[1]},c{cols[0]}:{cols[1]}]")
        return self.data_blocks[key]

    def transpose(self, tensor: int) -> int:
        """K^T of attention: the format has no layout, so a transposed read of a computed block is an op."""
        if tensor not in self.transposes:
            b = self.builder
            rows, cols = b.heights[tensor], b.widths[tensor]
            if rows != cols:
                raise LayoutError(f"a transposed read of a {rows} x {cols} block: the problem format's "
                                  "Pointwise ops keep shapes, so only square blocks can be transposed")
            out = b.tensor(cols, rows, b.tensor_names[tensor] + "^T")
            b.op("Pointwise", "Transpose", [tensor], [out], self.profile.pointwise_cost(["Transpose"]),
                 f"transpose of {b.tensor_names[tensor]}")
            self.transposes[tensor] = out
        return self.transposes[tensor]

    def block_of(self, view: View, batch_index: Sequence[int], rows: Tuple[int, int],
                 cols: Tuple[int, int]) -> int:
        # A consumer's block may run into the padding; the view knows the real extents only.
        asked = rows, cols
        rows = (rows[0], min(rows[1], view.shape[-2]))
        cols = (cols[0], min(cols[1], view.shape[-1]))
        if (rows[0] >= rows[1] or cols[0] >= cols[1]) and self.tokens[0]:
            st, (rows, cols) = view.storage, asked
            raise LayoutError(
                f"it reads only padding (rows {rows[0]}:{rows[1]}, columns {cols[0]}:{cols[1]} of a "
                f"{view.shape[-2]} x {view.shape[-1]} operand): the sequence of {self.tokens[0]} tokens is padded "
                f"to {self.tokens[1]} for the square transposes of attention's keys, but this operand is a layout "
                f"of a {st.rows} x {st.cols} value that has no padding rows. What would work: a storage "
                "padded per sequence for the value the layout reads: an NHWC map that a window partition "
                "reads is stored window by window (docs/import.md#windows), a map read otherwise (MaxViT's "
                "NCHW block and grid partitions) is not")
        region, transposed = view.block(batch_index, rows, cols)
        st = view.storage
        if st.real_rows or st.real_cols:
            region = Region(region.batch, region.r0, st.padded_end(region.r1, "rows"), region.c0,
                            st.padded_end(region.c1, "cols"))
        tensor = self.bases[view.storage.key].emit(region)
        return self.transpose(tensor) if transposed else tensor

    def unit(self, view: View, dim: int) -> int:
        """Block size along a view dimension: its stride run, cut to its base's unit along that axis."""
        run = view.unit(dim)
        base = self.bases[view.storage.key]
        axis = view.storage_axis(dim)
        st = view.storage
        if axis == "rows" and run == st.real_rows:
            run = st.rows
        elif axis == "cols" and run == st.real_cols:
            run = st.cols
        base_unit = base.row_unit if axis == "rows" else base.col_unit if axis == "cols" else None
        return gcd(run, base_unit) if base_unit else run


class Base:
    """A materialized value: a storage whose blocks become problem tensors when first asked for."""

    def __init__(self, lw: Lowering, storage: Storage, name: str, row_unit: Optional[int],
                 col_unit: Optional[int]):
        self.lw = lw
        self.storage = storage
        self.name = name
        self.row_unit = row_unit
        self.col_unit = col_unit
        forced = lw.forced_units.get(name)
        if forced:
            self.row_unit = gcd(row_unit or storage.rows, forced[0])
            self.col_unit = gcd(col_unit or storage.cols, forced[1])
        self.memo: Dict[Region, int] = {}
        # Blocks emitted, by batch: row range -> blocks, the row ranges sorted, and the longest one, so that
        # finding the blocks a new one overlaps looks at its neighbours only (VGG's thousands of blocks).
        self.rows_emitted: Dict[int, Dict[Tuple[int, int], List[Region]]] = {}
        self.row_ranges: Dict[int, List[Tuple[int, int]]] = {}
        self.longest_range: Dict[int, int] = {}
        lw.bases[storage.key] = self

    computed = True  # blocks are ops (an input's blocks are only data, which may overlap freely)

    def emit(self, region: Region) -> int:
        if region in self.memo:
            return self.memo[region]
        overlapping = self._overlapping(region)
        if overlapping and self.computed:
            # Two consumers cut this value differently (one by rows, one in transposed squares, say). Ask for
            # the finest common blocks in the next pass; should the cuts not converge, say what stays twice.
            st, regions = self.storage, overlapping + [region]
            old = self.lw.refinements.get(self.name, (self.row_unit or st.rows, self.col_unit or st.cols))
            self.lw.refinements[self.name] = (
                _boundary_gcd(old[0], st.rows, [b for r in regions for b in (r.r0, r.r1)]),
                _boundary_gcd(old[1], st.cols, [b for r in regions for b in (r.c0, r.c1)]))
            self.lw.warnings.append(
                f"{self.name}: block {region_label(region, st) or '[all]'} overlaps "
                f"{region_label(overlapping[0], st) or '[all]'}, computed twice (its consumers cut it differently)")
        try:
            tensor = self._emit(region)
        except (OpLimit, UnreadableOperand):
            raise
        except LayoutError as e:
            # Raised while reading an operand's blocks, far from the walk that knows the node: name the op
            # whose block could not be read (the innermost one).
            raise UnreadableOperand(
                f"the op computing {self.label(region)} cannot read its operand's block: {e}") from None
        self.memo[region] = tensor
        self.record(region)
        return tensor

    def _overlapping(self, region: Region) -> List[Region]:
        rows = self.rows_emitted.get(region.batch, {})
        ranges = self.row_ranges.get(region.batch, [])
        out = []
        # ranges starting before region.r1, walked back no further than the longest range reaches
        j = bisect.bisect_left(ranges, (region.r1, -1)) - 1
        reach = region.r0 - self.longest_range.get(region.batch, 0)
        while j >= 0 and ranges[j][0] >= reach:
            r0, r1 = ranges[j]
            if region.r0 < r1:
                out += [r for r in rows[(r0, r1)] if r.c0 < region.c1 and region.c0 < r.c1]
            j -= 1
        return out

    def record(self, region: Region) -> None:
        """Notes an emitted block (for the overlap check of later ones)."""
        rows = self.rows_emitted.setdefault(region.batch, {})
        key = (region.r0, region.r1)
        if key not in rows:
            bisect.insort(self.row_ranges.setdefault(region.batch, []), key)
            self.longest_range[region.batch] = max(self.longest_range.get(region.batch, 0), region.r1 - region.r0)
        rows.setdefault(key, []).append(region)

    def _emit(self, region: Region) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def label(self, region: Region) -> str:
        return self.name + region_label(region, self.storage)


class InputBase(Base):
    """A graph input (or host data such as looked-up embeddings): the host provides each block."""

    computed = False

    def __init__(self, lw: Lowering, storage: Storage, name: str):
        super().__init__(lw, storage, name, lw.row_unit(storage.rows), None)

    def _emit(self, region: Region) -> int:
        return self.lw.builder.tensor(*region.shape, self.label(region))


class Operand:
    """A matrix operand: a view of a computed value, or a weight (data, free to cut into any block)."""

    def __init__(self, shape: Sequence[int], view: Optional[View] = None, data: Optional[str] = None):
        self.shape = tuple(shape)
        self.view = view
        self.data = data

    @property
    def batch_shape(self) -> Tuple[int, ...]:
        return self.shape[:-2]

    def block(self, lw: Lowering, batch_index: Sequence[int], rows: Tuple[int, int], cols: Tuple[int, int]) -> int:
        bidx = broadcast_index(batch_index, self.batch_shape)
        if self.view is not None:
            return lw.block_of(self.view, bidx, rows, cols)
        # weights and host data along a padded token axis are padded by the host
        if rows[1] == self.shape[-2]:
            rows = (rows[0], lw.padded(rows[1]))
        if cols[1] == self.shape[-1]:
            cols = (cols[0], lw.padded(cols[1]))
        return lw.data_block(self.data, bidx, rows, cols, self.data)

    def unit(self, lw: Lowering, dim: int) -> Optional[int]:
        return lw.unit(self.view, dim) if self.view is not None else None


def gcd_of(*values: Optional[int]) -> Optional[int]:
    """The gcd of the block sizes given (None or 0: no constraint), or None if none is given."""
    out = 0
    for v in values:
        if v:
            out = gcd(out, v)
    return out or None


class MatMulBase(Base):
    """Y = A @ B per batch index, cut along the reduction into chunks that both operands can deliver; the
    partial products of several chunks are added by one Pointwise op (rule M20's accumulators)."""

    def __init__(self, lw: Lowering, a: Operand, b: Operand, out_batch: Sequence[int], name: str, label: str):
        self.a, self.b, self.out_batch, self.label_text = a, b, tuple(out_batch), label
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        if b.shape[-2] != k:
            raise LayoutError(f"{label}: inner dimensions {k} and {b.shape[-2]} differ")
        self.k = k
        batches = 1
        for e in out_batch:
            batches *= e
        chunk = gcd_of(a.unit(lw, -1), b.unit(lw, -2)) or k
        row_unit = gcd_of(a.unit(lw, -2), lw.row_unit(m)) or m
        col_unit = b.unit(lw, -1)
        for operand, which in ((a, "A"), (b, "B")):
            if operand.view is None:
                continue
            orientation = operand.view.orientation()
            if orientation == "mixed":
                raise LayoutError(f"{label}: operand {which} is laid out neither by rows nor by columns")
            if orientation == "transposed":
                # A transposed block is a Transpose op, and those keep shapes: cut both sides alike.
                other = row_unit if which == "A" else (col_unit or n)
                square = gcd_of(chunk, other, lw.row_unit(m if which == "A" else n))
                chunk = square
                if which == "A":
                    row_unit = square
                else:
                    col_unit = square
        self.chunk = chunk
        super().__init__(lw, lw.storage(batches, m, n), name, row_unit, col_unit)

    def _emit(self, region: Region) -> int:
        lw, b = self.lw, self.lw.builder
        bidx = unravel(region.batch, self.out_batch)
        rows, cols = (region.r0, region.r1), (region.c0, region.c1)
        partials = []
        where = region_label(region, self.storage)
        for k0, k1 in split_range(self.k, self.chunk):
            lhs = self.a.block(lw, bidx, rows, (k0, k1))
            rhs = self.b.block(lw, bidx, (k0, k1), cols)
            suffix = f"/k{k0}:{k1}" if k1 - k0 < self.k else ""
            out = b.tensor(*region.shape, self.name + where + suffix)
            b.op("MatMul", "MatMul", [lhs, rhs], [out], lw.profile.matmul_cost(k1 - k0),
                 self.label_text + where + suffix)
            partials.append(out)
        return sum_partials(lw, partials, self.name + where, self.label_text)


def sum_partials(lw: Lowering, partials: List[int], label: str, op_label: str) -> int:
    if len(partials) == 1:
        return partials[0]
    b = lw.builder
    out = b.tensor(b.heights[partials[0]], b.widths[partials[0]], label)
    b.op("Pointwise", "Sum", partials, [out], lw.profile.pointwise_cost(["Sum"] * (len(partials) - 1)),
         f"{op_label} sum of {len(partials)} partial products")
    return out
