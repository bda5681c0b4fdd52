// mlsys_sim._core: T10 mode (rule book t10-model.md). Problems and plans, evaluation under a profile, and the
// exhaustive search, as the `t10` command line runs them.
#include <pybind11/stl.h>

#include "python/bindings.hpp"
#include "sim/json_io.hpp"
#include "sim/t10/t10_cores.hpp"
#include "sim/t10/t10_model.hpp"
#include "sim/t10/t10_program_sim.hpp"
#include "solver/t10_compile.hpp"
#include "solver/t10_search.hpp"
#include "traces/t10_program_report.hpp"

namespace mlsys::python {

namespace {

struct T10Problem {
  t10::Problem problem;
  std::string source;
};
struct T10Plan {
  t10::Plan plan;
};
struct T10Evaluation {
  t10::Problem problem;
  t10::Plan plan;
  t10::Evaluation evaluation;
  t10::Profile profile;
};

T10Problem t10_problem_from(const py::handle& source) {
  if (py::isinstance<T10Problem>(source)) return source.cast<T10Problem>();
  JsonSource in = read_json_source(source, "T10 problem");
  return {t10::parse_problem(in.doc, in.name), in.name};  // "FILE: [CODE] message", as the t10 CLI says
}

T10Plan t10_plan_from(const py::handle& source) {
  if (py::isinstance<T10Plan>(source)) return source.cast<T10Plan>();
  JsonSource in = read_json_source(source, "T10 plan");
  return {t10::parse_plan(in.doc, in.name)};
}

t10::Profile profile_named(const std::string& name) {
  if (name == "strict") return t10::Profile::Strict;
  if (name == "engdesign") return t10::Profile::EngDesign;
  throw py::value_error("profile: expected \"strict\" or \"engdesign\", got \"" + name + "\"");
}

// T3, as `t10` checks it when it reads the problem for a profile.
void check_profile_of(const T10Problem& p, t10::Profile profile) {
  t10::check_profile(p.problem, profile, p.source);
}

}  // namespace

void bind_t10(py::module_& m) {
  py::class_<T10Problem>(m, "T10Problem", "A MatMul on an IPU-style chip (T1-T2).")
      .def(py::init([](const py::object& source) { return t10_problem_from(source); }), py::arg("source"),
           "Reads a T10 problem from a path, a JSON string or a dict.")
      .def_property_readonly("m", [](const T10Problem& p) { return p.problem.m; })
      .def_property_readonly("k", [](const T10Problem& p) { return p.problem.k; })
      .def_property_readonly("n", [](const T10Problem& p) { return p.problem.n; })
      .def_property_readonly("cores", [](const T10Problem& p) { return p.problem.chip.cores; })
      .def_property_readonly("sram_bytes_per_core",
                             [](const T10Problem& p) { return p.problem.chip.sram_bytes_per_core; })
      .def_property_readonly("name", [](const T10Problem& p) { return p.problem.name; })
      .def_property_readonly("source", [](const T10Problem& p) { return p.source; })
      .def_property_readonly(
          "compute_lower_bound", [](const T10Problem& p) { return t10::compute_lower_bound(p.problem); },
          "T41: no plan computes faster")
      .def("__repr__", [](const T10Problem& p) {
        return "<mlsys_sim.T10Problem " + p.source + ": " + std::to_string(p.problem.m) + "x" +
               std::to_string(p.problem.k) + "x" + std::to_string(p.problem.n) + ">";
      });

  py::class_<T10Plan>(m, "T10Plan", "A compute-shift plan (T4-T5): F_op and the temporal factors.")
      .def(py::init([](const py::object& source) { return t10_plan_from(source); }), py::arg("source"),
           "Reads a plan from a path, a JSON string or a dict (the {\"config\": ...} wrapper is accepted).")
      .def_property_readonly("f_op", [](const T10Plan& p) { return p.plan.f_op; })
      .def("to_dict", [](const T10Plan& p) { return to_python(t10::plan_to_json(p.plan)); })
      .def("__repr__",
           [](const T10Plan& p) { return "<mlsys_sim.T10Plan " + t10::plan_to_json(p.plan).dump() + ">"; });

  py::class_<T10Evaluation>(m, "T10Evaluation",
                            "A plan under a profile: accepted or the rules it breaks, and its cost.")
      .def_property_readonly("accepted", [](const T10Evaluation& e) { return e.evaluation.accepted; })
      .def_property_readonly(
          "total_cycles",
          [](const T10Evaluation& e) {
            return e.evaluation.cost ? py::object(py::float_(e.evaluation.cost->total))
                                     : py::object(py::none());
          },
          "None when the cost is undefined (E4, E6)")
      .def_property_readonly("score", [](const T10Evaluation& e) { return e.evaluation.score; })
      .def_property_readonly(
          "violations",
          [](const T10Evaluation& e) {
            std::vector<std::pair<std::string, std::string>> v;
            for (const auto& x : e.evaluation.violations) v.emplace_back(x.code, x.message);
            return v;
          },
          "(code, message) of each rule the active profile rejects, in rule book order")
      .def_property_readonly("hot_bytes",
                             [](const T10Evaluation& e) { return e.evaluation.derived.hot_bytes; })
      .def_property_readonly("cores", [](const T10Evaluation& e) { return e.evaluation.derived.cores; })
      .def(
          "to_dict",
          [](const T10Evaluation& e) {
            return to_python(t10::evaluation_to_json(e.problem, e.plan, e.evaluation, e.profile));
          },
          "Exactly what `t10 verify --json` prints.")
      .def("__bool__", [](const T10Evaluation& e) { return e.evaluation.accepted; });

  m.def(
      "t10_evaluate",
      [](const py::object& problem_source, const py::object& plan_source, const std::string& profile_name) {
        const t10::Profile profile = profile_named(profile_name);
        const T10Problem p = t10_problem_from(problem_source);
        check_profile_of(p, profile);
        const T10Plan plan = t10_plan_from(plan_source);
        return T10Evaluation{p.problem, plan.plan, t10::evaluate(p.problem, plan.plan, profile), profile};
      },
      py::arg("problem"), py::arg("plan"), py::arg("profile") = "strict",
      "Every rule of the profile (strict: SRAM, chains, splits; engdesign: the benchmark's grader) and the "
      "cost.");

  m.def(
      "t10_simulate",
      [](const py::object& problem_source, const py::object& plan_source, const std::string& timing,
         bool functional, uint64_t seed) {
        const std::optional<t10::CoreTiming> parsed = t10::core_timing_from(timing);
        if (!parsed)
          throw InputError("", "timing", "usage",
                           "must be \"grader\", \"exchange\" or \"calibrated\", got \"" + timing + "\"");
        const T10Problem p = t10_problem_from(problem_source);
        const T10Plan plan = t10_plan_from(plan_source);
        t10::CoreSimOptions options;
        options.timing = *parsed;
        options.functional = functional;
        options.seed = seed;
        t10::CoresResult result;
        try {
          py::gil_scoped_release release;
          result = t10::simulate_cores(p.problem, plan.plan, options);
        } catch (const std::invalid_argument& refused) {
          throw InputError(p.source, "plan", "T10", refused.what());
        }
        return to_python(t10::cores_result_to_json(result, options.timing));
      },
      py::arg("problem"), py::arg("plan"), py::arg("timing") = "grader", py::arg("functional") = false,
      py::arg("seed") = 1,
      "Every core of the plan, with real pieces moved between them (t10 simulate): a dict with the grader's "
      "totals, the exchange or calibrated timing's phases if asked, SRAM per core, and the first "
      "data-consistency violation.");

  py::class_<t10::RankedPlan>(m, "T10RankedPlan")
      .def_property_readonly("plan", [](const t10::RankedPlan& r) { return T10Plan{r.plan}; })
      .def_readonly("total_cycles", &t10::RankedPlan::total)
      .def_readonly("hot_bytes", &t10::RankedPlan::hot);
  py::class_<t10::SearchResult>(m, "T10SearchResult")
      .def_readonly("top", &t10::SearchResult::top, "best first (T40 order)")
      .def_readonly("ties", &t10::SearchResult::ties)
      .def_readonly("evaluated", &t10::SearchResult::evaluated)
      .def_readonly("pruned", &t10::SearchResult::pruned_fops)
      .def_readonly("accepted", &t10::SearchResult::accepted);

  m.def(
      "t10_search",
      [](const py::object& problem_source, const std::string& profile_name, size_t top) {
        const t10::Profile profile = profile_named(profile_name);
        const T10Problem p = t10_problem_from(problem_source);
        check_profile_of(p, profile);
        if (top < 1) throw py::value_error("top: expected at least 1");
        py::gil_scoped_release release;
        return t10::search(p.problem, profile, top);
      },
      py::arg("problem"), py::arg("profile") = "strict", py::arg("top") = 1,
      "Every plan the profile accepts (T39-T41), pruned by the compute bound; the best `top` first. "
      "Runs without the GIL.");

  m.def(
      "_t10_compile",
      [](const py::object& source, const std::string& reconcile, int64_t sram, bool simulate,
         bool functional) {
        if (reconcile != "exact" && reconcile != "heuristic")
          throw InputError("", "reconcile", "usage",
                           "must be \"exact\" or \"heuristic\", got \"" + reconcile + "\"");
        JsonSource in = read_json_source(source, "T10 model");
        t10::TensorProgram program = t10::program_from_document(in.doc, in.name, "model");
        if (sram > 0) program.chip.sram_bytes_per_core = sram;
        t10::CompileOptions options;
        options.reconciliation =
            reconcile == "heuristic" ? t10::Reconciliation::Heuristic : t10::Reconciliation::Exact;
        nlohmann::json doc;
        {
          py::gil_scoped_release release;
          const t10::CompileResult result = t10::compile_program(program, options);
          if (!result.compiled)
            throw InputError(in.name, "sram_bytes_per_core", "E_SRAM",
                             "the model needs at least " + std::to_string(result.least_sram_bytes) +
                                 " B per core, the chip has " +
                                 std::to_string(program.chip.sram_bytes_per_core));
          std::optional<t10::ProgramRun> run;
          if (simulate || functional) {
            t10::ProgramSimOptions sim;
            sim.functional = functional;
            run = t10::simulate_program(program, *result.compiled, sim);
          }
          doc = t10::compiled_program_json(program, result, run ? &*run : nullptr);
        }
        return to_python(doc);
      },
      py::arg("model"), py::arg("reconcile") = "exact", py::arg("sram") = 0, py::arg("simulate") = true,
      py::arg("functional") = false, "See mlsys_sim.t10_compile.");
}

}  // namespace mlsys::python
