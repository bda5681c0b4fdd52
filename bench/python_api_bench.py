#!/usr/bin/env python3
"""Speed of the Python API (mlsys_sim), medians of repeated runs, all in one process run:

1. Subgraph questions per second on the bench-17 subjects of step_model_bench (the subgraph with the most
   steps of the first-place solver's schedule, retained tensors dropped, capacity 1e12; as scheduled and
   re-split to k = 32 in raster order): through a prepared SubgraphQuery and through the one-shot
   subgraph_cost(), and, when the binary is given, step_model_bench's SetGranularityAndFastPath (the same
   work in C++) for the ratio.
2. verify() of a benchmark schedule in-process against spawning the `verify` binary on the same files.

    PYTHONPATH=build/release/python python3 bench/python_api_bench.py --bin build/release
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import mlsys_sim

ROOT = Path(__file__).resolve().parents[1]


def rate(call, count, repetitions):
    """Median calls per second over `repetitions` runs of `count` calls."""
    runs = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(count):
            call()
        runs.append(count / (time.perf_counter() - start))
    return statistics.median(runs)


def median_seconds(call, repetitions):
    runs = []
    for _ in range(repetitions):
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def subject(bench):
    """step_model_bench's subject: the first subgraph with the most steps, compiled with nothing retained."""
    doc = json.loads((ROOT / "benchmarks" / f"mlsys-2026-{bench}.json").read_text())
    doc["fast_memory_capacity"] = 1e12  # speed, not feasibility, is measured
    problem = mlsys_sim.Problem(doc)
    schedule = mlsys_sim.Schedule(ROOT / "tests" / "data" / "vinci" / f"mlsys-2026-{bench}.json", problem)
    best, best_steps = None, -1
    for sub in schedule.subgraphs:
        steps = problem.subgraph(sub.ops).cost(sub.granularity, sub.traversal).steps
        if steps > best_steps:
            best, best_steps = sub, steps
    return problem, best


def cpp_rates(bin_dir, bench):
    exe = Path(bin_dir) / "bench" / "step_model_bench"
    if not exe.exists():
        return {}
    out = subprocess.run([str(exe), f"--benchmark_filter=SetGranularityAndFastPath/{bench}/",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json", "--benchmark_min_time=0.2"],
                         capture_output=True, text=True, check=True).stdout
    rates = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            k = int(b["run_name"].split("/")[2])
            rates[k] = 1e9 / b["real_time"] if b["time_unit"] == "ns" else b["evals_per_s"]
    return rates


def main():
    parser = argparse.ArgumentParser(description="Speed of the Python API")
    parser.add_argument("--bin", default=str(ROOT / "build" / "release"), help="build folder with verify")
    parser.add_argument("--count", type=int, default=200_000, help="questions per run")
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()

    problem, sub = subject(17)
    cpp = cpp_rates(args.bin, 17)
    print("| bench 17 subject | steps | SubgraphQuery.cost (questions/s) | subgraph_cost (questions/s) "
          "| C++ set_granularity + fast path (evals/s) |")
    print("|---|---:|---:|---:|---:|")
    for label, granularity, traversal, k in (
            ("as scheduled", sub.granularity, sub.traversal, 0),
            ("k = 32, raster", (sub.granularity[0], sub.granularity[1], 32), None, 32)):
        query = problem.subgraph(sub.ops)
        answer = query.cost(granularity, traversal)
        assert answer.feasible
        prepared = rate(lambda: query.cost(granularity, traversal), args.count, args.repetitions)
        one_shot = rate(lambda: mlsys_sim.subgraph_cost(problem, sub.ops, granularity, traversal=traversal),
                        args.count, args.repetitions)
        reference = f"{cpp[k]:,.0f}" if k in cpp else "n/a"
        print(f"| {label} ({answer.grid[0]}x{answer.grid[1]} tiles, nk {answer.k_steps}) | {answer.steps} "
              f"| {prepared:,.0f} | {one_shot:,.0f} | {reference} |")

    problem_path = ROOT / "benchmarks" / "mlsys-2026-17.json"
    schedule_path = ROOT / "tests" / "data" / "vinci" / "mlsys-2026-17.json"
    verify_exe = Path(args.bin) / "verify"
    loaded = mlsys_sim.Problem(problem_path)
    schedule = mlsys_sim.Schedule(schedule_path, loaded)
    runs = max(args.repetitions * 4, 20)
    in_process = median_seconds(lambda: mlsys_sim.verify(loaded, schedule), runs)
    from_files = median_seconds(lambda: mlsys_sim.verify(problem_path, schedule_path).to_dict(), runs)
    spawned = median_seconds(lambda: json.loads(subprocess.run(
        [str(verify_exe), str(problem_path), str(schedule_path), "--json"], capture_output=True, text=True).stdout),
        runs)
    print()
    print("| verify of benchmark 17's first-place schedule (101 subgraphs) | median (ms) | vs spawning `verify` |")
    print("|---|---:|---:|")
    print(f"| in-process, problem and schedule already loaded | {in_process * 1e3:.3f} | {spawned / in_process:.0f}x |")
    print(f"| in-process, from the files, to_dict() | {from_files * 1e3:.3f} | {spawned / from_files:.1f}x |")
    print(f"| spawning `verify --json` and parsing its output | {spawned * 1e3:.3f} | 1x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
