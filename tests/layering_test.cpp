// One direction of dependencies (docs/architecture.md): sim/ -> verifier/ -> solver/ -> traces/ -> apps/.
// The checker runs on fixture trees first (an upward include, a program outside apps/, an oversized file
// must be found), then on the repository, where it must find nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "repository_checks.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

std::string fixture_tree(const std::string& name) {
  const std::string root = temp_dir(name);
  for (const char* folder : {"sim/systemc", "verifier", "solver", "traces", "apps", "tests"})
    std::filesystem::create_directories(root + "/" + folder);
  write_text(root + "/sim/model.hpp", "#pragma once\n#include <vector>\n");
  write_text(root + "/verifier/verify.hpp", "#include \"sim/model.hpp\"\n");
  write_text(root + "/solver/search.hpp", "#include \"verifier/verify.hpp\"\n#include \"sim/model.hpp\"\n");
  write_text(root + "/traces/trace.hpp", "#include \"solver/search.hpp\"\n");
  write_text(root + "/apps/main.cpp", "#include \"traces/trace.hpp\"\nint main() { return 0; }\n");
  write_text(root + "/tests/t.cpp", "#include \"apps/anything.hpp\"\nint main() {}\n");  // tests may use all
  return root;
}

TEST(Layering, TheCheckerAcceptsADownwardTree) {
  const std::string root = fixture_tree("layers-clean");
  EXPECT_TRUE(upward_includes(root).empty()) << describe(upward_includes(root));
  EXPECT_TRUE(misplaced_programs(root).empty()) << describe(misplaced_programs(root));
}

TEST(Layering, TheCheckerNamesEveryUpwardInclude) {
  const std::string root = fixture_tree("layers-upward");
  write_text(root + "/sim/systemc/replay.cpp",
             "#include \"sim/model.hpp\"\n#include <systemc>\n  #include \"traces/trace.hpp\"\n");
  write_text(root + "/verifier/verify.cpp",
             "#include \"verifier/verify.hpp\"\n#include \"solver/search.hpp\"\n");
  const std::vector<Finding> findings = upward_includes(root);
  ASSERT_EQ(2u, findings.size()) << describe(findings);
  EXPECT_EQ("sim/systemc/replay.cpp", findings[0].file);
  EXPECT_EQ(3, findings[0].line);
  EXPECT_EQ("traces/trace.hpp", findings[0].text);
  EXPECT_EQ("goes up from sim/ to traces/", findings[0].why);
  EXPECT_EQ("verifier/verify.cpp", findings[1].file);
  EXPECT_EQ("solver/search.hpp", findings[1].text);
}

TEST(Layering, TheCheckerFindsProgramsOutsideAppsAndOversizedFiles) {
  const std::string root = fixture_tree("layers-programs");
  write_text(root + "/solver/solve_main.cpp",
             "#include \"solver/search.hpp\"\nint main(int argc, char** argv) {}\n");
  write_text(root + "/sim/systemc/sim_main.cpp", "extern \"C\" int sc_main(int, char**) { return 0; }\n");
  const std::vector<Finding> programs = misplaced_programs(root);
  ASSERT_EQ(2u, programs.size()) << describe(programs);
  EXPECT_EQ("sim/systemc/sim_main.cpp", programs[0].file);
  EXPECT_EQ("solver/solve_main.cpp", programs[1].file);
  std::string long_file;
  for (int i = 0; i < 20; ++i) long_file += "// line\n";
  write_text(root + "/traces/long.cpp", long_file);
  const std::vector<Finding> long_files = oversized_sources(root, 10);
  ASSERT_EQ(1u, long_files.size()) << describe(long_files);
  EXPECT_EQ("traces/long.cpp", long_files[0].file);
}

TEST(Layering, TheCheckerMeasuresFunctionsNotComments) {
  const std::string root = fixture_tree("layers-functions");
  std::string body;
  for (int i = 0; i < 8; ++i) body += "  x += " + std::to_string(i) + ";\n";
  write_text(root + "/solver/long.cpp",
             "#include <vector>\n"
             "namespace mlsys {\n"
             "namespace {\n"
             "// a comment { with a brace\n"
             "int short_one(int x) {\n  return x + 1;\n}\n"
             "}  // namespace\n"
             "struct Walker {\n"
             "  int inline_member(int x) const {\n" +
                 body +
                 "    return x;\n  }\n"
                 "  int field{0};\n"
                 "};\n"
                 "int Walker_long(int x) {\n"
                 "  const char* s = \"}}}\";\n"
                 "  auto f = [&](int y) {\n" +
                 body + "    return y;\n  };\n" + body +
                 "  return f(x) + s[0];\n"
                 "}\n"
                 "}  // namespace mlsys\n");
  const std::vector<Finding> findings = long_functions(root, {"solver"}, 10);
  ASSERT_EQ(2u, findings.size()) << describe(findings);
  EXPECT_EQ(10, findings[0].line);
  EXPECT_EQ("inline_member (11 lines)", findings[0].text);
  EXPECT_EQ(23, findings[1].line);
  EXPECT_EQ("Walker_long (23 lines)", findings[1].text);
  EXPECT_TRUE(long_functions(root, {"solver"}, 23).empty());
  EXPECT_TRUE(long_functions(root, {"sim"}, 10).empty());  // only the folders asked for
}

TEST(Layering, NoFunctionOfTheModelVerifierOrSolverIsOver120Lines) {
  // Issue 39: a function a new maintainer must read whole fits on two screens; split by rule group or
  // theorem.
  const std::vector<Finding> findings = long_functions(source_path(""), {"sim", "verifier", "solver"}, 120);
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(Layering, NoT10FunctionIsOver150Lines) {
  // Issue 36: the T10 code has the graph family's shape; its programs, model, engine, search and reports are
  // read function by function.
  std::vector<Finding> findings;
  for (const Finding& f : long_functions(source_path(""), {"sim", "solver", "traces", "apps"}, 150))
    if (f.file.find("t10") != std::string::npos) findings.push_back(f);
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(Layering, NoIncludeGoesUpward) {
  const std::vector<Finding> findings = upward_includes(source_path(""));
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(Layering, EveryProgramLivesInApps) {
  const std::vector<Finding> findings = misplaced_programs(source_path(""));
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(Layering, NoSourceFileOfTheLayersHoldsTwoConcerns) {
  // About 700 lines at most (issue 28); the step model and the search were split by concern.
  const std::vector<Finding> findings = oversized_sources(source_path(""), 700);
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

}  // namespace
}  // namespace mlsys::test
