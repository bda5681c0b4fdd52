// Preparing the SystemC kernel for one simulation run, and tearing it down, the same way for every engine.
#pragma once

namespace mlsys {

// Banner off, SystemC reports to stderr (stdout may carry JSON), info messages silenced, 1 fs resolution.
void prepare_systemc_kernel();
// After every module of the run is destroyed: a fresh simulation context for the next run in this process.
void reset_systemc_kernel();

}  // namespace mlsys
