// libFuzzer target for the embedded bus's frame decoder (src/pivot/frame.h), the reader of
// bytes that other processes send to the hub. Any bytes, fed in the chunks the first byte
// chooses, either decode into frames within the bounds or stop at one bad frame; every
// decoded frame encodes back to the same bytes; and feeding the same stream whole gives
// the same frames and the same outcome.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "pivot/frame.h"

namespace {

using weft::pivot::Frame;
using weft::pivot::FrameDecoder;
using weft::pivot::FrameType;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "pivot_bus_frame_fuzz: %s\n", what);
    std::abort();
  }
}

// Decodes `bytes` in chunks of `chunk` bytes; returns the frames re-encoded, and whether
// the stream ended in a bad frame.
std::vector<std::string> DecodeAll(std::string_view bytes, size_t chunk, bool* bad) {
  FrameDecoder decoder;
  std::vector<std::string> frames;
  *bad = false;
  for (size_t at = 0; at < bytes.size() && !*bad; at += chunk) {
    decoder.Append(bytes.substr(at, chunk));
    Frame frame;
    while (true) {
      FrameDecoder::Outcome outcome = decoder.Next(&frame);
      if (outcome == FrameDecoder::Outcome::kNeedMore) break;
      if (outcome == FrameDecoder::Outcome::kBad) {
        Check(!decoder.error().empty(), "a bad frame without an error");
        Check(decoder.Next(&frame) == FrameDecoder::Outcome::kBad, "kBad is not final");
        *bad = true;
        break;
      }
      std::string encoded;
      switch (frame.type) {
        case FrameType::kPublish:
          Check(weft::pivot::ValidSubject(frame.subject), "a publish with a bad subject");
          Check(frame.payload.size() <= weft::pivot::kMaxPayload, "a payload past its bound");
          weft::pivot::AppendPublishFrame(frame.subject, frame.payload, &encoded);
          break;
        case FrameType::kSubscribe:
          Check(weft::pivot::ValidSubject(frame.subject), "a subscribe with a bad pattern");
          weft::pivot::AppendSubscribeFrame(frame.id, frame.subject, &encoded);
          break;
        case FrameType::kUnsubscribe:
          weft::pivot::AppendUnsubscribeFrame(frame.id, &encoded);
          break;
      }
      frames.push_back(std::move(encoded));
    }
  }
  return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t chunk = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool bad_chunked = false, bad_whole = false;
  std::vector<std::string> chunked = DecodeAll(bytes, chunk, &bad_chunked);
  std::vector<std::string> whole = DecodeAll(bytes, bytes.size() + 1, &bad_whole);
  Check(chunked == whole, "chunked and whole decoding differ");
  Check(bad_chunked == bad_whole, "chunked and whole decoding end differently");
  // The frames decoded are exactly the start of the input.
  std::string joined;
  for (const std::string& f : whole) joined += f;
  Check(bytes.substr(0, joined.size()) == joined, "a frame does not encode back to its bytes");
  return 0;
}
