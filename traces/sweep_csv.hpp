// DIR/sweep.csv, written and read in one place: its header (the columns), one line per point, and the reader
// that merges shards back from it.
#pragma once

#include <string>
#include <vector>

#include "solver/sweep.hpp"

namespace mlsys {

// The columns, in order.
extern const char* const kSweepCsvHeader;

// The CSV text of `points` (each feasible point's schedule_file already named).
std::string sweep_csv(const std::vector<SweepPoint>& points);

// Reads DIR/sweep.csv and the schedules it names (for merging shards). Throws InputError naming the file,
// the line and the field. Sweeps written before the certified_bound column are still read.
std::vector<SweepPoint> read_sweep(const std::string& dir, const Problem& problem);

}  // namespace mlsys
