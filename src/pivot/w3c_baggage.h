// The W3C `baggage` HTTP header (https://www.w3.org/TR/baggage/), carrying Pivot's baggage
// as one list-member beside whatever other systems put there:
//
//   baggage: userId=alice,weft-pivot=AQIBAAEB...,isProduction=false;ttl=3
//
// Grammar (the spec's §3.3):
//   baggage-string = list-member *( OWS "," OWS list-member )
//   list-member    = key OWS "=" OWS value *( OWS ";" OWS property )
//   property       = key OWS "=" OWS value / key
//   key            = token (RFC 7230: 1*tchar)
//   value          = *baggage-octet  (0x21, 0x23-2B, 0x2D-3A, 0x3C-5B, 0x5D-7E; anything else
//                    percent-encoded)
//   OWS            = *( SP / HTAB )
//
// Parse keeps every well-formed member that is not Pivot's verbatim (its text with the
// surrounding OWS trimmed), in order; a malformed member (bad key, a character outside
// baggage-octet, a missing "=", an empty member between commas, a bad property) is skipped
// and counted, never fatal. Pivot's member has the key kPivotKey and as value the base64url
// (RFC 4648 §5, no padding) of the binary form in pivot/baggage.h; it is kept as text, so a
// process that forwards the header without running advice never decodes it. A second
// member with Pivot's key is skipped and counted with the malformed ones.
//
// Limits (the spec's §3.3.2): a header carries at most 64 list-members and 8,192 bytes.
// Serialize always emits a header within them. What it drops, counted:
//   - Pivot's member, first: it is emitted last, and only if it fits. Other systems'
//     members may change how the program behaves; Pivot's only carries tuples to later
//     tracepoints, so losing it loses that request's joined tuples downstream (the count
//     tells how many requests were affected) and never the program's own data.
//   - foreign members that do not fit (a received header already over the limits), each in
//     turn, keeping the order of those that remain.
//
// Departure from the spec: percent-decoding (Get) decodes "%XX" with two hex digits and
// leaves any other '%' as it is, where the spec asks for U+FFFD replacements of invalid
// UTF-8; weft's own member is base64url and never needs it. Properties of Pivot's member,
// which weft never writes, are dropped.
//
// Thread safety: a W3cBaggage is a value; the counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "pivot/baggage.h"

namespace weft::pivot {

inline constexpr size_t kW3cMaxMembers = 64;
inline constexpr size_t kW3cMaxBytes = 8192;
inline constexpr std::string_view kPivotKey = "weft-pivot";

struct W3cCounters {
  std::atomic<uint64_t> malformed_members{0};  // skipped by Parse
  std::atomic<uint64_t> dropped_members{0};    // foreign members Serialize left out
  std::atomic<uint64_t> pivot_dropped{0};      // Pivot's member left out to keep the limits
  std::atomic<uint64_t> pivot_rejected{0};     // Pivot's member was not valid base64url
};
W3cCounters& GlobalW3cCounters();

class W3cBaggage {
 public:
  static W3cBaggage Parse(std::string_view header);

  // The header value, within the limits (above).
  std::string Serialize() const;

  // Foreign members, in order: the whole member text, its key and its value (as written,
  // percent-encoded).
  size_t size() const { return members_.size(); }
  std::string_view member(size_t i) const { return Slice(members_[i].begin, members_[i].size); }
  std::string_view key(size_t i) const { return Slice(members_[i].begin, members_[i].key_size); }
  std::string_view value(size_t i) const {
    return Slice(members_[i].value_begin, members_[i].value_size);
  }
  // The percent-decoded value of the first member with `key`.
  std::optional<std::string> Get(std::string_view key) const;
  size_t malformed() const { return malformed_; }  // members Parse skipped

  // Pivot's member.
  bool has_pivot() const { return has_pivot_; }
  // Deserializes Pivot's member into `out` (lazily: see Baggage::Deserialize). NotFound if
  // there is none (then `out` is an empty baggage); Corruption, counted, if it is not valid.
  Status GetPivot(Baggage& out) const;
  // Sets Pivot's member to `baggage`'s serialized form (an empty baggage removes it).
  void PutPivot(const Baggage& baggage);
  void RemovePivot();

 private:
  struct Member {
    uint32_t begin = 0, size = 0, key_size = 0;
    uint32_t value_begin = 0, value_size = 0;
  };
  std::string_view Slice(uint32_t begin, uint32_t size) const {
    return std::string_view(text_).substr(begin, size);
  }

  std::string text_;  // the parsed header: what members_ point into
  std::vector<Member> members_;
  size_t malformed_ = 0;
  bool has_pivot_ = false;
  std::string pivot_value_;  // base64url
};

// RFC 4648 §5 without padding; Decode refuses padding, other characters, and a length
// that no encoding has.
void AppendBase64Url(std::string_view bytes, std::string& out);
bool DecodeBase64Url(std::string_view text, std::string& out);

}  // namespace weft::pivot
