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


def test_t10_model_sweep_equals_the_command_line(tmp_path):
    """--t10: each point compiles a whole model on Dask; the totals equal `t10 sweep MODEL`'s at every point,
    and a variant the model cannot fit says how many bytes it needs."""
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"t10_program": {"name": "block", "ops": [
        {"name": "qkv", "type": "matmul", "m": 128, "k": 256, "n": 768},
        {"name": "scores", "type": "matmul", "batch": 4, "m": 128, "k": 64, "n": 128},
        {"name": "softmax", "type": "rowwise", "m": 512, "n": 128, "inputs": 1},
        {"name": "out", "type": "matmul", "m": 128, "k": 256, "n": 256}]}}))
    out = tmp_path / "dask"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--t10", str(model), "--capacity", "400,638976", "--bandwidth", "2,8",
         "-o", str(out)], capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert done.returncode == 1, done.stderr  # the 400-byte variants cannot fit
    with open(out / "sweep.csv") as f:
        rows = {(r["capacity"], r["bandwidth"]): r for r in csv.DictReader(f)}
    cli = subprocess.run([os.path.join(os.environ["MLSYS_BIN_DIR"], "t10"), "sweep", str(model), "--sram",
                          "400,638976", "--exchange-bytes-per-cycle", "2,8", "-o", str(tmp_path / "cli")],
                         capture_output=True, text=True, timeout=240)
    assert cli.returncode == 0, cli.stderr
    with open(tmp_path / "cli" / "t10-model-sweep.csv") as f:
        for point in csv.DictReader(f):
            row = rows[(point["sram_bytes"], point["exchange_bytes_per_cycle"])]
            if point["fits"] == "1":
                assert float(row["total_latency"]) == pytest.approx(float(point["total_cycles"]), rel=1e-12)
                assert row["valid"] == "True"
            else:
                assert "needs at least " + point["least_sram_bytes"] in row["reason"]
    assert float(rows[("638976", "2")]["total_latency"]) > float(rows[("638976", "8")]["total_latency"])
