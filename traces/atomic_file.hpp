// Every file the programs write goes through here (docs/architecture.md: traces/ writes files).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace mlsys {

// Writes to a temporary file beside path, then renames: readers never see a half-written file. Throws
// std::runtime_error naming the file.
void write_file_atomic(const std::string& path, const std::string& text);
// The same for a text in pieces, written one after another (no copy of a large text to join them).
void write_file_atomic(const std::string& path, std::initializer_list<std::string_view> pieces);

}  // namespace mlsys
