// The repository stands alone: a user who clones it can read everything its files point to. The checker is
// tested on a fixture tree first, so that a pass on the repository means something.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "repository_checks.hpp"
#include "support.hpp"

namespace mlsys::test {
namespace {

TEST(RepositoryChecks, FindsEveryKindOfOutsideReferenceInAFixture) {
  const std::string root = temp_dir("outside-fixture");
  std::filesystem::create_directories(root + "/docs");
  std::filesystem::create_directories(root + "/build/release");
  write_text(root + "/docs/model.md", "# Model\n");
  write_text(
      root + "/README.md",
      "The rules: [model](docs/model.md), [rule M20](docs/model.md#m20), [site](https://example.org).\n"
      "Old text: see `../shared/spec/mlsys-model.md`.\n"
      "A broken link: [gone](docs/missing.md).\n");
  write_text(root + "/docs/inside.md", "[up and back](../README.md) is fine.\n");
  write_text(root + "/code.cpp",
             "// data from shared/anchors/README.md\nconst char* p = \"/work/shared\";\n");
  write_text(root + "/build/release/generated.md", "../shared/spec is ignored in build trees\n");
  const std::vector<Finding> findings = outside_references(root);
  ASSERT_EQ(5u, findings.size()) << describe(findings);
  EXPECT_EQ("README.md", findings[0].file);
  EXPECT_EQ(2, findings[0].line);
  EXPECT_EQ("../shared/spec/mlsys-model.md", findings[0].text);
  EXPECT_EQ("shared/spec", findings[1].text);
  EXPECT_EQ("docs/missing.md", findings[2].text);
  EXPECT_EQ(3, findings[2].line);
  EXPECT_EQ("code.cpp", findings[3].file);
  EXPECT_EQ("shared/anchors", findings[3].text);
  EXPECT_EQ("/work/", findings[4].text);
  EXPECT_EQ(2, findings[4].line);
}

TEST(RepositoryChecks, NoFileRefersToAPathOutsideTheRepository) {
  const std::vector<Finding> findings = outside_references(source_path(""));
  EXPECT_TRUE(findings.empty()) << describe(findings);
}

TEST(RepositoryChecks, TheModelIsDocumentedInsideTheRepository) {
  // Every rule id has its anchor in docs/model.md or docs/t10-model.md (the report and the code link there).
  const std::string model = [] {
    std::ifstream in(source_path("docs/model.md"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const std::string t10 = [] {
    std::ifstream in(source_path("docs/t10-model.md"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  for (int i = 1; i <= 29; ++i)
    EXPECT_NE(std::string::npos,
              model.find("<a id=\"m" + std::to_string(i) + "\"></a>\n### M" + std::to_string(i) + ". "))
        << "M" << i;
  for (int i = 1; i <= 44; ++i)
    EXPECT_NE(std::string::npos,
              t10.find("<a id=\"t" + std::to_string(i) + "\"></a>\n### T" + std::to_string(i) + ". "))
        << "T" << i;
}

}  // namespace
}  // namespace mlsys::test
