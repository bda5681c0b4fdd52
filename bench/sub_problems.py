"""The body of bench/sub-problems (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from docs_section import replace_section
from problem_cut import cut_problem

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--timeout", type=float, default=10, help="mlsys's budget per sub-problem, seconds")
args = parser.parse_args()
build = os.path.abspath(args.build)
MARKER = "<!-- sub-problems -->"

# Benchmark 9 is 8 residual MLP blocks of 4 ops (1024 -> 4096 -> 1024): its prefixes of 1, 2, 3 and all 8 blocks.
# Benchmark 13 is 16 branches of 3 MatMuls sharing two 4096 x 4096 weights, then 15 Pointwise ops: its first 1,
# 2, 4, 8 and 16 branches.
CUTS = [(9, f"first {k} block{'s' if k > 1 else ''}", list(range(4 * k))) for k in (1, 2, 3, 8)] + \
       [(13, f"first {k} branch{'es' if k > 1 else ''}", list(range(3 * k))) for k in (1, 2, 4, 8, 16)]


def sub_problem(benchmark, ops):
    return cut_problem(json.load(open(f"benchmarks/mlsys-2026-{benchmark}.json")), ops)


def run(*command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


rows = []
with tempfile.TemporaryDirectory() as work:
    for benchmark, what, ops in CUTS:
        problem, schedule = os.path.join(work, "p.json"), os.path.join(work, "s.json")
        json.dump(sub_problem(benchmark, ops), open(problem, "w"))
        print(f"sub-problems: {benchmark}, {what}", file=sys.stderr, flush=True)
        run(os.path.join(build, "mlsys"), problem, schedule, "--timeout", args.timeout)
        verified = json.loads(run(os.path.join(build, "verify"), problem, schedule, "--json").stdout)
        bound = json.loads(run(os.path.join(build, "bound"), problem, "--json").stdout)
        cost = verified.get("total_latency") or verified.get("latency")
        rows.append((benchmark, what, len(ops), cost, bound["bound"], bound["lambda_bound"],
                     "cover" if bound["bound"] > bound["lambda_bound"] * (1 + 1e-9) else "lambda"))

lines = [MARKER, "", "### Benchmarks 9 and 13 cut into sub-problems", "",
         "Produced by `bench/sub-problems` (`mlsys --timeout " + f"{args.timeout:g}" + "`, `verify`, `bound` with its "
         "defaults): each benchmark's first blocks or branches as a problem of its own (tensors that no kept op "
         "writes are inputs, tensors that no kept op reads are outputs).", "",
         "| benchmark | sub-problem | ops | solver's cost | certified bound | which bound | proven gap |",
         "|---:|---|---:|---:|---:|---|---:|"]
for benchmark, what, n, cost, bound, lam, which in rows:
    lines.append(f"| {benchmark} | {what} | {n} | {cost:,.1f} | {bound:,.1f} | {which} | "
                 f"{100 * (cost / bound - 1):.1f} % |")
lines.append("")
body = "\n".join(lines)
replace_section("docs/bounds.md", MARKER, body)
print(body)
