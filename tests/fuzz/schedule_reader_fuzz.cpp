// The schedule reader (M4) on arbitrary bytes, against one of the rule book's example problems (the first
// byte picks which, so that index checks meet problems of several sizes).
#include <array>

#include "fuzz_support.hpp"
#include "sim/json_io.hpp"
#include "sim/violation.hpp"

namespace {

const std::array<const char*, 3> kProblems = {
    // Example 1: two Pointwise ops.
    R"({"widths":[128,128,128],"heights":[128,128,128],"inputs":[[0],[1]],"outputs":[[1],[2]],
        "base_costs":[1000,100],"op_types":["Pointwise","Pointwise"],"fast_memory_capacity":35000,
        "slow_memory_bandwidth":10,"native_granularity":[128,128]})",
    // Example 5: a two-MatMul chain.
    R"({"widths":[128,128,128,128,128],"heights":[128,128,128,128,128],"inputs":[[0,1],[3,2]],
        "outputs":[[3],[4]],"base_costs":[2000,2000],"op_types":["MatMul","MatMul"],
        "fast_memory_capacity":45000,"slow_memory_bandwidth":10,"native_granularity":[128,128]})",
    // A chain through a Pointwise op (x11).
    R"({"widths":[128,256,128,256,256,256,128],"heights":[128,128,256,128,128,128,128],
        "inputs":[[0,1],[3,4],[5,2]],"outputs":[[3],[5],[6]],"base_costs":[2000,500,3000],
        "op_types":["MatMul","Pointwise","MatMul"],"fast_memory_capacity":100000,"slow_memory_bandwidth":20,
        "native_granularity":[128,128]})",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto problems = [] {
    std::array<mlsys::Problem, kProblems.size()> all;
    for (size_t i = 0; i < all.size(); ++i)
      all[i] = mlsys::parse_problem(mlsys::parse_json_text(kProblems[i], "problem.json"), "problem.json");
    return all;
  }();
  if (size == 0) return 0;
  const mlsys::Problem& problem = problems[data[0] % problems.size()];
  try {
    const std::string text = mlsys::fuzz::text_of(data + 1, size - 1);
    const mlsys::Schedule schedule =
        mlsys::parse_schedule(mlsys::parse_json_text(text, "solution.json"), "solution.json", problem);
    (void)mlsys::schedule_to_json(schedule);  // what the solver writes back must be writable
  } catch (const mlsys::InputError&) {
  }
  return 0;
}
