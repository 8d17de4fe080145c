// The query language's lexer and parser (docs/query.md has the grammar in EBNF). Keywords
// are case-insensitive (From, FROM, from); names are case-sensitive. A query is at most
// 1 MiB and nests at most 64 deep; beyond that is an error, never a crash.
#pragma once

#include <string_view>

#include "core/status.h"
#include "query/ast.h"

namespace weft::query {

// The program in `text`, or a Status from DiagnosticStatus naming `source`, line, column
// and what was expected.
Result<Program> ParseProgram(std::string_view text, std::string_view source = "query");

}  // namespace weft::query
