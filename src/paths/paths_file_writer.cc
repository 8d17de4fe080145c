// Writing the .paths.json file (docs/paths.md): exact histograms, and a large file written
// in pieces on a second thread while the rest is formatted. paths_file.cc reads it.
#include <fmt/compile.h>
#include <fmt/format.h>

#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/file.h"
#include "core/piecewise_file_writer.h"
#include "paths/paths_file.h"

namespace weft {

namespace {

// The text being written. With `piece_done` set, each piece of about kPieceBytes goes to it
// at the next PieceBoundary, so a large file is written while the rest is formatted.
class TextOut {
 public:
  static constexpr size_t kPieceBytes = size_t(1) << 22;

  explicit TextOut(std::function<void(std::string)> piece_done = {})
      : piece_done_(std::move(piece_done)) {
    if (piece_done_) text_.reserve(kPieceBytes + kPieceBytes / 4);
  }

  void operator+=(std::string_view s) { text_ += s; }
  void operator+=(char c) { text_ += c; }
  template <typename... Args>
  void Format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(text_), format, std::forward<Args>(args)...);
  }
  // As Format("{}", value), without parsing a format string at run time.
  template <typename T>
  void Number(T value) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
    if constexpr (std::is_integral_v<T>) {
      fmt::format_int digits(value);
      text_.append(digits.data(), digits.size());
    } else {
      fmt::format_to(std::back_inserter(text_), FMT_COMPILE("{}"), value);
    }
  }
  void PieceBoundary() {
    if (!piece_done_ || text_.size() < kPieceBytes) return;
    piece_done_(std::move(text_));
    text_ = std::string();
    text_.reserve(kPieceBytes + kPieceBytes / 4);
  }
  // The text not handed to piece_done.
  std::string Take() && { return std::move(text_); }

 private:
  std::function<void(std::string)> piece_done_;
  std::string text_;
};

void AppendJsonString(TextOut& out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    // Valid UTF-8 sequences are copied; a stray byte >= 0x80 is written as the code point
    // of the same value (JSON text must be UTF-8), the one case where a name does not
    // round-trip byte for byte.
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t j = 1; valid && j < len; ++j)
      valid = (static_cast<unsigned char>(s[i + j]) >> 6) == 0x2;
    if (c >= 0x80 && !valid) {
      out.Format("\\u{:04x}", c);
      ++i;
    } else if (c >= 0x80) {
      out += s.substr(i, len);
      i += len;
    } else {
      if (c == '"')
        out += "\\\"";
      else if (c == '\\')
        out += "\\\\";
      else if (c < 0x20 || c == 0x7f)
        out.Format("\\u{:04x}", c);
      else
        out += char(c);
      ++i;
    }
  }
  out += '"';
}

template <typename T>
void AppendArray(TextOut& out, const std::vector<T>& values) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out.Number(values[i]);
    if (i % 65536 == 65535) out.PieceBoundary();
  }
  out += ']';
}

void AppendSide(TextOut& out, std::string_view name, const LatencyHistogram::Side& side) {
  if (side.counts.empty()) return;
  out += ",\"";
  out += name;
  out += "\":{\"first_bin\":";
  out.Number(side.first_bin);
  out += ",\"counts\":";
  AppendArray(out, side.counts);
  out += '}';
}

void AppendHistogram(TextOut& out, const LatencyHistogram& h) {
  // fmt writes doubles in their shortest form that reads back to the same value.
  out += "{\"zeros\":";
  out.Number(h.zeros());
  out += ",\"min\":";
  out.Number(h.min());
  out += ",\"max\":";
  out.Number(h.max());
  out += ",\"sum\":";
  out.Number(h.sum());
  out += ",\"sum_sq\":";
  out.Number(h.sum_of_squares());
  AppendSide(out, "positive", h.positive());
  AppendSide(out, "negative", h.negative());
  out += '}';
}

void AppendHeader(TextOut& out, const PathSet& set) {
  out.Format("{{\"format\":\"{}\",\"version\":{},\n\"algorithm\":", kPathsFormatName,
             kPathsFormatVersion);
  AppendJsonString(out, set.algorithm);
  out.Format(",\"trace_messages\":{},\"trace_fingerprint\":\"{:016x}\",\n\"nodes\":[",
             set.trace_messages, set.trace_fingerprint);
  for (size_t i = 0; i < set.nodes.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, set.nodes.Get(NodeId(uint32_t(i))));
  }
  out += "]";
  if (set.clients_aggregated) out += ",\"clients_aggregated\":true";
  if (set.shared_messages) out += ",\"shared_messages\":true";
}

void AppendCounters(TextOut& out, const CounterList& counters) {
  out += ",\n\"counters\":[";
  for (size_t i = 0; i < counters.size(); ++i) {
    if (i) out += ',';
    out += '[';
    AppendJsonString(out, counters[i].first);
    out.Format(",{}]", counters[i].second);
  }
  out += "]";
}

void AppendClockOffsets(TextOut& out, const std::vector<ClockOffset>& offsets) {
  if (offsets.empty()) return;
  // [node a, node b, b's clock minus a's in ns, messages] per pair (docs/paths.md).
  out += ",\n\"clock_offsets\":[";
  for (size_t i = 0; i < offsets.size(); ++i) {
    const ClockOffset& o = offsets[i];
    out += i ? ",[" : "[";
    AppendJsonString(out, o.a);
    out += ',';
    AppendJsonString(out, o.b);
    out.Format(",{},{}]", o.offset, o.messages);
  }
  out += "]";
}

void AppendCausalGraph(TextOut& out, const CausalGraph& graph) {
  if (graph.empty() && graph.quantum == 0) return;
  // The convolution algorithm's causal graph (docs/paths.md): [node, parent, messages,
  // [[delay, count], ...]] per vertex, parents first.
  out.Format(",\n\"causal_graph\":{{\"quantum\":{},\"vertices\":[", graph.quantum);
  for (size_t i = 0; i < graph.vertices.size(); ++i) {
    const CausalVertex& v = graph.vertices[i];
    out.Format("{}\n[{},{},{},[", i ? "," : "", v.node.value(), v.parent, v.messages);
    for (size_t d = 0; d < v.delays.size(); ++d) {
      out.Format("{}[{},{}]", d ? "," : "", v.delays[d].delay, v.delays[d].count);
    }
    out += "]]";
  }
  out += "]}";
}

void AppendElement(TextOut& out, const PatternElement& e, bool first) {
  out += first ? "\n  {\"kind\":\"" : ",\n  {\"kind\":\"";
  out += MessageKindOp(e.kind);
  out += "\",\"sender\":";
  out.Number(e.sender.value());
  out += ",\"receiver\":";
  out.Number(e.receiver.value());
  out += ",\"parent\":";
  out.Number(e.parent);
  out += ",\"delay\":";
  AppendHistogram(out, e.delay);
  if (!e.network.empty()) {
    out += ",\"network\":";
    AppendHistogram(out, e.network);
  }
  if (e.round_trip) out += ",\"round_trip\":true";
  if (!e.attributes.empty()) {
    out += ",\"attributes\":[";
    for (size_t j = 0; j < e.attributes.size(); ++j) {
      out += j ? ",{\"key\":" : "{\"key\":";
      AppendJsonString(out, e.attributes[j].key);
      out += ",\"value\":";
      AppendJsonString(out, e.attributes[j].value);
      out.Format(",\"count\":{}}}", e.attributes[j].count);
    }
    out += ']';
  }
  out += '}';
}

void AppendPatterns(TextOut& out, const std::vector<PathPattern>& patterns) {
  out += ",\n\"patterns\":[";
  for (size_t i = 0; i < patterns.size(); ++i) {
    const PathPattern& p = patterns[i];
    out += i ? ",\n{\"key\":" : "\n{\"key\":";
    AppendJsonString(out, p.key);
    out += ",\"count\":";
    out.Number(p.count);
    out += ",\"expected_count\":";
    out.Number(p.expected_count);
    out += ",\"max_probability\":";
    out.Number(p.max_probability);
    out += ",\"latency\":";
    AppendHistogram(out, p.latency);
    out += ",\"elements\":[";
    for (size_t k = 0; k < p.elements.size(); ++k) AppendElement(out, p.elements[k], k == 0);
    out += "]}";
    out.PieceBoundary();
  }
  out += "]";
}

void AppendInstances(TextOut& out, const PathSet& set) {
  out += ",\n\"instances\":{\"begin\":";
  AppendArray(out, set.instance_begin);
  out += ",\n\"messages\":[";
  for (size_t i = 0; i < set.messages.size(); ++i) {
    if (i) out += ',';
    out.Number(set.messages[i].value());
    if (i % 65536 == 65535) out.PieceBoundary();
  }
  out += "],\n\"parent\":";
  AppendArray(out, set.parent);
  out += ",\n\"pattern\":";
  AppendArray(out, set.pattern);
  out += ",\n\"probability\":";
  AppendArray(out, set.probability);
  out += "}";
}

// The file up to its instances, and the instances to its end: AppendPathsFile in two.
void AppendAllButInstances(TextOut& out, const PathsFile& file) {
  const PathSet& set = file.paths;
  AppendHeader(out, set);
  AppendCounters(out, file.counters);
  AppendClockOffsets(out, set.clock_offsets);
  AppendCausalGraph(out, file.graph);
  AppendPatterns(out, set.patterns);
}
void AppendInstancesToEnd(TextOut& out, const PathsFile& file) {
  AppendInstances(out, file.paths);
  out += "}\n";
}

void AppendPathsFile(TextOut& out, const PathsFile& file) {
  AppendAllButInstances(out, file);
  AppendInstancesToEnd(out, file);
}

}  // namespace

std::string FormatPaths(const PathsFile& file) {
  TextOut out;
  AppendPathsFile(out, file);
  return std::move(out).Take();
}

Status WritePaths(const PathsFile& file, const std::string& path) {
  // Written in pieces while the rest is formatted: a paths file can be 100+ MB (docs/paths.md).
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<PiecewiseFileWriter> writer,
                        PiecewiseFileWriter::Open(path));
  // The instances (a third of the shop's 57 MB paths file) are formatted on another thread
  // while the patterns are, and held whole until the patterns are written.
  std::future<std::string> instances = std::async(std::launch::async, [&file] {
    TextOut text;
    AppendInstancesToEnd(text, file);
    return std::move(text).Take();
  });
  TextOut out([&writer](std::string piece) { writer->Append(std::move(piece)); });
  AppendAllButInstances(out, file);
  writer->Append(std::move(out).Take());
  writer->Append(instances.get());
  return writer->Finish();
}

}  // namespace weft
