"""The body of bench/regnet-group-cut (see there)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from problem_cut import cut_problem

parser = argparse.ArgumentParser()
parser.add_argument("problem", help="RegNetY-800MF imported by mlsys-import (the default profile)")
parser.add_argument("--build", default="build/release")
parser.add_argument("--block", default="block4-1")
parser.add_argument("--group", type=int, default=0, help="which 16-channel group")
parser.add_argument("--timeout", type=float, default=20, help="mlsys's budget, seconds")
parser.add_argument("--keep", default="", help="also write the cut problem here")
args = parser.parse_args()
build = os.path.abspath(args.build)
p = json.load(open(args.problem))
names = p["names"]["ops"]
readers = {}
for op, tensors in enumerate(p["inputs"]):
    for t in tensors:
        readers.setdefault(t, []).append(op)
maker = {t: op for op, tensors in enumerate(p["outputs"]) for t in tensors}


def only(found, what):
    if len(found) != 1:
        sys.exit(f"regnet-group-cut: expected one {what}, found {len(found)}")
    return found[0]


def reader_ops(op):
    return [r for t in p["outputs"][op] for r in readers.get(t, [])]


channels = f"[c{16 * args.group}:{16 * (args.group + 1)}]"
conv = only([o for o, n in enumerate(names) if n.endswith(f"{args.block}/f/a/a.0/Conv{channels} kernel offset 0")],
            "1x1 convolution of the group (the block must have one row block: stage 4)")
relu_a = only(reader_ops(conv), "ReLU after it")
offsets = reader_ops(relu_a)                         # the grouped 3x3 convolution's nine offsets
total = only(sorted(set(r for o in offsets for r in reader_ops(o))), "sum of the offsets")
relu_b = only(reader_ops(total), "ReLU after the sum")
pool = only([r for r in reader_ops(relu_b) if p["op_types"][r] == "MatMul"], "pooling MatMul")
product = only([r for r in reader_ops(relu_b) if p["op_types"][r] == "Pointwise"], "squeeze-and-excite product")
squeeze = only(reader_ops(pool), "squeeze MatMul slice")
broadcast = only([maker[t] for t in p["inputs"][product] if maker.get(t) not in (None, relu_b)], "broadcast")
excite = only([maker[t] for t in p["inputs"][broadcast] if t in maker], "excite MatMul")
ops = [conv, relu_a] + offsets + [total, relu_b, pool, squeeze, excite, broadcast, product]
# The excite MatMul reads the block's squeeze sum over all groups; in the cut it reads this group's slice.
rewire = {(excite, t): p["outputs"][squeeze][0] for t in p["inputs"][excite] if t in maker}
cut = cut_problem(p, ops, [[rewire.get((o, t), t) for t in p["inputs"][o]] for o in ops])

with tempfile.TemporaryDirectory() as work:
    problem = args.keep or os.path.join(work, "cut.json")
    schedule, stats = os.path.join(work, "s.json"), os.path.join(work, "stats.json")
    json.dump(cut, open(problem, "w"))
    print(f"regnet-group-cut: {args.block} group {args.group}, {len(ops)} ops; solving", file=sys.stderr, flush=True)
    subprocess.run([os.path.join(build, "mlsys"), problem, schedule, "--timeout", str(args.timeout),
                    "--json-stats", stats], check=True, capture_output=True)
    searched = json.load(open(stats))
    bound = json.loads(subprocess.run([os.path.join(build, "bound"), problem, "--json"], check=True,
                                      capture_output=True, text=True).stdout)
exact = searched.get("exact_space_bound")
print("| cut | ops | solver's cost | every grouping without recomputation | certified bound | its cover bound "
      "| tail-run bound | proven gap | tail-run gap |")
print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
print(f"| {args.block}, group {args.group} | {len(ops)} | {searched['cost']:,.1f} | "
      f"{'—' if exact is None else f'{exact:,.1f}'} | {bound['bound']:,.1f} | "
      f"{'complete' if bound['cover']['complete'] else 'incomplete'} | {bound['tail_runs']['bound']:,.1f} | "
      f"{100 * (searched['cost'] / bound['bound'] - 1):.1f} % | "
      f"{100 * (searched['cost'] / bound['tail_runs']['bound'] - 1):.1f} % |")
