// mlsys_sim._core: schedules, verify (the analytic evaluator), replay (the SystemC engine) and solve (the
// search), each a call into the library the command lines use.
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "python/bindings.hpp"
#include "sim/json_io.hpp"
#include "sim/step_model.hpp"
#include "sim/systemc/replay.hpp"
#include "solver/search.hpp"
#include "traces/replay_files.hpp"
#include "traces/report.hpp"
#include "verifier/bound.hpp"
#include "traces/atomic_file.hpp"

namespace mlsys::python {

namespace {

// A schedule read against a problem (M4 index ranges hold for that problem).
struct LoadedSchedule {
  Schedule schedule;
  ProblemHandle problem;
  std::string source;
};
using ScheduleHandle = std::shared_ptr<LoadedSchedule>;

ScheduleHandle schedule_from_document(JsonSource in, ProblemHandle problem) {
  auto loaded = std::make_shared<LoadedSchedule>();
  loaded->schedule = parse_schedule(in.doc, in.name, problem->problem);
  loaded->problem = std::move(problem);
  loaded->source = std::move(in.name);
  return loaded;
}

ScheduleHandle load_schedule_from(const py::handle& source, const py::handle& problem) {
  ProblemHandle p = as_problem(problem);
  return schedule_from_document(read_json_source(source, "schedule"), std::move(p));
}

// The schedule as it applies to `problem`: a Schedule object read against another problem is read again
// against this one, so its indices are checked where they are used.
ScheduleHandle schedule_for(const ProblemHandle& problem, const py::handle& schedule) {
  if (py::isinstance<LoadedSchedule>(schedule)) {
    ScheduleHandle s = schedule.cast<ScheduleHandle>();
    if (s->problem == problem) return s;
    return schedule_from_document({schedule_to_json(s->schedule), s->source}, problem);
  }
  return load_schedule_from(schedule, py::cast(problem));
}

struct VerifyReport {
  ScheduleReport report;
  LowerBound bound;
  MatmulCompute model = MatmulCompute::FullK;
};

struct SolveResult {
  ScheduleHandle schedule;  // null: no valid schedule
  double cost = 0, lower_bound = 0, elapsed = 0;
  SolveStats stats;
};

// One improvement or progress line, handed from the search threads to the calling thread, which alone
// touches Python objects.
struct SolveEvent {
  std::optional<Schedule> schedule;
  double cost = 0;
  std::string strategy, line;
};

SolveResult solve_in_background(const py::object& problem_source, std::optional<double> timeout, int threads,
                                uint64_t seed, int64_t max_orders, bool exhaustive,
                                const std::string& compute, bool supernative,
                                const py::object& on_improvement, bool progress) {
  const ProblemHandle problem = as_problem(problem_source);
  SolveOptions options;
  options.model = model_options(compute, supernative);
  if (threads < 1 || threads > 256)
    throw py::value_error("threads: expected 1 to 256, got " + std::to_string(threads));
  if (max_orders < 0) throw py::value_error("max_orders: expected 0 (no budget) or more");
  if (timeout && !(*timeout > 0)) throw py::value_error("timeout: expected seconds > 0");
  options.threads = threads;
  options.seed = seed;
  options.max_orders = max_orders;
  options.exhaustive = exhaustive;
  if (exhaustive)
    if (auto why = exhaustive_search_impossible(problem->problem, problem->graph))
      throw InputError(problem->source, "exhaustive", "", *why + "; run the timed search instead");
  const double limit = timeout      ? *timeout
                       : exhaustive ? 1e9
                                    : default_timeout_seconds(problem->problem.num_ops());
  options.timeout_seconds = search_seconds_within(limit);

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<SolveEvent> events;
  bool done = false;
  std::exception_ptr failure;
  SolveResult result;
  result.lower_bound = problem->bound.bound(options.model.matmul_compute);
  std::atomic<bool> stop{false};
  const bool want_schedules = !on_improvement.is_none();
  const auto start = std::chrono::steady_clock::now();
  auto post = [&](SolveEvent e) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(e));
    wake.notify_all();
  };
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (progress) options.on_progress = [&](const std::string& line) { post({{}, 0, {}, line}); };
  ImprovementCallback improved = [&](const Schedule& s, double cost, const std::string& strategy, int64_t) {
    if (!want_schedules && !progress) return;
    SolveEvent e{want_schedules ? std::optional<Schedule>(s) : std::nullopt, cost, strategy, {}};
    if (progress)
      e.line = "[" + format_number(std::round(seconds() * 1000) / 1000) + " s] cost " + format_number(cost) +
               " (lower bound " + format_number(result.lower_bound) + ", " + strategy + ")";
    post(std::move(e));
  };

  std::optional<Schedule> best;
  std::thread worker([&] {
    try {
      best = solve(problem->problem, problem->graph, options, stop, improved, &result.stats);
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mutex);
    done = true;
    wake.notify_all();
  });
  // The calling thread waits without the GIL, hands improvements to Python, and checks for Ctrl-C: a
  // KeyboardInterrupt (or an exception from on_improvement) stops the search threads before it propagates.
  py::object write_stderr = py::module_::import("sys").attr("stderr").attr("write");
  for (bool finished = false; !finished;) {
    std::deque<SolveEvent> batch;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex);
      wake.wait_for(lock, std::chrono::milliseconds(50), [&] { return done || !events.empty(); });
      finished = done;
      batch.swap(events);
    }
    try {
      for (SolveEvent& e : batch) {
        if (!e.line.empty()) write_stderr(e.line + "\n");
        if (e.schedule) {
          auto s =
              std::make_shared<LoadedSchedule>(LoadedSchedule{std::move(*e.schedule), problem, "<solve>"});
          on_improvement(py::cast(s), e.cost, e.strategy);
        }
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    } catch (...) {
      stop.store(true);
      py::gil_scoped_release release;
      worker.join();
      throw;
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  if (failure) std::rethrow_exception(failure);
  result.elapsed = seconds();
  if (best) {
    result.schedule = std::make_shared<LoadedSchedule>(LoadedSchedule{std::move(*best), problem, "<solve>"});
    result.cost = result.stats.best_cost;
  }
  return result;
}

std::mutex& systemc_kernel_mutex() {  // one SystemC simulation context per process
  static std::mutex m;
  return m;
}

}  // namespace

void bind_schedules(py::module_& m) {
  py::class_<SubgraphSpec>(m, "SubgraphSpec", "One subgraph of a schedule (M4).")
      .def_readonly("ops", &SubgraphSpec::ops)
      .def_property_readonly(
          "granularity",
          [](const SubgraphSpec& s) {
            return py::make_tuple(s.granularity.w, s.granularity.h, s.granularity.k);
          },
          "(w, h, k)")
      .def_readonly("retain", &SubgraphSpec::retain)
      .def_readonly("traversal", &SubgraphSpec::traversal, "tile order, or None for raster");

  py::class_<LoadedSchedule, ScheduleHandle>(m, "Schedule", "A schedule (M4), read against its problem.")
      .def(py::init([](const py::object& source, const py::object& problem) {
             return load_schedule_from(source, problem);
           }),
           py::arg("source"), py::arg("problem"), "Reads a schedule from a path, a JSON string or a dict.")
      .def_static(
          "from_file",
          [](const py::object& path, const py::object& problem) { return load_schedule_from(path, problem); },
          py::arg("path"), py::arg("problem"))
      .def_static(
          "from_json",
          [](const std::string& text, const py::object& problem) {
            return schedule_from_document({parse_json_text(text, "<json>"), "<json>"}, as_problem(problem));
          },
          py::arg("text"), py::arg("problem"))
      .def_static(
          "from_dict",
          [](const py::dict& d, const py::object& problem) { return load_schedule_from(d, problem); },
          py::arg("data"), py::arg("problem"))
      .def(
          "to_dict", [](const LoadedSchedule& s) { return to_python(schedule_to_json(s.schedule)); },
          "The rule book's solution object (M29): all five keys.")
      .def("to_json", [](const LoadedSchedule& s) { return schedule_to_json(s.schedule).dump(1) + "\n"; })
      .def(
          "save",
          [](const LoadedSchedule& s, const py::object& path) {
            write_file_atomic(py::module_::import("os").attr("fspath")(path).cast<std::string>(),
                              schedule_to_json(s.schedule).dump(1) + "\n");
          },
          py::arg("path"), "Writes the solution JSON atomically (temporary file, then rename).")
      .def_property_readonly("problem", [](const LoadedSchedule& s) { return s.problem; })
      .def_property_readonly("source", [](const LoadedSchedule& s) { return s.source; })
      .def_property_readonly("subgraphs", [](const LoadedSchedule& s) { return s.schedule.subgraphs; })
      .def_property_readonly("reported_latencies",
                             [](const LoadedSchedule& s) { return s.schedule.reported_latencies; })
      .def("__len__", [](const LoadedSchedule& s) { return s.schedule.subgraphs.size(); })
      .def("__repr__",
           [](const LoadedSchedule& s) {
             return "<mlsys_sim.Schedule " + s.source + ": " + std::to_string(s.schedule.subgraphs.size()) +
                    " subgraphs>";
           })
      .def(py::pickle(
          [](const LoadedSchedule& s) {
            return py::make_tuple(schedule_to_json(s.schedule).dump(), s.problem, s.source);
          },
          [](const py::tuple& t) {
            ScheduleHandle s = load_schedule_from(py::str(t[0]), t[1]);
            s->source = t[2].cast<std::string>();
            return s;
          }));

  py::class_<SubgraphReport>(m, "SubgraphReport", "One subgraph as the verifier evaluated it.")
      .def_readonly("index", &SubgraphReport::index)
      .def_readonly("ops", &SubgraphReport::ops)
      .def_property_readonly("granularity",
                             [](const SubgraphReport& s) {
                               return py::make_tuple(s.granularity.w, s.granularity.h, s.granularity.k);
                             })
      .def_property_readonly("grid",
                             [](const SubgraphReport& s) {
                               return std::pair{s.grid_rows, s.grid_cols};
                             })
      .def_readonly("k_steps", &SubgraphReport::k_steps)
      .def_readonly("steps", &SubgraphReport::steps)
      .def_readonly("latency", &SubgraphReport::latency)
      .def_readonly("compute_time", &SubgraphReport::compute_time)
      .def_readonly("memory_time", &SubgraphReport::memory_time)
      .def_readonly("compute_bound_latency", &SubgraphReport::compute_bound_latency)
      .def_readonly("reported", &SubgraphReport::reported, "the schedule's subgraph_latencies entry, if any")
      .def_readonly("peak_working_set", &SubgraphReport::peak_working_set);

  py::class_<VerifyReport>(m, "Report", "What verify found: the same figures as `verify --json`.")
      .def_property_readonly("valid", [](const VerifyReport& r) { return r.report.valid; })
      .def_property_readonly("total_latency", [](const VerifyReport& r) { return r.report.total_latency; })
      .def_property_readonly("capacity", [](const VerifyReport& r) { return r.report.capacity; })
      .def_property_readonly(
          "subgraphs", [](const VerifyReport& r) { return r.report.subgraphs; },
          "the subgraphs evaluated (up to the first violation)")
      .def_property_readonly("subgraph_latencies",
                             [](const VerifyReport& r) {
                               std::vector<double> l;
                               for (const auto& s : r.report.subgraphs) l.push_back(s.latency);
                               return l;
                             })
      .def_property_readonly("peak_working_set",
                             [](const VerifyReport& r) {
                               int64_t peak = 0;
                               for (const auto& s : r.report.subgraphs)
                                 peak = std::max(peak, s.peak_working_set);
                               return peak;
                             })
      .def_property_readonly(
          "error", [](const VerifyReport& r) { return r.report.error; }, "the first violated rule")
      .def_property_readonly(
          "warnings", [](const VerifyReport& r) { return r.report.warnings; },
          "M27 mismatches (errors under strict=True)")
      .def_property_readonly(
          "violations",
          [](const VerifyReport& r) {
            std::vector<RuleViolation> all;
            if (r.report.error) all.push_back(*r.report.error);
            all.insert(all.end(), r.report.warnings.begin(), r.report.warnings.end());
            return all;
          },
          "the error (if any), then the warnings")
      .def_property_readonly("lower_bound", [](const VerifyReport& r) { return r.bound.bound(r.model); })
      .def(
          "to_dict",
          [](const VerifyReport& r) { return to_python(report_to_json(r.report, r.bound, r.model)); },
          "The report exactly as `verify --json` prints it.")
      .def("__bool__", [](const VerifyReport& r) { return r.report.valid; })
      .def("__str__",
           [](const VerifyReport& r) {
             std::ostringstream out;
             print_report(out, r.report, r.bound, r.model);
             return out.str();
           })
      .def("__repr__", [](const VerifyReport& r) {
        return r.report.valid
                   ? "<Report valid, total " + format_number(r.report.total_latency) + ">"
                   : "<Report invalid: " + (r.report.error ? r.report.error->describe() : "") + ">";
      });

  m.def(
      "verify",
      [](const py::object& problem_source, const py::object& schedule_source, const std::string& compute,
         bool strict, bool supernative, int64_t max_steps) {
        const ProblemHandle problem = as_problem(problem_source);
        const ScheduleHandle schedule = schedule_for(problem, schedule_source);
        VerifyOptions options;
        options.model = model_options(compute, supernative);
        options.strict = strict;
        options.max_walk_steps = max_steps;
        VerifyReport r{{}, problem->bound, options.model.matmul_compute};
        const auto key = std::pair(static_cast<int>(options.model.matmul_compute), supernative);
        if (!problem->certified.count(key))
          problem->certified[key] =
              certified_bound_with_cover(problem->problem, problem->graph, options.model, kReportCoverSeconds).bound;
        r.bound.certified = problem->certified[key];
        {
          py::gil_scoped_release release;
          r.report = verify_schedule(problem->problem, problem->graph, schedule->schedule, options);
        }
        if (r.report.refused) throw InputError(schedule->source, "max_steps", "limits", *r.report.refused);
        return r;
      },
      py::arg("problem"), py::arg("schedule"), py::arg("compute") = "full-k", py::arg("strict") = false,
      py::arg("allow_supernative_k") = false, py::arg("max_steps") = kDefaultMaxSteps,
      "Checks a schedule against every rule and sums its latency (the analytic evaluator, as `verify`). "
      "A broken rule is in the report; malformed input raises InputError (a ValueError).");

  m.def(
      "steps",
      [](const py::object& problem_source, const py::object& schedule_source, const std::string& compute,
         bool supernative, int64_t max_steps) {
        const ProblemHandle problem = as_problem(problem_source);
        const ScheduleHandle schedule = schedule_for(problem, schedule_source);
        VerifyOptions options;
        options.model = model_options(compute, supernative);
        options.max_walk_steps = max_steps;
        check_step_budget(problem->problem, problem->graph, schedule->schedule, options.model, max_steps,
                          "steps()", schedule->source);
        std::vector<std::pair<int, StepDetail>> walked;
        options.on_step = [&](const SubgraphModel& model, const StepDetail& d) {
          walked.emplace_back(model.index(), d);
        };
        {
          py::gil_scoped_release release;
          verify_schedule(problem->problem, problem->graph, schedule->schedule, options);
        }
        auto region = [](const Region& r) { return py::make_tuple(r.r0, r.r1, r.c0, r.c1); };
        py::list rows;
        for (const auto& [subgraph, d] : walked) {
          py::list slices, computes, stores, terms;
          for (const SliceUse& u : d.slices)
            slices.append(py::make_tuple(u.tensor, region(u.region), u.loaded));
          for (const OpCompute& c : d.computes)
            computes.append(py::make_tuple(c.op, region(c.region), c.cost));
          for (const Store& st : d.stores) stores.append(py::make_tuple(st.tensor, region(st.region)));
          py::dict row;
          row["subgraph"] = subgraph;
          row["position"] = d.ref.position;
          row["tile"] = d.ref.tile;
          row["k_step"] = d.ref.k_step;
          row["slices"] = slices;
          row["computes"] = computes;
          row["stores"] = stores;
          row["load_elements"] = d.load_elements;
          row["store_elements"] = d.store_elements;
          row["compute"] = d.compute;
          row["memory_time"] = d.memory_time;
          row["latency"] = d.latency;
          row["working_set"] = d.working_set;
          rows.append(row);
        }
        return rows;
      },
      py::arg("problem"), py::arg("schedule"), py::arg("compute") = "full-k",
      py::arg("allow_supernative_k") = false, py::arg("max_steps") = 1'000'000,
      "Every step the schedule runs, as `verify --steps` lists them, up to the first violation: one dict per "
      "step "
      "with subgraph, position, tile, k_step, slices [(tensor, region, loaded)], computes [(op, region, "
      "cost)], "
      "stores [(tensor, region)], load/store elements, compute, memory_time, latency and the working set "
      "with "
      "its terms. Regions are (row0, row1, col0, col1). Refuses (InputError) above max_steps steps.");

  py::class_<ReplayResult>(m, "ReplayResult", "A replay in simulated time on the SystemC hardware modules.")
      .def_readonly("completed", &ReplayResult::completed)
      .def_readonly("total_latency", &ReplayResult::total_latency)
      .def_readonly("subgraph_latencies", &ReplayResult::subgraph_latencies)
      .def_readonly("peak_occupancy", &ReplayResult::peak_occupancy, "fast memory, elements")
      .def_readonly("steps", &ReplayResult::steps)
      .def_readonly("error", &ReplayResult::error)
      .def_readonly("error_time", &ReplayResult::error_time)
      .def("__repr__", [](const ReplayResult& r) {
        return "<ReplayResult " + std::string(r.completed ? "completed" : "stopped") + ", total " +
               format_number(r.total_latency) + ", peak occupancy " + std::to_string(r.peak_occupancy) + ">";
      });

  m.def(
      "replay",
      [](const py::object& problem_source, const py::object& schedule_source, const std::string& compute,
         bool supernative, const std::string& timing, const py::object& trace, const py::object& vcd,
         int64_t max_steps) {
        const ProblemHandle problem = as_problem(problem_source);
        const ScheduleHandle schedule = schedule_for(problem, schedule_source);
        const ModelOptions model = model_options(compute, supernative);
        if (timing != "contest" && timing != "overlapped")
          throw py::value_error("timing: expected \"contest\" or \"overlapped\", got \"" + timing + "\"");
        auto path = [](const py::object& p) {
          return p.is_none() ? std::string()
                             : py::module_::import("os").attr("fspath")(p).cast<std::string>();
        };
        const std::string trace_path = path(trace), vcd_path = path(vcd);
        check_step_budget(problem->problem, problem->graph, schedule->schedule, model, max_steps, "replay",
                          schedule->source);
        py::gil_scoped_release release;
        std::lock_guard lock(systemc_kernel_mutex());
        return replay_to_files(problem->problem, problem->graph, schedule->schedule, model, timing,
                               trace_path, vcd_path, schedule->source);
      },
      py::arg("problem"), py::arg("schedule"), py::arg("compute") = "full-k",
      py::arg("allow_supernative_k") = false, py::arg("timing") = "contest", py::arg("trace") = py::none(),
      py::arg("vcd") = py::none(), py::arg("max_steps") = kDefaultMaxSteps,
      "Replays the schedule step by step on SystemC modules (DMA link, fast memory, compute array). `trace` "
      "writes a Perfetto trace, `vcd` a VCD; timing=\"overlapped\" is a what-if outside the contest model.");

  py::class_<SolveResult>(m, "SolveResult", "The best schedule the search found, and how it went.")
      .def_readonly("schedule", &SolveResult::schedule, "None when no valid schedule exists")
      .def_property_readonly("cost",
                             [](const SolveResult& r) {
                               return r.schedule ? py::object(py::float_(r.cost)) : py::object(py::none());
                             })
      .def_readonly("lower_bound", &SolveResult::lower_bound)
      .def_readonly("elapsed", &SolveResult::elapsed, "seconds")
      .def_property_readonly("time_to_best", [](const SolveResult& r) { return r.stats.time_to_best; })
      .def_property_readonly("time_to_first", [](const SolveResult& r) { return r.stats.time_to_first; })
      .def_property_readonly("evaluations", [](const SolveResult& r) { return r.stats.evaluations; })
      .def_property_readonly("orders", [](const SolveResult& r) { return r.stats.orders; })
      .def_property_readonly("improvements", [](const SolveResult& r) { return r.stats.improvements; })
      .def_property_readonly("best_strategy", [](const SolveResult& r) { return r.stats.best_strategy; })
      .def_property_readonly("stopped_by", [](const SolveResult& r) { return r.stats.stopped_by; })
      .def_property_readonly("infeasible_reason",
                             [](const SolveResult& r) { return r.stats.infeasible_reason; })
      .def_property_readonly("exhaustive_complete",
                             [](const SolveResult& r) { return r.stats.exhaustive_complete; })
      .def_property_readonly(
          "exact_space_bound",
          [](const SolveResult& r) {
            return r.stats.exact_space_bound > 0 ? py::object(py::float_(r.stats.exact_space_bound))
                                                 : py::object(py::none());
          },
          "what the exhaustive search proved: no schedule without recomputation in its space costs less "
          "(None when it did not run; graphs of at most 20 ops, or exhaustive=True)")
      .def("__repr__", [](const SolveResult& r) {
        return r.schedule ? "<SolveResult cost " + format_number(r.cost) + " (lower bound " +
                                format_number(r.lower_bound) + "), stopped by " + r.stats.stopped_by + ">"
                          : "<SolveResult no valid schedule: " + r.stats.infeasible_reason + ">";
      });

  m.def(
      "solve", &solve_in_background, py::arg("problem"), py::arg("timeout") = py::none(),
      py::arg("threads") = 2, py::arg("seed") = 1, py::arg("max_orders") = 0, py::arg("exhaustive") = false,
      py::arg("compute") = "full-k", py::arg("allow_supernative_k") = false,
      py::arg("on_improvement") = py::none(), py::arg("progress") = false,
      "Searches for the cheapest schedule (as `mlsys`). `timeout` is the wall-clock limit in seconds "
      "(default: the contest's, by op count). Runs without the GIL; Ctrl-C stops the search threads and "
      "raises KeyboardInterrupt. `on_improvement(schedule, cost, strategy)` is called in the calling thread "
      "for every verified improvement; `progress` prints them on sys.stderr.");
}

}  // namespace mlsys::python
