// T10 readers on arbitrary bytes: a problem, or a plan evaluated against the seed problem under both
// profiles. Readers answer with an InputFault value, never an exception or a crash.
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "sim/t10/t10_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  (void)mlsys::t10::parse_problem(doc);
  static const mlsys::t10::Problem seed = [] {
    const nlohmann::json p = {{"op", "matmul"}, {"m", 32}, {"k", 5120}, {"n", 15360}};
    auto parsed = mlsys::t10::parse_problem(p);
    return std::get<mlsys::t10::Problem>(parsed);
  }();
  auto plan = mlsys::t10::parse_plan(doc);
  if (auto* p = std::get_if<mlsys::t10::Plan>(&plan)) {
    for (auto profile : {mlsys::t10::Profile::Strict, mlsys::t10::Profile::EngDesign}) {
      const auto evaluation = mlsys::t10::evaluate(seed, *p, profile);
      (void)evaluation;
    }
    (void)mlsys::t10::plan_to_json(*p);
  }
  return 0;
}
