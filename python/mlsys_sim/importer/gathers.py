"""Pixels of NHWC maps rearranged: torch.roll's cyclic shifts and strided slices (Swin's shifted windows and
Patch Merging).

A slice that no strided view expresses (a roll cuts a window of 7 pixels at pixel 3; `x[:, 0::2]` takes every
other pixel of a window of 7) and the concats of such slices are followed lazily as a table: for each output
pixel, which source pixel it takes, per run of channels (`PixelSelection`). The first reader that is not another
slice or concat materializes the table as a copy the format can express (`GatherBase`): per output block and
source block it reads from, a MatMul of a 0/1 matrix the host provides by the source block, summed. One MAC per
output element per source row read: a stated extra (docs/import.md#windows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .bases import Base, Lowering, gcd_of, region_label, sum_partials
from .ops import selection_product
from .views import LayoutError, Region, Storage, View, grid_map, pixel_map, split_range, window_map


MAX_PIXELS = 1 << 22  # 2048 x 2048: the largest map whose pixels are followed as tables


@dataclass(frozen=True)
class SelectionPart:
    storage: Storage  # the source's storage: its pixels are rows of its matrices, its channels columns
    column: int  # the storage column of the first channel read
    width: int  # channels read
    matrix: np.ndarray  # [H, W]: the matrix of the storage each output pixel is taken from
    row: np.ndarray  # [H, W]: and its row there

    def runs(self) -> Tuple[int, int, int]:
        return (self.storage.key, self.column, self.width)

    def taken(self, index) -> "SelectionPart":
        return SelectionPart(self.storage, self.column, self.width, self.matrix[index], self.row[index])


@dataclass(frozen=True)
class PixelSelection:
    height: int
    width: int
    parts: Tuple[SelectionPart, ...]

    @property
    def shape(self) -> Tuple[int, int, int, int]:
        return (1, self.height, self.width, sum(p.width for p in self.parts))

    @staticmethod
    def of_view(view: View) -> Optional["PixelSelection"]:
        """An NHWC map of batch 1 whose pixels are rows of its storage and whose channels are a run of columns,
        as a table of itself; None for any other view."""
        shape = view.shape
        st = view.storage
        if len(shape) != 4 or shape[0] != 1 or view.dims[3] not in (((shape[3], 1),), ()) or any(
                s % st.cols for d in view.dims[1:3] for _, s in d) or view.offset % st.cols + shape[3] > st.cols:
            return None
        _, h, w, c = shape
        if h * w > MAX_PIXELS:  # the tables are arrays of the map's pixels: bounded on a hostile model
            raise LayoutError(f"rearranging the pixels of a {h}x{w} map: over {MAX_PIXELS:,} pixels")
        positions = (view.offset + np.array([view._position(1, i) for i in range(h)])[:, None] +
                     np.array([view._position(2, j) for j in range(w)])[None, :])
        matrix, within = np.divmod(positions, st.rows * st.cols)
        return PixelSelection(h, w, (SelectionPart(st, int(view.offset % st.cols), c, matrix, within // st.cols),))

    def slice(self, axis: int, start: int, end: int, step: int) -> "PixelSelection":
        if axis in (1, 2):
            index = [slice(None), slice(None)]
            index[axis - 1] = slice(start, end, step)
            parts = tuple(p.taken(tuple(index)) for p in self.parts)
            h, w = parts[0].matrix.shape
            return PixelSelection(h, w, parts)
        if axis != 3 or step != 1:
            raise LayoutError(f"a slice of axis {axis} of an NHWC map with step {step}")
        parts, first = [], 0
        for p in self.parts:
            lo, hi = max(start, first), min(end, first + p.width)
            if lo < hi:
                parts.append(SelectionPart(p.storage, p.column + lo - first, hi - lo, p.matrix, p.row))
            first += p.width
        return PixelSelection(self.height, self.width, tuple(parts))

    @staticmethod
    def concat(selections: Sequence["PixelSelection"], axis: int) -> "PixelSelection":
        if axis == 3:
            if len({(s.height, s.width) for s in selections}) != 1:
                raise LayoutError("a channel concat of maps of different sizes")
            return PixelSelection(selections[0].height, selections[0].width,
                                  tuple(p for s in selections for p in s.parts))
        if axis not in (1, 2):
            raise LayoutError(f"a concat along axis {axis} of NHWC maps")
        runs = [p.runs() for p in selections[0].parts]
        if any([p.runs() for p in s.parts] != runs for s in selections[1:]):
            raise LayoutError("a concat of pixels whose channels are stored in different tensors (only pixels of "
                              "the same stored channels are concatenated)")
        parts = tuple(SelectionPart(p.storage, p.column, p.width,
                                    np.concatenate([s.parts[i].matrix for s in selections], axis - 1),
                                    np.concatenate([s.parts[i].row for s in selections], axis - 1))
                      for i, p in enumerate(selections[0].parts))
        h, w = parts[0].matrix.shape
        return PixelSelection(h, w, parts)


@dataclass(frozen=True)
class MapLayout:
    """How a materialized NHWC map stores its pixels: "rows" (pixel by pixel, row-major), "windows" (window by
    window, `size` the window side), "grid" (grid by grid, `size` the patch side) or "phases" (pixel by pixel
    in `size` space-to-depth levels, as convolutions read maps)."""

    kind: str
    size: int = 0

    def store(self, lw: Lowering, shape: Sequence[int]) -> Tuple[Storage, View]:
        _, h, w, c = shape
        p = self.size
        if self.kind == "windows":
            storage = lw.storage((h // p) * (w // p), p * p, c)
            return storage, window_map(storage, shape, p)
        if self.kind == "grid":
            storage = lw.storage(p * p, (h // p) * (w // p), c)
            return storage, grid_map(storage, shape, p)
        if self.kind == "phases":
            storage = lw.storage(1, h * w, c, padded=False)
            return storage, pixel_map(storage, [1, c, h, w], p).transpose([0, 2, 3, 1])
        storage = lw.storage(1, h * w, c)
        return storage, View.row_major(storage, shape)

    def holds(self, view: View, padded_rows: int) -> bool:
        """Whether an NHWC view already is a map stored in this layout (windows or grid)."""
        _, h, w, _ = view.shape
        p, st = self.size, view.storage
        if self.kind == "windows":
            matrices, rows, expected = (h // p) * (w // p), p * p, window_map
        elif self.kind == "grid":
            matrices, rows, expected = p * p, (h // p) * (w // p), grid_map
        else:
            return False
        return (st.batches, st.real_rows or st.rows) == (matrices, rows) and st.rows == padded_rows and (
            view.offset == 0 and view.dims == expected(st, view.shape, p).dims)


class GatherBase(Base):
    """A PixelSelection materialized in a layout (MapLayout), each block a sum of selection products, one per
    source block read."""

    def __init__(self, lw: Lowering, selection: PixelSelection, layout: MapLayout, name: str, label: str):
        _, h, w, c = selection.shape
        self.label_text = label
        storage, self.view = layout.store(lw, selection.shape)
        # which pixel each stored row holds (-1: a padding row), from the layout's own view
        placed = PixelSelection.of_view(self.view).parts[0]
        self.pixel_of = np.full((storage.batches, storage.rows), -1, dtype=np.int64)
        self.pixel_of[placed.matrix.reshape(-1), placed.row.reshape(-1)] = np.arange(h * w)
        # per part: its first output column, the source as [matrices, rows, columns] and the table
        self.parts: List[Tuple[int, View, SelectionPart]] = []
        first = 0
        for p in selection.parts:
            st = p.storage
            matrices = View.of_storage(st, [st.batches, st.real_rows or st.rows, st.cols])
            self.parts.append((first, matrices, p))
            first += p.width
        col_unit = gcd_of(c, *(f for f, _, _ in self.parts), *(lw.unit(m, 2) for _, m, _ in self.parts))
        super().__init__(lw, storage, name, lw.row_unit(storage.real_rows or storage.rows), col_unit)

    def _emit(self, region: Region) -> int:
        lw = self.lw
        index = max(i for i, part in enumerate(self.parts) if part[0] <= region.c0)
        first, matrices, part = self.parts[index]
        end = self.parts[index + 1][0] if index + 1 < len(self.parts) else self.storage.cols
        if region.c1 > end:
            raise LayoutError(f"{self.label_text}: a block across two runs of channels")
        flat = self.pixel_of[region.batch, region.r0:region.r1]
        flat = flat[flat >= 0]
        cols = (part.column + region.c0 - first, part.column + region.c1 - first)
        unit = lw.unit(matrices, 1) or matrices.shape[1]
        sources: Dict[int, List[int]] = {}
        for m, r in zip(part.matrix.reshape(-1)[flat], part.row.reshape(-1)[flat]):
            sources.setdefault(int(m), []).append(int(r))
        partials = []
        st = matrices.storage
        for m in sorted(sources):
            wanted = sources[m]
            for k0, k1 in split_range(matrices.shape[1], unit):
                if not any(k0 <= r < k1 for r in wanted):
                    continue
                data = lw.block_of(matrices, (m,), (k0, k1), cols)
                names = (f"selection of {self.label_text} part {index} block {region.batch}:{region.r0} from "
                         f"{m}:{k0}", f"{self.label(region)}/from{m}:{k0}",
                         f"{self.label_text}{region_label(region, self.storage)} from matrix {m} rows {k0}:{k1}")
                partials.append(selection_product(lw, names, ((region.r0, region.r1),
                                                              (k0, st.padded_end(k1, "rows"))),
                                                  data, True, "Gather", region.shape))
        if not partials:
            raise LayoutError(f"{self.label_text}: block {region_label(region, self.storage)} takes no pixel")
        return sum_partials(lw, partials, self.label(region), self.label_text)
