// The problem reader (M1) and graph analysis (M2-M3) on arbitrary bytes.
#include "fuzz_support.hpp"
#include "sim/graph.hpp"
#include "sim/json_io.hpp"
#include "sim/violation.hpp"
#include "verifier/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const mlsys::Problem problem = mlsys::parse_problem(
        mlsys::parse_json_text(mlsys::fuzz::text_of(data, size), "problem.json"), "problem.json");
    const mlsys::Graph graph = mlsys::analyze_graph(problem, "problem.json");
    (void)mlsys::lower_bound(problem, graph);  // verify --lower-bound reads nothing else
  } catch (const mlsys::InputError&) {
  }
  return 0;
}
