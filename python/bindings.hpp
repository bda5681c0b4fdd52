// What the binding files of the Python module share: the problem handle, reading JSON from what Python users
// pass, and the model options by their command-line names. Glue only: every rule and cost is in the library.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/graph.hpp"
#include "sim/problem.hpp"
#include "solver/oracle.hpp"
#include "verifier/verify.hpp"

namespace mlsys::python {

namespace py = pybind11;

class SubgraphQuery;

// A problem with its graph analysis (M2, M3), checked once when it is read, and the compiled subgraph
// structures its one-shot subgraph questions reuse.
struct LoadedProblem {
  Problem problem;
  Graph graph;
  std::string source;  // file name, "<json>" or "<dict>": what messages name
  LowerBound bound;

  std::unordered_map<std::vector<int>, std::shared_ptr<SubgraphQuery>, SubgraphKeyHash> structures;
  // certified_bound(...).bound per (matmul compute, allow supernative k): a few milliseconds, asked for by
  // every verify; computed once, with the GIL held.
  std::map<std::pair<int, bool>, double> certified;
};
using ProblemHandle = std::shared_ptr<LoadedProblem>;

// A JSON document and the name messages give it.
struct JsonSource {
  nlohmann::json doc;
  std::string name;
};
// From a dict or list (serialized by Python's json module, so that the C++ reader sees the text the CLI would
// see and applies the same limits), a JSON string (starts with '{' or '['), or a path (str or os.PathLike).
// Unreadable input throws InputError, which the module raises as mlsys_sim.InputError (a ValueError).
JsonSource read_json_source(const py::handle& source, const char* what);

ProblemHandle load_problem_from(const py::handle& source);
ProblemHandle problem_from_document(JsonSource in);
// A Problem object as it is, anything else read as a problem.
ProblemHandle as_problem(const py::handle& problem);

// "full-k" | "native-k" and the supernative flag, as the command lines spell them.
ModelOptions model_options(const std::string& compute, bool allow_supernative_k);

py::object to_python(const nlohmann::json& value);

void bind_schedules(py::module_& m);
void bind_t10(py::module_& m);

}  // namespace mlsys::python
