// The engine's signals, for waveform tracers (traces/vcd_trace: SystemC's own VCD writer). The replay hands
// them over after elaboration and says when the simulation is over; the observer decides what to record and
// where, so the engine opens no file.
#pragma once

#include <systemc>

namespace mlsys {

struct EngineSignals {
  const sc_core::sc_signal<sc_dt::int64>& fast_memory_occupancy;  // elements
  const sc_core::sc_signal<bool>& link_busy;
  const sc_core::sc_signal<bool>& compute_busy;
};

class WaveformObserver {
 public:
  virtual ~WaveformObserver() = default;
  virtual void elaborated(const EngineSignals& signals) = 0;  // before the simulation starts
  virtual void finished() = 0;                                // after it ended, before the modules go
};

}  // namespace mlsys
