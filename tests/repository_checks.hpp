// Checks on the repository's own files, run as tests: the repository stands alone (no file refers to a path
// outside it, every relative Markdown link resolves inside it) and its layers depend one way, down. Each
// check takes a root so that tests can run it on a fixture tree as well as on the repository.
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

// One line per finding ("file:line: text (why)"), for test messages.
std::string describe(const std::vector<Finding>& findings);

// The text files of the tree under `root`, relative paths, sorted. Skips build trees (build*/), out/, .git/,
// __pycache__/ and the fuzz corpus and findings (inputs of random bytes, not prose or code).
std::vector<std::filesystem::path> repository_files(const std::filesystem::path& root);

// References to paths outside `root`: a relative path with ../ that, resolved from its file's folder, leaves
// the root; a path into the workplace's shared folder (shared/spec, shared/anchors, shared/t10,
// shared/benchmarks); an absolute /work/ path. In Markdown files, also relative links that do not resolve to
// an existing file or folder inside the root.
std::vector<Finding> outside_references(const std::filesystem::path& root);

// The layers, bottom to top: sim/ (0), verifier/ (1), solver/ (2), traces/ (3), apps/ (4). A source file of
// a layer may include headers of its own layer and of lower ones only. Returns every quoted include that
// goes upward (or names a layer folder that does not exist), with the file and line.
int layer_of(const std::string& top_folder);  // -1 for folders outside the layers (tests/, bench/, python/)
std::vector<Finding> upward_includes(const std::filesystem::path& root);

// Programs (a main or sc_main) defined outside apps/ in the layered folders; source files of the layers
// longer than `max_lines` (one concern per file).
std::vector<Finding> misplaced_programs(const std::filesystem::path& root);
std::vector<Finding> oversized_sources(const std::filesystem::path& root, int max_lines);

// Function bodies longer than `max_lines` (from the line of the signature to the closing brace) in the
// source files under `folders` (e.g. {"sim", "verifier", "solver"}). Comments and string literals are
// skipped; a brace block is a function when its header (the text since the last `;`, `{` or `}`) has a `)`
// and it opens at namespace or class scope. `text` names the function.
std::vector<Finding> long_functions(const std::filesystem::path& root,
                                    const std::vector<std::string>& folders, int max_lines);

}  // namespace mlsys::test
