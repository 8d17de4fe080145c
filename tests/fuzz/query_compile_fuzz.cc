// Fuzzes the query compiler and the advice interpreter: any program that parses is compiled
// against a few tracepoints, with and without the optimizer, and run over a fixed request
// that branches and joins. Nothing may crash, hang or leak, whatever the query.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "query/parser.h"
#include "query/query.h"

namespace {

using namespace weft::query;

class FixedEvents : public EventSource {
 public:
  Value Export(uint32_t tracepoint, uint32_t export_id, uint32_t event) const override {
    switch (export_id) {
      case 0:
        return Value::String(kNames[(event + tracepoint) % 3]);
      case 1:
        return Value::Int(int64_t(event) * 7 - 10);
      default:
        return event % 4 == 0 ? Value::Null() : Value::Float(double(event) / 3);
    }
  }
  weft::TimeNs Time(uint32_t event) const override { return weft::TimeNs(event) * 1'000'000'000; }

 private:
  static constexpr std::string_view kNames[] = {"h1", "h2", "/api/x"};
};

Execution FixedExecution() {
  Execution e;
  auto fire = [&](uint32_t segment, uint32_t tp, uint32_t event) {
    e.steps.push_back({StepOp::kFire, segment, 0, tp, event});
  };
  fire(0, 0, 0);
  e.steps.push_back({StepOp::kBranch, 0, 1, 0, 0});
  e.steps.push_back({StepOp::kBranch, 0, 2, 0, 0});
  fire(1, 1, 1);
  fire(2, 0, 2);
  fire(1, 2, 3);
  fire(2, 1, 4);
  e.steps.push_back({StepOp::kBranch, 1, 3, 0, 0});
  e.steps.push_back({StepOp::kJoin, 0, 3, 0, 0});
  e.steps.push_back({StepOp::kJoin, 0, 2, 0, 0});
  fire(0, 2, 5);
  fire(0, 1, 6);
  e.segments = 4;
  e.weight = 0.5;
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  weft::Result<Program> program = ParseProgram(text);
  if (!program.ok()) return 0;
  static const std::vector<Tracepoint> tracepoints = {
      {"A", {"host", "v", "f"}, ""}, {"B", {"host", "v", "f"}, ""}, {"C", {"host", "v"}, ""}};
  static const FixedEvents events;
  static const Execution execution = FixedExecution();
  for (bool optimize : {false, true}) {
    auto compiled = Compile(*program, tracepoints, {.text = text, .optimize = optimize});
    if (!compiled.ok()) return 0;
    (void)ExplainAdvice(**compiled);
    Evaluator evaluator(*compiled, events, {.interval = 2'000'000'000, .origin = 0});
    evaluator.Run(execution);
    evaluator.Run(execution);
    (void)std::move(evaluator).Finish();
  }
  return 0;
}
