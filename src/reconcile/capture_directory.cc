// Reading a capture directory (reconcile.h ReadCaptureDirectory). As LevelDB's log reader
// reports a damaged block and goes on, one level up: a log that cannot be read at all (a
// stray file, a damaged header) is named and skipped, and the rest are reconciled.
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "reconcile/reconcile.h"

namespace weft::reconcile {
namespace {

// Turns the reader's reports into lines naming the file and byte offset.
class LossCollector : public capture::Reporter {
 public:
  LossCollector(std::string path, std::vector<std::string>* lines)
      : path_(std::move(path)), lines_(lines) {}
  void Lost(uint64_t offset, uint64_t bytes, std::string_view reason) override {
    if (lines_ != nullptr)
      lines_->push_back(
          fmt::format("{}: byte {}: {} bytes lost: {}", path_, offset, bytes, reason));
  }

 private:
  std::string path_;
  std::vector<std::string>* lines_;
};

}  // namespace

Result<std::vector<capture::EventLog>> ReadCaptureDirectory(const std::string& dir,
                                                            ReadProblems* problems) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return Status::NotFound("{}: not a directory", dir);
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> paths, capture::FindEventLogs(dir));
  if (paths.empty()) return Status::NotFound("{}: no event logs (*.wev) under it", dir);
  std::vector<capture::EventLog> logs;
  logs.reserve(paths.size());
  Status first_failure = Status::Ok();
  for (const std::string& path : paths) {
    LossCollector collector(path, problems != nullptr ? &problems->losses : nullptr);
    Result<capture::EventLog> log = capture::ReadEventLog(path, &collector);
    if (log.ok()) {
      logs.push_back(std::move(log).value());
      continue;
    }
    // The reader's message names the file: "run/h/7.wev: header checksum mismatch (...)".
    if (problems != nullptr) problems->unreadable.push_back(log.status().message());
    if (first_failure.ok()) first_failure = log.status();
  }
  if (logs.empty()) {
    return Status::Corruption("{}: none of its {} event logs could be read; the first: {}", dir,
                              paths.size(), first_failure.message());
  }
  return logs;
}

}  // namespace weft::reconcile
