"""The Python API's contract: sources (path, JSON string, dict) and round trips, malformed input raising
ValueError with the command line's message, violations as values, the subgraph question, lower bounds,
replay traces, pickling, and solve() releasing the GIL and stopping on Ctrl-C."""

import ast
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import pytest

import mlsys_sim
from conftest import GOLDEN_DIR, SOURCE_DIR, cli_error, cli_json

EX1 = GOLDEN_DIR / "ex1_problem.json"
EX1A = GOLDEN_DIR / "ex1A_solution.json"
CHAIN = {  # three Pointwise ops in a chain, 128x128 tensors (a hand-made problem)
    "widths": [128, 128, 128, 128], "heights": [128, 128, 128, 128],
    "inputs": [[0], [1], [2]], "outputs": [[1], [2], [3]], "base_costs": [100, 100, 100],
    "op_types": ["Pointwise", "Pointwise", "Pointwise"],
    "fast_memory_capacity": 40000, "slow_memory_bandwidth": 10, "native_granularity": [128, 128],
}


def test_problem_from_path_string_dict_agree():
    text = EX1.read_text()
    from_path = mlsys_sim.Problem(EX1)
    for other in (mlsys_sim.Problem(str(EX1)), mlsys_sim.Problem(text), mlsys_sim.Problem.from_json(text),
                  mlsys_sim.Problem(json.loads(text)), mlsys_sim.Problem.from_dict(json.loads(text))):
        assert other.to_dict() == from_path.to_dict()
    assert from_path.to_dict() == json.loads(text)
    assert mlsys_sim.Problem(json.loads(text)).source == "<dict>"


def test_schedule_round_trip_and_sources():
    problem = mlsys_sim.Problem(EX1)
    schedule = mlsys_sim.Schedule(EX1A, problem)
    again = mlsys_sim.Schedule(schedule.to_dict(), problem)
    assert again.to_dict() == schedule.to_dict()
    assert mlsys_sim.Schedule(schedule.to_json(), EX1).to_dict() == schedule.to_dict()
    assert len(schedule) == 2 and schedule.subgraphs[0].ops == [0]
    # verify() takes a problem and a schedule in any of the forms, with the same answer.
    reports = [mlsys_sim.verify(problem, schedule), mlsys_sim.verify(EX1, EX1A),
               mlsys_sim.verify(json.loads(EX1.read_text()), json.loads(EX1A.read_text()))]
    assert [r.total_latency for r in reports] == [6553.6] * 3


def test_schedule_saved_atomically(tmp_path):
    problem = mlsys_sim.Problem(EX1)
    target = tmp_path / "out.json"
    mlsys_sim.Schedule(EX1A, problem).save(target)
    assert json.loads(target.read_text()) == mlsys_sim.Schedule(EX1A, problem).to_dict()
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary left behind


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


BAD_PROBLEMS = {
    "truncated": '{"widths": [128, 128], "heights": [128',
    "wrong type": EX1.read_text().replace('"base_costs": [1000, 100]', '"base_costs": ["fast", 100]'),
    "shape mismatch": EX1.read_text().replace('"heights": [128, 128, 128]', '"heights": [128, 128]'),
    "cycle": json.dumps({**CHAIN, "inputs": [[2], [1], [2]]}),
    "out of range": json.dumps({**CHAIN, "inputs": [[0], [9], [2]]}),
    "not an object": "[1, 2, 3]",
}


@pytest.mark.parametrize("kind", BAD_PROBLEMS)
def test_malformed_problem_raises_the_cli_message(kind, tmp_path):
    path = write(tmp_path, "problem.json", BAD_PROBLEMS[kind])
    expected = cli_error("verify", path, EX1A)
    with pytest.raises(ValueError) as caught:
        mlsys_sim.Problem(path)
    assert str(caught.value) == expected
    assert isinstance(caught.value, mlsys_sim.InputError)
    assert caught.value.file == str(path) and caught.value.rule in ("M1", "M2")
    # The same text as a string: the same message, naming "<json>" instead of the file.
    with pytest.raises(mlsys_sim.InputError) as from_text:
        mlsys_sim.Problem.from_json(BAD_PROBLEMS[kind])
    assert str(from_text.value) == expected.replace(str(path), "<json>")


def test_malformed_schedule_raises_the_cli_message(tmp_path):
    solution = json.loads(EX1A.read_text())
    cases = {
        "op index": {**solution, "subgraphs": [[0], [7]]},
        "granularity": {**solution, "granularities": [[128, 128], [128, 128, 1]]},
        "lengths": {**solution, "tensors_to_retain": [[]]},
        "type": {**solution, "subgraphs": "all"},
    }
    for kind, doc in cases.items():
        path = write(tmp_path, f"{kind}.json", json.dumps(doc))
        expected = cli_error("verify", EX1, path)
        with pytest.raises(ValueError, match="M4") as caught:
            mlsys_sim.Schedule(path, EX1)
        assert str(caught.value) == expected, kind
        with pytest.raises(ValueError) as from_dict:
            mlsys_sim.verify(EX1, doc)
        assert str(from_dict.value) == expected.replace(str(path), "<dict>"), kind


def test_missing_file_and_wrong_python_types():
    with pytest.raises(ValueError, match="cannot open file"):
        mlsys_sim.Problem("/nonexistent/problem.json")
    with pytest.raises(TypeError):
        mlsys_sim.Problem(42)
    with pytest.raises(ValueError, match="not JSON data"):
        mlsys_sim.Problem({"widths": [float("nan")]})
    with pytest.raises(ValueError, match="compute"):
        mlsys_sim.verify(EX1, EX1A, compute="half-k")


def test_invalid_schedule_is_a_value_with_its_terms():
    """ex5A breaks M20 at its first step: the report says where, with each term against the capacity."""
    case = next(c for c in json.loads((GOLDEN_DIR / "cases.json").read_text())["cases"] if c["id"] == "ex5A")
    report = mlsys_sim.verify(GOLDEN_DIR / case["problem"], GOLDEN_DIR / case["solution"])
    assert not report.valid and not report
    error = report.error
    assert (error.rule, error.subgraph, error.tile, error.k_step) == ("M20", 0, 0, 0)
    assert error.working_set.total == case["error_at"]["working_set"]
    assert error.capacity == 45000
    assert {t.part for t in error.working_set.terms} == {"B", "C"}
    assert "out of fast memory" in error.message and str(error).startswith("[M20] subgraph 0, step 0")
    assert report.violations[0].rule == "M20"


def test_strict_turns_a_wrong_reported_latency_into_an_error():
    solution = json.loads(EX1A.read_text())
    solution["subgraph_latencies"] = [1.0, 3276.8]
    loose = mlsys_sim.verify(EX1, solution)
    assert loose.valid and [w.rule for w in loose.warnings] == ["M27"]
    strict = mlsys_sim.verify(EX1, solution, strict=True)
    assert not strict.valid and strict.error.rule == "M27" and strict.error.subgraph == 0


def test_subgraph_question_hand_derived():
    """CHAIN, all three ops fused at [128, 128, 1]: one step loads T0 (16384/10 = 1638.4) and stores T3
    (1638.4); compute 300 < 3276.8, so the latency is 3276.8; working set T0 + T3 = 32768 (the intermediates
    are ephemeral)."""
    problem = mlsys_sim.Problem(CHAIN)
    answer = mlsys_sim.subgraph_cost(problem, [0, 1, 2], (128, 128, 1))
    assert answer.feasible and answer.latency == pytest.approx(3276.8, rel=1e-12)
    assert answer.peak_working_set == 32768 and answer.steps == 1 and answer.grid == (1, 1)
    # Split into 64x64 tiles: 4 steps of 409.6 + 409.6 each (819.2) against compute 75 per step.
    tiled = mlsys_sim.subgraph_cost(problem, [0, 1, 2], (64, 64, 1), traversal="row-snake")
    assert tiled.grid == (2, 2) and tiled.latency == pytest.approx(4 * 819.2, rel=1e-12)
    # Retaining the output adds its finished tiles to the working set; at capacity 16000 [128,128] cannot fit.
    small = mlsys_sim.Problem({**CHAIN, "fast_memory_capacity": 16000})
    oom = mlsys_sim.subgraph_cost(small, [0, 1, 2], (128, 128, 1))
    assert not oom and math.isinf(oom.latency)
    assert oom.violation.rule == "M20" and oom.violation.working_set.total == 32768
    assert oom.violation.tile == 0 and oom.violation.k_step == 0
    # A prepared query answers the same.
    query = problem.subgraph([0, 1, 2])
    assert query.cost((128, 128, 1)).latency == answer.latency
    assert query.cost((64, 64, 1), [0, 1, 3, 2]).latency == tiled.latency


def test_subgraph_question_rejects_bad_indices_and_breaks_rules_as_values():
    problem = mlsys_sim.Problem(CHAIN)
    with pytest.raises(ValueError, match=r"ops\[1\]"):
        mlsys_sim.subgraph_cost(problem, [0, 99], (128, 128, 1))
    with pytest.raises(ValueError, match="retain"):
        problem.subgraph([0], retain=[-1])
    with pytest.raises(ValueError, match="granularity"):
        mlsys_sim.subgraph_cost(problem, [0], (128, 128))
    with pytest.raises(ValueError, match="traversal"):
        mlsys_sim.subgraph_cost(problem, [0], (128, 128, 1), traversal="zigzag")
    with pytest.raises(TypeError, match="traversal"):
        mlsys_sim.subgraph_cost(problem, [0], (128, 128, 1), traversal={"order": 1})
    bad_order = mlsys_sim.subgraph_cost(problem, [0], (64, 64, 1), traversal=[0, 1, 1, 2])
    assert not bad_order.feasible and bad_order.violation.rule == "M11"
    bad_w = mlsys_sim.subgraph_cost(problem, [0], (0, 64, 1))
    assert not bad_w.feasible and bad_w.violation.rule == "M6"


def test_best_subgraph_is_the_oracles_answer_and_asks_back_the_same():
    """CHAIN fused: loading T0 and storing T3 once (3276.8) is the least any configuration pays, and
    [128, 128, 1] reaches it; the answer, asked back as a question, costs what the oracle said."""
    problem = mlsys_sim.Problem(CHAIN)
    choice, reason = mlsys_sim.best_subgraph(problem, [0, 1, 2])
    assert reason == "" and choice.latency == pytest.approx(3276.8, rel=1e-12)
    again = mlsys_sim.subgraph_cost(problem, [0, 1, 2], choice.granularity, traversal=choice.traversal)
    assert again.latency == choice.latency and again.peak_working_set == choice.peak_working_set
    bench = mlsys_sim.Problem(SOURCE_DIR / "benchmarks" / "mlsys-2026-5.json")
    for op in bench.topological_order[:4]:
        choice, _ = mlsys_sim.best_subgraph(bench, [op])
        asked = mlsys_sim.subgraph_cost(bench, [op], choice.granularity, traversal=choice.traversal)
        assert asked.feasible and asked.latency == pytest.approx(choice.latency, rel=1e-12)
    none, why = mlsys_sim.best_subgraph({**CHAIN, "fast_memory_capacity": 100}, [0])
    assert none is None and "M20" in why
    with pytest.raises(ValueError, match=r"ops\[0\]"):
        mlsys_sim.best_subgraph(problem, [5])


def test_lower_bound_matches_cli():
    for path in (SOURCE_DIR / "benchmarks" / "mlsys-2026-5.json", EX1):
        code, cli = cli_json("verify", path, "--lower-bound", "--json")
        bound = mlsys_sim.lower_bound(path)
        assert code == 0
        assert (bound.compute_full_k, bound.compute_native_k, bound.io) == (
            cli["compute_full_k"], cli["compute_native_k"], cli["io"])
        assert bound.bound() == cli["bound"]


def test_replay_writes_traces(tmp_path):
    trace, vcd = tmp_path / "trace.json", tmp_path / "run.vcd"
    result = mlsys_sim.replay(EX1, EX1A, trace=trace, vcd=vcd)
    assert result.completed and result.total_latency == pytest.approx(6553.6, rel=1e-12)
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name", "").startswith("subgraph") for e in events)
    assert vcd.read_text().startswith("$")
    overlapped = mlsys_sim.replay(EX1, EX1A, timing="overlapped")
    assert overlapped.total_latency <= result.total_latency
    with pytest.raises(ValueError, match="max-steps"):
        mlsys_sim.replay(EX1, EX1A, max_steps=1)
    with pytest.raises(ValueError, match="max-steps"):
        mlsys_sim.steps(EX1, EX1A, max_steps=1)


def test_cmake_install_gives_an_importable_package(tmp_path):
    """`cmake --install --prefix DIR` lays out a package a fresh interpreter imports, with its type stub."""
    build = os.environ.get("MLSYS_BUILD_DIR", str(SOURCE_DIR / "build" / "release"))
    done = subprocess.run(["cmake", "--install", build, "--prefix", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    site = next(tmp_path.glob("lib/python3*/dist-packages"))
    assert {p.name for p in (site / "mlsys_sim").iterdir()} >= {"__init__.py", "__init__.pyi", "py.typed"}
    check = subprocess.run(
        [sys.executable, "-c", "import mlsys_sim; print(mlsys_sim.__file__); "
         f"print(mlsys_sim.verify({str(EX1)!r}, {str(EX1A)!r}).total_latency)"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert check.returncode == 0, check.stderr
    location, total = check.stdout.split()
    assert location.startswith(str(site)) and float(total) == 6553.6


def test_stub_names_what_the_module_has():
    stub = (SOURCE_DIR / "python" / "mlsys_sim" / "__init__.pyi").read_text()
    ast.parse(stub)  # a stub with a syntax error is no stub
    for name in mlsys_sim.__all__:
        assert f"class {name}" in stub or f"def {name}(" in stub, name


def test_pickle_round_trip():
    problem = mlsys_sim.Problem(EX1)
    schedule = mlsys_sim.Schedule(EX1A, problem)
    problem2, schedule2 = pickle.loads(pickle.dumps((problem, schedule)))
    assert problem2.to_dict() == problem.to_dict() and problem2.source == problem.source
    assert mlsys_sim.verify(problem2, schedule2).total_latency == 6553.6


def test_schedule_of_another_problem_is_checked_against_this_one():
    ex1 = mlsys_sim.Problem(EX1)
    schedule = mlsys_sim.Schedule(EX1A, ex1)
    with pytest.raises(ValueError, match="M4"):
        mlsys_sim.verify(CHAIN | {"widths": [128, 128], "heights": [128, 128], "inputs": [[0]], "outputs": [[1]],
                                  "base_costs": [100], "op_types": ["Pointwise"]}, schedule)


BIG = SOURCE_DIR / "benchmarks" / "mlsys-2026-14.json"  # its search runs to the timeout


def counting_thread(seconds_box, stop):
    def run():
        n = 0
        while not stop.is_set():
            n += 1
        seconds_box.append(n)
    return threading.Thread(target=run)


def count_while(action):
    stop, box = threading.Event(), []
    thread = counting_thread(box, stop)
    thread.start()
    start = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - start
    stop.set()
    thread.join()
    return result, box[0] / elapsed


def test_solve_releases_the_gil():
    """A second Python thread keeps counting while solve() runs on one search thread: were the GIL held,
    it would count (almost) nothing until solve returned."""
    problem = mlsys_sim.Problem(BIG)
    _, idle_rate = count_while(lambda: time.sleep(0.5))
    result, busy_rate = count_while(lambda: mlsys_sim.solve(problem, timeout=1.5, threads=1, seed=3))
    assert result.schedule is not None and 0.5 < result.elapsed < 1.5 + 0.5
    assert busy_rate > 0.3 * idle_rate, (busy_rate, idle_rate)


def test_keyboard_interrupt_stops_the_search_cleanly():
    problem = mlsys_sim.Problem(BIG)
    improvements = []
    timer = threading.Timer(0.7, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        mlsys_sim.solve(problem, timeout=60, threads=2,
                        on_improvement=lambda s, cost, strategy: improvements.append((cost, s)))
    assert time.perf_counter() - start < 20  # a guard: the timeout is 60 s
    assert improvements, "improvements before the interrupt were handed over"
    costs = [c for c, _ in improvements]
    assert costs == sorted(costs, reverse=True)
    best_cost, best = improvements[-1]
    assert mlsys_sim.verify(problem, best, strict=True).total_latency == pytest.approx(best_cost, rel=1e-12)
    # The search threads are gone: another solve runs normally.
    assert mlsys_sim.solve(problem, timeout=1, threads=1).schedule is not None


def test_exception_in_callback_stops_the_search():
    def fail(schedule, cost, strategy):
        raise RuntimeError("enough")
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="enough"):
        mlsys_sim.solve(BIG, timeout=60, on_improvement=fail)
    assert time.perf_counter() - start < 20  # a guard: the timeout is 60 s


def test_solve_reports_what_the_exact_search_proved():
    """On graphs of at most 20 ops the search runs the branch and bound over every grouping (docs/solver.md,
    exact search). Benchmark 4 (5 ops, 11 sets of done ops) completes it, which ends the search: nothing
    without recomputation costs less than the result. Benchmark 14 (more than 20 ops) never runs it."""
    small = mlsys_sim.solve(SOURCE_DIR / "benchmarks" / "mlsys-2026-4.json", timeout=30)
    assert small.exhaustive_complete
    assert small.stopped_by == "exhaustive search done"
    assert small.exact_space_bound == pytest.approx(small.cost, rel=1e-12)
    large = mlsys_sim.solve(BIG, timeout=1, threads=1)
    assert large.exact_space_bound is None
    assert not large.exhaustive_complete


def test_solve_reports_infeasible_as_a_value():
    """A tensor larger than fast memory at every granularity: no schedule, and why."""
    tiny = {**CHAIN, "fast_memory_capacity": 100, "native_granularity": [128, 128]}
    result = mlsys_sim.solve(tiny, timeout=1, threads=1)
    assert result.schedule is None and result.cost is None and "M20" in result.infeasible_reason


def test_readme_tour_runs_as_written(tmp_path, monkeypatch):
    """The README's Python example, run as it stands (in a folder with the repository's data)."""
    import re

    code = re.search(r"```python\n(.*?)```", (SOURCE_DIR / "README.md").read_text(), re.S).group(1)
    for folder in ("benchmarks", "tests"):
        (tmp_path / folder).symlink_to(SOURCE_DIR / folder)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["report"].valid and scope["replayed"].completed
    assert json.loads((tmp_path / "out" / "trace.json").read_text())["traceEvents"]
