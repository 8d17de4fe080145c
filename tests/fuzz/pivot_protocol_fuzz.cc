// libFuzzer target for the messages agents and `weft pivot` front ends exchange
// (pivot/protocol.h): any bytes are either a message or an error, never a crash; a
// decoded message encodes to bytes that decode to the same message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "pivot/protocol.h"

namespace {

using namespace weft::pivot;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pivot_protocol_fuzz: %s\n", what);
    std::abort();
  }
}

bool SameValues(std::span<const weft::query::Value> a, std::span<const weft::query::Value> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // NaN is not equal to itself: compare what it encodes to.
    if (a[i].type == weft::query::ValueType::kFloat && b[i].type == a[i].type && a[i].f != a[i].f &&
        b[i].f != b[i].f) {
      continue;
    }
    if (a[i].type != b[i].type || !(a[i] == b[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto m = DecodeInstall(in); m.ok()) {
    auto again = DecodeInstall(EncodeInstall(*m));
    Check(again.ok(), "an install message does not decode after encoding");
    Check(again->id == m->id && again->text == m->text && again->slot_base == m->slot_base &&
              again->interval_ns == m->interval_ns && again->optimize == m->optimize &&
              again->catalog.size() == m->catalog.size(),
          "an install message changes through encoding");
  }
  if (auto m = DecodeUninstall(in); m.ok()) {
    auto again = DecodeUninstall(EncodeUninstall(*m));
    Check(again.ok() && again->id == m->id, "an uninstall message changes through encoding");
  }
  if (auto m = DecodeList(in); m.ok()) {
    auto again = DecodeList(EncodeList(*m));
    Check(again.ok() && again->reply_to == m->reply_to, "a list request changes through encoding");
  }
  if (auto m = DecodeAgent(in); m.ok()) {
    auto again = DecodeAgent(EncodeAgent(*m));
    Check(again.ok() && again->pid == m->pid && again->queries.size() == m->queries.size() &&
              again->tracepoints.size() == m->tracepoints.size(),
          "an agent description changes through encoding");
  }
  if (auto m = DecodePartials(in); m.ok()) {
    auto again = DecodePartials(EncodePartials(*m));
    Check(again.ok(), "partial results do not decode after encoding");
    Check(again->groups.size() <= m->groups.size() && again->columns.size() == m->columns.size(),
          "partial results change through encoding");
    Check(again->lost.partials == m->lost.partials && again->lost.bus == m->lost.bus &&
              again->lost.interned == m->lost.interned && again->lost.children == m->lost.children,
          "what an agent lost changes through encoding");
    Check(again->refused == m->refused, "a refusal changes through encoding");
    for (size_t g = 0; g < again->groups.size(); ++g) {
      Check(SameValues(again->groups.key(g), m->groups.key(g)), "a group key changes");
    }
  }
  return 0;
}
