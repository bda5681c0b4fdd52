// Reading and writing the rule book's JSON formats (M1, M4) with nlohmann/json.
// Every InputError names the file, the field with its index (e.g. "inputs[3][1]") and the rule.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/problem.hpp"

namespace mlsys {

// Parses text as JSON; a syntax error becomes an InputError with line and column (M1).
nlohmann::json parse_json_text(const std::string& text, const std::string& file);
nlohmann::json read_json_file(const std::string& path);

// M1 (keys and types). M2 (graph well-formedness) is checked by analyze_graph.
Problem parse_problem(const nlohmann::json& doc, const std::string& file);
Problem load_problem(const std::string& path);

// M4. Index ranges of ops and tensors are checked against the problem.
Schedule parse_schedule(const nlohmann::json& doc, const std::string& file, const Problem& problem);
Schedule load_schedule(const std::string& path, const Problem& problem);

// M29: all five keys, traversal orders as null or a permutation, latencies at full precision.
nlohmann::json schedule_to_json(const Schedule& schedule);
// The same document as text: indented one space a level (schedule_to_json(s).dump(1)) up to
// kIndentedSubgraphs subgraphs, beyond that on one line and written directly, without building the document
// (a 50,000-op graph's first schedule spent a third of its time there; tests/rules_test.cpp checks that both
// forms parse to the same document).
std::string schedule_text(const Schedule& schedule);
inline constexpr size_t kIndentedSubgraphs = 1000;
nlohmann::json problem_to_json(const Problem& problem);


}  // namespace mlsys
