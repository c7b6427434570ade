#include "loader/rank_balance.h"

#include <algorithm>
#include <numeric>

namespace sluice::loader {

void DealRanks(const std::vector<uint64_t>& list, const std::function<uint64_t(uint64_t)>& tokens,
               uint64_t B, int rank, int world, bool balance, std::vector<uint64_t>* rows,
               RankBalance* stats) {
  *stats = RankBalance();
  const uint64_t W = static_cast<uint64_t>(world);
  const uint64_t per_rank = list.size() / (B * W);
  rows->clear();
  rows->reserve(per_rank * B);
  std::vector<uint64_t> step(W * B), cost(W * B), order(W * B), ranks(W), total(W);
  std::vector<uint32_t> owner(W * B);
  for (uint64_t t = 0; t < per_rank; ++t) {
    for (uint64_t q = 0; q < W; ++q)
      for (uint64_t i = 0; i < B; ++i) {
        step[q * B + i] = list[(q * per_rank + t) * B + i];
        cost[q * B + i] = tokens(step[q * B + i]);
        owner[q * B + i] = static_cast<uint32_t>(q);
      }
    if (balance && W > 1) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint64_t a, uint64_t b) { return cost[a] > cost[b]; });
      std::fill(total.begin(), total.end(), 0);
      for (uint64_t round = 0; round < B; ++round) {
        std::iota(ranks.begin(), ranks.end(), 0);
        std::stable_sort(ranks.begin(), ranks.end(),
                         [&](uint64_t a, uint64_t b) { return total[a] < total[b]; });
        for (uint64_t k = 0; k < W; ++k) {
          const uint64_t row = order[round * W + k];
          owner[row] = static_cast<uint32_t>(ranks[k]);
          total[ranks[k]] += cost[row];
        }
      }
    }
    std::fill(total.begin(), total.end(), 0);
    for (uint64_t j = 0; j < W * B; ++j) {
      total[owner[j]] += cost[j];
      if (owner[j] == static_cast<uint32_t>(rank)) rows->push_back(step[j]);
    }
    const auto [lo, hi] = std::minmax_element(total.begin(), total.end());
    stats->max_spread = std::max(stats->max_spread, *hi - *lo);
    stats->max_ratio =
        std::max(stats->max_ratio,
                 static_cast<double>(*hi) / static_cast<double>(std::max<uint64_t>(*lo, 1)));
  }
}

}  // namespace sluice::loader
