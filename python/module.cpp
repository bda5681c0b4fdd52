// mlsys_sim._core: the Python module over the simulator's libraries. This file: the module, errors, problems,
// lower bounds, violations and the subgraph question (the solver oracle's fast path, asked from Python).
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <pybind11_json/pybind11_json.hpp>

#include "python/bindings.hpp"
#include "sim/json_io.hpp"
#include "sim/step_model.hpp"
#include "solver/oracle.hpp"
#include "traces/bound_report.hpp"
#include "traces/report.hpp"

// libsystemc.so (the replay engine) refers to sc_main; a Python process never calls it.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char**) {
  return 1;
}

namespace mlsys::python {

JsonSource read_json_source(const py::handle& source, const char* what) {
  if (py::isinstance<py::dict>(source) || py::isinstance<py::list>(source)) {
    std::string text;
    try {
      text =
          py::module_::import("json").attr("dumps")(source, py::arg("allow_nan") = false).cast<std::string>();
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError) && !e.matches(PyExc_RecursionError))
        throw;
      throw InputError("<dict>", "", "M1",
                       std::string("not JSON data: ") + e.value().attr("__str__")().cast<std::string>());
    }
    return {parse_json_text(text, "<dict>"), "<dict>"};
  }
  std::string text;
  if (py::isinstance<py::str>(source)) {
    text = source.cast<std::string>();
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (text[first] == '{' || text[first] == '['))
      return {parse_json_text(text, "<json>"), "<json>"};
  } else if (py::hasattr(source, "__fspath__")) {
    text = py::module_::import("os").attr("fspath")(source).cast<std::string>();
  } else {
    throw py::type_error(std::string(what) + ": expected a path, a JSON string or a dict, got " +
                         py::str(py::type::of(source).attr("__name__")).cast<std::string>());
  }
  return {read_json_file(text), text};
}

ProblemHandle load_problem_from(const py::handle& source) {
  return problem_from_document(read_json_source(source, "problem"));
}

ProblemHandle problem_from_document(JsonSource in) {
  auto loaded = std::make_shared<LoadedProblem>();
  loaded->problem = parse_problem(in.doc, in.name);
  loaded->graph = analyze_graph(loaded->problem, in.name);
  loaded->bound = lower_bound(loaded->problem, loaded->graph);
  loaded->source = std::move(in.name);
  return loaded;
}

ProblemHandle as_problem(const py::handle& problem) {
  if (py::isinstance<LoadedProblem>(problem)) return problem.cast<ProblemHandle>();
  return load_problem_from(problem);
}

ModelOptions model_options(const std::string& compute, bool allow_supernative_k) {
  try {
    return parse_model_options(compute, allow_supernative_k);  // the mapping the programs use
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("compute: ") + e.what());
  }
}

py::object to_python(const nlohmann::json& value) {
  return pyjson::from_json(value);
}

// The index ranges a subgraph question needs before anything is compiled (the step model and the oracle trust
// their callers, as they trust the schedule reader).
void check_subgraph_indices(const Problem& p, const std::vector<int>& ops,
                            const std::vector<int>& retained_in, const std::vector<int>& retain) {
  auto check = [](const std::vector<int>& list, int count, const char* field, const char* what) {
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] < 0 || list[i] >= count)
        throw InputError("<subgraph>", std::string(field) + "[" + std::to_string(i) + "]", "M4",
                         std::string(what) + " index " + std::to_string(list[i]) + " out of range [0, " +
                             std::to_string(count) + ")");
  };
  if (ops.empty()) throw InputError("<subgraph>", "ops", "M4", "a subgraph needs at least one op");
  check(ops, p.num_ops(), "ops", "op");
  check(retained_in, p.num_tensors(), "retained_in", "tensor");
  check(retain, p.num_tensors(), "retain", "tensor");
}

// One subgraph (ops, what it receives retained, what it retains) compiled once; each question applies a
// granularity and traversal in place and asks the fast path, as the solver's oracle does.
class SubgraphQuery {
 public:
  // `keep_alive` is the problem's handle when the query outlives the call (Problem.subgraph), null when the
  // problem's own cache holds it (a handle there would be a cycle).
  SubgraphQuery(const LoadedProblem& problem, ProblemHandle keep_alive, std::vector<int> ops,
                std::vector<int> retained_in, std::vector<int> retain, const ModelOptions& options, int index)
      : keep_alive_(std::move(keep_alive)) {
    const Problem& p = problem.problem;
    check_subgraph_indices(p, ops, retained_in, retain);
    auto compiled =
        SubgraphModel::compile_structure(p, problem.graph, ops, retain, index, retained_in, options);
    if (auto* v = std::get_if<RuleViolation>(&compiled))
      structure_error_ = std::move(*v);
    else
      model_.emplace(std::move(std::get<SubgraphModel>(compiled)));
  }

  struct Cost {
    bool feasible = false;
    double latency = std::numeric_limits<double>::infinity();
    double compute_time = 0, memory_time = 0, compute_bound_latency = 0;
    int64_t peak_working_set = 0, steps = 0, grid_rows = 0, grid_cols = 0, k_steps = 0;
    std::optional<RuleViolation> violation;
  };

  Cost evaluate(const std::vector<int64_t>& granularity, const py::handle& traversal, bool locate,
                int64_t max_steps) {
    Cost cost;
    if (structure_error_) {
      cost.violation = structure_error_;
      return cost;
    }
    if (granularity.size() != 3)
      throw InputError("<subgraph>", "granularity", "M4",
                       "expected [w, h, k], got " + std::to_string(granularity.size()) + " values");
    const Granularity g{granularity[0], granularity[1], granularity[2]};
    std::optional<RuleViolation> rejected;
    std::optional<Traversal> snake;
    if (traversal.is_none()) {
      rejected = model_->set_granularity(g);
    } else if (py::isinstance<py::str>(traversal)) {
      const std::string name = traversal.cast<std::string>();
      rejected = model_->set_granularity(g);
      if (name == "row-snake")
        snake = Traversal::RowSnake;
      else if (name == "column-snake")
        snake = Traversal::ColumnSnake;
      else if (name != "raster")
        throw py::value_error(
            "traversal: expected None, \"raster\", \"row-snake\", \"column-snake\" or a list of "
            "tile indices, got \"" +
            name + "\"");
    } else {
      std::vector<int64_t> order;
      try {
        order = traversal.cast<std::vector<int64_t>>();
      } catch (const py::cast_error&) {
        throw py::type_error("traversal: expected None, a name or a list of tile indices, got " +
                             py::str(py::type::of(traversal).attr("__name__")).cast<std::string>());
      }
      rejected = model_->set_granularity(g, std::move(order));
    }
    if (!rejected && snake)
      rejected = model_->set_traversal(traversal_order(*snake, model_->grid_rows(), model_->grid_cols()));
    if (rejected) {
      cost.violation = std::move(rejected);
      return cost;
    }
    const SubgraphResult r = model_->evaluate_fast(
        locate ? SubgraphModel::Violations::Locate : SubgraphModel::Violations::Summarize, max_steps);
    if (r.walk_refused)
      throw InputError("<subgraph>", "max_steps", "limits",
                       "this subgraph needs a step-by-step walk of " + std::to_string(r.steps) +
                           " steps, more than max_steps = " + std::to_string(max_steps));
    cost.grid_rows = model_->grid_rows();
    cost.grid_cols = model_->grid_cols();
    cost.k_steps = model_->k_steps();
    cost.steps = model_->num_steps();
    cost.peak_working_set = r.peak_working_set;
    if (r.violation) {
      cost.violation = r.violation;
      return cost;
    }
    cost.feasible = true;
    cost.latency = r.latency;
    cost.compute_time = r.compute_time;
    cost.memory_time = r.memory_time;
    cost.compute_bound_latency = r.compute_bound_latency;
    return cost;
  }

 private:
  ProblemHandle keep_alive_;
  std::optional<SubgraphModel> model_;
  std::optional<RuleViolation> structure_error_;
};

namespace {

std::vector<int> structure_key(const std::vector<int>& ops, const std::vector<int>& retained_in,
                               const std::vector<int>& retain, const ModelOptions& o, int index) {
  std::vector<int> key(ops);
  key.push_back(-1);
  key.insert(key.end(), retained_in.begin(), retained_in.end());
  key.push_back(-2);
  key.insert(key.end(), retain.begin(), retain.end());
  key.push_back(-3 - (o.matmul_compute == MatmulCompute::NativeK) - 2 * o.allow_supernative_k);
  key.push_back(index);
  return key;
}

// A learned scheduler may ask about millions of subgraphs: the cache is emptied when it reaches this size
// (a compiled structure takes a few kilobytes).
constexpr size_t kMaxCachedStructures = 1 << 13;

const char* kSubgraphDoc = R"(The cost of one subgraph at one granularity, or the rule it breaks.

The same question the solver's oracle asks, answered by the step model's fast path: ``ops`` in execution
order, ``granularity`` as ``(w, h, k)``, ``retained_in`` the tensors the previous subgraph left in fast memory,
``retain`` the tensors this one keeps, ``traversal`` None (raster), "raster", "row-snake", "column-snake" or a
list of tile indices. A broken rule is a value: ``feasible`` is False, ``latency`` is inf and ``violation`` says
which rule, where, and (for an out-of-memory) the working-set terms. ``locate=False`` skips locating an OOM's
step and terms (faster when only feasibility matters).)";

}  // namespace

}  // namespace mlsys::python

using namespace mlsys;
using namespace mlsys::python;

PYBIND11_MODULE(_core, m) {
  m.doc() = "The MLSys 2026 scheduling simulator: verify, replay, bound and solve schedules; T10 plans.";

  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  input_error.doc() =
      "Malformed input: the message is the command line's; file, field and rule say where and which rule.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object error = py::reinterpret_borrow<py::object>(input_error.ptr())(e.what());
      error.attr("file") = e.file();
      error.attr("field") = e.field();
      error.attr("rule") = e.rule();
      PyErr_SetObject(input_error.ptr(), error.ptr());
    }
  });

  py::class_<LoadedProblem, ProblemHandle>(
      m, "Problem", "A problem (rule book M1), its graph checked (M2) and analysed (M3).")
      .def(py::init([](const py::object& source) { return load_problem_from(source); }), py::arg("source"),
           "Reads a problem from a path, a JSON string or a dict.")
      .def_static(
          "from_file", [](const py::object& path) { return load_problem_from(path); }, py::arg("path"))
      .def_static(
          "from_json",
          [](const std::string& text) {
            return problem_from_document({parse_json_text(text, "<json>"), "<json>"});
          },
          py::arg("text"))
      .def_static(
          "from_dict", [](const py::dict& d) { return load_problem_from(d); }, py::arg("data"))
      .def(
          "to_dict", [](const LoadedProblem& p) { return to_python(problem_to_json(p.problem)); },
          "The problem as the rule book's JSON object.")
      .def_property_readonly("source", [](const LoadedProblem& p) { return p.source; })
      .def_property_readonly("num_ops", [](const LoadedProblem& p) { return p.problem.num_ops(); })
      .def_property_readonly("num_tensors", [](const LoadedProblem& p) { return p.problem.num_tensors(); })
      .def_property_readonly("widths", [](const LoadedProblem& p) { return p.problem.widths; })
      .def_property_readonly("heights", [](const LoadedProblem& p) { return p.problem.heights; })
      .def_property_readonly("inputs", [](const LoadedProblem& p) { return p.problem.inputs; })
      .def_property_readonly("outputs", [](const LoadedProblem& p) { return p.problem.outputs; })
      .def_property_readonly("base_costs", [](const LoadedProblem& p) { return p.problem.base_costs; })
      .def_property_readonly("op_types",
                             [](const LoadedProblem& p) {
                               std::vector<std::string> types;
                               for (OpType t : p.problem.op_types)
                                 types.push_back(t == OpType::MatMul ? "MatMul" : "Pointwise");
                               return types;
                             })
      .def_property_readonly("fast_memory_capacity",
                             [](const LoadedProblem& p) { return p.problem.fast_memory_capacity; })
      .def_property_readonly("slow_memory_bandwidth",
                             [](const LoadedProblem& p) { return p.problem.slow_memory_bandwidth; })
      .def_property_readonly("native_granularity",
                             [](const LoadedProblem& p) {
                               return std::pair{p.problem.native_w, p.problem.native_h};
                             })
      .def_property_readonly("topological_order",
                             [](const LoadedProblem& p) { return p.graph.topological_order; })
      .def(
          "subgraph",
          [](const ProblemHandle& p, const std::vector<int>& ops, const std::vector<int>& retained_in,
             const std::vector<int>& retain, const std::string& compute, bool supernative, int index) {
            return std::make_shared<SubgraphQuery>(*p, p, ops, retained_in, retain,
                                                   model_options(compute, supernative), index);
          },
          py::arg("ops"), py::arg("retained_in") = std::vector<int>{}, py::arg("retain") = std::vector<int>{},
          py::arg("compute") = "full-k", py::arg("allow_supernative_k") = false, py::arg("index") = 0,
          "Compiles one subgraph's structure once, for many cost questions (SubgraphQuery.cost).")
      .def("__repr__",
           [](const LoadedProblem& p) {
             return "<mlsys_sim.Problem " + p.source + ": " + std::to_string(p.problem.num_ops()) + " ops, " +
                    std::to_string(p.problem.num_tensors()) + " tensors>";
           })
      .def(py::pickle(
          [](const LoadedProblem& p) { return py::make_tuple(problem_to_json(p.problem).dump(), p.source); },
          [](const py::tuple& t) {
            ProblemHandle p = load_problem_from(py::str(t[0]));
            p->source = t[1].cast<std::string>();
            return p;
          }));

  py::class_<LowerBound>(m, "LowerBound", "The rule book's lower bounds (section 8).")
      .def_readonly("compute_full_k", &LowerBound::compute_full_k)
      .def_readonly("compute_native_k", &LowerBound::compute_native_k)
      .def_readonly("io", &LowerBound::io)
      .def(
          "bound",
          [](const LowerBound& b, const std::string& compute) {
            return b.bound(model_options(compute, false).matmul_compute);
          },
          py::arg("compute") = "full-k", "max(compute bound of the model, io bound)")
      .def("to_dict",
           [](const LowerBound& b) {
             return to_python({{"compute_full_k", b.compute_full_k},
                               {"compute_native_k", b.compute_native_k},
                               {"io", b.io}});
           })
      .def("__repr__", [](const LowerBound& b) {
        return "<LowerBound full-k " + format_number(b.compute_full_k) + ", native-k " +
               format_number(b.compute_native_k) + ", io " + format_number(b.io) + ">";
      });
  m.def(
      "lower_bound", [](const py::object& problem) { return as_problem(problem)->bound; }, py::arg("problem"),
      "No valid schedule of the problem is cheaper (rule book section 8).");
  m.def(
      "bound",
      [](const py::object& problem, const std::string& matmul_compute, bool allow_supernative_k,
         double cover_seconds) {
        const auto loaded = as_problem(problem);
        const ModelOptions model = model_options(matmul_compute, allow_supernative_k);
        CertifiedBound bound;
        {
          py::gil_scoped_release release;
          bound = certified_bound(loaded->problem, loaded->graph, model);
          if (cover_seconds > 0)
            add_cover_bound(bound, cover_bound(loaded->problem, loaded->graph, model, CoverLimits{cover_seconds}));
        }
        return to_python(certified_bound_to_json(bound));
      },
      py::arg("problem"), py::arg("matmul_compute") = "full-k", py::arg("allow_supernative_k") = false,
      py::arg("cover_seconds") = 10.0,
      "The certified lower bound on every schedule (docs/bounds.md), as `bound --json` prints it: bound (the "
      "largest of lambda_bound, the bounds of inner_k_steps, deep_weights, head_discounts, tail_runs, "
      "exposed_epilogues and head_loads_beside_runs, and the cover bound), lambda_bound, lambda, compute, traffic, rule_book_bound, the "
      "terms (subject, rule, compute, traffic, reason; Theorem 17's crowded intermediates among them), "
      "inner_k_steps (Theorem 11: its cases and trees), deep_weights (Theorem 12: its families), "
      "head_discounts (Theorem 13: its heads), tail_runs (Theorem 14: its heads and tails; Theorem 16: its "
      "joins; Theorems 18-20: shared_paths, remade_ops and waiting_ops), exposed_epilogues (Theorem 15: its epilogues and their cases), "
      "head_loads_beside_runs (Theorem 21: Theorem 13's heads on the tail-run bound, each with runs_beside) "
      "and cover (op prices and the tightest sets; cover_seconds=0 skips it).");

  py::class_<WorkingSetTerm>(m, "WorkingSetTerm", "One term of a working set (M20).")
      .def_property_readonly(
          "part", [](const WorkingSetTerm& t) { return std::string(1, t.part); },
          "A retained-in, B slice, C output tile, D split-K partial sum without a host")
      .def_readonly("tensor", &WorkingSetTerm::tensor)
      .def_property_readonly(
          "region",
          [](const WorkingSetTerm& t) {
            return py::make_tuple(t.region.r0, t.region.r1, t.region.c0, t.region.c1);
          },
          "(row0, row1, col0, col1), half-open")
      .def_readonly("elements", &WorkingSetTerm::elements)
      .def("__repr__", [](const WorkingSetTerm& t) {
        return "<" + std::string(1, t.part) + " tensor " + std::to_string(t.tensor) + " " +
               to_string(t.region) + ": " + std::to_string(t.elements) + ">";
      });
  py::class_<WorkingSet>(m, "WorkingSet", "A step's working set (M20): A + B + C + D against the capacity.")
      .def_readonly("retained_in", &WorkingSet::retained_in)
      .def_readonly("slices", &WorkingSet::slices)
      .def_readonly("outputs", &WorkingSet::outputs)
      .def_readonly("accumulators", &WorkingSet::accumulators)
      .def_property_readonly("total", &WorkingSet::total)
      .def_readonly("terms", &WorkingSet::terms);

  py::class_<RuleViolation>(m, "Violation", "A rule the schedule breaks, where, and its terms.")
      .def_readonly("rule", &RuleViolation::rule)
      .def_readonly("subgraph", &RuleViolation::subgraph)
      .def_property_readonly(
          "position",
          [](const RuleViolation& v) {
            return v.step ? py::object(py::int_(v.step->position)) : py::object(py::none());
          },
          "index of the step's tile in the traversal order, or None")
      .def_property_readonly(
          "tile",
          [](const RuleViolation& v) {
            return v.step ? py::object(py::int_(v.step->tile)) : py::object(py::none());
          },
          "raster tile index, or None")
      .def_property_readonly("k_step",
                             [](const RuleViolation& v) {
                               return v.step ? py::object(py::int_(v.step->k_step)) : py::object(py::none());
                             })
      .def_property_readonly(
          "op", [](const RuleViolation& v) { return v.op < 0 ? py::object(py::none()) : py::int_(v.op); })
      .def_property_readonly(
          "tensor",
          [](const RuleViolation& v) { return v.tensor < 0 ? py::object(py::none()) : py::int_(v.tensor); })
      .def_property_readonly("message", &RuleViolation::sentence)
      .def_readonly("working_set", &RuleViolation::working_set, "for an out-of-memory (M20): its terms")
      .def_readonly("capacity", &RuleViolation::capacity)
      .def("to_dict", [](const RuleViolation& v) { return to_python(violation_to_json(v)); })
      .def("__str__", &RuleViolation::describe)
      .def("__repr__", [](const RuleViolation& v) { return "<Violation " + v.describe() + ">"; });

  using Cost = SubgraphQuery::Cost;
  py::class_<Cost>(m, "SubgraphCost", "One subgraph question's answer: its cost, or the rule it breaks.")
      .def_readonly("feasible", &Cost::feasible)
      .def_readonly("latency", &Cost::latency, "L_i (M25); inf when infeasible")
      .def_readonly("compute_time", &Cost::compute_time)
      .def_readonly("memory_time", &Cost::memory_time)
      .def_readonly("compute_bound_latency", &Cost::compute_bound_latency)
      .def_readonly("peak_working_set", &Cost::peak_working_set)
      .def_readonly("steps", &Cost::steps)
      .def_property_readonly("grid",
                             [](const Cost& c) {
                               return std::pair{c.grid_rows, c.grid_cols};
                             })
      .def_readonly("k_steps", &Cost::k_steps)
      .def_readonly("violation", &Cost::violation)
      .def("__bool__", [](const Cost& c) { return c.feasible; })
      .def("__repr__", [](const Cost& c) {
        return c.feasible ? "<SubgraphCost " + format_number(c.latency) + ", peak " +
                                std::to_string(c.peak_working_set) + ">"
                          : "<SubgraphCost infeasible: " + c.violation->describe() + ">";
      });

  py::class_<SubgraphQuery, std::shared_ptr<SubgraphQuery>>(
      m, "SubgraphQuery", "A subgraph compiled once (Problem.subgraph); ask cost() for each granularity.")
      .def("cost", &SubgraphQuery::evaluate, py::arg("granularity"), py::arg("traversal") = py::none(),
           py::arg("locate") = true, py::arg("max_steps") = kDefaultMaxSteps, kSubgraphDoc);

  m.def(
      "subgraph_cost",
      [](const py::object& problem_source, const std::vector<int>& ops,
         const std::vector<int64_t>& granularity, const std::vector<int>& retained_in,
         const std::vector<int>& retain, const py::object& traversal, const std::string& compute,
         bool supernative, bool locate, int index, int64_t max_steps) {
        const ProblemHandle problem = as_problem(problem_source);
        const ModelOptions options = model_options(compute, supernative);
        auto key = structure_key(ops, retained_in, retain, options, index);
        auto it = problem->structures.find(key);
        if (it == problem->structures.end()) {
          auto query =
              std::make_shared<SubgraphQuery>(*problem, nullptr, ops, retained_in, retain, options, index);
          if (problem->structures.size() >= kMaxCachedStructures) problem->structures.clear();
          it = problem->structures.emplace(std::move(key), std::move(query)).first;
        }
        return it->second->evaluate(granularity, traversal, locate, max_steps);
      },
      py::arg("problem"), py::arg("ops"), py::arg("granularity"), py::arg("retained_in") = std::vector<int>{},
      py::arg("retain") = std::vector<int>{}, py::arg("traversal") = py::none(),
      py::arg("compute") = "full-k", py::arg("allow_supernative_k") = false, py::arg("locate") = true,
      py::arg("index") = 0, py::arg("max_steps") = kDefaultMaxSteps,
      (std::string(kSubgraphDoc) +
       "\n\nThe compiled structure is cached on the problem, so repeated questions "
       "about the same ops cost only the fast path.")
          .c_str());

  py::class_<SubgraphChoice>(m, "SubgraphChoice", "The oracle's best configuration of one subgraph.")
      .def_property_readonly("granularity",
                             [](const SubgraphChoice& c) {
                               return py::make_tuple(c.granularity.w, c.granularity.h, c.granularity.k);
                             })
      .def_property_readonly("traversal", &SubgraphChoice::traversal_order, "tile order, or None for raster")
      .def_property_readonly("grid",
                             [](const SubgraphChoice& c) {
                               return std::pair{c.grid_rows, c.grid_cols};
                             })
      .def_readonly("latency", &SubgraphChoice::latency)
      .def_readonly("peak_working_set", &SubgraphChoice::peak_working_set)
      .def("__repr__", [](const SubgraphChoice& c) {
        return "<SubgraphChoice [" + std::to_string(c.granularity.w) + ", " +
               std::to_string(c.granularity.h) + ", " + std::to_string(c.granularity.k) +
               "]: " + format_number(c.latency) + ">";
      });

  m.def(
      "best_subgraph",
      [](const py::object& problem_source, const std::vector<int>& ops, const std::vector<int>& retained_in,
         const std::vector<int>& retain, const std::string& compute, bool supernative) {
        const ProblemHandle problem = as_problem(problem_source);
        check_subgraph_indices(problem->problem, ops, retained_in, retain);
        SubgraphOracle oracle(problem->problem, problem->graph, model_options(compute, supernative));
        std::string reason;
        std::optional<SubgraphChoice> choice;
        {
          py::gil_scoped_release release;
          choice = oracle.best(ops, retained_in, retain, &reason);
        }
        return py::make_tuple(choice, choice ? std::string() : reason);
      },
      py::arg("problem"), py::arg("ops"), py::arg("retained_in") = std::vector<int>{},
      py::arg("retain") = std::vector<int>{}, py::arg("compute") = "full-k",
      py::arg("allow_supernative_k") = false,
      "The solver oracle's answer for one subgraph: (best SubgraphChoice, \"\") over the granularities and "
      "traversals it tries, or (None, reason) naming the last rule that rejected every candidate.");

  bind_schedules(m);
  bind_t10(m);
}
