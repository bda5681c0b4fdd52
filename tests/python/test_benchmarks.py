"""The 24 official benchmarks: what solve() finds from Python is strict-valid at the cost it reports, and
verify() from Python gives exactly the report `verify --json` gives for it, and for the third-party schedules
(tests/data: the first- and fifth-place contest solvers), including the invalid ones."""

import pytest

import mlsys_sim
from conftest import BENCHMARKS, SOURCE_DIR, cli_json

THIRD_PARTY = sorted((SOURCE_DIR / "tests" / "data").glob("*/mlsys-2026-*.json"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_solver_output_verifies_the_same_in_python_and_cli(path, tmp_path):
    problem = mlsys_sim.Problem(path)
    # One thread and an order budget: quick, and the same schedule on any machine.
    result = mlsys_sim.solve(problem, timeout=5, threads=1, max_orders=6)
    assert result.schedule is not None, result.infeasible_reason
    assert result.cost >= result.lower_bound * (1 - 1e-12)
    report = mlsys_sim.verify(problem, result.schedule, strict=True)
    assert report.valid, str(report.error)
    assert report.total_latency == pytest.approx(result.cost, rel=1e-12)
    out = tmp_path / "solution.json"
    result.schedule.save(out)
    code, cli = cli_json("verify", path, out, "--json", "--strict")
    assert code == 0
    assert report.to_dict() == cli
    replayed = mlsys_sim.replay(problem, result.schedule)
    assert replayed.completed
    assert replayed.total_latency == pytest.approx(result.cost, rel=1e-9)


@pytest.mark.parametrize("path", THIRD_PARTY, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_third_party_schedules_verify_the_same_in_python_and_cli(path):
    bench = SOURCE_DIR / "benchmarks" / path.name
    report = mlsys_sim.verify(bench, path)
    code, cli = cli_json("verify", bench, path, "--json")
    assert code == (0 if report.valid else 1)
    assert report.to_dict() == cli
    if not report.valid:
        assert cli["errors"][0]["rule"] == report.error.rule
