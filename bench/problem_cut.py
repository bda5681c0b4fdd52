"""A sub-problem of a problem: some of its ops, with the tensors they touch."""

GRAPH_KEYS = ("widths", "heights", "inputs", "outputs", "base_costs", "op_types", "names")


def cut_problem(p, ops, inputs=None):
    """The ops given (in order) with the tensors they touch; tensors no kept op writes are graph inputs, and
    tensors no kept op reads are graph outputs. `inputs`, one list per kept op, replaces what the ops read
    (to rewire a cut); by default they read what they read in `p`."""
    inputs = inputs if inputs is not None else [p["inputs"][o] for o in ops]
    used = sorted({t for i, o in enumerate(ops) for t in inputs[i] + p["outputs"][o]})
    index = {t: j for j, t in enumerate(used)}
    q = {k: v for k, v in p.items() if k not in GRAPH_KEYS}
    q["widths"], q["heights"] = [p["widths"][t] for t in used], [p["heights"][t] for t in used]
    q["inputs"] = [[index[t] for t in tensors] for tensors in inputs]
    q["outputs"] = [[index[t] for t in p["outputs"][o]] for o in ops]
    q["base_costs"], q["op_types"] = [p["base_costs"][o] for o in ops], [p["op_types"][o] for o in ops]
    return q
