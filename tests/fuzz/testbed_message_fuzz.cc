// libFuzzer target for the testbed's message readers (testbed/wire.h, testbed/http.h):
// frames and HTTP/1.1 messages, whole or in pieces. Any input is taken message by message
// until it runs out or is malformed, never a crash; a message taken is re-encoded and
// parses back to the same fields; feeding the input in two pieces takes the same messages.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "testbed/http.h"
#include "testbed/wire.h"

namespace {

using weft::testbed::Frame;

bool SameFields(const Frame& a, const Frame& b) {
  return a.type == b.type && a.request_type == b.request_type && a.request_id == b.request_id &&
         a.call_id == b.call_id && a.parent_call == b.parent_call && a.baggage == b.baggage;
}

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

// Takes every whole message, as a reader does after each read; the split point makes the
// reader see the input in two reads.
std::vector<Frame> TakeAll(std::string_view input, bool http, size_t split) {
  std::vector<Frame> frames;
  std::string buf;
  for (std::string_view piece : {input.substr(0, split), input.substr(split)}) {
    buf.append(piece);
    while (true) {
      Frame f;
      size_t bytes = 0;
      size_t before = buf.size();
      auto taken = weft::testbed::TakeMessage(buf, http, &f, &bytes);
      if (!taken.ok()) {
        if (buf.size() != before) Fail("a malformed message changed the buffer");
        return frames;
      }
      if (!*taken) {
        if (buf.size() != before) Fail("a partial message changed the buffer");
        break;
      }
      if (bytes == 0 || before - buf.size() != bytes)
        Fail("wire_bytes differs from what was taken");
      frames.push_back(f);
    }
  }
  return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool http = data[0] & 1;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<Frame> whole = TakeAll(input, http, input.size());
  std::vector<Frame> split = TakeAll(input, http, input.size() / 2);
  // A malformed message ends both readings at the same place, since the bytes before it
  // were the same; pieces only delay when a message is seen.
  if (whole.size() != split.size())
    Fail("reading in two pieces took a different number of messages");
  for (size_t i = 0; i < whole.size(); ++i) {
    if (!SameFields(whole[i], split[i])) Fail("reading in two pieces took different messages");
    for (bool chunked : {false, true}) {
      std::string wire = weft::testbed::EncodeMessage(whole[i], 40, http, chunked);
      Frame again;
      size_t bytes = 0;
      auto taken = weft::testbed::TakeMessage(wire, http, &again, &bytes);
      if (!taken.ok() || !*taken || !wire.empty() || !SameFields(again, whole[i]) ||
          (http && again.close != whole[i].close)) {
        Fail("a message taken does not re-encode to itself");
      }
    }
  }
  return 0;
}
