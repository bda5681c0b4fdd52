// T10 readers on arbitrary bytes: a problem, a serving chip file (chips and links too), a serving model (an Elk node list or an imported decode step),
// or a plan evaluated against the seed problem under both profiles. Readers answer with InputError (the
// project's input-error type), never another exception or a crash.
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "sim/t10/t10_model.hpp"
#include "sim/t10/t10_serving_io.hpp"
#include "sim/violation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  try {
    (void)mlsys::t10::parse_problem(doc);
  } catch (const mlsys::InputError&) {
  }
  try {
    (void)mlsys::t10::parse_serving_chip(doc, "chip.json");
  } catch (const mlsys::InputError&) {
  }
  static const mlsys::t10::ServingChip chip = *mlsys::t10::serving_chip_preset("elk-1472");
  try {
    const mlsys::t10::ServingShape shape{doc.is_array() ? 4 : 0, doc.is_array() ? 16 : 0, 0};
    (void)mlsys::t10::read_serving_model(doc, "fuzz.json", shape, chip);
  } catch (const mlsys::InputError&) {
  }
  static const mlsys::t10::Problem seed =
      mlsys::t10::parse_problem({{"op", "matmul"}, {"m", 32}, {"k", 5120}, {"n", 15360}});
  mlsys::t10::Plan plan;
  try {
    plan = mlsys::t10::parse_plan(doc);
  } catch (const mlsys::InputError&) {
    return 0;
  }
  for (auto profile : {mlsys::t10::Profile::Strict, mlsys::t10::Profile::EngDesign}) {
    const auto evaluation = mlsys::t10::evaluate(seed, plan, profile);
    (void)evaluation;
  }
  (void)mlsys::t10::plan_to_json(plan);
  return 0;
}
