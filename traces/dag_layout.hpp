// The schedule's DAG laid out by Graphviz (dot) and rendered to SVG: one node per op, coloured by the first
// subgraph that runs it (a double border when several do), graph inputs and outputs as boxes, retained
// tensors as bold red edges. Node ids: "op-N" and "tensor-T", for scripts and tests.
#pragma once

#include <string>

#include "sim/graph.hpp"
#include "sim/problem.hpp"

namespace mlsys {

// The fill colour of subgraph i's ops (also used by the report's timeline).
std::string subgraph_color(int index);

// An <svg> element (no XML prolog), laid out by Graphviz. Throws std::runtime_error if Graphviz fails.
std::string dag_svg(const Problem& problem, const Graph& graph, const Schedule& schedule);

}  // namespace mlsys
