// Where the optimizer may place work (Pivot Tracing §4, Table 3): the rules that push
// selection, projection and aggregation towards the source tracepoints, as functions over
// a query's unit tree (advice.h). The compiler asks them where each conjunct of a Where
// and each aggregate of the Select goes.
//
//   Π_{p,q}(P ⋈ Q)  → Π_p(P) ⋈ Π_q(Q)          a unit packs only what the units above read
//   σ_p(P ⋈ Q)      → σ_p(P) ⋈ Q               a condition on P's variables filters at P
//   σ_q(P ⋈ Q)      → P ⋈ σ_q(Q)               one on Q's own filters before Q unpacks
//   A_p(P ⋈ Q)      → Combine_p(A_p(P) ⋈ Q)    P packs a partial aggregate
//   GA_p(P ⋈ Q)     → G_p Combine_p(GA_p(P) ⋈ Q)  ... per group of P's keys
//   GA_q(P ⋈ Q)     → G_q Combine_p(P ⋈ GA_q(Q))  P packs only how many tuples it has
//   G_p A_q(P ⋈ Q)  → G_p Combine_q(Π_p(P) ⋈ A_q(Q))  P packs its keys, merged, counted
//   G_q A_p(P ⋈ Q)  → G_q Combine_p(A_p(P) ⋈ Π_q(Q))  P packs a partial aggregate
//
// Every rule holds only across joins that keep all tuples: under First or MostRecent, a
// filter or a merge below the join would change which tuples are the first or the latest.
#pragma once

#include <cstdint>
#include <vector>

#include "query/advice.h"

namespace weft::query {

// The lowest unit that is `root` or has every unit of `homes` in its subtree (`root` if
// `homes` is empty). Every home must be `root` or below it.
int32_t LowestCommonUnit(const std::vector<Unit>& units, const std::vector<int32_t>& homes,
                         int32_t root);

// The lowest unit at or above `unit` from which every join up to `root` keeps all tuples:
// where work that needs `unit`'s row may run without changing the query's answer.
int32_t PushDownTarget(const std::vector<Unit>& units, int32_t unit, int32_t root);

// True if `unit` and every unit between it and the answered query's root are joined
// keeping all tuples: equal tuples it packs may merge.
bool KeepsAllTuplesToRoot(const std::vector<Unit>& units, int32_t unit);

}  // namespace weft::query
