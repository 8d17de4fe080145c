// The text message trace (Project 5 §6.5, extended): one message per line,
//
//   timestamp op sender receiver [id] [key=value ...]
//
// op is CALL_SENT, RET_SENT or MSG_SENT; timestamp is seconds with a fraction or integer
// nanoseconds, or "-" when only the receive was observed (then recv= is required); id is
// the call id ("-" or absent: none). Known keys fill columns: recv= (receive time), bytes=,
// path= (ground-truth path id), msg= (a number naming this line), parent= (the msg= of
// the message that caused this one), stid= and rtid= (threads), src= and dst=
// (endpoints). Any other key is kept as an attribute. In values, '%', whitespace and
// control characters are written as %XX. '#' starts a comment line. docs/formats.md has
// the full description.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "trace/trace.h"

namespace weft {

// Parses a whole text trace. Errors name `source` and the line: "x.trace:12: unknown op
// 'CAL_SENT'". Lines may come in any time order; the trace is sorted.
Result<Trace> ParseTextTrace(std::string_view text, std::string_view source);

// Formats a trace as text. msg= labels (the MessageId) are written only when some message
// has a ground-truth parent, since parent= refers to them.
std::string FormatTextTrace(const Trace& trace);

}  // namespace weft
