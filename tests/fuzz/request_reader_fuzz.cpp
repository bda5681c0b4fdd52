// The serving request reader on arbitrary bytes (docs/t10-traffic.md#workloads): JSON lines of requests.
// It answers with InputError naming the line and the field, never another exception or a crash; what it
// accepts goes back to JSON lines and is read again to the same requests.
#include <string>

#include "fuzz_support.hpp"
#include "sim/t10/t10_requests.hpp"
#include "sim/violation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<mlsys::t10::ServingRequest> requests;
  try {
    requests = mlsys::t10::parse_requests(text, "fuzz.jsonl");
  } catch (const mlsys::InputError&) {
    return 0;
  }
  const auto again = mlsys::t10::parse_requests(mlsys::t10::requests_to_jsonl(requests), "again.jsonl");
  if (again.size() != requests.size()) __builtin_trap();
  for (size_t i = 0; i < again.size(); ++i)
    if (again[i].prompt_tokens != requests[i].prompt_tokens || again[i].output_tokens != requests[i].output_tokens ||
        again[i].arrival_ms != requests[i].arrival_ms)
      __builtin_trap();
  return 0;
}
