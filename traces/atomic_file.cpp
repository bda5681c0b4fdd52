#include "traces/atomic_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace mlsys {

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, {std::string_view(text)});
}

void write_file_atomic(const std::string& path, std::initializer_list<std::string_view> pieces) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + temp);
    for (std::string_view piece : pieces) out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    out.flush();
    if (!out) throw std::runtime_error("write failed: " + temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw std::runtime_error("cannot rename " + temp + " to " + path);
  }
}

}  // namespace mlsys
