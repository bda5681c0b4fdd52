"""Strided views: how an ONNX value's elements sit in the 2-D tensors of the problem.

Layout ops (Reshape, Transpose, Slice, Squeeze, ...) move no data: the importer follows them as views over
the *storage* of the op that really produced the elements. A storage is a stack of matrices [batches, rows,
cols]; a view maps a logical n-D index to a storage element through strides in the storage's linear index.
Each logical dimension is a list of (extent, stride) sub-dimensions, outer first, so that a Reshape that
merges dimensions which are not adjacent in memory (the heads of attention after their transpose) stays
exact.

A consumer asks a view for a 2-D block (a batch index, a row range, a column range); the view answers with the
storage region it covers, and whether it is read transposed, or says why the block is not a rectangle.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import List, NamedTuple, Optional, Sequence, Tuple

SubDim = Tuple[int, int]  # (extent, stride)


class LayoutError(ValueError):
    """A layout the problem format cannot express as rectangles of its 2-D tensors."""


@dataclass(frozen=True)
class Storage:
    """Where a materialized value's elements live: `batches` matrices of `rows` x `cols`."""

    key: int  # which materialized value; two storages of one geometry are still different
    batches: int
    rows: int
    cols: int
    # The value's own extents when its rows or columns are tokens padded to a whole number of blocks
    # (docs/import.md#attention); 0 when not padded. Blocks that end at the real extent end at the padded one.
    real_rows: int = 0
    real_cols: int = 0

    def padded_end(self, end: int, axis: str) -> int:
        real, full = (self.real_rows, self.rows) if axis == "rows" else (self.real_cols, self.cols)
        return full if real and end == real else end


class Region(NamedTuple):
    """A rectangle of one matrix of a storage: batch `batch`, rows [r0, r1), columns [c0, c1). A tuple: hashed
    and compared in C, as the key of every block emitted."""

    batch: int
    r0: int
    r1: int
    c0: int
    c1: int

    @property
    def shape(self) -> Tuple[int, int]:
        return (self.r1 - self.r0, self.c1 - self.c0)


def _merge(subdims: Sequence[SubDim]) -> List[SubDim]:
    """Drops extent-1 sub-dimensions and merges neighbours that are contiguous with each other."""
    out: List[SubDim] = []
    for extent, stride in subdims:
        if extent == 1:
            continue
        if out and out[-1][1] == extent * stride:
            out[-1] = (out[-1][0] * extent, stride)
        else:
            out.append((extent, stride))
    return out


@dataclass(frozen=True)
class View:
    """A logical n-D array over a storage: offset + sum(index_d * stride_d) over the sub-dimensions."""

    storage: Storage
    offset: int
    dims: Tuple[Tuple[SubDim, ...], ...]

    @staticmethod
    def of_strides(storage: Storage, shape: Sequence[int], strides: Sequence[int], offset: int = 0) -> "View":
        return View(storage, offset, tuple(((e, s),) if e != 1 else () for e, s in zip(shape, strides)))

    @staticmethod
    def row_major(storage: Storage, shape: Sequence[int]) -> "View":
        strides, step = [], 1
        for extent in reversed(shape):
            strides.append(step)
            step *= extent
        return View.of_strides(storage, shape, list(reversed(strides)))

    @staticmethod
    def of_storage(storage: Storage, shape: Sequence[int]) -> "View":
        """A value laid out as its storage: batch dimensions over the matrices, then rows and columns, with
        the padded extents as strides (row_major when nothing is padded)."""
        strides, step = [storage.cols, 1], storage.rows * storage.cols
        for extent in reversed(shape[:-2]):
            strides.insert(0, step)
            step *= extent
        return View.of_strides(storage, shape, strides)

    @cached_property
    def shape(self) -> Tuple[int, ...]:
        # asked for twice per block read: computed once per view (a frozen dataclass's fields never change)
        return tuple(prod(e for e, _ in d) for d in self.dims)

    def reshape(self, shape: Sequence[int]) -> "View":
        if prod(shape) != prod(self.shape):
            raise LayoutError(f"reshape of {list(self.shape)} to {list(shape)} changes the element count")
        pending = _merge([sd for d in self.dims for sd in d])
        dims: List[Tuple[SubDim, ...]] = []
        for extent in shape:
            taken: List[SubDim] = []
            need = extent
            while need > 1:
                e, s = pending[0]
                if e <= need and need % e == 0:
                    taken.append((e, s))
                    pending.pop(0)
                    need //= e
                elif e % need == 0:
                    taken.append((need, s * (e // need)))
                    pending[0] = (e // need, s)
                    need = 1
                else:
                    raise LayoutError(f"reshape of {list(self.shape)} to {list(shape)} splits a dimension "
                                      "across a stride boundary")
            dims.append(tuple(_merge(taken)))
        return View(self.storage, self.offset, tuple(dims))

    def in_storage_order(self, dim: int) -> "View":
        """The view with one dimension's elements taken in the order they are stored (its sub-dimensions by
        decreasing stride). Only for a dimension that is contracted against a weight, whose rows the host lays
        out in the same order: the flatten of a pixel-major map before a classifier (VGG)."""
        dims = list(self.dims)
        dims[dim] = tuple(_merge(sorted(dims[dim], key=lambda sd: -sd[1])))
        return View(self.storage, self.offset, tuple(dims))

    def transpose(self, perm: Sequence[int]) -> "View":
        return View(self.storage, self.offset, tuple(self.dims[p] for p in perm))

    def slice(self, axis: int, start: int, end: int) -> "View":
        subdims = self.dims[axis]
        if start == 0 and end == self.shape[axis]:
            return self
        inner = prod(e for e, _ in subdims[1:])
        if not subdims or start % inner or end % inner:
            raise LayoutError(f"slice [{start}, {end}) of axis {axis} cuts a merged dimension")
        e, s = subdims[0]
        new = ((end - start) // inner, s)
        dims = list(self.dims)
        dims[axis] = tuple(_merge((new,) + tuple(subdims[1:])))
        return View(self.storage, self.offset + (start // inner) * s, tuple(dims))

    def _position(self, dim: int, index: int) -> int:
        pos = 0
        for e, s in reversed(self.dims[dim]):
            pos += (index % e) * s
            index //= e
        return pos

    def unit(self, dim: int) -> int:
        """The largest aligned run of this dimension that has one stride: blocks along it must not cross one."""
        subdims = self.dims[dim]
        return subdims[-1][0] if subdims else 1

    def orientation(self) -> str:
        """'normal' when the last dimension runs along storage columns, 'transposed' when along rows."""
        last, row = self.dims[-1], self.dims[-2]
        if (not last or last[-1][1] == 1) and (not row or row[-1][1] % self.storage.cols == 0):
            return "normal"
        if (not row or row[-1][1] == 1) and (not last or last[-1][1] % self.storage.cols == 0):
            return "transposed"
        return "mixed"

    def storage_axis(self, dim: int) -> Optional[str]:
        """'rows' or 'cols': the storage axis this dimension's innermost run follows (None for extent 1)."""
        subdims = self.dims[dim]
        if not subdims:
            return None
        return "cols" if subdims[-1][1] == 1 else "rows"

    def _stride_over(self, dim: int, start: int, stop: int) -> int:
        subdims = self.dims[dim]
        if stop - start <= 1 or not subdims:
            return 0
        unit = subdims[-1][0]
        if start // unit != (stop - 1) // unit:
            raise LayoutError(f"block [{start}, {stop}) of a dimension crosses a stride boundary every {unit}")
        return subdims[-1][1]

    def block(self, batch_index: Sequence[int], rows: Tuple[int, int], cols: Tuple[int, int]) -> Tuple[Region, bool]:
        """The storage region of a 2-D block of the last two dimensions, and whether it is read transposed."""
        n = len(self.dims)
        if n < 2:
            raise LayoutError("a matrix operand needs two dimensions")
        base = self.offset
        for d, i in enumerate(batch_index):
            if i:  # index 0 is at offset 0 (most batch indices and block starts: skipped, this runs per op)
                base += self._position(d, i)
        if rows[0]:
            base += self._position(n - 2, rows[0])
        if cols[0]:
            base += self._position(n - 1, cols[0])
        nr, nc = rows[1] - rows[0], cols[1] - cols[0]
        sr = self._stride_over(n - 2, *rows)
        sc = self._stride_over(n - 1, *cols)
        st = self.storage
        b, rest = divmod(base, st.rows * st.cols)
        r, c = divmod(rest, st.cols)
        normal = (nc == 1 or sc == 1) and (nr == 1 or sr == st.cols)
        transposed = (nr == 1 or sr == 1) and (nc == 1 or sc == st.cols)
        if normal and c + nc <= st.cols and r + nr <= st.rows:
            return Region(b, r, r + nr, c, c + nc), False
        if transposed and c + nr <= st.cols and r + nc <= st.rows:
            return Region(b, r, r + nc, c, c + nr), True
        raise LayoutError(f"a {nr} x {nc} block with strides ({sr}, {sc}) is not a rectangle of a "
                          f"{st.rows} x {st.cols} matrix")


def locate(view: View, region: Region) -> Tuple[Tuple[int, ...], Tuple[int, int], Tuple[int, int]]:
    """The logical block (batch index, rows, cols) of a normal view that covers a storage region."""
    st = view.storage
    p = region.batch * st.rows * st.cols + region.r0 * st.cols + region.c0 - view.offset
    subs = sorted(((s, e, d, j) for d, dim in enumerate(view.dims) for j, (e, s) in enumerate(dim)), reverse=True)
    digits = {}
    for s, e, d, j in subs:
        digits[(d, j)] = min(p // s, e - 1) if s else 0
        p -= digits[(d, j)] * s
    index = []
    for d, dim in enumerate(view.dims):
        i = 0
        for j, (e, _) in enumerate(dim):
            i = i * e + digits[(d, j)]
        index.append(i)
    nr, nc = region.shape
    rows, cols = (index[-2], index[-2] + nr), (index[-1], index[-1] + nc)
    if p != 0 or view.block(index[:-2], rows, cols) != (region, False):
        raise LayoutError(f"a block {region} is not a block of the view")
    return tuple(index[:-2]), rows, cols


def unravel(index: int, shape: Sequence[int]) -> Tuple[int, ...]:
    out: List[int] = []
    for extent in reversed(shape):
        out.append(index % extent)
        index //= extent
    return tuple(reversed(out))


def broadcast_index(index: Sequence[int], shape: Sequence[int]) -> Tuple[int, ...]:
    """The index into an operand of `shape` that numpy broadcasting pairs with `index` of the result."""
    if not shape:
        return ()
    lead = len(index) - len(shape)
    return tuple(0 if extent == 1 else index[lead + i] for i, extent in enumerate(shape))


def split_range(extent: int, unit: Optional[int]) -> List[Tuple[int, int]]:
    step = unit if unit and unit < extent else extent
    return [(a, min(a + step, extent)) for a in range(0, extent, step)]


def pixel_map(storage: Storage, shape: Sequence[int], levels: int) -> View:
    """An NCHW feature map stored pixel-major ((N*H*W) rows x C columns) in `levels` space-to-depth phases:
    rows are ordered (p1, q1, ..., pL, qL, n, i, j) with h = i*2^L + ... + p1 (p1 = h mod 2), so that each
    stride-2 window op finds the pixels of one parity as a contiguous quarter of the rows, and its output
    keeps the remaining levels (docs/import.md#convolutions). With no levels this is plain (n, h, w) order."""
    n, c, h, w = shape
    hl, wl = h >> levels, w >> levels
    s_j, s_i = c, (w >> levels) * c
    s_n = hl * s_i
    deepest = n * s_n  # elements of one phase at the last level
    ph = [(2, 2 * deepest * 4 ** (levels - k)) for k in range(levels, 0, -1)]  # (2, s_p) for pL .. p1
    pw = [(2, deepest * 4 ** (levels - k)) for k in range(levels, 0, -1)]
    dims = (((n, s_n),), ((c, 1),), ((hl, s_i), *ph), ((wl, s_j), *pw))
    return View(storage, 0, tuple(tuple(_merge(d)) for d in dims))


def _nhwc_view(storage: Storage, channels: int, h_dims, w_dims) -> View:
    """An NHWC map of batch 1 from the sub-dimensions of its H and W axes; channels are storage columns."""
    return View(storage, 0, ((),) + tuple(tuple(_merge(d)) for d in (h_dims, w_dims, ((channels, 1),))))


def window_map(storage: Storage, shape: Sequence[int], window: int) -> View:
    """An NHWC map [1, H, W, C] stored window by window: matrix a*(W/ws) + b holds window (a, b), its pixel
    (i, j) in row i*ws + j (rows past ws*ws are the padding of a padded sequence), so that a window partition
    is a view with each window one matrix (docs/import.md#windows)."""
    _, h, w, c = shape
    cols, per_window = storage.cols, storage.rows * storage.cols
    return _nhwc_view(storage, c, ((h // window, (w // window) * per_window), (window, window * cols)),
                      ((w // window, per_window), (window, cols)))


def grid_map(storage: Storage, shape: Sequence[int], patch: int) -> View:
    """An NHWC map [1, H, W, C] stored grid by grid (MaxViT's grid partition: the pixels `patch` apart): matrix
    a*patch + b holds the pixels (i*patch + a, j*patch + b), pixel (i, j) in row i*(W/patch) + j (rows past
    them are the padding of a padded sequence)."""
    _, h, w, c = shape
    cols, per_matrix = storage.cols, storage.rows * storage.cols
    return _nhwc_view(storage, c, ((h // patch, (w // patch) * cols), (patch, patch * per_matrix)),
                      ((w // patch, cols), (patch, per_matrix)))


def map_levels(view: View, shape: Sequence[int]) -> Optional[int]:
    """The space-to-depth levels of a view that is a whole pixel-major map of `shape`, else None."""
    n, c, h, w = shape
    st = view.storage
    if view.offset or st.batches != 1 or st.rows != n * h * w or st.cols != c:
        return None
    for levels in range(0, 16):
        if (h >> levels) << levels != h or (w >> levels) << levels != w:
            return None
        if pixel_map(st, shape, levels).dims == view.dims:
            return levels
    return None


def map_columns(view: View, shape: Sequence[int]) -> Optional[Tuple[int, List[int]]]:
    """For a view whose pixels are the rows of a pixel-major map in their stored order and whose channels are
    columns of that storage in any order (a channel shuffle, a split of one): the map's space-to-depth levels
    and the storage column of each channel. Otherwise None. A whole map is (levels, [0, 1, ..., C-1])."""
    n, c, h, w = shape
    st = view.storage
    if st.batches != 1 or st.rows != n * h * w or not 0 <= view.offset < st.cols:
        return None
    for levels in range(0, 16):
        if (h >> levels) << levels != h or (w >> levels) << levels != w:
            return None
        whole = pixel_map(st, [n, st.cols, h, w], levels)
        if all(whole.dims[d] == view.dims[d] for d in (0, 2, 3)):
            columns = [view.offset + view._position(1, i) for i in range(c)]
            if max(columns) >= st.cols or len(set(columns)) != c:
                return None
            return levels, columns
    return None


def column_range(columns: Sequence[int]) -> Optional[Tuple[int, int]]:
    """[c0, c1) when the columns are consecutive and in order, else None."""
    c0 = columns[0]
    return (c0, c0 + len(columns)) if list(columns) == list(range(c0, c0 + len(columns))) else None
