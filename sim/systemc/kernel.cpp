#include "sim/systemc/kernel.hpp"

#include <cstdlib>
#include <iostream>
#include <systemc>

namespace mlsys {

namespace {
void report_to_stderr(const sc_core::sc_report& report, const sc_core::sc_actions& actions) {
  if (actions & sc_core::SC_DISPLAY) std::cerr << sc_core::sc_report_compose_message(report) << "\n";
  if (actions & sc_core::SC_THROW) throw report;
  if (actions & sc_core::SC_ABORT) std::abort();
}
}  // namespace

void prepare_systemc_kernel() {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_report_handler::set_handler(report_to_stderr);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DISPLAY);
  sc_core::sc_set_time_resolution(1, sc_core::SC_FS);
}

void reset_systemc_kernel() { sc_core::sc_get_curr_simcontext()->reset(); }

}  // namespace mlsys
