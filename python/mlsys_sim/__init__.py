"""mlsys_sim: the MLSys 2026 scheduling simulator from Python.

Every call goes to the C++ library the command lines use (verify, simulate, mlsys, t10): the same step model,
the same figures. Problems and schedules come from a path, a JSON string or a dict; malformed input raises
InputError (a ValueError) with the command line's message; a broken rule is a value in the result.
"""

from . import _core
from ._core import (
    InputError,
    LowerBound,
    Problem,
    Report,
    ReplayResult,
    Schedule,
    SubgraphChoice,
    SolveResult,
    SubgraphCost,
    SubgraphQuery,
    SubgraphReport,
    SubgraphSpec,
    T10Evaluation,
    T10Plan,
    T10Problem,
    T10RankedPlan,
    T10SearchResult,
    Violation,
    WorkingSet,
    WorkingSetTerm,
    best_subgraph,
    bound,
    lower_bound,
    replay,
    solve,
    steps,
    subgraph_cost,
    t10_evaluate,
    t10_simulate,
    t10_search,
    verify,
)



def t10_compile(model, reconcile="exact", sram=None, simulate=True, functional=False, dims=None):
    """A whole network compiled into one T10 compute-shift program, as `t10 compile` does
    (docs/t10-programs.md): `model` is an ONNX path (lowered by the importer's T10 lowering), a T10 model
    file or graph problem (path, JSON string or dict). Returns the compiled program's dict (ops, transitions,
    total_cycles, peak_sram_bytes, the compiler's and the simulation's figures). Raises InputError when the
    model does not fit the chip (the bytes it needs) or cannot be read."""
    import os

    if isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".onnx"):
        from .importer.t10_lowering import import_onnx_t10

        model = import_onnx_t10(os.fspath(model), dims=dims)
    return _core._t10_compile(model, reconcile, int(sram or 0), simulate, functional)


def import_onnx(model, hardware, **kwargs):
    """An ONNX model as a problem dict of the contest format, priced by a hardware profile (a preset name,
    a JSON path or a dict). See mlsys_sim.importer.import_onnx and docs/import.md; needs python3-onnx."""
    from .importer import import_onnx as _import_onnx

    return _import_onnx(model, hardware, **kwargs)


def import_torch(module, example_inputs, hardware, **kwargs):
    """A torch.nn.Module, exported with torch.onnx.export (eval mode, opset 17 by default), as a problem dict.
    See mlsys_sim.importer.import_torch; needs python3-torch and python3-onnx."""
    from .importer import import_torch as _import_torch

    return _import_torch(module, example_inputs, hardware, **kwargs)


__all__ = [name for name in dir() if not name.startswith("_")]
