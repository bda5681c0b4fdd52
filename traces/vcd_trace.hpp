// A VCD waveform of the engine's signals (fast-memory occupancy, link busy, compute busy), written by
// SystemC's own VCD tracer to a temporary file and renamed into place when the simulation is over.
#pragma once

#include <string>

#include "sim/systemc/waveform_observer.hpp"

namespace mlsys {

class VcdTrace : public WaveformObserver {
 public:
  explicit VcdTrace(std::string path);
  ~VcdTrace() override;
  void elaborated(const EngineSignals& signals) override;
  void finished() override;

 private:
  std::string path_, temporary_base_;
  sc_core::sc_trace_file* file_ = nullptr;
};

}  // namespace mlsys
