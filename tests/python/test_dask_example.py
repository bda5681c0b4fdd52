"""examples/sweep_dask.py runs a capacity x bandwidth sweep on Dask: on its own LocalCluster, and on a
cluster given by its scheduler address. Every point's schedule is strict-valid under `verify` at that point,
with the total the CSV reports, and more capacity or bandwidth never makes the lower bound rise."""

import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR, cli_json

SCRIPT = SOURCE_DIR / "examples" / "sweep_dask.py"
PROBLEM = SOURCE_DIR / "benchmarks" / "mlsys-2026-3.json"


def run_sweep(out, *extra):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(PROBLEM), "--capacity", "20000,80000", "--bandwidth", "10,20",
         "--timeout", "1", "-o", str(out), *extra],
        capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "[4/4" in done.stderr  # progress per point
    with open(out / "sweep.csv") as f:
        return list(csv.DictReader(f))


def check_points(rows, out, tmp_path):
    assert {(r["capacity"], r["bandwidth"]) for r in rows} == {
        ("20000", "10"), ("20000", "20"), ("80000", "10"), ("80000", "20")}
    for row in rows:
        point = json.loads((out / f"point-{row['capacity']}-{row['bandwidth']}.json").read_text())
        assert point["problem"]["fast_memory_capacity"] == int(row["capacity"])
        problem, schedule = tmp_path / "p.json", tmp_path / "s.json"
        problem.write_text(json.dumps(point["problem"]))
        schedule.write_text(json.dumps(point["schedule"]))
        code, report = cli_json("verify", problem, schedule, "--json", "--strict")
        assert code == 0 and report["valid"]
        assert report["total_latency"] == pytest.approx(float(row["total_latency"]), rel=1e-12)
        assert float(row["total_latency"]) >= float(row["lower_bound"])


def test_sweep_on_its_local_cluster(tmp_path):
    out = tmp_path / "local"
    check_points(run_sweep(out), out, tmp_path)


def test_sweep_on_a_cluster_given_by_address(tmp_path):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        out = tmp_path / "remote"
        check_points(run_sweep(out, "--scheduler", cluster.scheduler_address), out, tmp_path)


def test_bad_problem_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    done = subprocess.run([sys.executable, str(SCRIPT), str(bad), "--capacity", "1", "--bandwidth", "1",
                           "-o", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "JSON syntax error" in done.stderr
