#include "traces/vcd_trace.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace mlsys {

VcdTrace::VcdTrace(std::string path) : path_(std::move(path)) {
  // SystemC appends ".vcd" to the name it is given.
  temporary_base_ = path_ + ".tmp-" + std::to_string(getpid());
}

VcdTrace::~VcdTrace() {
  if (file_) sc_core::sc_close_vcd_trace_file(file_);
  std::error_code ignored;
  std::filesystem::remove(temporary_base_ + ".vcd", ignored);  // a replay that never finished
}

void VcdTrace::elaborated(const EngineSignals& signals) {
  file_ = sc_core::sc_create_vcd_trace_file(temporary_base_.c_str());
  sc_core::sc_trace(file_, signals.fast_memory_occupancy, "fast_memory_occupancy");
  sc_core::sc_trace(file_, signals.link_busy, "link_busy");
  sc_core::sc_trace(file_, signals.compute_busy, "compute_busy");
}

void VcdTrace::finished() {
  if (!file_) return;
  sc_core::sc_close_vcd_trace_file(file_);
  file_ = nullptr;
  std::error_code error;
  std::filesystem::rename(temporary_base_ + ".vcd", path_, error);
  if (error) throw std::runtime_error("cannot write " + path_ + ": " + error.message());
}

}  // namespace mlsys
