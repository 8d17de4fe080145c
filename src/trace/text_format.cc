#include "trace/text_format.h"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <optional>

#include "core/progress.h"
#include "trace/legacy_attributes.h"

namespace weft {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Splits a line into whitespace-separated tokens without allocating.
class Tokenizer {
 public:
  explicit Tokenizer(std::string_view line) : rest_(line) {}
  bool Next(std::string_view& token) {
    size_t i = 0;
    while (i < rest_.size() && IsSpace(rest_[i])) ++i;
    if (i == rest_.size()) return false;
    size_t j = i;
    while (j < rest_.size() && !IsSpace(rest_[j])) ++j;
    token = rest_.substr(i, j - i);
    rest_.remove_prefix(j);
    return true;
  }

 private:
  std::string_view rest_;
};

template <typename Int>
bool ParseInt(std::string_view s, Int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX escapes into `out`; false on a malformed escape.
bool Unescape(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (in.size() - i < 3) return false;
    int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(char(hi * 16 + lo));
    i += 2;
  }
  return true;
}

void AppendByteEscape(std::string& out, unsigned char c) {
  fmt::format_to(std::back_inserter(out), "%{:02X}", c);
}

void AppendEscaped(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
    if (c == '%' || c <= ' ' || c == 0x7f || c == '=') {
      AppendByteEscape(out, c);
    } else {
      out.push_back(char(c));
    }
  }
}

// Keys that fill columns; an attribute that happens to have one of these names is written
// with its first character escaped so that it is read back as an attribute.
bool IsColumnKey(std::string_view key) {
  return key == "recv" || key == "bytes" || key == "path" || key == "msg" || key == "parent" ||
         key == "stid" || key == "rtid" || key == "src" || key == "dst";
}

void AppendAttributeKey(std::string& out, std::string_view key) {
  if (IsColumnKey(key)) {
    AppendByteEscape(out, static_cast<unsigned char>(key[0]));
    key.remove_prefix(1);
  }
  AppendEscaped(out, key);
}

// A call id of "-" is written escaped, since a bare "-" means "no call id".
void AppendCallId(std::string& out, std::string_view id) {
  if (id == "-") {
    out += "%2D";
  } else {
    AppendEscaped(out, id);
  }
}

Result<MessageKind> ParseOp(std::string_view op) {
  if (op == "CALL_SENT") return MessageKind::kCall;
  if (op == "RET_SENT") return MessageKind::kReturn;
  if (op == "MSG_SENT") return MessageKind::kMessage;
  return Status::InvalidArgument(
      "unknown op '{}' (want CALL_SENT, RET_SENT, MSG_SENT, FORK, EXEC, THREAD or HANDOFF)", op);
}

// A process link line: "timestamp FORK|EXEC|THREAD from to stid=T rtid=U", or
// "timestamp HANDOFF from to stid=T rtid=U recv=TIMESTAMP [ambiguous=1] [from_msg=N]
// [to_msg=N]" (docs/formats.md; N counts the file's message lines from 0).
std::optional<ProcessLinkKind> ParseLinkOp(std::string_view op) {
  if (op == "FORK") return ProcessLinkKind::kFork;
  if (op == "EXEC") return ProcessLinkKind::kExec;
  if (op == "THREAD") return ProcessLinkKind::kThread;
  if (op == "HANDOFF") return ProcessLinkKind::kHandoff;
  return std::nullopt;
}

class TextParser {
 public:
  explicit TextParser(std::string_view source) : source_(source) {}

  Result<Trace> Parse(std::string_view text) {
    Progress progress("parse", text.size(), "bytes");
    size_t pos = 0;
    size_t line_number = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      ++line_number;
      line_number_ = line_number;
      Status s = ParseLine(text.substr(pos, end - pos), line_number);
      if (!s.ok()) return s.WithContext(fmt::format("{}:{}", source_, line_number));
      pos = end + 1;
      progress.Update(pos);
    }
    // parent= may refer forward, so labels are resolved once every line is read.
    for (const PendingParent& p : pending_parents_) {
      auto it = rows_by_label_.find(p.label);
      if (it == rows_by_label_.end()) {
        return Status::InvalidArgument("{}:{}: parent={} names no msg= in the input", source_,
                                       p.line, p.label);
      }
      if (it->second == p.row) {
        return Status::InvalidArgument("{}:{}: parent={} names the message itself", source_, p.line,
                                       p.label);
      }
      builder_.SetParent(p.row, it->second);
    }
    // from_msg= and to_msg= may refer forward too.
    for (const auto& [line, index] : linked_messages_) {
      if (index >= builder_.size()) {
        return Status::InvalidArgument("{}:{}: a HANDOFF line names message {}, but there are {}",
                                       source_, line, index, builder_.size());
      }
    }
    auto trace = std::move(builder_).Finish();
    if (!trace.ok()) return trace.status().WithContext(source_);
    return trace;
  }

 private:
  std::vector<std::pair<size_t, uint32_t>> linked_messages_;  // (line, message index)
  size_t line_number_ = 0;                                    // of the line being parsed
  struct PendingParent {
    uint32_t row;
    uint64_t label;
    size_t line;
  };

  Status ParseLine(std::string_view line, size_t line_number) {
    Tokenizer tokens(line);
    std::string_view token;
    if (!tokens.Next(token) || token[0] == '#') return Status::Ok();  // blank or comment
    MessageRecord m;
    if (token != "-") {
      WEFT_ASSIGN_OR_RETURN(m.send_time, ParseTimestamp(token));
    }
    std::string_view op, sender, receiver;
    if (!tokens.Next(op) || !tokens.Next(sender) || !tokens.Next(receiver)) {
      return Status::InvalidArgument(
          "too few fields (want: timestamp op sender receiver [id] [key=value ...])");
    }
    // Names are written escaped (FormatTextTrace), so they are read unescaped.
    if (!Unescape(sender, scratch_)) {
      return Status::InvalidArgument("bad escape in sender '{}'", sender);
    }
    m.sender = builder_.Node(scratch_);
    if (!Unescape(receiver, scratch_)) {
      return Status::InvalidArgument("bad escape in receiver '{}'", receiver);
    }
    m.receiver = builder_.Node(scratch_);
    if (std::optional<ProcessLinkKind> link = ParseLinkOp(op)) {
      return ParseLink(*link, m.send_time, m.sender, m.receiver, tokens);
    }
    WEFT_ASSIGN_OR_RETURN(m.kind, ParseOp(op));
    uint32_t row = uint32_t(builder_.size());
    bool first_optional = true;
    while (tokens.Next(token)) {
      size_t eq = token.find('=');
      if (eq == std::string_view::npos) {
        if (!first_optional) return Status::InvalidArgument("'{}' is not key=value", token);
        if (token != "-") {
          if (!Unescape(token, scratch_)) {
            return Status::InvalidArgument("bad escape in call id '{}'", token);
          }
          m.call_id = builder_.String(scratch_);
        }
        first_optional = false;
        continue;
      }
      first_optional = false;
      WEFT_RETURN_IF_ERROR(
          ParseKeyValue(token.substr(0, eq), token.substr(eq + 1), row, line_number, m));
    }
    if (m.send_time == kNoTime && m.recv_time == kNoTime) {
      return Status::InvalidArgument("timestamp is '-' and there is no recv=");
    }
    builder_.Add(m);
    for (auto& [key, value] : attributes_) builder_.AddAttribute(row, key, value);
    attributes_.clear();
    return Status::Ok();
  }

  Status ParseLink(ProcessLinkKind kind, TimeNs time, NodeId from, NodeId to, Tokenizer& tokens) {
    ProcessLink link{time, from, ThreadId(), to, ThreadId(), kind};
    if (time == kNoTime)
      return Status::InvalidArgument("a {} line needs a timestamp", ProcessLinkKindName(kind));
    const bool handoff = kind == ProcessLinkKind::kHandoff;
    std::string_view token;
    while (tokens.Next(token)) {
      size_t eq = token.find('=');
      std::string_view key = token.substr(0, eq),
                       value = eq == std::string_view::npos ? "" : token.substr(eq + 1);
      if (handoff && key == "recv" && eq != std::string_view::npos) {
        WEFT_ASSIGN_OR_RETURN(link.to_time, ParseTimestamp(value));
        continue;
      }
      if (handoff && token == "ambiguous=1") {
        link.ambiguous = true;
        continue;
      }
      if (handoff && (key == "from_msg" || key == "to_msg") && eq != std::string_view::npos) {
        uint32_t index;
        if (!ParseInt(value, index) || index == MessageId::kInvalidValue)
          return Status::InvalidArgument("bad value in {}", token);
        (key == "from_msg" ? link.from_message : link.to_message) = MessageId(index);
        linked_messages_.emplace_back(line_number_, index);
        continue;
      }
      ThreadId* field = key == "stid"   ? &link.from_thread
                        : key == "rtid" ? &link.to_thread
                                        : nullptr;
      if (eq == std::string_view::npos || field == nullptr) {
        return Status::InvalidArgument(
            "'{}' on a {} line (want stid=N rtid=N{})", token, ProcessLinkKindName(kind),
            handoff ? " recv=TIME [ambiguous=1] [from_msg=N] [to_msg=N]" : "");
      }
      uint32_t thread;
      if (!ParseInt(value, thread)) return Status::InvalidArgument("bad value in {}", token);
      *field = ThreadId(thread);
    }
    if (!link.from_thread.valid() || !link.to_thread.valid()) {
      return Status::InvalidArgument("a {} line needs stid= and rtid= (non-zero)",
                                     ProcessLinkKindName(kind));
    }
    if (handoff && (link.to_time == kNoTime || link.to_time < link.time)) {
      return Status::InvalidArgument("a HANDOFF line needs recv= at or after its timestamp");
    }
    builder_.AddProcessLink(link);
    return Status::Ok();
  }

  Status ParseKeyValue(std::string_view key, std::string_view value, uint32_t row,
                       size_t line_number, MessageRecord& m) {
    if (key.empty()) return Status::InvalidArgument("empty key in '={}'", value);
    auto bad = [&] { return Status::InvalidArgument("bad value in {}={}", key, value); };
    if (key == "recv") {
      WEFT_ASSIGN_OR_RETURN(m.recv_time, ParseTimestamp(value));
    } else if (key == "connect") {
      WEFT_ASSIGN_OR_RETURN(m.connect_time, ParseTimestamp(value));
    } else if (key == "accept") {
      WEFT_ASSIGN_OR_RETURN(m.accept_time, ParseTimestamp(value));
    } else if (key == "first_read") {
      WEFT_ASSIGN_OR_RETURN(m.first_read_time, ParseTimestamp(value));
    } else if (key == kLegacyConnectedAttribute) {
      if (!ParseInt(value, m.connect_time)) return bad();
    } else if (key == "bytes") {
      if (!ParseInt(value, m.bytes) || m.bytes < 0) return bad();
    } else if (key == "path") {
      uint32_t v;
      if (!ParseInt(value, v) || v == PathId::kInvalidValue) return bad();
      m.truth_path = PathId(v);
    } else if (key == "msg") {
      uint64_t label;
      if (!ParseInt(value, label)) return bad();
      if (!rows_by_label_.emplace(label, row).second) {
        return Status::InvalidArgument("msg={} appears twice", label);
      }
    } else if (key == "parent") {
      uint64_t label;
      if (!ParseInt(value, label)) return bad();
      pending_parents_.push_back({row, label, line_number});
    } else if (key == "stid" || key == "rtid") {
      uint32_t thread;
      if (!ParseInt(value, thread)) return bad();
      (key == "stid" ? m.sender_thread : m.receiver_thread) = ThreadId(thread);
    } else if (key == "src" || key == "dst") {
      if (!Unescape(value, scratch_)) return bad();
      (key == "src" ? m.sender_endpoint : m.receiver_endpoint) = builder_.String(scratch_);
    } else {
      if (!Unescape(value, scratch_)) return bad();
      StringId v = builder_.String(scratch_);
      if (!Unescape(key, scratch_)) return bad();
      attributes_.emplace_back(builder_.String(scratch_), v);
    }
    return Status::Ok();
  }

  std::string_view source_;
  TraceBuilder builder_;
  std::vector<PendingParent> pending_parents_;
  absl::flat_hash_map<uint64_t, uint32_t> rows_by_label_;
  std::vector<std::pair<StringId, StringId>> attributes_;  // of the line being parsed
  std::string scratch_;
};

}  // namespace

Result<Trace> ParseTextTrace(std::string_view text, std::string_view source) {
  return TextParser(source).Parse(text);
}

std::string FormatTextTrace(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  bool labels = std::any_of(c.truth_parent.begin(), c.truth_parent.end(),
                            [](MessageId p) { return p.valid(); });
  std::string out = "# weft text trace: timestamp op sender receiver id [key=value ...]\n";
  out.reserve(out.size() + trace.size() * 64);
  auto it = std::back_inserter(out);
  std::span<const Attribute> attributes = trace.attributes();
  size_t next_attribute = 0;
  // Process links go in time order among the messages, each before the messages at or
  // after its time.
  std::span<const ProcessLink> links = trace.process_links();
  size_t next_link = 0;
  auto write_links_until = [&](TimeNs t) {
    for (; next_link < links.size() && links[next_link].time <= t; ++next_link) {
      const ProcessLink& l = links[next_link];
      fmt::format_to(it, "{} {} ", FormatTimestamp(l.time), ProcessLinkKindName(l.kind));
      AppendEscaped(out, trace.NodeName(l.from));
      out += ' ';
      AppendEscaped(out, trace.NodeName(l.to));
      fmt::format_to(it, " stid={} rtid={}", l.from_thread.value(), l.to_thread.value());
      if (l.kind == ProcessLinkKind::kHandoff) {
        fmt::format_to(it, " recv={}", FormatTimestamp(l.TakenAt()));
        if (l.ambiguous) out += " ambiguous=1";
        if (l.from_message.valid()) fmt::format_to(it, " from_msg={}", l.from_message.value());
        if (l.to_message.valid()) fmt::format_to(it, " to_msg={}", l.to_message.value());
      }
      out += '\n';
    }
  };
  for (size_t i = 0; i < trace.size(); ++i) {
    write_links_until(trace.SortTime(MessageId(uint32_t(i))));
    if (c.send_time[i] == kNoTime) {
      out += '-';
    } else {
      out += FormatTimestamp(c.send_time[i]);
    }
    fmt::format_to(it, " {} ", MessageKindOp(c.kind[i]));
    AppendEscaped(out, trace.NodeName(c.sender[i]));
    out += ' ';
    AppendEscaped(out, trace.NodeName(c.receiver[i]));
    out += ' ';
    if (c.call_id[i].valid()) {
      AppendCallId(out, trace.strings().Get(c.call_id[i]));
    } else {
      out += '-';
    }
    if (c.recv_time[i] != kNoTime) fmt::format_to(it, " recv={}", FormatTimestamp(c.recv_time[i]));
    if (c.connect_time[i] != kNoTime) {
      fmt::format_to(it, " connect={}", FormatTimestamp(c.connect_time[i]));
    }
    if (c.accept_time[i] != kNoTime) {
      fmt::format_to(it, " accept={}", FormatTimestamp(c.accept_time[i]));
    }
    if (c.first_read_time[i] != kNoTime) {
      fmt::format_to(it, " first_read={}", FormatTimestamp(c.first_read_time[i]));
    }
    if (c.bytes[i] >= 0) fmt::format_to(it, " bytes={}", c.bytes[i]);
    if (c.truth_path[i].valid()) fmt::format_to(it, " path={}", c.truth_path[i].value());
    if (labels) fmt::format_to(it, " msg={}", i);
    if (c.truth_parent[i].valid()) fmt::format_to(it, " parent={}", c.truth_parent[i].value());
    if (c.sender_thread[i].valid()) fmt::format_to(it, " stid={}", c.sender_thread[i].value());
    if (c.receiver_thread[i].valid()) fmt::format_to(it, " rtid={}", c.receiver_thread[i].value());
    if (c.sender_endpoint[i].valid()) {
      out += " src=";
      AppendEscaped(out, trace.strings().Get(c.sender_endpoint[i]));
    }
    if (c.receiver_endpoint[i].valid()) {
      out += " dst=";
      AppendEscaped(out, trace.strings().Get(c.receiver_endpoint[i]));
    }
    for (; next_attribute < attributes.size() && attributes[next_attribute].message.value() == i;
         ++next_attribute) {
      out += ' ';
      AppendAttributeKey(out, trace.strings().Get(attributes[next_attribute].key));
      out += '=';
      AppendEscaped(out, trace.strings().Get(attributes[next_attribute].value));
    }
    out += '\n';
  }
  write_links_until(std::numeric_limits<TimeNs>::max());
  return out;
}

}  // namespace weft
