// The HTML report in a real browser: the demo's pipeline (the three-tier testbed under
// weft capture, reconcile, infer --algo auto) writes a report with waterfalls and the
// accuracy against the servers' own truth; headless Chromium, driven over its DevTools
// protocol by browser_check.py (Debian's chromium and python3-websockets, no network),
// opens it. The page must fetch nothing, raise no console error or exception, show as many patterns
// as `weft paths` lists, draw the slowest request's waterfall with one bar per CALL and MSG that
// `weft paths --requests` prints for it, keep every label inside the drawing, and carry `weft
// eval`'s report word for word. The screenshot stays in the build tree
// (tests/report/html_browser_test.out/report.png).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "weft_cli.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using weft::testing::CommandRun;
using weft::testing::Weft;

using weft::testing::Shell;

// What the browser check needs, or why it cannot run here.
std::string MissingTool() {
  if (Shell("command -v chromium").rc != 0) return "chromium is not installed (Debian: chromium)";
  if (Shell("/usr/bin/python3 -c 'import websockets'").rc != 0)
    return "python3-websockets is not installed (Debian: python3-websockets)";
  return "";
}

// The number of CALL and MSG labels in a pattern key: "C:a>b(C:b>c(R:c>b) R:b>a)" has 2.
int CallsInKey(const std::string& key) {
  int calls = 0;
  for (size_t i = 0; i + 1 < key.size(); ++i) {
    const bool starts = i == 0 || key[i - 1] == '(' || key[i - 1] == ' ';
    if (starts && (key[i] == 'C' || key[i] == 'M') && key[i + 1] == ':') ++calls;
  }
  return calls;
}

class HtmlBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNDER_ASAN();
    std::string missing = MissingTool();
    if (!missing.empty()) GTEST_SKIP() << "no browser check: " << missing;
    char dir[] = "/tmp/weft-html-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    base_ = dir;
  }
  void TearDown() override {
    if (base_.empty()) return;
    if (HasFailure()) {
      std::cerr << "kept " << base_.string() << "\n";
    } else {
      fs::remove_all(base_);
    }
  }
  fs::path base_;
};

TEST_F(HtmlBrowserTest, DemoReportShowsItsPathsWithoutErrors) {
  const std::string capture = (base_ / "capture").string(), truth = (base_ / "truth").string(),
                    run = (base_ / "run.weft").string(),
                    paths = (base_ / "run.paths.json").string(),
                    html = (base_ / "report.html").string();
  CommandRun step =
      Weft("capture -o " + capture + " -- " + WEFT_BINARY + " testbed run " + WEFT_TOPOLOGIES +
           "/three-tier.toml --duration 1s --concurrency 8 -o " + truth);
  ASSERT_EQ(step.rc, 0) << step.output;
  step = Weft("reconcile " + capture + " -o " + run + " --nodes name");
  ASSERT_EQ(step.rc, 0) << step.output;
  step = Weft("infer " + run + " --algo auto -o " + paths);
  ASSERT_EQ(step.rc, 0) << step.output;
  step = Weft("report " + paths + " --html " + html + " --trace " + run + " --truth " + truth +
              " --top 1000");
  ASSERT_EQ(step.rc, 0) << step.output;

  // What the page should show, from the other commands.
  CommandRun listed = Shell(std::string(WEFT_BINARY) + " paths " + paths + " --json --top 1000");
  ASSERT_EQ(listed.rc, 0) << listed.output;
  nlohmann::json patterns = nlohmann::json::parse(listed.output, nullptr, false);
  ASSERT_TRUE(patterns.is_array() && !patterns.empty()) << listed.output;
  CommandRun slowest = Weft("paths " + paths + " --requests 1 --trace " + run);
  ASSERT_EQ(slowest.rc, 0) << slowest.output;
  size_t at = slowest.output.find("\nrequest ");
  ASSERT_NE(at, std::string::npos) << slowest.output;
  const int request = std::stoi(slowest.output.substr(at + 9));
  int spans = 0;
  std::istringstream lines(slowest.output.substr(at + 1));
  std::string line;
  std::getline(lines, line);  // "request N at ..."
  while (std::getline(lines, line)) {
    spans += line.find(" CALL ") != std::string::npos || line.find(" MSG ") != std::string::npos;
  }
  ASSERT_GT(spans, 1) << slowest.output;
  CommandRun eval =
      Shell("(" + std::string(WEFT_BINARY) + " eval --truth " + truth + " --trace " + run + " " +
            paths + " 2>/dev/null)");  // its report alone, as the page shows it
  ASSERT_EQ(eval.rc, 0) << eval.output;

  fs::create_directories(WEFT_TEST_OUTPUT_DIR);
  const std::string screenshot = std::string(WEFT_TEST_OUTPUT_DIR) + "/report.png";
  fs::remove(screenshot);
  CommandRun browser =
      Shell("/usr/bin/python3 " + std::string(WEFT_BROWSER_CHECK) + " --html " + html +
            " --request " + std::to_string(request) + " --screenshot " + screenshot);
  ASSERT_EQ(browser.rc, 0) << browser.output;
  nlohmann::json shown = nlohmann::json::parse(browser.output, nullptr, false);
  ASSERT_TRUE(shown.is_object()) << browser.output;

  EXPECT_EQ(shown["errors"], nlohmann::json::array()) << shown["errors"].dump(2);
  EXPECT_EQ(shown["fetched"], nlohmann::json::array()) << "the page must need no network";
  EXPECT_EQ(shown["ready"], true);
  EXPECT_EQ(shown["patterns"], patterns.size());
  EXPECT_EQ(shown["tree_calls"], CallsInKey(patterns[0]["key"].get<std::string>()))
      << patterns[0]["key"];
  EXPECT_EQ(shown["selected"], std::to_string(request));
  EXPECT_EQ(shown["spans"], spans) << slowest.output;
  EXPECT_EQ(shown["labels_past_edge"], 0);
  EXPECT_GT(shown["delay_histograms"].get<int>(), 0);
  EXPECT_EQ(shown["accuracy"], eval.output);
  EXPECT_GT(fs::file_size(screenshot), 10000u);
}

}  // namespace
}  // namespace weft
