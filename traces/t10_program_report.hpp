// A compiled whole-model T10 program for people: the text table of `t10 compile` and its HTML report (a
// timeline of the operators, every core's SRAM across the program against the capacity, the critical
// operators).
#pragma once

#include <ostream>
#include <string>

#include "sim/t10/t10_program.hpp"
#include "sim/t10/t10_program_sim.hpp"
#include "solver/t10_compile.hpp"

namespace mlsys::t10 {

void print_program(std::ostream& out, const TensorProgram& program, const CompiledProgram& compiled,
                   const CompileStats& stats, const ProgramRun* run);
// Functional mode's values (t10 compile --values): {"inputs": {name: {"shape", "values"}}, "params": {name:
// {"shape", "values"}}, "operands": [{"op", "slot", "shape", "values"}], "output": {"op", "shape", "values",
// "scale"}}, every array row-major; the output's values are integers x 2^-scale.
nlohmann::json functional_values_json(const TensorProgram& program, const ProgramRun& run);
// The compiled program's JSON with the compiler's figures ("compile") and the simulation's ("simulation").
nlohmann::json compiled_program_json(const TensorProgram& program, const CompileResult& result,
                                     const ProgramRun* run);
// The sweep of a model over chip variants: DIR/t10-model-sweep.csv, one row per point, and back from a
// directory (for `t10 merge`; throws InputError naming the file and line).
extern const char* const kProgramSweepFile;
std::string program_sweep_csv(const std::vector<ProgramVariantPoint>& points);
std::vector<ProgramVariantPoint> read_program_sweep(const std::string& dir);
std::string program_html(const TensorProgram& program, const CompiledProgram& compiled,
                         const CompileStats& stats, const ProgramRun* run);

}  // namespace mlsys::t10
