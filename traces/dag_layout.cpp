#include "traces/dag_layout.hpp"

#include <graphviz/gvc.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace mlsys {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

// "64x128", and the model's value name for an imported problem.
std::string tensor_caption(const Problem& p, int t) {
  std::string caption = std::to_string(p.heights[t]) + "x" + std::to_string(p.widths[t]);
  if (!p.names.tensors.empty()) caption += ", " + p.names.tensors[t];
  return caption;
}

std::string subgraph_color(int index) {
  // Hues a golden angle apart, light enough for black text.
  const double h = std::fmod(index * 137.508, 360.0) / 60.0, s = 0.55, l = 0.78;
  const double c = (1 - std::fabs(2 * l - 1)) * s, x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1)),
               m = l - c / 2;
  double r = 0, g = 0, b = 0;
  if (h < 1)
    r = c, g = x;
  else if (h < 2)
    r = x, g = c;
  else if (h < 3)
    g = c, b = x;
  else if (h < 4)
    g = x, b = c;
  else if (h < 5)
    r = x, b = c;
  else
    r = c, b = x;
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", static_cast<int>((r + m) * 255 + 0.5),
                static_cast<int>((g + m) * 255 + 0.5), static_cast<int>((b + m) * 255 + 0.5));
  return buffer;
}

std::string dag_svg(const Problem& p, const Graph& g, const Schedule& schedule) {
  std::vector<std::vector<int>> runs(p.num_ops());  // subgraphs that run each op
  std::vector<int> retained_by(p.num_tensors(), -1);
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    for (int o : schedule.subgraphs[i].ops)
      if (o >= 0 && o < p.num_ops()) runs[o].push_back(static_cast<int>(i));
    for (int t : schedule.subgraphs[i].retain)
      if (t >= 0 && t < p.num_tensors()) retained_by[t] = static_cast<int>(i);
  }
  std::ostringstream dot;
  dot << "digraph schedule {\n  rankdir=TB; nodesep=0.15; ranksep=0.3; fontname=\"sans-serif\";\n"
      << "  node [fontname=\"sans-serif\", fontsize=10, style=filled, height=0.3];\n"
      << "  edge [fontname=\"sans-serif\", fontsize=8, color=\"#777777\"];\n";
  for (int o = 0; o < p.num_ops(); ++o) {
    const bool matmul = p.is_matmul(o);
    const bool named = !p.names.ops.empty();
    std::string tip = "op " + std::to_string(o) + ": " + (matmul ? "MatMul" : "Pointwise");
    if (named) tip += " " + p.names.ops[o];
    std::ostringstream base;
    base << p.base_costs[o];
    tip += ", base " + base.str() + ", subgraph";
    for (size_t k = 0; k < runs[o].size(); ++k) tip += (k ? ", " : " ") + std::to_string(runs[o][k]);
    if (runs[o].empty()) tip += " none";
    dot << "  op" << o << " [id=" << quoted("op-" + std::to_string(o))
        << ", label="
        << quoted(std::to_string(o) + " " +
                  (!p.names.op_kinds.empty() ? p.names.op_kinds[o] : std::string(matmul ? "MM" : "PW")))
        << ", shape=" << (matmul ? "box" : "ellipse")
        << ", fillcolor=" << quoted(runs[o].empty() ? "#ffffff" : subgraph_color(runs[o].front()))
        << (runs[o].size() > 1 ? ", peripheries=2" : "") << ", tooltip=" << quoted(tip) << "];\n";
  }
  for (int t = 0; t < p.num_tensors(); ++t) {
    const std::string shape = tensor_caption(p, t);
    if (g.is_graph_input[t])
      dot << "  t" << t << " [id=" << quoted("tensor-" + std::to_string(t))
          << ", label=" << quoted("T" + std::to_string(t)) << ", shape=note, fillcolor=\"#eeeeee\", tooltip="
          << quoted("graph input T" + std::to_string(t) + " (" + shape + ")") << "];\n";
    if (g.is_graph_output[t])
      dot << "  t" << t << " [id=" << quoted("tensor-" + std::to_string(t))
          << ", label=" << quoted("T" + std::to_string(t))
          << ", shape=note, fillcolor=\"#cdeccd\", penwidth=2, tooltip="
          << quoted("graph output T" + std::to_string(t) + " (" + shape + ")") << "];\n";
  }
  for (int t = 0; t < p.num_tensors(); ++t) {
    const std::string shape = tensor_caption(p, t);
    const int producer = g.producer[t];
    for (const Consumer& c : g.consumers[t]) {
      const std::string from = producer >= 0 ? "op" + std::to_string(producer) : "t" + std::to_string(t);
      dot << "  " << from << " -> op" << c.op << " [";
      if (producer >= 0) dot << "label=" << quoted("T" + std::to_string(t)) << ", ";
      if (retained_by[t] >= 0)
        dot << "color=\"#d62728\", penwidth=2.5, tooltip="
            << quoted("T" + std::to_string(t) + " (" + shape + ") retained by subgraph " +
                      std::to_string(retained_by[t]));
      else
        dot << "tooltip=" << quoted("T" + std::to_string(t) + " (" + shape + ")");
      dot << "];\n";
    }
    if (producer >= 0 && g.is_graph_output[t]) dot << "  op" << producer << " -> t" << t << ";\n";
  }
  dot << "}\n";

  std::unique_ptr<GVC_t, int (*)(GVC_t*)> gvc(gvContext(), gvFreeContext);
  const std::string text = dot.str();
  Agraph_t* graph = agmemread(text.c_str());
  if (!graph) throw std::runtime_error("graphviz could not read the generated graph");
  std::string svg;
  if (gvLayout(gvc.get(), graph, "dot") == 0) {
    char* data = nullptr;
    unsigned int length = 0;
    if (gvRenderData(gvc.get(), graph, "svg", &data, &length) == 0 && data) svg.assign(data, length);
    gvFreeRenderData(data);
    gvFreeLayout(gvc.get(), graph);
  }
  agclose(graph);
  if (svg.empty()) throw std::runtime_error("graphviz could not lay out the graph");
  const size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

}  // namespace mlsys
