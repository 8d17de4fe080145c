// Evaluation of compiled expressions (advice.h): FILTER conditions, packed outputs,
// GroupBy keys and aggregate arguments.
#include <cmath>

#include "query/advice.h"

namespace weft::query {
namespace {

Value Arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) return Value::Null();
  if (a.type == ValueType::kInt && b.type == ValueType::kInt) {
    // Unsigned arithmetic wraps instead of overflowing (undefined for signed integers).
    uint64_t x = uint64_t(a.i), y = uint64_t(b.i);
    switch (op) {
      case BinaryOp::kAdd:
        return Value::Int(int64_t(x + y));
      case BinaryOp::kSub:
        return Value::Int(int64_t(x - y));
      case BinaryOp::kMul:
        return Value::Int(int64_t(x * y));
      case BinaryOp::kDiv:
        if (b.i == 0 || (a.i == INT64_MIN && b.i == -1)) return Value::Null();
        return Value::Int(a.i / b.i);
      case BinaryOp::kMod:
        if (b.i == 0 || (a.i == INT64_MIN && b.i == -1)) return Value::Null();
        return Value::Int(a.i % b.i);
      default:
        return Value::Null();
    }
  }
  double x = a.AsDouble(), y = b.AsDouble();
  switch (op) {
    case BinaryOp::kAdd:
      return Value::Float(x + y);
    case BinaryOp::kSub:
      return Value::Float(x - y);
    case BinaryOp::kMul:
      return Value::Float(x * y);
    case BinaryOp::kDiv:
      return y == 0 ? Value::Null() : Value::Float(x / y);
    case BinaryOp::kMod:
      return y == 0 ? Value::Null() : Value::Float(std::fmod(x, y));
    default:
      return Value::Null();
  }
}

// Comparisons between a string and a number, or with a null, are false (but null == null
// and null != 5 behave as equality on values).
Value Comparison(BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::kEq) return Value::Int(a == b);
  if (op == BinaryOp::kNe) return Value::Int(!(a == b));
  bool comparable = (a.is_number() && b.is_number()) ||
                    (a.type == ValueType::kString && b.type == ValueType::kString);
  if (!comparable) return Value::Int(0);
  int c = CompareValues(a, b);
  switch (op) {
    case BinaryOp::kLt:
      return Value::Int(c < 0);
    case BinaryOp::kLe:
      return Value::Int(c <= 0);
    case BinaryOp::kGt:
      return Value::Int(c > 0);
    case BinaryOp::kGe:
      return Value::Int(c >= 0);
    default:
      return Value::Int(0);
  }
}

Value EvaluateNode(const CompiledExpr& expr, int32_t k, const Value* row) {
  const CompiledExpr::Node& node = expr.nodes[size_t(k)];
  switch (node.kind) {
    case ExprKind::kLiteral:
      return node.literal;
    case ExprKind::kVariable:
      return row[node.column];
    case ExprKind::kUnary: {
      Value v = EvaluateNode(expr, node.left, row);
      if (node.unary == UnaryOp::kNot) return Value::Int(!IsTrue(v));
      if (v.type == ValueType::kInt) return Value::Int(int64_t(0 - uint64_t(v.i)));
      if (v.type == ValueType::kFloat) return Value::Float(-v.f);
      return Value::Null();
    }
    case ExprKind::kStartsWith: {
      Value s = EvaluateNode(expr, node.left, row), prefix = EvaluateNode(expr, node.right, row);
      if (s.type != ValueType::kString || prefix.type != ValueType::kString) return Value::Int(0);
      return Value::Int(s.s.starts_with(prefix.s));
    }
    case ExprKind::kBinary: {
      if (node.binary == BinaryOp::kAnd) {
        return Value::Int(IsTrue(EvaluateNode(expr, node.left, row)) &&
                          IsTrue(EvaluateNode(expr, node.right, row)));
      }
      if (node.binary == BinaryOp::kOr) {
        return Value::Int(IsTrue(EvaluateNode(expr, node.left, row)) ||
                          IsTrue(EvaluateNode(expr, node.right, row)));
      }
      Value a = EvaluateNode(expr, node.left, row), b = EvaluateNode(expr, node.right, row);
      if (node.binary <= BinaryOp::kMod) return Arithmetic(node.binary, a, b);
      return Comparison(node.binary, a, b);
    }
    case ExprKind::kAggregate:
      break;  // the compiler never puts an aggregate in a compiled expression
  }
  return Value::Null();
}

}  // namespace

bool IsTrue(const Value& v) {
  switch (v.type) {
    case ValueType::kNull:
      return false;
    case ValueType::kInt:
      return v.i != 0;
    case ValueType::kFloat:
      return v.f != 0;
    case ValueType::kString:
      return !v.s.empty();
  }
  return false;
}

Value Evaluate(const CompiledExpr& expr, const Value* row) {
  return EvaluateNode(expr, int32_t(expr.nodes.size()) - 1, row);
}

}  // namespace weft::query
