"""Type stub of mlsys_sim (the extension mlsys_sim._core). Keep in step with python/*.cpp."""

import os
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Tuple, Union

JsonSource = Union[str, "os.PathLike[str]", dict, list]
"""A path, a JSON string (starting with '{' or '['), or the parsed JSON (dict/list)."""
Compute = Literal["full-k", "native-k"]
Traversal = Union[None, Literal["raster", "row-snake", "column-snake"], Sequence[int]]

class InputError(ValueError):
    """Malformed input: the message is the command line's."""

    file: str
    field: str
    rule: str

class Problem:
    """A problem (M1), its graph checked (M2) and analysed (M3)."""

    def __init__(self, source: JsonSource) -> None: ...
    @staticmethod
    def from_file(path: Union[str, "os.PathLike[str]"]) -> Problem: ...
    @staticmethod
    def from_json(text: str) -> Problem: ...
    @staticmethod
    def from_dict(data: dict) -> Problem: ...
    def to_dict(self) -> dict: ...
    @property
    def source(self) -> str: ...
    @property
    def num_ops(self) -> int: ...
    @property
    def num_tensors(self) -> int: ...
    @property
    def widths(self) -> list[int]: ...
    @property
    def heights(self) -> list[int]: ...
    @property
    def inputs(self) -> list[list[int]]: ...
    @property
    def outputs(self) -> list[list[int]]: ...
    @property
    def base_costs(self) -> list[float]: ...
    @property
    def op_types(self) -> list[Literal["MatMul", "Pointwise"]]: ...
    @property
    def fast_memory_capacity(self) -> float: ...
    @property
    def slow_memory_bandwidth(self) -> float: ...
    @property
    def native_granularity(self) -> Tuple[int, int]: ...
    @property
    def topological_order(self) -> list[int]: ...
    def subgraph(
        self,
        ops: Sequence[int],
        retained_in: Sequence[int] = ...,
        retain: Sequence[int] = ...,
        compute: Compute = "full-k",
        allow_supernative_k: bool = False,
        index: int = 0,
    ) -> SubgraphQuery:
        """Compiles one subgraph's structure once, for many cost questions."""

class LowerBound:
    """The rule book's lower bounds (section 8)."""

    compute_full_k: float
    compute_native_k: float
    io: float
    def bound(self, compute: Compute = "full-k") -> float: ...
    def to_dict(self) -> dict: ...

def lower_bound(problem: Union[Problem, JsonSource]) -> LowerBound: ...
def bound(problem: Union[Problem, JsonSource], matmul_compute: Literal["full-k", "native-k"] = ...,
          allow_supernative_k: bool = ...) -> Dict[str, Any]: ...

class WorkingSetTerm:
    """One term of a working set (M20): part A retained-in, B slice, C output tile, D split-K partial sum
    without a host."""

    part: Literal["A", "B", "C", "D"]
    tensor: int
    region: Tuple[int, int, int, int]
    elements: int

class WorkingSet:
    retained_in: int
    slices: int
    outputs: int
    accumulators: int
    total: int
    terms: list[WorkingSetTerm]

class Violation:
    """A rule the schedule breaks, where, and its terms."""

    rule: str
    subgraph: int
    position: Optional[int]
    tile: Optional[int]
    k_step: Optional[int]
    op: Optional[int]
    tensor: Optional[int]
    message: str
    working_set: Optional[WorkingSet]
    capacity: float
    def to_dict(self) -> dict: ...

class SubgraphCost:
    """One subgraph question's answer: its cost, or the rule it breaks (latency inf)."""

    feasible: bool
    latency: float
    compute_time: float
    memory_time: float
    compute_bound_latency: float
    peak_working_set: int
    steps: int
    grid: Tuple[int, int]
    k_steps: int
    violation: Optional[Violation]
    def __bool__(self) -> bool: ...

class SubgraphQuery:
    def cost(
        self,
        granularity: Sequence[int],
        traversal: Traversal = None,
        locate: bool = True,
        max_steps: int = 10_000_000,
    ) -> SubgraphCost: ...

def subgraph_cost(
    problem: Union[Problem, JsonSource],
    ops: Sequence[int],
    granularity: Sequence[int],
    retained_in: Sequence[int] = ...,
    retain: Sequence[int] = ...,
    traversal: Traversal = None,
    compute: Compute = "full-k",
    allow_supernative_k: bool = False,
    locate: bool = True,
    index: int = 0,
    max_steps: int = 10_000_000,
) -> SubgraphCost:
    """The cost of one subgraph at one granularity (the oracle's fast path); structures cached per problem."""

class SubgraphChoice:
    """The oracle's best configuration of one subgraph."""

    granularity: Tuple[int, int, int]
    traversal: Optional[list[int]]
    grid: Tuple[int, int]
    latency: float
    peak_working_set: int

def best_subgraph(
    problem: Union[Problem, JsonSource],
    ops: Sequence[int],
    retained_in: Sequence[int] = ...,
    retain: Sequence[int] = ...,
    compute: Compute = "full-k",
    allow_supernative_k: bool = False,
) -> Tuple[Optional[SubgraphChoice], str]:
    """The solver oracle's best configuration, or (None, the rule that rejected every candidate)."""

class SubgraphSpec:
    ops: list[int]
    granularity: Tuple[int, int, int]
    retain: list[int]
    traversal: Optional[list[int]]

class Schedule:
    """A schedule (M4), read against its problem."""

    def __init__(self, source: JsonSource, problem: Union[Problem, JsonSource]) -> None: ...
    @staticmethod
    def from_file(path: Union[str, "os.PathLike[str]"], problem: Union[Problem, JsonSource]) -> Schedule: ...
    @staticmethod
    def from_json(text: str, problem: Union[Problem, JsonSource]) -> Schedule: ...
    @staticmethod
    def from_dict(data: dict, problem: Union[Problem, JsonSource]) -> Schedule: ...
    def to_dict(self) -> dict: ...
    def to_json(self) -> str: ...
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the solution JSON atomically."""
    @property
    def problem(self) -> Problem: ...
    @property
    def source(self) -> str: ...
    @property
    def subgraphs(self) -> list[SubgraphSpec]: ...
    @property
    def reported_latencies(self) -> Optional[list[float]]: ...
    def __len__(self) -> int: ...

class SubgraphReport:
    index: int
    ops: list[int]
    granularity: Tuple[int, int, int]
    grid: Tuple[int, int]
    k_steps: int
    steps: int
    latency: float
    compute_time: float
    memory_time: float
    compute_bound_latency: float
    reported: Optional[float]
    peak_working_set: int

class Report:
    """What verify found: the same figures as `verify --json` (to_dict() is that JSON)."""

    valid: bool
    total_latency: float
    capacity: float
    subgraphs: list[SubgraphReport]
    subgraph_latencies: list[float]
    peak_working_set: int
    error: Optional[Violation]
    warnings: list[Violation]
    violations: list[Violation]
    lower_bound: float
    def to_dict(self) -> dict: ...
    def __bool__(self) -> bool: ...

def verify(
    problem: Union[Problem, JsonSource],
    schedule: Union[Schedule, JsonSource],
    compute: Compute = "full-k",
    strict: bool = False,
    allow_supernative_k: bool = False,
    max_steps: int = 10_000_000,
) -> Report: ...

def steps(
    problem: Union[Problem, JsonSource],
    schedule: Union[Schedule, JsonSource],
    compute: Compute = "full-k",
    allow_supernative_k: bool = False,
    max_steps: int = 1_000_000,
) -> list[dict[str, Any]]:
    """Every step, as `verify --steps` lists them (up to the first violation): subgraph, position, tile, k_step,
    slices [(tensor, region, loaded)], computes [(op, region, cost)], stores [(tensor, region)], load_elements,
    store_elements, compute, memory_time, latency, working_set."""

class ReplayResult:
    completed: bool
    total_latency: float
    subgraph_latencies: list[float]
    peak_occupancy: int
    steps: int
    error: Optional[Violation]
    error_time: float

def replay(
    problem: Union[Problem, JsonSource],
    schedule: Union[Schedule, JsonSource],
    compute: Compute = "full-k",
    allow_supernative_k: bool = False,
    timing: Literal["contest", "overlapped"] = "contest",
    trace: Optional[Union[str, "os.PathLike[str]"]] = None,
    vcd: Optional[Union[str, "os.PathLike[str]"]] = None,
    max_steps: int = 10_000_000,
) -> ReplayResult: ...

class SolveResult:
    schedule: Optional[Schedule]
    cost: Optional[float]
    lower_bound: float
    elapsed: float
    time_to_best: float
    time_to_first: float
    evaluations: int
    orders: int
    improvements: int
    best_strategy: str
    stopped_by: str
    infeasible_reason: str
    exhaustive_complete: bool

def solve(
    problem: Union[Problem, JsonSource],
    timeout: Optional[float] = None,
    threads: int = 2,
    seed: int = 1,
    max_orders: int = 0,
    exhaustive: bool = False,
    compute: Compute = "full-k",
    allow_supernative_k: bool = False,
    on_improvement: Optional[Callable[[Schedule, float, str], Any]] = None,
    progress: bool = False,
) -> SolveResult:
    """Searches without the GIL; Ctrl-C stops the search threads and raises KeyboardInterrupt."""

class T10Problem:
    def __init__(self, source: JsonSource) -> None: ...
    m: int
    k: int
    n: int
    cores: int
    sram_bytes_per_core: int
    name: str
    source: str
    compute_lower_bound: float

class T10Plan:
    def __init__(self, source: JsonSource) -> None: ...
    f_op: Tuple[int, int, int]
    def to_dict(self) -> dict: ...

Profile = Literal["strict", "engdesign"]

class T10Evaluation:
    accepted: bool
    total_cycles: Optional[float]
    score: Optional[float]
    violations: list[Tuple[str, str]]
    hot_bytes: int
    cores: int
    def to_dict(self) -> dict: ...
    def __bool__(self) -> bool: ...

def t10_simulate(
    problem: Union[T10Problem, JsonSource],
    plan: Union[T10Plan, JsonSource],
    timing: Literal["grader", "exchange", "calibrated"] = ...,
    functional: bool = ...,
    seed: int = ...,
) -> dict: ...
def t10_evaluate(
    problem: Union[T10Problem, JsonSource], plan: Union[T10Plan, JsonSource], profile: Profile = "strict"
) -> T10Evaluation: ...

class T10RankedPlan:
    plan: T10Plan
    total_cycles: float
    hot_bytes: int

class T10SearchResult:
    top: list[T10RankedPlan]
    ties: int
    evaluated: int
    pruned: int
    accepted: int

def t10_search(problem: Union[T10Problem, JsonSource], profile: Profile = "strict", top: int = 1) -> T10SearchResult: ...

def t10_compile(model: Union[str, "os.PathLike[str]", Dict[str, Any]], reconcile: Literal["exact", "heuristic"] = ...,
                sram: Optional[int] = ..., simulate: bool = ..., functional: bool = ...,
                dims: Optional[Dict[str, int]] = ...) -> Dict[str, Any]: ...
def import_onnx(model: Union[str, "os.PathLike[str]"], hardware: Union[str, Dict[str, Any]], *,
                dims: Optional[Dict[str, int]] = ..., passthrough: Optional[Dict[str, float]] = ...,
                max_ops: int = ..., report: bool = ...) -> Any: ...
def import_torch(module: Any, example_inputs: Any, hardware: Union[str, Dict[str, Any]], *, opset: int = ...,
                 dims: Optional[Dict[str, int]] = ..., dynamic_axes: Optional[Dict[str, Any]] = ...,
                 input_names: Optional[List[str]] = ..., onnx_path: Optional[str] = ...,
                 **kwargs: Any) -> Any: ...
