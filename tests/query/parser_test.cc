#include "query/parser.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "query/lexer.h"

namespace weft::query {
namespace {

// An expression as an S-expression: "(== st.host DNop.host)", "(SUM incr.delta)".
std::string Sexp(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      switch (e.literal_type) {
        case LiteralType::kInt:
          return fmt::format("{}", e.int_value);
        case LiteralType::kFloat:
          return fmt::format("{}f", e.float_value);
        case LiteralType::kString:
          return fmt::format("\"{}\"", e.string_value);
        case LiteralType::kBool:
          return e.int_value ? "true" : "false";
      }
      break;
    case ExprKind::kVariable:
      return e.field.empty() ? e.alias : fmt::format("{}.{}", e.alias, e.field);
    case ExprKind::kUnary:
      return fmt::format("({} {})", e.unary == UnaryOp::kNot ? "not" : "neg", Sexp(*e.args[0]));
    case ExprKind::kBinary: {
      static const char* kOps[] = {
          "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or"};
      return fmt::format("({} {} {})", kOps[int(e.binary)], Sexp(*e.args[0]), Sexp(*e.args[1]));
    }
    case ExprKind::kStartsWith:
      return fmt::format("(StartsWith {} {})", Sexp(*e.args[0]), Sexp(*e.args[1]));
    case ExprKind::kAggregate: {
      static const char* kOps[] = {"COUNT", "SUM", "MIN", "MAX", "AVERAGE"};
      if (e.args.empty()) return kOps[int(e.aggregate)];
      return fmt::format("({} {})", kOps[int(e.aggregate)], Sexp(*e.args[0]));
    }
  }
  return "?";
}

Program Parse(std::string_view text) {
  Result<Program> program = ParseProgram(text);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return Program();
  return std::move(program).value();
}

// The single, unnamed query of `text`.
Query ParseQuery(std::string_view text) {
  Program program = Parse(text);
  EXPECT_EQ(program.statements.size(), 1u);
  if (program.statements.size() != 1) return Query();
  EXPECT_EQ(program.statements[0].name, "");
  return std::move(program.statements[0].query);
}

// The Where condition of "From x In A Where <condition>".
std::string Condition(std::string_view condition) {
  Query q = ParseQuery("From x In A Where " + std::string(condition));
  return q.where_clause ? Sexp(*q.where_clause) : "<none>";
}

std::string Error(std::string_view text) {
  Result<Program> program = ParseProgram(text);
  EXPECT_FALSE(program.ok()) << text;
  if (program.ok()) return "";
  EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument);
  return program.status().message();
}

std::vector<std::string> Sexps(const std::vector<ExprPtr>& exprs) {
  std::vector<std::string> out;
  for (const ExprPtr& e : exprs) out.push_back(Sexp(*e));
  return out;
}

std::vector<std::string> SelectSexps(const Query& q) {
  std::vector<std::string> out;
  for (const SelectItem& item : q.select) out.push_back(Sexp(*item.expr));
  return out;
}

std::vector<std::string> SelectNames(const Query& q) {
  std::vector<std::string> out;
  for (const SelectItem& item : q.select) out.push_back(item.name);
  return out;
}

using Names = std::vector<std::string>;

void ExpectAt(SourceLocation where, uint32_t line, uint32_t column) {
  EXPECT_EQ(where.line, line);
  EXPECT_EQ(where.column, column);
}

// ---- tokens

TEST(LexerTest, TokensKeepTheirPositionAndSpelling) {
  std::vector<Token> tokens;
  ASSERT_FALSE(Tokenize("from r\r\n  IN A.b -- note\n# more\n\tWhere r.x>=-2.5e1--1\n", &tokens));
  struct Expected {
    TokenKind kind;
    std::string_view text;
    uint32_t line, column, offset;
  };
  std::vector<Expected> expected = {
      {TokenKind::kKeyword, "from", 1, 1, 0},   {TokenKind::kIdentifier, "r", 1, 6, 5},
      {TokenKind::kKeyword, "IN", 2, 3, 10},    {TokenKind::kIdentifier, "A", 2, 6, 13},
      {TokenKind::kDot, ".", 2, 7, 14},         {TokenKind::kIdentifier, "b", 2, 8, 15},
      {TokenKind::kKeyword, "Where", 4, 2, 33}, {TokenKind::kIdentifier, "r", 4, 8, 39},
      {TokenKind::kDot, ".", 4, 9, 40},         {TokenKind::kIdentifier, "x", 4, 10, 41},
      {TokenKind::kGe, ">=", 4, 11, 42},        {TokenKind::kMinus, "-", 4, 13, 44},
      {TokenKind::kFloat, "2.5e1", 4, 14, 45},  {TokenKind::kEnd, "", 5, 1, 54},
  };
  ASSERT_EQ(tokens.size(), expected.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(tokens[i].kind, expected[i].kind);
    EXPECT_EQ(tokens[i].text, expected[i].text);
    EXPECT_EQ(tokens[i].where.line, expected[i].line);
    EXPECT_EQ(tokens[i].where.column, expected[i].column);
    EXPECT_EQ(tokens[i].where.offset, expected[i].offset);
  }
  EXPECT_EQ(tokens[0].keyword, Keyword::kFrom);
  EXPECT_EQ(tokens[12].float_value, 25.0);
  EXPECT_EQ(KeywordOf("mostRecentN"), Keyword::kMostRecentN);
  EXPECT_EQ(KeywordOf("Request"), Keyword::kNone);
  EXPECT_EQ(UnescapeString(R"("a\"b\\c\n")"), "a\"b\\c\n");
}

// ---- the paper's queries (Pivot Tracing §2 and §6), verbatim

TEST(ParserTest, Q1SumGroupedByHost) {
  Query q = ParseQuery(
      "From incr In DataNodeMetrics.incrBytesRead\n"
      "GroupBy incr.host\n"
      "Select incr.host, SUM(incr.delta)");
  EXPECT_EQ(q.from_alias, "incr");
  EXPECT_EQ(q.from.names, Names{"DataNodeMetrics.incrBytesRead"});
  EXPECT_EQ(q.from.subquery, nullptr);
  EXPECT_TRUE(q.joins.empty());
  EXPECT_EQ(q.where_clause, nullptr);
  EXPECT_EQ(Sexps(q.group_by), Names{"incr.host"});
  EXPECT_EQ(SelectSexps(q), (Names{"incr.host", "(SUM incr.delta)"}));
  EXPECT_EQ(SelectNames(q), (Names{"host", "SUM(incr.delta)"}));
  ExpectAt(q.where, 1, 1);
  ExpectAt(q.from_alias_location, 1, 6);
  ExpectAt(q.from.name_locations[0], 1, 14);
  ExpectAt(q.group_by[0]->where, 2, 9);
  ExpectAt(q.select[1].expr->where, 3, 19);
  ExpectAt(q.select[1].expr->args[0]->where, 3, 23);
}

TEST(ParserTest, Q2JoinsTheFirstClientProtocol) {
  Query q = ParseQuery(
      "From incr In DataNodeMetrics.incrBytesRead\n"
      "    Join cl In First(ClientProtocols) On cl -> incr\n"
      "    GroupBy cl.procName\n"
      "    Select cl.procName, SUM(incr.delta)");
  EXPECT_EQ(q.from_alias, "incr");
  ASSERT_EQ(q.joins.size(), 1u);
  const Join& j = q.joins[0];
  EXPECT_EQ(j.alias, "cl");
  EXPECT_EQ(j.filter, TemporalFilter::kFirst);
  EXPECT_EQ(j.n, 0u);
  EXPECT_EQ(j.source.names, Names{"ClientProtocols"});
  EXPECT_EQ(j.before, "cl");
  EXPECT_EQ(j.after, "incr");
  ExpectAt(j.where, 2, 5);
  ExpectAt(j.alias_location, 2, 10);
  ExpectAt(j.source.where, 2, 22);
  ExpectAt(j.before_location, 2, 42);
  ExpectAt(j.after_location, 2, 48);
  EXPECT_EQ(Sexps(q.group_by), Names{"cl.procName"});
  EXPECT_EQ(SelectSexps(q), (Names{"cl.procName", "(SUM incr.delta)"}));
  EXPECT_EQ(SelectNames(q), (Names{"procName", "SUM(incr.delta)"}));
}

TEST(ParserTest, Q3CountsPerHostOnOneLine) {
  Query q =
      ParseQuery("From dnop In DN.DataTransferProtocol GroupBy dnop.host Select dnop.host, COUNT");
  EXPECT_EQ(q.from_alias, "dnop");
  EXPECT_EQ(q.from.names, Names{"DN.DataTransferProtocol"});
  EXPECT_EQ(Sexps(q.group_by), Names{"dnop.host"});
  EXPECT_EQ(SelectSexps(q), (Names{"dnop.host", "COUNT"}));
  EXPECT_EQ(SelectNames(q), (Names{"host", "COUNT"}));
  EXPECT_TRUE(q.select[1].expr->args.empty());
}

TEST(ParserTest, Q4AndQ5JoinTheStressTest) {
  for (std::string field : {"src", "replicas"}) {
    Query q =
        ParseQuery(fmt::format("From getloc In NN.GetBlockLocations\n"
                               "    Join st In StressTest.DoNextOp On st -> getloc\n"
                               "    GroupBy st.host, getloc.{0}\n"
                               "    Select st.host, getloc.{0}, COUNT",
                               field));
    EXPECT_EQ(q.from_alias, "getloc");
    EXPECT_EQ(q.from.names, Names{"NN.GetBlockLocations"});
    ASSERT_EQ(q.joins.size(), 1u);
    EXPECT_EQ(q.joins[0].alias, "st");
    EXPECT_EQ(q.joins[0].filter, TemporalFilter::kAll);
    EXPECT_EQ(q.joins[0].source.names, Names{"StressTest.DoNextOp"});
    EXPECT_EQ(q.joins[0].before, "st");
    EXPECT_EQ(q.joins[0].after, "getloc");
    EXPECT_EQ(Sexps(q.group_by), (Names{"st.host", "getloc." + field}));
    EXPECT_EQ(SelectSexps(q), (Names{"st.host", "getloc." + field, "COUNT"}));
    EXPECT_EQ(SelectNames(q), (Names{"host", field, "COUNT"}));
  }
}

TEST(ParserTest, Q6GroupsByClientAndDataNode) {
  Query q = ParseQuery(
      "From DNop In DN.DataTransferProtocol\n"
      "Join st In StressTest.DoNextOp On st -> DNop\n"
      "GroupBy st.host, DNop.host\n"
      "Select st.host, DNop.host, COUNT");
  EXPECT_EQ(q.from_alias, "DNop");
  ASSERT_EQ(q.joins.size(), 1u);
  EXPECT_EQ(q.joins[0].before, "st");
  EXPECT_EQ(q.joins[0].after, "DNop");
  EXPECT_EQ(Sexps(q.group_by), (Names{"st.host", "DNop.host"}));
  EXPECT_EQ(SelectSexps(q), (Names{"st.host", "DNop.host", "COUNT"}));
  // Two columns named "host": the compiler, not the parser, decides what that means.
  EXPECT_EQ(SelectNames(q), (Names{"host", "host", "COUNT"}));
}

TEST(ParserTest, Q7ChainsJoinsAndFilters) {
  Query q = ParseQuery(
      "From DNop In DN.DataTransferProtocol\n"
      "Join getloc In NN.GetBlockLocations\n"
      "On getloc -> DNop\n"
      "Join st In StressTest.DoNextOp On st -> getloc\n"
      "Where st.host != DNop.host\n"
      "GroupBy DNop.host, getloc.replicas\n"
      "Select DNop.host, getloc.replicas, COUNT");
  EXPECT_EQ(q.from_alias, "DNop");
  EXPECT_EQ(q.from.names, Names{"DN.DataTransferProtocol"});
  ASSERT_EQ(q.joins.size(), 2u);
  EXPECT_EQ(q.joins[0].alias, "getloc");
  EXPECT_EQ(q.joins[0].source.names, Names{"NN.GetBlockLocations"});
  EXPECT_EQ(q.joins[0].before, "getloc");
  EXPECT_EQ(q.joins[0].after, "DNop");
  ExpectAt(q.joins[0].before_location, 3, 4);
  ExpectAt(q.joins[0].after_location, 3, 14);
  EXPECT_EQ(q.joins[1].alias, "st");
  EXPECT_EQ(q.joins[1].source.names, Names{"StressTest.DoNextOp"});
  EXPECT_EQ(q.joins[1].before, "st");
  EXPECT_EQ(q.joins[1].after, "getloc");
  ASSERT_NE(q.where_clause, nullptr);
  EXPECT_EQ(Sexp(*q.where_clause), "(!= st.host DNop.host)");
  EXPECT_EQ(q.where_clause->text, "st.host != DNop.host");
  ExpectAt(q.where_clause->where, 5, 7);
  EXPECT_EQ(Sexps(q.group_by), (Names{"DNop.host", "getloc.replicas"}));
  EXPECT_EQ(SelectSexps(q), (Names{"DNop.host", "getloc.replicas", "COUNT"}));
  EXPECT_EQ(SelectNames(q), (Names{"host", "replicas", "COUNT"}));
}

TEST(ParserTest, LatencyBetweenRequestAndResponse) {
  Query q = ParseQuery(
      "From response In SendResponse Join request In MostRecent(ReceiveRequest) On request -> "
      "response Select response.timestamp - request.timestamp");
  EXPECT_EQ(q.from_alias, "response");
  EXPECT_EQ(q.from.names, Names{"SendResponse"});
  ASSERT_EQ(q.joins.size(), 1u);
  EXPECT_EQ(q.joins[0].alias, "request");
  EXPECT_EQ(q.joins[0].filter, TemporalFilter::kMostRecent);
  EXPECT_EQ(q.joins[0].source.names, Names{"ReceiveRequest"});
  EXPECT_EQ(q.joins[0].before, "request");
  EXPECT_EQ(q.joins[0].after, "response");
  EXPECT_EQ(SelectSexps(q), Names{"(- response.timestamp request.timestamp)"});
  EXPECT_EQ(SelectNames(q), Names{"response.timestamp - request.timestamp"});
}

// ---- sources

TEST(ParserTest, FromTakesAUnionOfTracepoints) {
  Query q = ParseQuery("From e In DataRPCs, ControlRPCs , Other.rpc Select e.Size");
  EXPECT_EQ(q.from.names, (Names{"DataRPCs", "ControlRPCs", "Other.rpc"}));
  ASSERT_EQ(q.from.name_locations.size(), 3u);
  ExpectAt(q.from.name_locations[0], 1, 11);
  ExpectAt(q.from.name_locations[1], 1, 21);
  ExpectAt(q.from.name_locations[2], 1, 35);
}

TEST(ParserTest, TemporalFilters) {
  Query q = ParseQuery(
      "From c In Call\n"
      "Join a In First(A) On a -> c\n"
      "Join b In FirstN(B, 3) On b -> c\n"
      "Join d In MostRecent(D.x) On d -> c\n"
      "Join e In mostrecentn(E, 10) On e -> c\n"
      "Join f In F, G On f -> c");
  ASSERT_EQ(q.joins.size(), 5u);
  EXPECT_EQ(q.joins[0].filter, TemporalFilter::kFirst);
  EXPECT_EQ(q.joins[1].filter, TemporalFilter::kFirstN);
  EXPECT_EQ(q.joins[1].n, 3u);
  EXPECT_EQ(q.joins[1].source.names, Names{"B"});
  EXPECT_EQ(q.joins[2].filter, TemporalFilter::kMostRecent);
  EXPECT_EQ(q.joins[2].source.names, Names{"D.x"});
  EXPECT_EQ(q.joins[3].filter, TemporalFilter::kMostRecentN);
  EXPECT_EQ(q.joins[3].n, 10u);
  EXPECT_EQ(q.joins[4].filter, TemporalFilter::kAll);
  EXPECT_EQ(q.joins[4].source.names, (Names{"F", "G"}));
}

TEST(ParserTest, Subqueries) {
  Query q = ParseQuery(
      "From c In Call\n"
      "Join s In (From r In Reply Where r.latency > 30ms Select r.latency) On s -> c\n"
      "Join f In First((From q In Request Join u In User On u -> q Select q.url)) On f -> c\n"
      "Join m In MostRecentN((From x In X), 2) On m -> c\n"
      "Select s, f.url");
  ASSERT_EQ(q.joins.size(), 3u);
  const Join& s = q.joins[0];
  EXPECT_EQ(s.filter, TemporalFilter::kAll);
  EXPECT_TRUE(s.source.names.empty());
  ASSERT_NE(s.source.subquery, nullptr);
  ExpectAt(s.source.where, 2, 11);
  ExpectAt(s.source.subquery->where, 2, 12);
  EXPECT_EQ(s.source.subquery->from_alias, "r");
  EXPECT_EQ(s.source.subquery->from.names, Names{"Reply"});
  EXPECT_EQ(Sexp(*s.source.subquery->where_clause), "(> r.latency 30000000)");
  EXPECT_EQ(SelectSexps(*s.source.subquery), Names{"r.latency"});

  const Join& f = q.joins[1];
  EXPECT_EQ(f.filter, TemporalFilter::kFirst);
  ASSERT_NE(f.source.subquery, nullptr);
  EXPECT_EQ(f.source.subquery->from_alias, "q");
  ASSERT_EQ(f.source.subquery->joins.size(), 1u);
  EXPECT_EQ(f.source.subquery->joins[0].before, "u");
  EXPECT_EQ(f.before, "f");

  const Join& m = q.joins[2];
  EXPECT_EQ(m.filter, TemporalFilter::kMostRecentN);
  EXPECT_EQ(m.n, 2u);
  ASSERT_NE(m.source.subquery, nullptr);
  EXPECT_TRUE(m.source.subquery->select.empty());

  EXPECT_EQ(SelectSexps(q), (Names{"s", "f.url"}));
  EXPECT_EQ(SelectNames(q), (Names{"s", "url"}));
}

TEST(ParserTest, FromASubquery) {
  Query q = ParseQuery("From x In (From y In Y Where y.a > 1) Select x.a");
  ASSERT_NE(q.from.subquery, nullptr);
  EXPECT_EQ(q.from.subquery->from_alias, "y");
  EXPECT_TRUE(q.from.names.empty());
}

// ---- named queries

TEST(ParserTest, NamedQueries) {
  Program p = Parse(
      "Slow = From r In Reply Where r.latency > 30ms Select r.latency;\n"
      "Db = From c In Call Where c.peer == \"db\";\n"
      "From q In Request\n"
      "Join s In Slow On s -> q\n"
      "Join d In FirstN(Db, 2) On d -> s\n"
      "Select q.url, COUNT;\n");
  ASSERT_EQ(p.statements.size(), 3u);
  EXPECT_EQ(p.statements[0].name, "Slow");
  ExpectAt(p.statements[0].where, 1, 1);
  ExpectAt(p.statements[0].query.where, 1, 8);
  EXPECT_EQ(p.statements[1].name, "Db");
  ExpectAt(p.statements[1].where, 2, 1);
  EXPECT_EQ(Sexp(*p.statements[1].query.where_clause), "(== c.peer \"db\")");
  EXPECT_EQ(p.statements[2].name, "");
  ExpectAt(p.statements[2].where, 3, 1);
  const Query& q = p.statements[2].query;
  ASSERT_EQ(q.joins.size(), 2u);
  EXPECT_EQ(q.joins[0].source.names, Names{"Slow"});
  EXPECT_EQ(q.joins[1].source.names, Names{"Db"});
  EXPECT_EQ(q.joins[1].n, 2u);
  EXPECT_EQ(q.joins[1].after, "s");
}

TEST(ParserTest, TrailingSemicolonAndComments) {
  Program p = Parse(
      "# bytes per client\n"
      "From incr In DataNodeMetrics.incrBytesRead  -- the disk\n"
      "Select SUM(incr.delta) As bytes; -- done\n");
  ASSERT_EQ(p.statements.size(), 1u);
  EXPECT_EQ(SelectNames(p.statements[0].query), Names{"bytes"});
}

// ---- keywords, literals, precedence

TEST(ParserTest, KeywordsIgnoreCase) {
  Query q = ParseQuery(
      "from x in A join y in first(B) on y -> x where NOT x.a AND x.b OR x.c "
      "group by x.h select x.h, count(), avg(x.l) as mean, Average(x.l), sum(x.l) AS total");
  EXPECT_EQ(q.joins[0].filter, TemporalFilter::kFirst);
  EXPECT_EQ(Sexp(*q.where_clause), "(or (and (not x.a) x.b) x.c)");
  EXPECT_EQ(Sexps(q.group_by), Names{"x.h"});
  EXPECT_EQ(SelectSexps(q), (Names{"x.h", "COUNT", "(AVERAGE x.l)", "(AVERAGE x.l)", "(SUM x.l)"}));
  EXPECT_EQ(SelectNames(q), (Names{"h", "count()", "mean", "Average(x.l)", "total"}));
}

TEST(ParserTest, Literals) {
  EXPECT_EQ(Condition("x.a == 42"), "(== x.a 42)");
  EXPECT_EQ(Condition("x.a == 2.5"), "(== x.a 2.5f)");
  EXPECT_EQ(Condition("x.a == 1e3"), "(== x.a 1000f)");
  EXPECT_EQ(Condition("x.a == -7"), "(== x.a -7)");
  EXPECT_EQ(Condition("x.a == -9223372036854775808"), "(== x.a -9223372036854775808)");
  EXPECT_EQ(Condition("x.a == 9223372036854775807"), "(== x.a 9223372036854775807)");
  EXPECT_EQ(Condition("x.s == \"GET\""), "(== x.s \"GET\")");
  EXPECT_EQ(Condition("x.ok == true or x.ok == FALSE"), "(or (== x.ok true) (== x.ok false))");
  Query q = ParseQuery(R"(From x In A Where x.s == "say \"hi\" \\ \n\tok")");
  ASSERT_NE(q.where_clause, nullptr);
  const Expr& s = *q.where_clause->args[1];
  EXPECT_EQ(s.literal_type, LiteralType::kString);
  EXPECT_EQ(s.string_value, "say \"hi\" \\ \n\tok");
  EXPECT_EQ(s.text, R"("say \"hi\" \\ \n\tok")");
  Query with_bool = ParseQuery("From x In A Where true");
  const Expr& b = *with_bool.where_clause;
  EXPECT_EQ(b.literal_type, LiteralType::kBool);
  EXPECT_EQ(b.int_value, 1);
}

TEST(ParserTest, DurationsAreNanoseconds) {
  EXPECT_EQ(Condition("x.l > 10ns"), "(> x.l 10)");
  EXPECT_EQ(Condition("x.l > 500us"), "(> x.l 500000)");
  EXPECT_EQ(Condition("x.l > 30ms"), "(> x.l 30000000)");
  EXPECT_EQ(Condition("x.l > 2s"), "(> x.l 2000000000)");
  EXPECT_EQ(Condition("x.l > 1m"), "(> x.l 60000000000)");
  EXPECT_EQ(Condition("x.l > 1h"), "(> x.l 3600000000000)");
  EXPECT_EQ(Condition("x.l > 1.5s"), "(> x.l 1500000000)");
  EXPECT_EQ(Condition("x.l > 0.25ms"), "(> x.l 250000)");
  EXPECT_EQ(Condition("x.l > -30ms"), "(> x.l -30000000)");
  Query with_duration = ParseQuery("From x In A Where 30ms");
  const Expr& d = *with_duration.where_clause;
  EXPECT_EQ(d.literal_type, LiteralType::kInt);
  EXPECT_EQ(d.text, "30ms");
}

TEST(ParserTest, Precedence) {
  EXPECT_EQ(Condition("x.a or x.b and x.c"), "(or x.a (and x.b x.c))");
  EXPECT_EQ(Condition("x.a || x.b && !x.c"), "(or x.a (and x.b (not x.c)))");
  EXPECT_EQ(Condition("not x.a == 1"), "(not (== x.a 1))");
  EXPECT_EQ(Condition("x.a + 1 < x.b * 2"), "(< (+ x.a 1) (* x.b 2))");
  EXPECT_EQ(Condition("x.a - x.b - x.c"), "(- (- x.a x.b) x.c)");
  EXPECT_EQ(Condition("x.a / x.b % x.c * 2"), "(* (% (/ x.a x.b) x.c) 2)");
  EXPECT_EQ(Condition("x.a + x.b * x.c"), "(+ x.a (* x.b x.c))");
  EXPECT_EQ(Condition("(x.a + x.b) * x.c"), "(* (+ x.a x.b) x.c)");
  EXPECT_EQ(Condition("-x.a * 2"), "(* (neg x.a) 2)");
  EXPECT_EQ(Condition("- -x.a"), "(neg (neg x.a))");
  EXPECT_EQ(Condition("x.a - -1"), "(- x.a -1)");
  EXPECT_EQ(Condition("not not x.a"), "(not (not x.a))");
  EXPECT_EQ(Condition("x.a != 1 and x.b <= 2 or x.c >= 3 and x.d > 4"),
            "(or (and (!= x.a 1) (<= x.b 2)) (and (>= x.c 3) (> x.d 4)))");
  EXPECT_EQ(Condition("StartsWith(x.url, \"/api\") and x.n < 3"),
            "(and (StartsWith x.url \"/api\") (< x.n 3))");
  EXPECT_EQ(Condition("x.http.url == \"/\""), "(== x.http.url \"/\")");
}

TEST(ParserTest, TextIsNormalised) {
  Query q = ParseQuery(
      "From r In Reply Where ( r.latency+1 )*2>3  AND   !r.ok\n"
      "Select SUM( r.latency ) , r.latency/1000 ,-r.a, StartsWith(r.u,\"/\"), r");
  EXPECT_EQ(q.where_clause->text, "(r.latency + 1) * 2 > 3 AND !r.ok");
  ExpectAt(q.where_clause->where, 1, 23);
  ExpectAt(q.where_clause->args[0]->where, 1, 23);                    // (r.latency+1) > 3
  ExpectAt(q.where_clause->args[0]->args[0]->where, 1, 23);           // (r.latency+1) * 2
  ExpectAt(q.where_clause->args[0]->args[0]->args[0]->where, 1, 25);  // r.latency + 1
  EXPECT_EQ(SelectNames(q),
            (Names{"SUM(r.latency)", "r.latency / 1000", "-r.a", "StartsWith(r.u, \"/\")", "r"}));
  EXPECT_EQ(SelectNames(ParseQuery("From x In A Select - -x.a, - -1, -(-1), not !x.b")),
            (Names{"- -x.a", "- -1", "-(-1)", "not !x.b"}));
  EXPECT_EQ(q.select[4].expr->alias, "r");
  EXPECT_EQ(q.select[4].expr->field, "");
}

TEST(ParserTest, FieldsMayBeKeywords) {
  Query q = ParseQuery("From x In A.In Select x.count, x.first As from");
  EXPECT_EQ(q.from.names, Names{"A.In"});
  EXPECT_EQ(SelectSexps(q), (Names{"x.count", "x.first"}));
  EXPECT_EQ(SelectNames(q), (Names{"count", "from"}));
}

// ---- limits

TEST(ParserTest, NestingIsBounded) {
  std::string ok = "From x In A Where " + std::string(63, '(') + "x.a" + std::string(63, ')');
  EXPECT_TRUE(ParseProgram(ok).ok());
  std::string deep = "From x In A Where " + std::string(65, '(') + "x.a" + std::string(65, ')');
  EXPECT_EQ(Error(deep),
            "query:1:83: nesting deeper than 64 levels (parentheses, subqueries and unary "
            "operators)\n  " +
                deep + "\n  " + std::string(82, ' ') + "^");
  std::string nots = "From x In A Where ";
  for (int i = 0; i < 100000; ++i) nots += "! ";
  EXPECT_NE(Error(nots).find("nesting deeper than 64 levels"), std::string::npos);
  std::string subqueries = "From x In A";
  for (int i = 0; i < 100; ++i) subqueries += " Join y In (From x In A";
  // The 65th '(' is in the 65th join: 11 + 64 * 23 bytes in, and 11 more.
  EXPECT_NE(Error(subqueries).find("query:1:1495: nesting deeper than 64"), std::string::npos);
}

TEST(ParserTest, ExpressionHeightIsBounded) {
  std::string sum = "From x In A Where x.a";
  for (int i = 0; i < 255; ++i) sum += " + 1";
  EXPECT_TRUE(ParseProgram(sum).ok());
  sum += " + 1";
  EXPECT_NE(Error(sum).find("query:1:1043: expression nests deeper than 256 operators"),
            std::string::npos);
}

TEST(ParserTest, TextIsAtMostOneMiB) {
  std::string text = "From x In A Where x.a == \"" + std::string((1 << 20) - 27, 'a') + "\"";
  ASSERT_EQ(text.size(), size_t{1} << 20);
  EXPECT_TRUE(ParseProgram(text).ok());
  text += " ";
  std::string error = Error(text);
  EXPECT_EQ(error.substr(0, error.find('\n')),
            "query:1:1: the query is 1048577 bytes; at most 1048576 (1 MiB) are allowed");
}

// ---- bad queries: the exact diagnostic

struct BadQuery {
  std::string text;
  std::string error;
};

class BadQueryTest : public testing::TestWithParam<BadQuery> {};

TEST_P(BadQueryTest, NamesLineColumnAndWhatWasExpected) {
  EXPECT_EQ(Error(GetParam().text), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Diagnostics, BadQueryTest,
    testing::Values(
        BadQuery{"From x Requst",
                 "query:1:8: expected 'In' after 'From x', found 'Requst'\n"
                 "  From x Requst\n"
                 "         ^"},
        BadQuery{"Frm x In A",
                 "query:1:1: expected 'From' to start a query, found 'Frm'; did you mean "
                 "'From'?\n"
                 "  Frm x In A\n"
                 "  ^"},
        BadQuery{"From x In A Selct x.y",
                 "query:1:13: expected 'Join', 'Where', 'GroupBy', 'Select' or ';' after the "
                 "From clause, found 'Selct'; did you mean 'Select'?\n"
                 "  From x In A Selct x.y\n"
                 "              ^"},
        BadQuery{"From x In A\nJoin y In First(B On y -> x",
                 "query:2:19: expected ')' after 'First(B', found 'On'\n"
                 "  Join y In First(B On y -> x\n"
                 "                    ^"},
        BadQuery{"From x In A\n\tWhere x.a = 3",
                 "query:2:12: expected an operator, 'GroupBy', 'Select' or ';' after the Where "
                 "condition, found '='; did you mean '=='?\n"
                 "  \tWhere x.a = 3\n"
                 "  \t          ^"},
        BadQuery{"From x In A Where SUM(x.a) > 3",
                 "query:1:19: aggregate 'SUM' is only allowed in Select, not in Where\n"
                 "  From x In A Where SUM(x.a) > 3\n"
                 "                    ^"},
        BadQuery{"From x In A GroupBy COUNT Select COUNT",
                 "query:1:21: aggregate 'COUNT' is only allowed in Select, not in GroupBy\n"
                 "  From x In A GroupBy COUNT Select COUNT\n"
                 "                      ^"},
        BadQuery{"From x In A Select x.a Where x.a > 1",
                 "query:1:24: 'Where' must come before 'Select' (the clauses go From, Join, "
                 "Where, GroupBy, Select)\n"
                 "  From x In A Select x.a Where x.a > 1\n"
                 "                         ^"},
        BadQuery{"From x In A Where x.a > 1 Where x.b",
                 "query:1:27: a query has at most one 'Where' clause; combine the conditions "
                 "with 'and'\n"
                 "  From x In A Where x.a > 1 Where x.b\n"
                 "                            ^"},
        BadQuery{"From x In A Where x.s == \"abc",
                 "query:1:26: unterminated string; it needs a closing '\"' on its line\n"
                 "  From x In A Where x.s == \"abc\n"
                 "                           ^"},
        BadQuery{"From x In A Where x.t > 30sec",
                 "query:1:25: unknown unit 'sec' in '30sec'; a duration ends in ns, us, ms, s, "
                 "m or h\n"
                 "  From x In A Where x.t > 30sec\n"
                 "                          ^"},
        BadQuery{"From x In A Where x.n > 99999999999999999999",
                 "query:1:25: integer '99999999999999999999' does not fit in 64 bits\n"
                 "  From x In A Where x.n > 99999999999999999999\n"
                 "                          ^"},
        BadQuery{"From x In A Where x.n > 9223372036854775808",
                 "query:1:25: integer '9223372036854775808' does not fit in 64 bits\n"
                 "  From x In A Where x.n > 9223372036854775808\n"
                 "                          ^"},
        BadQuery{"From x In A Where x.n > 9999999999999999s",
                 "query:1:25: duration '9999999999999999s' does not fit in 64-bit "
                 "nanoseconds\n"
                 "  From x In A Where x.n > 9999999999999999s\n"
                 "                          ^"},
        BadQuery{"From x In A Join y In FirstN(B, 0) On y -> x",
                 "query:1:33: expected a count from 1 to 4294967295 in 'FirstN(source, "
                 "count)', found '0'\n"
                 "  From x In A Join y In FirstN(B, 0) On y -> x\n"
                 "                                  ^"},
        BadQuery{"From x In A Join y In MostRecentN(B) On y -> x",
                 "query:1:36: expected ',' and a count in 'MostRecentN(source, count)', found "
                 "')'\n"
                 "  From x In A Join y In MostRecentN(B) On y -> x\n"
                 "                                     ^"},
        BadQuery{"From x In A Join y In B On y <- x",
                 "query:1:30: expected '->' after 'Join y In B On y', found '<'\n"
                 "  From x In A Join y In B On y <- x\n"
                 "                               ^"},
        BadQuery{"From x In A Join y In B\nWhere x.a > 1",
                 "query:2:1: expected 'On' after 'Join y In B', found 'Where'\n"
                 "  Where x.a > 1\n"
                 "  ^"},
        BadQuery{"Slow = From x In A;\n",
                 "query:1:1: the last query is the one answered and cannot be named; add a "
                 "query after 'Slow' that uses it\n"
                 "  Slow = From x In A;\n"
                 "  ^"},
        BadQuery{"From x In A;\nFrom y In B",
                 "query:1:1: only the last query may be unnamed; name this one ('Name = From "
                 "...') or make it the last\n"
                 "  From x In A;\n"
                 "  ^"},
        BadQuery{"S = From x In A;\nS = From y In B;\nFrom z In S",
                 "query:2:1: query 'S' is already defined at line 1\n"
                 "  S = From y In B;\n"
                 "  ^"},
        BadQuery{"Slow From x In A",
                 "query:1:6: expected '=' after the query name 'Slow', found 'From'\n"
                 "  Slow From x In A\n"
                 "       ^"},
        BadQuery{"From x In A Select x.a x.b",
                 "query:1:24: expected an operator, ',', 'As' or ';' after a Select column, "
                 "found 'x'\n"
                 "  From x In A Select x.a x.b\n"
                 "                         ^"},
        BadQuery{"From x In A Where 1 < 2 < 3",
                 "query:1:25: comparisons do not chain: write 'a < b and b < c', not 'a < b < "
                 "c'\n"
                 "  From x In A Where 1 < 2 < 3\n"
                 "                          ^"},
        BadQuery{"From x In A Where (x.a + 1 Select x",
                 "query:1:28: expected ')' to close the '(' at 1:19, found 'Select'\n"
                 "  From x In A Where (x.a + 1 Select x\n"
                 "                             ^"},
        BadQuery{"From x In A Select COUNT(x.a)",
                 "query:1:26: COUNT takes no argument: write COUNT or COUNT()\n"
                 "  From x In A Select COUNT(x.a)\n"
                 "                           ^"},
        BadQuery{"From x In A Select SUM(MAX(x.a))",
                 "query:1:24: aggregates do not nest: 'MAX' inside another aggregate\n"
                 "  From x In A Select SUM(MAX(x.a))\n"
                 "                         ^"},
        BadQuery{"From x In A Where x.a > 'b'",
                 "query:1:25: unexpected character \"'\"; strings are written in double "
                 "quotes\n"
                 "  From x In A Where x.a > 'b'\n"
                 "                          ^"},
        BadQuery{"From x In A Where x.a & x.b",
                 "query:1:23: unexpected character '&'; did you mean '&&'?\n"
                 "  From x In A Where x.a & x.b\n"
                 "                        ^"},
        BadQuery{"From x In A Where x.s == \"a\\qb\"",
                 "query:1:28: unknown escape in string; use \\\", \\\\, \\n or \\t\n"
                 "  From x In A Where x.s == \"a\\qb\"\n"
                 "                             ^"},
        BadQuery{"From From In A",
                 "query:1:6: expected an alias after 'From', found the keyword 'From'\n"
                 "  From From In A\n"
                 "       ^"},
        BadQuery{"",
                 "query:1:1: expected 'From' to start a query, found end of input\n"
                 "  \n"
                 "  ^"},
        BadQuery{"From x In A;;",
                 "query:1:13: expected 'From' to start a query, found ';'\n"
                 "  From x In A;;\n"
                 "              ^"},
        BadQuery{"From x In A From y In B",
                 "query:1:13: expected ';' before the next query, found 'From'\n"
                 "  From x In A From y In B\n"
                 "              ^"},
        BadQuery{"From x In A\nJoin y In (From z In B Where z.q > 1\nOn y -> x",
                 "query:3:1: expected an operator, 'GroupBy', 'Select' or ')' after the Where "
                 "condition, found 'On'\n"
                 "  On y -> x\n"
                 "  ^"},
        BadQuery{"From x In A Group x.a",
                 "query:1:19: expected 'By' after 'Group', found 'x'\n"
                 "  From x In A Group x.a\n"
                 "                    ^"},
        BadQuery{"From x In A Where x. > 1",
                 "query:1:22: expected a field name after 'x.', found '>'\n"
                 "  From x In A Where x. > 1\n"
                 "                       ^"},
        BadQuery{"From x In A,\n",
                 "query:2:1: expected a tracepoint or query name after ',', found end of input\n"
                 "  \n"
                 "  ^"},
        BadQuery{"From x In A Select x.a,",
                 "query:1:24: expected an expression after ',', found end of input\n"
                 "  From x In A Select x.a,\n"
                 "                         ^"},
        BadQuery{"From x In A Where StartsWith(x.a \"b\")",
                 "query:1:34: expected ',' and a prefix after 'StartsWith(x.a', found '\"b\"'\n"
                 "  From x In A Where StartsWith(x.a \"b\")\n"
                 "                                   ^"},
        BadQuery{"From x In A Where x.a > 1e999",
                 "query:1:25: number '1e999' is out of range\n"
                 "  From x In A Where x.a > 1e999\n"
                 "                          ^"}));

TEST(ParserTest, SourceNamesTheOrigin) {
  Result<Program> p = ParseProgram("From x In", "slow.pq");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "slow.pq:1:10: expected a tracepoint, a query name or '(' after 'From x In', found "
            "end of input\n"
            "  From x In\n"
            "           ^");
}

}  // namespace
}  // namespace weft::query
