// LEB128 varints and a bounds-checked byte reader, for the binary forms of the live
// baggage (baggage.h) and the interval tree clocks (itc.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::pivot {

inline void PutVarint(std::string& out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  buf[n++] = char(v);
  out.append(buf, n);
}

// Reads from `in`; every read says whether the bytes were there and well formed, and
// consumes them only then.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  size_t left() const { return in_.size() - at_; }
  size_t at() const { return at_; }

  bool Byte(uint8_t& b) {
    if (at_ >= in_.size()) return false;
    b = uint8_t(in_[at_++]);
    return true;
  }
  // `minimal`: refuse a longer encoding than the value needs (one form per value).
  bool Varint(uint64_t& v, bool minimal = false) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(b)) return false;
      if (shift == 63 && b > 1) return false;
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return !minimal || b != 0 || shift == 0;
    }
    return false;
  }
  bool Bytes(size_t n, std::string_view& out) {
    if (left() < n) return false;
    out = in_.substr(at_, n);
    at_ += n;
    return true;
  }

 protected:
  std::string_view in_;
  size_t at_ = 0;
};

}  // namespace weft::pivot
