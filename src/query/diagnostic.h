// Errors in a query: where, what, and a hint (bpftrace's ast/diagnostic.h). Rendered as
// one line that names the position, then the line of the query and a caret under it:
//
//   query:2:11: unknown tracepoint 'Requst'; did you mean 'Request'?
//     Join q In Requst On q -> c
//               ^
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "query/ast.h"

namespace weft::query {

struct Diagnostic {
  SourceLocation where;
  std::string message;  // one line; a "did you mean" hint is part of it
};

// The diagnostic as an InvalidArgument Status whose message is the three lines above.
// `source` names the query's origin ("query", or the -f file's name).
Status DiagnosticStatus(const Diagnostic& diagnostic, std::string_view text,
                        std::string_view source = "query");

// The candidate closest to `name` by edit distance (case-insensitive), if it is close
// enough to be a plausible typo (at most a third of the name's length, and at least 1);
// empty if none is.
std::string NearestName(std::string_view name, std::span<const std::string> candidates);

// "unknown tracepoint 'Requst'" + "; did you mean 'Request'?" when there is a near name.
std::string WithSuggestion(std::string message, std::string_view name,
                           std::span<const std::string> candidates);

}  // namespace weft::query
