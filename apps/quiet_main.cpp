// Entry point for our SystemC programs: libsystemc would print its banner on stdout before sc_main runs,
// which would spoil JSON output. Switch it off, then let the kernel call sc_main as usual.
#include <cstdlib>
#include <systemc>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
