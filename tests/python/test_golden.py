"""Every golden case of the rule book (tests/golden/cases.json): verify() from Python gives the rule book's
hand-derived figures and exactly the report `verify --json` prints; the subgraph question and the replay
agree with it subgraph by subgraph."""

import math
import re

import mlsys_sim
import pytest

from conftest import GOLDEN_DIR, cli_json, cli_options, golden_cases, run_cli

CASES = golden_cases()


def load_case(case):
    problem = mlsys_sim.Problem(GOLDEN_DIR / case["problem"])
    schedule = mlsys_sim.Schedule(GOLDEN_DIR / case["solution"], problem)
    return problem, schedule


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_matches_rule_book_and_cli(case):
    problem, schedule = load_case(case)
    report = mlsys_sim.verify(problem, schedule, **cli_options(case["options"]))
    if case["expect"] == "valid":
        assert report.valid, str(report.error)
        assert report.total_latency == pytest.approx(case["expected_total"], rel=1e-9)
        assert report.subgraph_latencies == pytest.approx(case["expected_subgraph_latencies"], rel=1e-9)
    else:
        assert not report.valid
        assert report.error.rule == case["rule"]
        where = case["error_at"]
        if "subgraph" in where:
            assert report.error.subgraph == where["subgraph"]
        if case["expect"] == "oom":
            assert (report.error.tile, report.error.k_step) == (where["tile"], where["k_step"])
            ws = report.error.working_set
            assert ws.total == ws.retained_in + ws.slices + ws.outputs + ws.accumulators
            assert ws.total == where["working_set"]
            assert ws.accumulators == sum(t.elements for t in ws.terms if t.part == "D")
            assert ws.total > report.error.capacity
            assert sum(t.elements for t in ws.terms) == ws.total
    code, cli = cli_json("verify", GOLDEN_DIR / case["problem"], GOLDEN_DIR / case["solution"], "--json",
                         *case["options"])
    assert code == (0 if report.valid else 1)
    assert report.to_dict() == cli


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_subgraph_question_agrees_with_verify(case):
    """Each subgraph asked on its own (what it receives retained, what it retains) costs what verify found."""
    problem, schedule = load_case(case)
    options = cli_options(case["options"])
    report = mlsys_sim.verify(problem, schedule, **options)
    model = {k: v for k, v in options.items() if k != "strict"}
    retained_in = []
    for i, sub in enumerate(schedule.subgraphs):
        answer = mlsys_sim.subgraph_cost(problem, sub.ops, sub.granularity, retained_in=retained_in,
                                         retain=sub.retain, traversal=sub.traversal, index=i, **model)
        if report.error is not None and report.error.subgraph == i:
            if report.error.rule in ("M20", "M17", "M6", "M11", "M12", "M13", "M14"):
                # A rule of the subgraph itself: the question finds the same rule at the same step.
                assert not answer.feasible and math.isinf(answer.latency)
                assert (answer.violation.rule, answer.violation.tile, answer.violation.k_step) == (
                    report.error.rule, report.error.tile, report.error.k_step)
            break
        assert answer.feasible, str(answer.violation)
        assert answer.latency == pytest.approx(report.subgraphs[i].latency, rel=1e-12)
        assert answer.peak_working_set == report.subgraphs[i].peak_working_set
        assert answer.steps == report.subgraphs[i].steps
        retained_in = sorted(set(sub.retain))


@pytest.mark.parametrize("case", [c for c in CASES if c["expect"] == "valid"], ids=lambda c: c["id"])
def test_replay_agrees_with_verify(case):
    problem, schedule = load_case(case)
    options = cli_options(case["options"])
    options.pop("strict", None)
    result = mlsys_sim.replay(problem, schedule, **options)
    assert result.completed
    assert result.total_latency == pytest.approx(case["expected_total"], rel=1e-9)
    assert result.subgraph_latencies == pytest.approx(case["expected_subgraph_latencies"], rel=1e-9)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_steps_add_up_to_the_report(case):
    """steps() lists what `verify --steps` lists; each step is its roofline (M25) of its own transfers, and the
    steps of a subgraph add up to its latency."""
    problem, schedule = load_case(case)
    options = cli_options(case["options"])
    report = mlsys_sim.verify(problem, schedule, **options)
    options.pop("strict", None)
    listed = mlsys_sim.steps(problem, schedule, **options)
    _, out, _ = run_cli("verify", GOLDEN_DIR / case["problem"], GOLDEN_DIR / case["solution"], "--steps",
                        *case["options"])
    lines = [line for line in out.splitlines() if re.match(r"sg \d+ step ", line)]
    assert len(listed) == len(lines)
    for step, line in zip(listed, lines):
        ws = step["working_set"]
        parts = (ws.retained_in, ws.slices, ws.outputs, ws.accumulators)
        printed = re.search(r"\| WS (\d+)/\S+ \(A (\d+) \+ B (\d+) \+ C (\d+) \+ D (\d+)\)$", line)
        assert printed, line
        assert tuple(int(x) for x in printed.groups()) == (ws.total, *parts), line
        assert sum(parts) == ws.total == sum(t.elements for t in ws.terms)
    for step in listed:
        assert step["latency"] == max(step["compute"], step["memory_time"])
        moved = step["load_elements"] + step["store_elements"]
        assert step["memory_time"] == pytest.approx(moved / problem.slow_memory_bandwidth, rel=1e-12)
        assert step["load_elements"] == sum((r[1] - r[0]) * (r[3] - r[2]) for _, r, loaded in step["slices"] if loaded)
        assert step["working_set"].total <= problem.fast_memory_capacity
    for sub in report.subgraphs:
        mine = [s["latency"] for s in listed if s["subgraph"] == sub.index]
        if report.error is None or report.error.subgraph != sub.index:
            assert len(mine) == sub.steps
            assert math.fsum(mine) == pytest.approx(sub.latency, rel=1e-9)
