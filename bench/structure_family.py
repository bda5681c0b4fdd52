"""The body of bench/structure-family (see there)."""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from docs_section import replace_section

parser = argparse.ArgumentParser()
parser.add_argument("--build", default="build/release")
parser.add_argument("--count", type=int, default=50, help="problems, half of each family")
parser.add_argument("--seed", type=int, default=2026)
parser.add_argument("--timeout", type=float, default=5, help="mlsys's budget per problem, seconds")
parser.add_argument("--bound-timeout", type=float, default=20)
parser.add_argument("--no-docs", action="store_true")
args = parser.parse_args()
build = os.path.abspath(args.build)
MARKER = "<!-- structure family -->"


class Problem:
    def __init__(self, capacity, bandwidth):
        self.p = {"widths": [], "heights": [], "inputs": [], "outputs": [], "base_costs": [], "op_types": [],
                  "fast_memory_capacity": capacity, "slow_memory_bandwidth": bandwidth,
                  "native_granularity": [128, 128]}

    def tensor(self, width, height):
        self.p["widths"].append(width)
        self.p["heights"].append(height)
        return len(self.p["widths"]) - 1

    def op(self, kind, ins, out, cost):
        self.p["op_types"].append(kind)
        self.p["inputs"].append(ins)
        self.p["outputs"].append([out])
        self.p["base_costs"].append(cost)


def residual_mlps(rng):
    """Benchmark 9's structure: blocks of x·W1, a Pointwise op, ·W2, and a residual add, chained."""
    tokens, d = rng.choice([512, 1024, 2048]), rng.choice([512, 1024])
    hidden, blocks = d * rng.choice([2, 4]), rng.randint(2, 8)
    q = Problem(rng.choice([150000, 250000, 500000]), rng.choice([15, 25, 40]))
    cost = rng.choice([2500, 5000, 10000])
    x = q.tensor(d, tokens)
    for _ in range(blocks):
        w1, w2 = q.tensor(hidden, d), q.tensor(d, hidden)
        h, g, y, nxt = q.tensor(hidden, tokens), q.tensor(hidden, tokens), q.tensor(d, tokens), q.tensor(d, tokens)
        q.op("MatMul", [x, w1], h, cost)
        q.op("Pointwise", [h], g, 200)
        q.op("MatMul", [g, w2], y, cost)
        q.op("Pointwise", [y, x], nxt, 500)
        x = nxt
    return q.p, f"{blocks} blocks, {tokens} x {d} -> {hidden}"


def shared_branches(rng):
    """Benchmark 13's structure: branches x_i·W0·W1·V_i sharing the two square weights, summed by a chain of
    Pointwise adds."""
    branches, dim, rows = rng.choice([4, 8, 16]), rng.choice([2048, 4096]), rng.choice([64, 128, 256])
    q = Problem(rng.choice([300000, 600000, 1000000]), rng.choice([25, 50, 100]))
    w0, w1 = q.tensor(dim, dim), q.tensor(dim, dim)
    outs = []
    for _ in range(branches):
        x, v = q.tensor(dim, rows), q.tensor(rows, dim)
        a, b, c = q.tensor(dim, rows), q.tensor(dim, rows), q.tensor(rows, rows)
        q.op("MatMul", [x, w0], a, 5000)
        q.op("MatMul", [a, w1], b, 5000)
        q.op("MatMul", [b, v], c, 5000)
        outs.append(c)
    acc = outs[0]
    for c in outs[1:]:
        nxt = q.tensor(rows, rows)
        q.op("Pointwise", [acc, c], nxt, 100)
        acc = nxt
    return q.p, f"{branches} branches, {rows} rows of {dim}"


def run(*command):
    return subprocess.run([str(c) for c in command], capture_output=True, text=True)


rng = random.Random(args.seed)
rows = []
with tempfile.TemporaryDirectory() as work:
    for i in range(args.count):
        family, make = ("9", residual_mlps) if i % 2 == 0 else ("13", shared_branches)
        problem, what = make(rng)
        path, schedule = os.path.join(work, "p.json"), os.path.join(work, "s.json")
        json.dump(problem, open(path, "w"))
        run(os.path.join(build, "mlsys"), path, schedule, "--timeout", args.timeout)
        verified = run(os.path.join(build, "verify"), path, schedule, "--json")
        bounded = run(os.path.join(build, "bound"), path, "--json", "--timeout", args.bound_timeout)
        if verified.returncode or bounded.returncode:
            sys.exit(f"structure-family: problem {i}: verify {verified.returncode}, bound {bounded.returncode}")
        cost = json.loads(verified.stdout)["total_latency"]
        bound = json.loads(bounded.stdout)
        gap = 100 * (cost / bound["bound"] - 1)
        rows.append((family, what, len(problem["op_types"]), cost, bound["bound"], gap,
                     bound["bound"] > bound["lambda_bound"] * (1 + 1e-9)))
        print(f"structure-family: {i + 1}/{args.count} ({family}) {what}: gap {gap:.1f} %", file=sys.stderr,
              flush=True)

lines = [MARKER, "", "### Generated problems with the structures of benchmarks 9 and 13", "",
         f"Produced by `bench/structure-family --count {args.count} --seed {args.seed}` (`mlsys --timeout "
         f"{args.timeout:g}`, `bound --timeout {args.bound_timeout:g}`): residual MLP chains like 9 and branches "
         "sharing two weights like 13, their sizes, depths, fan-outs, capacities and bandwidths drawn at random.",
         ""]
for family in ("9", "13"):
    gaps = [r[5] for r in rows if r[0] == family]
    covered = sum(1 for r in rows if r[0] == family and r[6])
    lines.append(f"- Like {family}: {len(gaps)} problems, median proven gap {statistics.median(gaps):.1f} % (min "
                 f"{min(gaps):.1f} %, max {max(gaps):.1f} %); the cover bound completed on {covered}.")
all_gaps = [r[5] for r in rows]
lines += [f"- All {len(rows)}: median proven gap {statistics.median(all_gaps):.1f} %.", "",
          "| like | problem | ops | solver's cost | certified bound | cover bound | proven gap |",
          "|---:|---|---:|---:|---:|---|---:|"]
for family, what, ops, cost, bound, gap, cover in rows:
    lines.append(f"| {family} | {what} | {ops} | {cost:,.1f} | {bound:,.1f} | {'yes' if cover else 'no'} | {gap:.1f} % |")
lines.append("")
body = "\n".join(lines)
if not args.no_docs:
    replace_section("docs/bounds.md", MARKER, body)
print(body)
