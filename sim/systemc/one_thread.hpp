// Running an engine as the one thread of a fresh SystemC simulation: the kernel prepared, one module whose
// thread calls the engine and stops the simulation, and the kernel reset for the next run in this process.
#pragma once

#include <functional>
#include <systemc>

#include "sim/systemc/kernel.hpp"

namespace mlsys {

template <class Result>
class OneThread : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(OneThread);
  OneThread(sc_core::sc_module_name name, const std::function<Result()>& work, Result& out)
      : sc_core::sc_module(name), work_(work), out_(out) {
    SC_THREAD(run);
  }

 private:
  void run() {
    out_ = work_();
    sc_core::sc_stop();
  }
  const std::function<Result()>& work_;
  Result& out_;
};

// `work` runs in simulated time (its wait() calls advance it); returns what it returns.
template <class Result>
Result run_as_one_thread(const char* name, const std::function<Result()>& work) {
  prepare_systemc_kernel();
  Result result;
  {
    OneThread<Result> thread(name, work, result);
    sc_core::sc_start();
  }
  reset_systemc_kernel();
  return result;
}

}  // namespace mlsys
