// The W3C baggage header: a one-pass parser that records members as offsets into one copy
// of the header (no allocation per member), and a serializer that keeps the limits.
#include "pivot/w3c_baggage.h"

#include <algorithm>
#include <array>

namespace weft::pivot {

W3cCounters& GlobalW3cCounters() {
  static W3cCounters counters;
  return counters;
}

namespace {

// Character classes of the grammar, as a table.
enum : uint8_t { kTchar = 1, kOctet = 2, kOws = 4 };
constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> c{};
  for (int ch = 0x21; ch <= 0x7e; ++ch) {
    if (ch != '"' && ch != ',' && ch != ';' && ch != '\\') c[size_t(ch)] |= kOctet;
    bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    if (alnum || std::string_view("!#$%&'*+-.^_`|~").find(char(ch)) != std::string_view::npos) {
      c[size_t(ch)] |= kTchar;
    }
  }
  c[' '] |= kOws;
  c['\t'] |= kOws;
  return c;
}
constexpr std::array<uint8_t, 256> kClasses = MakeClasses();
bool Is(char ch, uint8_t cls) { return (kClasses[uint8_t(ch)] & cls) != 0; }

size_t Skip(std::string_view s, size_t at, uint8_t cls) {
  while (at < s.size() && Is(s[at], cls)) ++at;
  return at;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::array<int8_t, 256> MakeBase64Table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[uint8_t(kBase64Url[i])] = int8_t(i);
  return t;
}
constexpr std::array<int8_t, 256> kBase64Table = MakeBase64Table();

}  // namespace

void AppendBase64Url(std::string_view bytes, std::string& out) {
  size_t i = 0;
  out.reserve(out.size() + (bytes.size() * 4 + 2) / 3);
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 |
                 uint8_t(bytes[i + 2]);
    char quad[4] = {kBase64Url[v >> 18], kBase64Url[(v >> 12) & 63], kBase64Url[(v >> 6) & 63],
                    kBase64Url[v & 63]};
    out.append(quad, 4);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out.push_back(kBase64Url[v >> 18]);
    out.push_back(kBase64Url[(v >> 12) & 63]);
  } else if (rest == 2) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8;
    out.push_back(kBase64Url[v >> 18]);
    out.push_back(kBase64Url[(v >> 12) & 63]);
    out.push_back(kBase64Url[(v >> 6) & 63]);
  }
}

bool DecodeBase64Url(std::string_view text, std::string& out) {
  if (text.size() % 4 == 1) return false;
  out.reserve(out.size() + text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int8_t v = kBase64Table[uint8_t(c)];
    if (v < 0) return false;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char(uint8_t(acc >> bits)));
    }
  }
  // The bits left over must be zero: one encoding per byte string.
  return (acc & ((1u << bits) - 1)) == 0;
}

W3cBaggage W3cBaggage::Parse(std::string_view header) {
  W3cBaggage b;
  W3cCounters& counters = GlobalW3cCounters();
  if (header.size() > (size_t{1} << 30)) {
    b.malformed_ = 1;
    counters.malformed_members.fetch_add(1, std::memory_order_relaxed);
    return b;
  }
  b.text_ = std::string(header);
  std::string_view s = b.text_;
  if (Skip(s, 0, kOws) == s.size()) return b;  // no members at all
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    size_t at = Skip(s, start, kOws);
    size_t stop = end;
    while (stop > at && Is(s[stop - 1], kOws)) --stop;
    // list-member = key OWS "=" OWS value *( OWS ";" OWS property )
    bool ok = false;
    Member m;
    size_t key_end = Skip(s, at, kTchar);
    if (key_end > at) {
      size_t p = Skip(s, key_end, kOws);
      if (p < stop && s[p] == '=') {
        size_t value_begin = std::min(Skip(s, p + 1, kOws), stop);
        size_t value_end = Skip(s, value_begin, kOctet);
        value_end = std::min(value_end, stop);
        m = {uint32_t(at), uint32_t(stop - at), uint32_t(key_end - at), uint32_t(value_begin),
             uint32_t(value_end - value_begin)};
        p = value_end;
        ok = true;
        while (ok && (p = Skip(s, p, kOws)) < stop) {
          // property = key OWS "=" OWS value / key
          if (s[p] != ';') {
            ok = false;
            break;
          }
          size_t pk = Skip(s, p + 1, kOws);
          size_t pk_end = Skip(s, pk, kTchar);
          if (pk_end == pk) {
            ok = false;
            break;
          }
          p = Skip(s, pk_end, kOws);
          if (p < stop && s[p] == '=') p = std::min(Skip(s, Skip(s, p + 1, kOws), kOctet), stop);
        }
      }
    }
    if (!ok) {
      ++b.malformed_;
      counters.malformed_members.fetch_add(1, std::memory_order_relaxed);
    } else if (std::string_view(s.data() + at, key_end - at) == kPivotKey) {
      if (b.has_pivot_) {
        ++b.malformed_;  // a second one: the first is Pivot's
        counters.malformed_members.fetch_add(1, std::memory_order_relaxed);
      } else {
        b.has_pivot_ = true;
        b.pivot_value_ = std::string(s.substr(m.value_begin, m.value_size));
      }
    } else {
      b.members_.push_back(m);
    }
    start = end + 1;
  }
  return b;
}

std::string W3cBaggage::Serialize() const {
  std::string out;
  out.reserve(text_.size() + kPivotKey.size() + pivot_value_.size() + 2);
  size_t count = 0;
  uint64_t dropped = 0;
  for (const Member& m : members_) {
    size_t need = m.size + (count > 0 ? 1 : 0);
    if (count >= kW3cMaxMembers || out.size() + need > kW3cMaxBytes) {
      ++dropped;
      continue;
    }
    if (count > 0) out.push_back(',');
    out.append(text_, m.begin, m.size);
    ++count;
  }
  if (dropped > 0) {
    GlobalW3cCounters().dropped_members.fetch_add(dropped, std::memory_order_relaxed);
  }
  if (has_pivot_) {
    size_t need = kPivotKey.size() + 1 + pivot_value_.size() + (count > 0 ? 1 : 0);
    if (count >= kW3cMaxMembers || out.size() + need > kW3cMaxBytes) {
      GlobalW3cCounters().pivot_dropped.fetch_add(1, std::memory_order_relaxed);
    } else {
      if (count > 0) out.push_back(',');
      out.append(kPivotKey);
      out.push_back('=');
      out.append(pivot_value_);
    }
  }
  return out;
}

std::optional<std::string> W3cBaggage::Get(std::string_view key) const {
  std::string_view raw;
  bool found = false;
  if (key == kPivotKey && has_pivot_) {
    raw = pivot_value_;
    found = true;
  }
  for (size_t i = 0; !found && i < members_.size(); ++i) {
    if (this->key(i) == key) {
      raw = value(i);
      found = true;
    }
  }
  if (!found) return std::nullopt;
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    int hi, lo;
    if (raw[i] == '%' && i + 2 < raw.size() && (hi = HexDigit(raw[i + 1])) >= 0 &&
        (lo = HexDigit(raw[i + 2])) >= 0) {
      out.push_back(char(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(raw[i]);
    }
  }
  return out;
}

Status W3cBaggage::GetPivot(Baggage& out) const {
  if (!has_pivot_) {
    out.Clear();
    return Status::NotFound("no {} member in the baggage header", kPivotKey);
  }
  std::string bytes;
  if (!DecodeBase64Url(pivot_value_, bytes)) {
    out.Clear();
    GlobalW3cCounters().pivot_rejected.fetch_add(1, std::memory_order_relaxed);
    return Status::Corruption("baggage header: {} is not base64url", kPivotKey);
  }
  return out.Deserialize(bytes);
}

void W3cBaggage::PutPivot(const Baggage& baggage) {
  std::string bytes = baggage.Serialize();
  if (bytes.empty()) {
    RemovePivot();
    return;
  }
  pivot_value_.clear();
  AppendBase64Url(bytes, pivot_value_);
  has_pivot_ = true;
}

void W3cBaggage::RemovePivot() {
  has_pivot_ = false;
  pivot_value_.clear();
}

}  // namespace weft::pivot
