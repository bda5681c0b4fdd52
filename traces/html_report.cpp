#include "traces/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/json_io.hpp"
#include "traces/dag_layout.hpp"
#include "traces/html_page.hpp"
#include "traces/report.hpp"
#include "verifier/bound.hpp"
#include "traces/atomic_file.hpp"

namespace mlsys {
namespace {

std::string ops_text(const std::vector<int>& ops) {
  std::string text;
  for (int o : ops) text += (text.empty() ? "" : ",") + std::to_string(o);
  return text;
}

const char* kStyle =
    ".scroll{overflow:auto;border:1px solid #ddd;max-height:640px}button{margin:0 4px 4px 0}\n";

// Zoom of the DAG (buttons) and of the timeline and occupancy charts (wheel, drag, double-click resets).
const char* kScript = R"(
  var dag=document.querySelector('#dag svg'),scale=1;
  function zoomDag(f){if(!dag)return;scale=Math.max(0.1,Math.min(8,scale*f));
    dag.style.transform='scale('+scale+')';dag.style.transformOrigin='0 0';}
  document.getElementById('dag-in').onclick=function(){zoomDag(1.25);};
  document.getElementById('dag-out').onclick=function(){zoomDag(0.8);};
  document.getElementById('dag-fit').onclick=function(){if(!dag)return;var box=document.getElementById('dag');
    zoomDag(box.clientWidth/dag.getBoundingClientRect().width);};
  ['timeline','occupancy'].forEach(function(id){
    var svg=document.getElementById(id);if(!svg)return;
    var vb=svg.viewBox.baseVal,full=[vb.x,vb.width],drag=null;
    svg.addEventListener('wheel',function(e){e.preventDefault();
      var r=svg.getBoundingClientRect(),fx=(e.clientX-r.left)/r.width,x=vb.x+fx*vb.width;
      var w=Math.max(full[1]/1000,Math.min(full[1],vb.width*(e.deltaY<0?0.8:1.25)));
      vb.x=Math.max(full[0],Math.min(full[0]+full[1]-w,x-fx*w));vb.width=w;},{passive:false});
    svg.addEventListener('mousedown',function(e){drag=[e.clientX,vb.x];});
    window.addEventListener('mouseup',function(){drag=null;});
    svg.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect();
      vb.x=Math.max(full[0],Math.min(full[0]+full[1]-vb.width,drag[1]-(e.clientX-drag[0])/r.width*vb.width));});
    svg.addEventListener('dblclick',function(){vb.x=full[0];vb.width=full[1];});
  });
)";

}  // namespace

// Downsampled occupancy: about `limit` points, keeping each bucket's highest value (so the peak survives).
// Buckets are numbered by integer, so that every pass takes at least one sample whatever the rounding of the
// times (a bucket end computed in floating point fell on a sample's time once, and the loop never ended).
std::vector<OccupancySample> downsample_occupancy(const std::vector<OccupancySample>& samples, size_t limit) {
  if (samples.size() <= limit) return samples;
  std::vector<OccupancySample> out;
  const double t0 = samples.front().time, t1 = samples.back().time;
  const double buckets = static_cast<double>(std::max<size_t>(1, limit / 2));
  const double width = (t1 - t0) / buckets;
  auto bucket = [&](double time) {
    const double q = width > 0 ? std::floor((time - t0) / width) : 0;
    return q > 0 ? static_cast<int64_t>(std::min(q, buckets)) : int64_t{0};
  };
  size_t i = 0;
  while (i < samples.size()) {
    const int64_t b = bucket(samples[i].time);
    OccupancySample high = samples[i], last = samples[i];
    for (; i < samples.size() && bucket(samples[i].time) == b; ++i) {
      if (samples[i].elements > high.elements) high = samples[i];
      last = samples[i];
    }
    out.push_back(high);
    if (last.time != high.time) out.push_back(last);
  }
  return out;
}

std::string schedule_report_html(const ScheduleReportPage& page) {
  const Problem& p = *page.problem;
  const ScheduleReport& r = *page.report;
  const MatmulCompute model = page.model.matmul_compute;
  const double bound = page.bound.bound(model);
  std::ostringstream html;
  html << html_page_start("report: " + page.solution_name, kStyle)
       << "<h1>Schedule report</h1>\n<table class=\"summary\">"
       << "<tr><td>problem</td><td>" << html_escape(page.problem_name) << ": " << p.num_ops() << " ops, "
       << p.num_tensors() << " tensors, capacity " << format_display(p.fast_memory_capacity) << ", bandwidth "
       << format_display(p.slow_memory_bandwidth) << ", native " << p.native_w << "x" << p.native_h
       << "</td></tr>";
  if (!p.names.model.empty())
    html << "<tr><td>imported from</td><td>" << html_escape(p.names.model) << " on "
         << html_escape(p.names.hardware) << " (op and tensor names in the graph's tooltips)</td></tr>";
  html << "<tr><td>schedule</td><td>" << html_escape(page.solution_name) << ": "
       << page.schedule->subgraphs.size() << " subgraphs</td></tr><tr><td>model</td><td>" << to_string(model)
       << (page.model.allow_supernative_k ? ", --allow-supernative-k" : "") << " (<a href=\""
       << html_escape(page.docs + "/model.md") << "\">the cost model</a>)</td></tr>";
  if (r.valid) {
    html << "<tr><td>verdict</td><td class=\"valid\" id=\"verdict\">valid</td></tr><tr><td>total "
            "latency</td><td>"
         << format_display(r.total_latency) << "</td></tr><tr><td>lower bound</td><td>"
         << format_display(bound) << " (gap " << format_display(100 * (r.total_latency / bound - 1))
         << " %)</td></tr>";
    if (page.bound.certified > 0)
      html << "<tr><td>certified bound</td><td id=\"certified\">" << format_display(page.bound.certified)
           << ": within " << format_display(proven_gap_percent(r.total_latency, page.bound.certified))
           << " % of optimal (<a href=\"" << html_escape(page.docs + "/bounds.md")
           << "\">the proof</a>; <code>bound PROBLEM</code> lists its terms)</td></tr>";
  } else if (r.error) {
    html << "<tr><td>verdict</td><td class=\"invalid\" id=\"verdict\">invalid: ["
         << rule_link(r.error->rule, page.docs) << "] " << html_escape(r.error->sentence()) << "</td></tr>";
    if (r.error->subgraph >= 0) {
      html << "<tr><td>where</td><td>subgraph " << r.error->subgraph;
      if (r.error->step)
        html << ", step " << r.error->step->position << " (tile " << r.error->step->tile << ", k-step "
             << r.error->step->k_step << ")";
      html << "</td></tr>";
    }
  }
  html << "</table>\n";

  // An out-of-memory step: its working-set terms stacked against the capacity.
  if (!r.valid && r.error && r.error->working_set) {
    const WorkingSet& ws = *r.error->working_set;
    const double total = static_cast<double>(ws.total()), cap = r.error->capacity;
    const double scale = 900 / std::max(total, cap);
    html << "<h2>Working set at the failing step (" << rule_link("M20", page.docs)
         << ")</h2>\n<svg id=\"working-set\" width=\"960\" "
            "height=\"90\" "
            "viewBox=\"0 0 960 90\">\n";
    double x = 10;
    const char* colors[] = {"#8c6bb1", "#6baed6", "#fd8d3c", "#e7298a"};
    for (const WorkingSetTerm& term : ws.terms) {
      const double w = static_cast<double>(term.elements) * scale;
      const int color = term.part == 'A' ? 0 : term.part == 'B' ? 1 : term.part == 'C' ? 2 : 3;
      html << "<rect class=\"ws-term\" x=\"" << x << "\" y=\"20\" width=\"" << std::max(w, 0.5)
           << "\" height=\"36\" fill=\"" << colors[color] << "\" stroke=\"white\" data-tip=\"" << term.part
           << " T" << term.tensor << " " << html_escape(to_string(term.region)) << ": "
           << format_display(term.elements) << "\"/>\n";
      x += w;
    }
    html << "<line class=\"capacity-line\" x1=\"" << 10 + cap * scale << "\" y1=\"8\" x2=\""
         << 10 + cap * scale << "\" y2=\"66\" stroke=\"#c62828\" stroke-width=\"2\"/><text x=\""
         << 10 + cap * scale << "\" y=\"82\" text-anchor=\"middle\" font-size=\"12\">capacity "
         << format_display(cap) << "</text>\n<text x=\"10\" y=\"14\" font-size=\"12\">A retained-in "
         << format_display(ws.retained_in) << " + B slices " << format_display(ws.slices) << " + C outputs "
         << format_display(ws.outputs) << " + D accumulators " << format_display(ws.accumulators) << " = "
         << format_display(total) << "</text></svg>\n";
  }

  // The DAG.
  html << "<h2>DAG</h2>\n<p class=\"note\">Ops coloured by the first subgraph that runs them (double border: "
          "recomputed); boxes with a folded corner are graph inputs (grey) and outputs (green); red edges "
          "carry "
          "retained tensors.</p>\n<button id=\"dag-in\">zoom in</button><button id=\"dag-out\">zoom "
          "out</button>"
          "<button id=\"dag-fit\">fit width</button>\n<div class=\"scroll\" id=\"dag\">";
  try {
    html << dag_svg(p, *page.graph, *page.schedule);
  } catch (const std::exception& e) {
    html << "<p class=\"note\">" << html_escape(e.what()) << "</p>";
  }
  html << "</div>\n";

  // Timeline: one bar per evaluated subgraph, compute-bound time dark, memory-bound time light.
  double total = 0;
  for (const SubgraphReport& sg : r.subgraphs) total += sg.latency;
  const double W = 1000, H = 70;
  html << "<h2>Timeline</h2>\n<p class=\"note\">One bar per subgraph on the latency axis, in its DAG colour; "
          "the darkened lower half spans its compute-bound steps, the rest is memory-bound. Wheel to zoom, "
          "drag to pan, double-click to reset.</p>\n"
       << "<svg id=\"timeline\" width=\"100%\" height=\"" << H + 20 << "\" viewBox=\"0 0 " << W << " "
       << H + 20 << "\" preserveAspectRatio=\"none\">\n";
  double start = 0;
  for (const SubgraphReport& sg : r.subgraphs) {
    const double x = total > 0 ? start / total * W : 0, w = total > 0 ? sg.latency / total * W : 0;
    const double dark = sg.latency > 0 ? w * sg.compute_bound_latency / sg.latency : 0;
    const std::string color = subgraph_color(sg.index);
    std::ostringstream tip;
    tip << "subgraph " << sg.index << ": ops " << ops_text(sg.ops) << "\ngranularity [" << sg.granularity.w
        << ", " << sg.granularity.h << ", " << sg.granularity.k << "], grid " << sg.grid_rows << "x"
        << sg.grid_cols << "x" << sg.k_steps << ", " << format_display(static_cast<double>(sg.steps))
        << " steps\ncompute " << format_display(sg.compute_time) << ", memory "
        << format_display(sg.memory_time) << ", latency " << format_display(sg.latency) << " ("
        << std::lround(sg.latency > 0 ? 100 * sg.compute_bound_latency / sg.latency : 0)
        << " % compute-bound)";
    html << "<g class=\"timeline-bar\" data-subgraph=\"" << sg.index << "\" data-tip=\""
         << html_escape(tip.str()) << "\"><rect x=\"" << x << "\" y=\"10\" width=\"" << w << "\" height=\""
         << H - 20 << "\" fill=\"" << color
         << "\" stroke=\"white\" stroke-width=\"1\" vector-effect=\"non-scaling-stroke\"/><rect x=\"" << x
         << "\" y=\"" << H / 2 << "\" width=\"" << std::max(dark, 0.0) << "\" height=\"" << H / 2 - 10
         << "\" fill=\"#000\" opacity=\"0.45\"/></g>\n";
    start += sg.latency;
  }
  html << "<text x=\"2\" y=\"" << H + 14 << "\" font-size=\"11\">0</text><text x=\"" << W - 2 << "\" y=\""
       << H + 14 << "\" font-size=\"11\" text-anchor=\"end\">" << format_display(total) << "</text></svg>\n";

  // Occupancy over time, from the replay.
  html << "<h2>Fast-memory occupancy (SystemC replay)</h2>\n";
  if (page.occupancy.empty()) {
    html << "<p class=\"note\" id=\"occupancy-note\">" << html_escape(page.occupancy_note) << "</p>\n";
  } else {
    const std::vector<OccupancySample> samples = downsample_occupancy(page.occupancy, 4000);
    const double t_end = std::max(samples.back().time, total > 0 ? total : 1.0);
    int64_t peak = 0;
    double peak_time = 0;
    for (const OccupancySample& s : page.occupancy)
      if (s.elements > peak) peak = s.elements, peak_time = s.time;
    const double top = std::max(static_cast<double>(peak), p.fast_memory_capacity) * 1.1;
    const double OH = 200;
    auto X = [&](double t) { return t / t_end * W; };
    auto Y = [&](double v) { return OH - v / top * (OH - 10); };
    std::ostringstream path;
    double prev = 0;
    path << "0," << Y(0);
    for (const OccupancySample& s : samples) {
      path << " " << X(s.time) << "," << Y(prev) << " " << X(s.time) << ","
           << Y(static_cast<double>(s.elements));
      prev = static_cast<double>(s.elements);
    }
    path << " " << W << "," << Y(prev);
    html
        << "<svg id=\"occupancy\" width=\"100%\" height=\"" << OH + 20 << "\" viewBox=\"0 0 " << W << " "
        << OH + 20
        << "\" preserveAspectRatio=\"none\">\n<polyline class=\"occupancy\" fill=\"none\" stroke=\"#1f77b4\" "
           "stroke-width=\"1.5\" vector-effect=\"non-scaling-stroke\" points=\""
        << path.str() << "\"/>\n<line class=\"capacity-line\" x1=\"0\" y1=\"" << Y(p.fast_memory_capacity)
        << "\" x2=\"" << W << "\" y2=\"" << Y(p.fast_memory_capacity)
        << "\" stroke=\"#c62828\" stroke-dasharray=\"6,4\" vector-effect=\"non-scaling-stroke\" "
           "data-tip=\"capacity "
        << format_display(p.fast_memory_capacity) << "\"/>\n<circle class=\"peak\" cx=\"" << X(peak_time)
        << "\" cy=\"" << Y(static_cast<double>(peak)) << "\" r=\"4\" fill=\"#c62828\" data-tip=\"peak "
        << format_display(static_cast<double>(peak)) << " at t = " << format_display(peak_time) << "\"/>\n"
        << "<text x=\"4\" y=\"" << Y(p.fast_memory_capacity) - 4
        << "\" font-size=\"11\" fill=\"#c62828\">capacity " << format_display(p.fast_memory_capacity)
        << "</text><text x=\"4\" y=\"" << OH + 14 << "\" font-size=\"11\">peak "
        << format_display(static_cast<double>(peak)) << "</text></svg>\n";
  }

  // The per-subgraph table.
  html
      << "<h2>Subgraphs</h2>\n<table class=\"grid\"><tr><th>#</th><th>ops</th><th>[w, h, k]</th><th>grid</th>"
         "<th>steps</th><th>compute</th><th>memory</th><th>latency</th><th>compute-bound</th><th>peak "
         "WS</th></tr>\n";
  for (const SubgraphReport& sg : r.subgraphs)
    html << "<tr><td>" << sg.index << "</td><td style=\"text-align:left\">" << ops_text(sg.ops)
         << "</td><td>[" << sg.granularity.w << ", " << sg.granularity.h << ", " << sg.granularity.k
         << "]</td><td>" << sg.grid_rows << "x" << sg.grid_cols << "x" << sg.k_steps << "</td><td>"
         << format_display(static_cast<double>(sg.steps)) << "</td><td>" << format_display(sg.compute_time)
         << "</td><td>" << format_display(sg.memory_time) << "</td><td>" << format_display(sg.latency)
         << "</td><td>" << std::lround(sg.latency > 0 ? 100 * sg.compute_bound_latency / sg.latency : 0)
         << " %</td><td>" << format_display(static_cast<double>(sg.peak_working_set)) << "</td></tr>\n";
  html << "</table>\n" << html_page_end(kScript);
  return html.str();
}

void write_schedule_report(const std::string& path, const std::string& problem_name,
                           const std::string& solution_name, const Problem& problem, const Graph& graph,
                           const Schedule& schedule, const ScheduleReport& report, const ModelOptions& model,
                           int64_t max_steps) {
  ScheduleReportPage page;
  page.problem_name = problem_name;
  page.solution_name = solution_name;
  page.problem = &problem;
  page.graph = &graph;
  page.schedule = &schedule;
  page.report = &report;
  page.bound = lower_bound(problem, graph);
  page.bound.certified = certified_bound_with_cover(problem, graph, model, kReportCoverSeconds).bound;
  page.model = model;
  page.docs = docs_location(path);
  const int64_t steps = count_steps(problem, graph, schedule, model);
  if (steps > max_steps) {
    page.occupancy_note = "Not replayed: the schedule has " + format_display(static_cast<double>(steps)) +
                          " steps, above the budget of " + format_display(static_cast<double>(max_steps)) +
                          " (--max-steps raises it).";
  } else {
    ReplayOptions options;
    options.model = model;
    options.occupancy = &page.occupancy;
    replay_schedule(problem, graph, schedule, options);
    if (page.occupancy.empty())
      page.occupancy_note = "The replay allocated nothing (the schedule fails a static rule).";
  }
  write_file_atomic(path, schedule_report_html(page));
}

}  // namespace mlsys
