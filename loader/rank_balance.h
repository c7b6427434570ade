// Per-rank token balance of packed batches (PackingOptions::balance_ranks; docs/loader.md,
// "Packing"): equal batch counts are not equal work when rows hold different numbers of tokens
// (document fits pad their rows), and a step of data-parallel training waits for its slowest
// rank. The plan of every packed epoch is global (each rank computes the whole fit), so the rows
// of one step can be dealt to the ranks by their tokens.
//
// A step is the t-th batch of every rank: the W x B rows list[(q*P + t)*B + i] for q < W ranks,
// i < B rows and P batches per rank (rank q's own run, PlanSequences' split, pack.h). Balanced,
// they are dealt in B rounds: the step's rows longest first (list order among equals), W at a
// time, the round's longest to the rank with the fewest tokens so far (the lowest rank among
// equals), the next to the next, and so on; each rank's B rows then keep list order.
//
// Tolerance: after each round the spread (most minus fewest tokens over the ranks) is at most the
// larger of the spread before it and the round's longest minus its shortest row (a rank that was
// behind gets a row at least as long as one ahead of it). So a step's spread is at most its
// longest row minus its shortest, never more than seq_len.
//
// Only rows move between ranks within a step: the rows of steps 0..t-1, all ranks together, are
// those of the plan unbalanced, so an elastic resume's consumed rows (steps the earlier ranks
// took) are the same, and a resume recomputes the same deal from the plan.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace sluice::loader {

// The ranks' LLM tokens per step, over the whole epoch (all ranks).
struct RankBalance {
  uint64_t max_spread = 0;  // most minus fewest tokens of a step's ranks, the worst step
  double max_ratio = 1.0;   // most over fewest (fewest 0: counted as 1 token), the worst step
};

// Rank `rank`'s rows, batch after batch, of the global `list` (W x P x B sequences) into *rows:
// dealt by tokens when `balance`, else its own run; *stats: the spread of the rows as dealt.
void DealRanks(const std::vector<uint64_t>& list, const std::function<uint64_t(uint64_t)>& tokens,
               uint64_t B, int rank, int world, bool balance, std::vector<uint64_t>* rows,
               RankBalance* stats);

}  // namespace sluice::loader
