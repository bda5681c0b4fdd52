"""mlsys_sim: the MLSys 2026 scheduling simulator from Python.

Every call goes to the C++ library the command lines use (verify, simulate, mlsys, t10): the same step model,
the same figures. Problems and schedules come from a path, a JSON string or a dict; malformed input raises
InputError (a ValueError) with the command line's message; a broken rule is a value in the result.
"""

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

__all__ = [name for name in dir() if not name.startswith("_")]
