#!/usr/bin/env python3
"""Capacity x bandwidth sweep of one problem on a Dask cluster, through the mlsys_sim Python module.

Each point is one task: the problem with that fast-memory capacity and slow-memory bandwidth is solved
(mlsys_sim.solve) and the schedule verified strictly (mlsys_sim.verify). Without --scheduler the script starts
a LocalCluster on this machine; with --scheduler tcp://HOST:8786 it runs on that cluster, whose workers must
be able to import mlsys_sim (`cmake --install`, or PYTHONPATH pointing at a build tree's python/ folder).

    PYTHONPATH=build/release/python python3 examples/sweep_dask.py benchmarks/mlsys-2026-3.json \
        --capacity 20000,40000,80000 --bandwidth 10,20 --timeout 2 -o out/sweep-dask

Writes OUT/sweep.csv (one row per point) and OUT/point-<capacity>-<bandwidth>.json (the point's problem and
schedule). Progress goes to stderr. Exit 0 when every point has a valid schedule, 1 otherwise, 2 on bad usage.

With --t10 the input is a whole model for T10 (a T10 model file, a graph problem or an .onnx file), each point a
chip variant: --capacity is the SRAM bytes per core and --bandwidth the exchange bytes per cycle per tile, and
each task compiles the model (mlsys_sim.t10_compile, docs/t10-programs.md); OUT/point-*.json is the compiled
program. The same grid as `t10 sweep MODEL --sram LIST --exchange-bytes-per-cycle LIST`.

    PYTHONPATH=build/release/python python3 examples/sweep_dask.py --t10 model.t10.json \
        --capacity 300000,638976 --bandwidth 2,4,8 -o out/t10-sweep-dask
"""

import argparse
import csv
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def solve_point(problem_doc, capacity, bandwidth, timeout, seed):
    """One sweep point, run on a Dask worker. Plain data in and out, so that nothing but JSON crosses the wire."""
    import mlsys_sim

    doc = dict(problem_doc, fast_memory_capacity=capacity, slow_memory_bandwidth=bandwidth)
    problem = mlsys_sim.Problem.from_dict(doc)
    result = mlsys_sim.solve(problem, timeout=timeout, threads=1, seed=seed)
    row = {"capacity": capacity, "bandwidth": bandwidth, "lower_bound": result.lower_bound,
           "total_latency": None, "valid": False, "stopped_by": result.stopped_by, "seconds": result.elapsed,
           "problem": doc, "schedule": None, "reason": result.infeasible_reason}
    if result.schedule is not None:
        report = mlsys_sim.verify(problem, result.schedule, strict=True)
        row.update(total_latency=report.total_latency, valid=report.valid, schedule=result.schedule.to_dict(),
                   reason="" if report.valid else str(report.error))
    return row


def compile_point(model_doc, sram, exchange):
    """One chip variant of a whole model, run on a Dask worker: the compiled program as plain data."""
    import mlsys_sim

    doc = json.loads(json.dumps(model_doc))
    body = doc.get("t10_program", doc)
    if "t10_program" in doc:
        body.setdefault("chip", {})["exchange_bytes_per_cycle"] = exchange
    row = {"capacity": sram, "bandwidth": exchange, "total_latency": None, "lower_bound": None, "valid": False,
           "stopped_by": "", "seconds": 0.0, "reason": "", "schedule": None, "problem": model_doc}
    start = time.monotonic()
    try:
        program = mlsys_sim.t10_compile(doc, sram=sram, simulate=True)
    except ValueError as error:  # the model does not fit this SRAM: the bytes it needs
        row.update(reason=str(error), seconds=time.monotonic() - start)
        return row
    row.update(total_latency=program["total_cycles"], lower_bound=program["lower_bound_cycles"],
               valid=program["simulation"]["passed"], stopped_by="proof" if program["compile"]["proven"] else "clock",
               seconds=time.monotonic() - start, schedule=program)
    return row


def numbers(text):
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return [int(v) if v.is_integer() else v for v in values]


def write_atomic(path, text):
    """Temporary file beside the target, then rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problem", type=Path, help="problem JSON (with --t10: a whole model)")
    parser.add_argument("--t10", action="store_true",
                        help="compile a whole model for T10 chip variants (capacity = SRAM bytes per core, "
                        "bandwidth = exchange bytes per cycle)")
    parser.add_argument("--capacity", type=numbers, required=True, help="fast-memory capacities, e.g. 20000,40000")
    parser.add_argument("--bandwidth", type=numbers, required=True, help="slow-memory bandwidths, e.g. 10,20")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per point (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scheduler", help="address of a Dask scheduler (default: start a LocalCluster)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="output folder")
    args = parser.parse_args()

    import mlsys_sim
    from dask.distributed import Client, LocalCluster, as_completed

    try:
        if args.t10:
            if args.problem.suffix == ".onnx":
                from mlsys_sim.importer.t10_lowering import import_onnx_t10
                problem_doc = import_onnx_t10(str(args.problem))
            else:
                problem_doc = json.loads(args.problem.read_text())
            if "t10_program" not in problem_doc:
                raise ValueError(f"{args.problem}: --t10 sweeps a T10 model file (mlsys-import --t10) or an .onnx")
        else:
            problem_doc = mlsys_sim.Problem(args.problem).to_dict()  # read and checked here, before any task runs
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.output.mkdir(parents=True, exist_ok=True)

    cluster = None
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
    try:
        points = [(c, b) for c in args.capacity for b in args.bandwidth]
        print(f"{len(points)} points on {client.scheduler.address}", file=sys.stderr)
        if args.t10:
            futures = [client.submit(compile_point, problem_doc, c, b, pure=False) for c, b in points]
        else:
            futures = [client.submit(solve_point, problem_doc, c, b, args.timeout, args.seed, pure=False)
                       for c, b in points]
        rows, start = [], time.monotonic()
        for done, future in enumerate(as_completed(futures), 1):
            row = future.result()
            rows.append(row)
            name = f"point-{row['capacity']:g}-{row['bandwidth']:g}.json"
            write_atomic(args.output / name, json.dumps(row["schedule"] if args.t10 else
                                                        {"problem": row["problem"], "schedule": row["schedule"]}))
            total = "no schedule" if row["total_latency"] is None else f"{row['total_latency']:,.2f}"
            print(f"[{done}/{len(points)}, {time.monotonic() - start:.1f} s] capacity {row['capacity']:g}, "
                  f"bandwidth {row['bandwidth']:g}: {total}", file=sys.stderr)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()

    rows.sort(key=lambda r: (r["capacity"], r["bandwidth"]))
    table = io.StringIO()
    fields = ["capacity", "bandwidth", "total_latency", "lower_bound", "valid", "stopped_by", "seconds", "reason"]
    writer = csv.DictWriter(table, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(args.output / "sweep.csv", table.getvalue())
    print(table.getvalue(), end="")
    return 0 if all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
