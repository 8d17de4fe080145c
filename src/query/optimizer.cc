#include "query/optimizer.h"

#include <algorithm>

namespace weft::query {
namespace {

bool KeepsAll(const Unit& unit) {
  return unit.mode == PackMode::kAll || unit.mode == PackMode::kGrouped;
}

// `unit`, its parent, ... up to and including `root`.
std::vector<int32_t> PathUp(const std::vector<Unit>& units, int32_t unit, int32_t root) {
  std::vector<int32_t> path{unit};
  while (unit != root && unit >= 0) {
    unit = units[size_t(unit)].parent;
    path.push_back(unit);
  }
  return path;
}

}  // namespace

int32_t LowestCommonUnit(const std::vector<Unit>& units, const std::vector<int32_t>& homes,
                         int32_t root) {
  if (homes.empty()) return root;
  std::vector<int32_t> common = PathUp(units, homes[0], root);
  for (size_t i = 1; i < homes.size(); ++i) {
    std::vector<int32_t> path = PathUp(units, homes[i], root);
    // Keep the first element of `common` that is also on `path`, and what is above it.
    auto it = std::find_if(common.begin(), common.end(), [&](int32_t u) {
      return std::find(path.begin(), path.end(), u) != path.end();
    });
    common.erase(common.begin(), it);
  }
  return common.empty() ? root : common.front();
}

int32_t PushDownTarget(const std::vector<Unit>& units, int32_t unit, int32_t root) {
  std::vector<int32_t> path = PathUp(units, unit, root);
  // From the root down, as long as the join below keeps all tuples.
  int32_t target = root;
  for (size_t i = path.size() - 1; i-- > 0;) {
    if (!KeepsAll(units[size_t(path[i])])) break;
    target = path[i];
  }
  return target;
}

bool KeepsAllTuplesToRoot(const std::vector<Unit>& units, int32_t unit) {
  for (; unit > 0; unit = units[size_t(unit)].parent) {
    if (!KeepsAll(units[size_t(unit)])) return false;
  }
  return true;
}

}  // namespace weft::query
