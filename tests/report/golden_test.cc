// Golden-file tests of weft's report outputs, in the manner of Perfetto's diff tests and
// bpftrace's runtime tests: a small committed trace (golden/trace.txt), the real `weft`
// binary run on it as a user would, and its stdout compared byte for byte with a
// committed file under golden/. Each case names its golden file and the commands that
// make it; the commands run in a scratch directory, with relative file names only, so
// that nothing machine-dependent reaches the output.
//
// On a mismatch the test prints a unified diff. When a change of output is intended,
// rewrite every golden file and review the change with git diff:
//     WEFT_UPDATE_GOLDEN=1 ctest -R Golden        (in the build directory)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace weft {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = WEFT_GOLDEN_DIR;

struct GoldenCase {
  const char* golden;  // file name under golden/
  // The weft commands (arguments after `weft`), run in order in the scratch directory,
  // which holds trace.txt; the last one's stdout is compared with the golden file.
  std::vector<const char*> commands;
  // Compared instead of stdout when set: a file the last command writes (an SVG).
  const char* output_file = nullptr;
};

// Path files every case can use, made once per scratch directory.
constexpr const char* kInferNesting = "infer trace.txt --algo nesting -o nesting.paths.json";
constexpr const char* kInferTruth = "infer trace.txt --algo truth -o truth.paths.json";
constexpr const char* kInferConvolution =
    "infer trace.txt --algo convolution -o convolution.paths.json";

const GoldenCase kCases[] = {
    // weft paths: the ranked table, the trees, JSON, the slowest requests, and a causal graph
    // as a table.
    {"paths-truth.txt", {kInferTruth, "paths truth.paths.json --top 0"}},
    {"paths-nesting.txt", {kInferNesting, "paths nesting.paths.json --top 0 --sort latency"}},
    {"paths-nesting-tree.txt", {kInferNesting, "paths nesting.paths.json --top 3 --tree"}},
    {"paths-nesting.json", {kInferNesting, "paths nesting.paths.json --top 2 --json"}},
    {"paths-nesting-requests.txt",
     {kInferNesting, "paths nesting.paths.json --requests 3 --trace trace.txt"}},
    {"paths-convolution.txt", {kInferConvolution, "paths convolution.paths.json"}},
    // weft report: dot (patterns and a causal graph), timelines, node delays.
    {"report-nesting.dot",
     {kInferNesting, "report nesting.paths.json --dot - --top 2 --sort latency"}},
    {"report-convolution.dot", {kInferConvolution, "report convolution.paths.json --dot -"}},
    {"report-nesting-timelines.txt",
     {kInferNesting, "report nesting.paths.json --timeline - --top 3 --sort expected"}},
    {"report-nesting-timeline-001.svg",
     {kInferNesting, "report nesting.paths.json --timeline svg --top 2 --sort latency"},
     "svg/timeline-001.svg"},
    {"report-nesting-timeline-002.svg",
     {kInferNesting, "report nesting.paths.json --timeline svg --top 2 --sort latency"},
     "svg/timeline-002.svg"},
    {"report-truth-node-delays.txt", {kInferTruth, "report truth.paths.json --node-delays"}},
};

// For test listings: the golden file's name, not the struct's bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.golden; }

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct WeftRun {
  int rc = -1;
  std::string out, err;
};

// Runs weft with `args` in `dir`: stdout, stderr (to a file) and the exit code.
WeftRun RunWeft(const fs::path& dir, const std::string& args) {
  fs::path err = dir / "stderr.txt";
  std::string command =
      "cd '" + dir.string() + "' && '" + WEFT_BINARY + "' " + args + " 2>'" + err.string() + "'";
  WeftRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = ReadWhole(err);
  return run;
}

// A unified diff of the golden file and what the run gave, by diff(1); the first line
// that differs if diff cannot be run.
std::string Diff(const fs::path& golden, const std::string& expected, const std::string& actual,
                 const fs::path& scratch) {
  fs::path file = scratch / "actual.out";
  std::ofstream(file, std::ios::binary) << actual;
  std::string command = "diff -u '" + golden.string() + "' '" + file.string() + "' 2>&1";
  std::string diff;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) diff.append(buffer, n);
    pclose(pipe);
  }
  if (!diff.empty()) return diff;
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 1;; ++line) {
    bool more_e = bool(std::getline(e, el)), more_a = bool(std::getline(a, al));
    if (!more_e && !more_a) return "(they differ only in the final newline)";
    if (!more_e || !more_a || el != al) {
      return "first difference at line " + std::to_string(line) +
             ":\n  golden: " + (more_e ? el : "(end of file)") +
             "\n  actual: " + (more_a ? al : "(end of file)");
    }
  }
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    scratch_ = fs::path(::testing::TempDir()) /
               ("weft-golden-" + std::to_string(getpid()) + "-" + std::string(GetParam().golden));
    fs::remove_all(scratch_);
    fs::create_directories(scratch_);
    fs::copy_file(kGoldenDir / "trace.txt", scratch_ / "trace.txt");
  }
  void TearDown() override { fs::remove_all(scratch_); }

  fs::path scratch_;
};

TEST_P(GoldenTest, OutputMatchesGoldenFile) {
  const GoldenCase& c = GetParam();
  WeftRun run;
  for (const char* command : c.commands) {
    run = RunWeft(scratch_, command);
    ASSERT_EQ(run.rc, 0) << "weft " << command << "\n" << run.err;
  }
  std::string actual = c.output_file ? ReadWhole(scratch_ / c.output_file) : run.out;
  ASSERT_FALSE(actual.empty()) << "weft " << c.commands.back() << " wrote nothing";
  // Nothing of this machine or this run may reach a golden file.
  EXPECT_EQ(actual.find(scratch_.string()), std::string::npos) << "the scratch path leaked";
  EXPECT_EQ(actual.find(WEFT_BINARY), std::string::npos) << "the binary's path leaked";

  fs::path golden = kGoldenDir / c.golden;
  const char* update = std::getenv("WEFT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << actual;
    std::cerr << "rewrote " << golden.string() << "\n";
    return;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden.string() << " is missing; make it with\n"
                                  << "    WEFT_UPDATE_GOLDEN=1 ctest -R Golden";
  std::string expected = ReadWhole(golden);
  if (expected != actual) {
    ADD_FAILURE() << "weft " << c.commands.back() << " differs from " << golden.string() << ":\n"
                  << Diff(golden, expected, actual, scratch_)
                  << "\nIf the change is intended, rewrite the golden files and review them:\n"
                  << "    WEFT_UPDATE_GOLDEN=1 ctest -R Golden   (in the build directory)";
  }
}

std::string CaseName(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name;
  for (char ch : std::string(info.param.golden)) name += std::isalnum(ch) ? ch : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Report, GoldenTest, ::testing::ValuesIn(kCases), CaseName);

}  // namespace
}  // namespace weft
