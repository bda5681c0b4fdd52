#include "traces/t10_report.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "traces/html_page.hpp"
#include "traces/report.hpp"

namespace mlsys::t10 {
namespace {

std::string plan_text(const Plan& p) {
  std::ostringstream out;
  out << "F_op [" << p.f_op[0] << ", " << p.f_op[1] << ", " << p.f_op[2] << "], A " << p.am << "x" << p.ak
      << ", B " << p.bk << "x" << p.bn << ", C " << p.cm << "x" << p.cn;
  return out.str();
}

// The best plans of `t10 solve` under the page's timing and profile.
void best_plans_section(std::ostringstream& html, const PlanReportPage& page) {
  html << "<h2>Best plans (t10 solve --timing " << html_escape(page.timing) << ", "
       << html_escape(page.profile) << ")</h2>\n";
  std::vector<std::pair<Plan, std::pair<double, std::string>>> rows;  // plan, (cycles, memory note)
  if (page.timing == "calibrated")
    for (const CalibratedRankedPlan& p : page.calibrated_top)
      rows.push_back({p.plan,
                      {p.total, format_display(static_cast<double>(p.hot)) + " hot, " +
                                    format_display(static_cast<double>(p.cold)) + " cold"}});
  else if (page.timing == "exchange")
    for (const ExchangeRankedPlan& p : page.exchange_top)
      rows.push_back({p.plan, {p.exchange_total, "grader " + format_display(p.grader_total) + " cycles"}});
  else
    for (const RankedPlan& p : page.top)
      rows.push_back({p.plan, {p.total, format_display(static_cast<double>(p.hot)) + " hot"}});
  if (rows.empty()) {
    html << "<p class=\"note\">No plan is accepted.</p>\n";
    return;
  }
  html << "<table class=\"grid\" id=\"top-plans\" data-timing=\"" << html_escape(page.timing)
       << "\"><tr><th>#</th><th>plan</th><th>" << html_escape(page.timing) << " cycles</th><th>bytes per core"
       << "</th></tr>\n";
  for (size_t i = 0; i < rows.size(); ++i)
    html << "<tr><td>" << i + 1 << "</td><td style=\"text-align:left\">" << plan_text(rows[i].first)
         << "</td><td>" << format_display(rows[i].second.first) << "</td><td>" << rows[i].second.second
         << "</td></tr>\n";
  html << "</table>\n";
}

// The chosen timing's total and its terms, or why it has none for this plan.
struct Headline {
  std::optional<double> total;
  std::vector<std::pair<const char*, double>> terms;
  std::string missing;
};

Headline headline(const PlanReportPage& page) {
  Headline h;
  const Evaluation& e = *page.evaluation;
  if (page.timing == "grader") {
    if (!e.cost) return h.missing = "the plan has no defined cost under this profile", h;
    const Cost& c = *e.cost;
    h.total = c.total;
    h.terms = {{"compute", c.compute},
               {"load", c.load},
               {"store", c.store},
               {"shift", static_cast<double>(c.shift)},
               {"broadcast", static_cast<double>(c.bcast)},
               {"reduce", static_cast<double>(c.reduce)}};
  } else if (page.timing == "exchange") {
    if (!page.cores) return h.missing = "the plan has no defined cost under this profile", h;
    const CoresResult& r = *page.cores;
    h.total = r.exchange_total;
    h.terms = {{"compute", r.exchange_compute}, {"exchange", r.exchange_exchange}, {"sync", r.exchange_sync}};
  } else {
    if (!page.calibrated)
      return h.missing =
                 "the calibrated model cannot price this plan (a dimension's rings do not form a chain)",
             h;
    const CoresResult& r = *page.calibrated;
    h.total = r.makespan;
    h.terms = {{"compute", r.calibrated_compute},
               {"shifts and syncs", r.calibrated_sync_shift},
               {"shuffle", r.calibrated_shuffle}};
  }
  return h;
}

const char* timing_description(const std::string& timing) {
  if (timing == "grader") return "the rule book's cost model (T11-T21)";
  if (timing == "exchange") return "bulk-synchronous IPU exchange on every core";
  return "the T10 authors' IPU-fitted model, on every core";
}

// A colour scale for a heat map: the gradient from 0 to the largest value, with its unit.
void colour_scale(std::ostringstream& html, const char* id, double high, const std::string& unit) {
  html << "<svg class=\"colour-scale\" id=\"" << id << "-scale\" width=\"320\" height=\"34\">"
       << "<defs><linearGradient id=\"" << id
       << "-gradient\"><stop offset=\"0\" stop-color=\"rgb(245,245,255)\"/>"
       << "<stop offset=\"1\" stop-color=\"rgb(55,55,255)\"/></linearGradient></defs><rect x=\"10\" y=\"2\" "
          "width=\"300\" height=\"12\" fill=\"url(#"
       << id << "-gradient)\" stroke=\"#999\"/>";
  for (int i = 0; i <= 4; ++i)
    html << "<text class=\"scale-tick\" x=\"" << 10 + 75 * i << "\" y=\"28\" font-size=\"10\" text-anchor=\""
         << (i == 0   ? "start"
             : i == 4 ? "end"
                      : "middle")
         << "\">" << format_display(high * i / 4) << (i == 4 ? " " + unit : "") << "</text>";
  html << "</svg>\n";
}

// The calibrated timing (the T10 authors' IPU-fitted model): this plan's terms on every core, and the best
// plans of that model's search space.
void calibrated_section(std::ostringstream& html, const PlanReportPage& page) {
  html << "<h2 id=\"calibrated\">Calibrated timing (IPU-fitted model, <a href=\"" << page.docs
       << "/t10-model.md#calibrated\">docs</a>)</h2>\n";
  if (page.calibrated) {
    const CoresResult& r = *page.calibrated;
    html << "<table class=\"grid\" id=\"calibrated-terms\"><tr><th>term</th><th>cycles</th></tr>\n"
         << "<tr><td>compute</td><td>" << format_display(r.calibrated_compute) << "</td></tr>\n"
         << "<tr><td>shifts and syncs</td><td>" << format_display(r.calibrated_sync_shift) << "</td></tr>\n"
         << "<tr><td>shuffle after the operator</td><td>" << format_display(r.calibrated_shuffle)
         << "</td></tr>\n"
         << "<tr><td><b>total (makespan on every core)</b></td><td><b>" << format_display(r.makespan)
         << "</b></td></tr>\n<tr><td>warm-up from the cold layout (not added)</td><td>"
         << format_display(r.warm_up)
         << "</td></tr>\n</table>\n<p>Memory per core as the model counts it: hot "
         << format_display(static_cast<double>(r.calibrated_hot_bytes)) << " B, cold "
         << format_display(static_cast<double>(r.calibrated_cold_bytes)) << " B; the engine's real peak "
         << format_display(static_cast<double>(r.peak_sram_bytes)) << " B.";
    for (const std::string& why : r.calibrated_rejections)
      html << " Outside the model's search space: " << html_escape(why) << ".";
    html << "</p>\n";
  } else {
    html
        << "<p class=\"note\">The calibrated model cannot price this plan (a dimension's rings do not form a "
           "chain).</p>\n";
  }
  if (page.calibrated_top.empty()) return;
  html << "<table class=\"grid\" id=\"calibrated-top\"><tr><th>#</th><th>plan</th><th>calibrated cycles</th>"
          "<th>hot bytes</th><th>cold bytes</th></tr>\n";
  for (size_t i = 0; i < page.calibrated_top.size(); ++i) {
    const CalibratedRankedPlan& p = page.calibrated_top[i];
    html << "<tr><td>" << i + 1 << "</td><td style=\"text-align:left\">" << plan_text(p.plan) << "</td><td>"
         << format_display(p.total) << "</td><td>" << format_display(static_cast<double>(p.hot))
         << "</td><td>" << format_display(static_cast<double>(p.cold)) << "</td></tr>\n";
  }
  html << "</table>\n";
}

// Every core: heat maps of SRAM peak and busy cycles (cores in id order, row by row) with their colour
// scales, and the rings.
void every_core_section(std::ostringstream& html, const CoresResult& r) {
  const size_t n = r.per_core.size();
  const size_t cols = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const double cell = std::min(16.0, 800.0 / static_cast<double>(std::max<size_t>(cols, 1)));
  const size_t rows = (n + cols - 1) / std::max<size_t>(cols, 1);
  html << "<h2>Every core (t10 simulate, exchange timing)</h2>\n<p class=\"note\">" << n << " cores, "
       << r.empty_cores << " with an empty block; exchange timing " << format_display(r.exchange_total)
       << " cycles against the grader's " << format_display(r.total) << "; "
       << (r.violation ? "data consistency failed: " + html_escape(r.violation->message)
                       : std::string("every core held the pieces its blocks needed"))
       << ". Cores in id order ((i_m &middot; pk + i_k) &middot; pn + i_n), row by row; darker is "
          "more.</p>\n";
  auto heat = [&](const char* id, const char* what, auto value, const std::string& unit) {
    double high = 0;
    for (const CoreStats& c : r.per_core) high = std::max(high, value(c));
    html << "<h3>" << what << "</h3>\n<svg id=\"" << id << "\" width=\"" << cols * cell << "\" height=\""
         << rows * cell << "\">\n";
    for (size_t i = 0; i < n; ++i) {
      const CoreStats& c = r.per_core[i];
      const double share = high > 0 ? value(c) / high : 0;
      const int shade = static_cast<int>(245 - 190 * share);
      html << "<rect class=\"core-cell\" x=\"" << (i % cols) * cell << "\" y=\"" << (i / cols) * cell
           << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"rgb(" << shade << "," << shade
           << ",255)\" data-tip=\"core (" << c.core[0] << ", " << c.core[1] << ", " << c.core[2]
           << "): " << format_display(value(c)) << " " << unit << "\"/>\n";
    }
    html << "</svg>\n";
    colour_scale(html, id, high, unit);
  };
  heat(
      "sram-heat", "SRAM peak per core",
      [](const CoreStats& c) { return static_cast<double>(c.peak_sram_bytes); }, "B");
  heat(
      "busy-heat", "Busy cycles per core", [](const CoreStats& c) { return c.busy_cycles; }, "cycles");
  html << "<h3>Rings</h3>\n<ul id=\"rings\">\n";
  for (const RingPath& ring : r.rings) {
    html << "<li>level " << ring.level << ", " << ring.tensor << ": ";
    for (size_t i = 0; i < ring.cores.size(); ++i)
      html << (i ? " &rarr; " : "") << "(" << ring.cores[i][0] << ", " << ring.cores[i][1] << ", "
           << ring.cores[i][2] << ")";
    html << " &rarr; back</li>\n";
  }
  if (r.rings.empty()) html << "<li>no shift levels: nothing rotates</li>\n";
  html << "</ul>\n";
}

}  // namespace

std::string plan_report_html(const PlanReportPage& page) {
  const Problem& pr = *page.problem;
  const Plan& plan = *page.plan;
  const Evaluation& e = *page.evaluation;
  const Derived& d = e.derived;
  std::ostringstream html;
  html << html_page_start("T10 report: " + page.plan_name)
       << "<h1>T10 plan report</h1>\n<table class=\"summary\">"
       << "<tr><td>problem</td><td>" << html_escape(page.problem_name) << ": C[" << pr.m << "x" << pr.n
       << "] = A[" << pr.m << "x" << pr.k << "] B[" << pr.k << "x" << pr.n << "] on "
       << html_escape(pr.chip.name) << " (" << format_display(static_cast<double>(pr.chip.cores))
       << " cores, " << format_display(static_cast<double>(pr.chip.sram_bytes_per_core))
       << " B SRAM each)</td></tr>"
       << "<tr><td>plan</td><td id=\"plan\">" << html_escape(page.plan_name) << ": " << plan_text(plan)
       << "</td></tr>"
       << "<tr><td>derived</td><td>" << format_display(static_cast<double>(d.cores)) << " cores, spatial ["
       << d.spatial[0] << ", " << d.spatial[1] << ", " << d.spatial[2] << "], " << d.steps << " steps, hot "
       << format_display(static_cast<double>(d.hot_bytes)) << " B, cold "
       << format_display(static_cast<double>(d.cold_bytes)) << " B per core</td></tr><tr><td>profile</td><td>"
       << html_escape(page.profile) << "</td></tr><tr><td>verdict</td><td id=\"verdict\" class=\""
       << (e.accepted ? "valid\">accepted" : "invalid\">rejected");
  for (const Violation& v : e.violations)
    html << "<br>[" << html_escape(v.code) << "] " << html_escape(v.message);
  html << "</td></tr>";
  const Headline head = headline(page);
  html << "<tr><td>timing</td><td id=\"timing\">" << html_escape(page.timing) << ": "
       << timing_description(page.timing) << " (t10 report --timing grader|exchange|calibrated)</td></tr>"
       << "<tr><td>total</td><td id=\"headline-total\">"
       << (head.total ? "<b>" + format_display(*head.total) + " cycles</b>" : html_escape(head.missing));
  if (page.timing != "grader" && e.cost)
    html << " (the rule book's grader: " << format_display(e.cost->total) << ")";
  html << "</td></tr>";
  if (e.score) html << "<tr><td>score (grader)</td><td>" << format_display(*e.score) << "</td></tr>";
  html << "</table>\n";

  if (head.total) {
    double largest = 1;
    for (const auto& [name, v] : head.terms) largest = std::max(largest, v);
    const size_t n = head.terms.size();
    html << "<h2>Cycle breakdown (" << html_escape(page.timing) << ")</h2>\n<p class=\"note\">total "
         << format_display(*head.total) << " cycles under " << timing_description(page.timing);
    if (page.timing == "grader")
      html << ", composed from these terms by rules " << rule_link("T11", page.docs) << "-"
           << rule_link("T21", page.docs) << " of the T10 rule book (comp = " << format_display(e.cost->comp)
           << ")";
    else
      html << "; terms are sums over the run and may overlap (<a href=\"" << page.docs
           << "/t10-model.md\">docs</a>)";
    html << ".</p>\n<svg id=\"cycles\" width=\"760\" height=\"" << 28 * n + 30 << "\" viewBox=\"0 0 760 "
         << 28 * n + 30 << "\">\n";
    int row = 0;
    for (const auto& [name, v] : head.terms) {
      const double y = 6 + 28 * row++;
      html << "<g class=\"cycle-part\" data-part=\"" << name << "\" data-tip=\"" << name << ": "
           << format_display(v) << " cycles\"><text x=\"0\" y=\"" << y + 15 << "\" font-size=\"12\">" << name
           << "</text><rect x=\"120\" y=\"" << y << "\" width=\"" << 530 * v / largest
           << "\" height=\"20\" fill=\"#6baed6\"/><text x=\"" << 126 + 530 * v / largest << "\" y=\""
           << y + 15 << "\" font-size=\"12\">" << format_display(v) << "</text></g>\n";
    }
    const double axis_y = 6 + 28 * static_cast<double>(n);
    html << "<line class=\"axis\" x1=\"120\" y1=\"" << axis_y << "\" x2=\"650\" y2=\"" << axis_y
         << "\" stroke=\"#666\"/><text class=\"axis-tick\" x=\"120\" y=\"" << axis_y + 14
         << "\" font-size=\"10\">0</text><text class=\"axis-tick\" x=\"650\" y=\"" << axis_y + 14
         << "\" font-size=\"10\" text-anchor=\"end\">" << format_display(largest) << " cycles</text></svg>\n";
  }

  html << "<h2>SRAM occupancy per core (replay)</h2>\n";
  if (page.replay) {
    const ReplaySummary& s = *page.replay;
    const std::pair<const char*, int64_t> phases[] = {{"start", s.occupancy_start},
                                                      {"broadcast", s.occupancy_broadcast},
                                                      {"compute-shift", s.occupancy_compute_shift},
                                                      {"reduce", s.occupancy_reduce},
                                                      {"end", s.occupancy_end}};
    const double cap = static_cast<double>(pr.chip.sram_bytes_per_core);
    const double top = std::max(cap, static_cast<double>(s.peak_bytes)) * 1.1, W = 760, H = 200;
    auto Y = [&](double v) { return H - v / top * (H - 10); };
    html << "<p class=\"note\">Every core holds the same partitions, so one representative core's SRAM is "
            "shown, "
            "phase by phase; peak "
         << format_display(static_cast<double>(s.peak_bytes)) << " B.</p>\n<svg id=\"sram\" width=\"" << W
         << "\" height=\"" << H + 24 << "\" viewBox=\"0 0 " << W << " " << H + 24 << "\">\n";
    const double w = W / 5;
    for (int i = 0; i < 5; ++i) {
      const double v = static_cast<double>(phases[i].second);
      html << "<rect class=\"phase\" x=\"" << i * w + 4 << "\" y=\"" << Y(v) << "\" width=\"" << w - 8
           << "\" height=\"" << H - Y(v) << "\" fill=\"#9ecae1\" data-tip=\"" << phases[i].first << ": "
           << format_display(v) << " B\"/><text x=\"" << i * w + w / 2 << "\" y=\"" << H + 16
           << "\" text-anchor=\"middle\" font-size=\"12\">" << phases[i].first << "</text>\n";
    }
    html << "<line class=\"capacity-line\" x1=\"0\" y1=\"" << Y(cap) << "\" x2=\"" << W << "\" y2=\""
         << Y(cap) << "\" stroke=\"#c62828\" stroke-dasharray=\"6,4\" data-tip=\"SRAM per core "
         << format_display(cap) << " B\"/><text x=\"4\" y=\"" << Y(cap) - 4
         << "\" font-size=\"11\" fill=\"#c62828\">capacity " << format_display(cap)
         << " B</text></svg>\n<p>replay: " << format_display(s.total) << " cycles (" << s.compute_steps
         << " compute steps, " << s.shift_events << " shift events)"
         << (s.consistent ? "" : "; data consistency failed: " + html_escape(s.consistency_error))
         << "</p>\n";
  } else {
    html << "<p class=\"note\" id=\"sram-note\">Not replayed: the plan has no defined cost under this "
            "profile.</p>\n";
  }

  if (page.cores) every_core_section(html, *page.cores);

  best_plans_section(html, page);
  calibrated_section(html, page);
  html << html_page_end();
  return html.str();
}

}  // namespace mlsys::t10
