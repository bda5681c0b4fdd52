// Checks on the repository's own files, run as tests: the repository stands alone (no file refers to a path
// outside it, every relative Markdown link resolves inside it). Each check takes a root so that tests can
// run it on a fixture tree as well as on the repository.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mlsys::test {

struct Finding {
  std::string file;  // relative to the root
  int line = 0;
  std::string text;  // what was found
  std::string why;
};

// The text files of the tree under `root`, relative paths, sorted. Skips build trees (build*/), out/, .git/,
// __pycache__/ and the fuzz corpus and findings (inputs of random bytes, not prose or code).
std::vector<std::filesystem::path> repository_files(const std::filesystem::path& root);

// References to paths outside `root`: a relative path with ../ that, resolved from its file's folder, leaves
// the root; a path into the workplace's shared folder (shared/spec, shared/anchors, shared/t10,
// shared/benchmarks); an absolute /work/ path. In Markdown files, also relative links that do not resolve to
// an existing file or folder inside the root.
std::vector<Finding> outside_references(const std::filesystem::path& root);

}  // namespace mlsys::test
