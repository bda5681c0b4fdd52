// Every file the programs write goes through here (docs/architecture.md: traces/ writes files).
#pragma once

#include <string>

namespace mlsys {

// Writes to a temporary file beside path, then renames: readers never see a half-written file. Throws
// std::runtime_error naming the file.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace mlsys
