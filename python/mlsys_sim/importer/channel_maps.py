"""Feature maps whose channels are columns of several stored maps, in an order no strided view expresses.

ShuffleNet concatenates two branches, shuffles the channels (a Reshape, a Transpose and a Reshape back) and
splits the result in halves: after a few blocks a map's channels are runs of columns of many earlier maps.
No data moves for that. The importer keeps, per channel, which stored map and which column hold it (`ids`,
over every dimension but the trailing H and W), follows the layout ops on that table, and lets each consumer
read the runs: a convolution sums one share of its reduction per run (the host lays the weight's input rows
out in run order), and a depthwise convolution or a pooling, which keep channels apart, runs once per run
(docs/import.md#shuffles).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .views import LayoutError, View, column_range, map_columns, pixel_map

_COLUMN_BITS = 32


@dataclass
class ChannelMap:
    shape: Tuple[int, ...]  # the logical shape; the last two dimensions are the map's H and W
    ids: np.ndarray  # int64 over shape[:-2]: source << 32 | column
    sources: List[View]  # whole pixel-major maps [N, C_s, H, W], all storing their pixels alike
    levels: int

    @staticmethod
    def of_view(view: View, shape: Sequence[int]) -> Optional["ChannelMap"]:
        """A map of batch 1 whose channels are columns of one stored map, or None."""
        if len(shape) != 4 or shape[0] != 1:
            return None
        found = map_columns(view, shape)
        if found is None:
            return None
        levels, columns = found
        st = view.storage
        whole = pixel_map(st, [1, st.cols, shape[2], shape[3]], levels)
        return ChannelMap(tuple(shape), np.array(columns, dtype=np.int64).reshape(1, -1), [whole], levels)

    @staticmethod
    def concat(parts: List["ChannelMap"], axis: int) -> "ChannelMap":
        levels = {p.levels for p in parts}
        pixels = {p.shape[-2:] for p in parts}
        if len(levels) != 1 or len(pixels) != 1:
            raise LayoutError("a channel concat of maps whose pixels are stored in different orders")
        sources: List[View] = []
        ids = []
        for p in parts:
            shift = len(sources) << _COLUMN_BITS
            sources += p.sources
            ids.append(p.ids + shift)
        merged = np.concatenate(ids, axis=axis)
        shape = tuple(merged.shape) + tuple(parts[0].shape[-2:])
        return ChannelMap(shape, merged, sources, levels.pop())._deduplicated()

    def _deduplicated(self) -> "ChannelMap":
        """One source per distinct source view (a map concatenated with a part of itself)."""
        keys: dict = {}
        remap = np.zeros(len(self.sources), dtype=np.int64)
        sources: List[View] = []
        for i, s in enumerate(self.sources):
            if s not in keys:
                keys[s] = len(sources)
                sources.append(s)
            remap[i] = keys[s]
        ids = (remap[self.ids >> _COLUMN_BITS] << _COLUMN_BITS) | (self.ids & ((1 << _COLUMN_BITS) - 1))
        return ChannelMap(self.shape, ids, sources, self.levels)

    def with_ids(self, ids: np.ndarray, shape: Sequence[int]) -> "ChannelMap":
        if tuple(ids.shape) != tuple(shape[:-2]) or tuple(shape[-2:]) != tuple(self.shape[-2:]):
            raise LayoutError(f"a layout op from {list(self.shape)} to {list(shape)} that moves the pixels of a "
                              "map whose channels are shuffled")
        return ChannelMap(tuple(shape), ids, self.sources, self.levels)

    def as_view(self) -> Optional[View]:
        """The plain view when the channels are one run of one map in order (a half that is still whole)."""
        if len(self.shape) != 4:
            return None
        flat = self.ids.reshape(-1)
        if len(set((flat >> _COLUMN_BITS).tolist())) != 1:
            return None
        span = column_range((flat & ((1 << _COLUMN_BITS) - 1)).tolist())
        if span is None:
            return None
        return self.sources[int(flat[0] >> _COLUMN_BITS)].slice(1, *span)

    def runs(self) -> List[Tuple[View, List[int]]]:
        """The channels grouped into runs of consecutive columns of one source, in source and column order:
        each run's view ([1, width, H, W]) and the logical channels it holds, in run order."""
        if len(self.shape) != 4:
            raise LayoutError(f"a map of shape {list(self.shape)} read as a feature map")
        flat = self.ids.reshape(-1)
        order = np.argsort(flat, kind="stable")
        runs: List[Tuple[View, List[int]]] = []
        start = 0
        for i in range(1, len(order) + 1):
            if i == len(order) or flat[order[i]] != flat[order[i - 1]] + 1:
                first = int(flat[order[start]])
                source, c0 = first >> _COLUMN_BITS, first & ((1 << _COLUMN_BITS) - 1)
                runs.append((self.sources[source].slice(1, c0, c0 + i - start), order[start:i].tolist()))
                start = i
        return runs

    @staticmethod
    def of_runs(outputs: List[View], runs: List[Tuple[View, List[int]]], shape: Sequence[int],
                levels: int) -> "ChannelMap":
        """The map a per-run op makes: logical channel j of run r is column (j's place in r) of output r."""
        ids = np.zeros(prod(shape[:-2]), dtype=np.int64)
        for index, (_, channels) in enumerate(runs):
            ids[channels] = (index << _COLUMN_BITS) + np.arange(len(channels), dtype=np.int64)
        return ChannelMap(tuple(shape), ids.reshape(shape[:-2]), list(outputs), levels)

    # ---- layout ops, on the table --------------------------------------------------------------------------

    def reshape(self, shape: Sequence[int]) -> "ChannelMap":
        if tuple(shape[-2:]) != tuple(self.shape[-2:]):
            raise LayoutError(f"a reshape from {list(self.shape)} to {list(shape)} that moves the pixels of a map "
                              "whose channels are shuffled")
        return self.with_ids(self.ids.reshape(tuple(shape[:-2])), shape)

    def transpose(self, perm: Sequence[int]) -> "ChannelMap":
        rank = len(self.shape)
        if list(perm[-2:]) != [rank - 2, rank - 1]:
            raise LayoutError(f"a transpose {list(perm)} that moves the pixels of a map whose channels are "
                              "shuffled")
        return self.with_ids(self.ids.transpose(list(perm[:-2])), [self.shape[p] for p in perm])

    def slice(self, axis: int, start: int, end: int, step: int = 1) -> "ChannelMap":
        if axis >= len(self.shape) - 2:
            raise LayoutError("a slice of the pixels of a map whose channels are shuffled")
        index = [slice(None)] * self.ids.ndim
        index[axis] = slice(start, end, step)
        ids = self.ids[tuple(index)]
        return self.with_ids(ids, tuple(ids.shape) + tuple(self.shape[-2:]))
