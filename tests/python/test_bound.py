"""mlsys_sim.bound: the same certificate as the `bound` program, never above a solved schedule's cost."""

import json
import os
import subprocess

import mlsys_sim as ms

SOURCE = os.environ.get("MLSYS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("MLSYS_BIN_DIR", os.path.join(SOURCE, "build", "release"))


def test_bound_is_the_programs_certificate_and_below_the_solvers_cost():
    path = os.path.join(SOURCE, "benchmarks", "mlsys-2026-3.json")
    certificate = ms.bound(path)
    printed = json.loads(subprocess.run([os.path.join(BIN, "bound"), path, "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    # The same certificate, but for the seconds the cover bound took.
    assert certificate["cover"].pop("seconds") >= 0 and printed["cover"].pop("seconds") >= 0
    assert certificate == printed
    assert certificate["bound"] > certificate["rule_book_bound"] == ms.lower_bound(path).bound()
    result = ms.solve(path, timeout=1, threads=1)
    assert certificate["bound"] <= result.cost * (1 + 1e-9)
    lam = certificate["lambda"]
    compute = sum(t["compute"] for t in certificate["terms"])
    traffic = sum(t["traffic"] for t in certificate["terms"])
    assert abs(lam * compute + (1 - lam) * traffic - certificate["lambda_bound"]) <= 1e-6 * certificate["bound"]
    # Benchmark 3: the cover bound (docs/bounds.md#theorem-6) is complete and proves 65,536 optimal.
    assert certificate["cover"]["complete"] and certificate["bound"] == max(certificate["lambda_bound"],
                                                                             certificate["cover"]["bound"])
    assert abs(sum(certificate["cover"]["op_prices"]) - 65536) <= 1e-6
    # Without the cover bound the certified value is the lambda bound stepped down (docs/bounds.md#rounding).
    alone = ms.bound(path, cover_seconds=0)["bound"]
    assert certificate["lambda_bound"] * (1 - 1e-12) <= alone <= certificate["lambda_bound"]
    assert ms.bound(path, matmul_compute="native-k")["lambda_bound"] >= certificate["lambda_bound"]
