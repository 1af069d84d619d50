// The profile of an MPI job: what every rank's profile_model says, reduced at
// rank 0 inside MPI_Finalize (profile_backend), for the job summary and the
// report's rank view — as mpiP and Caliper's mpireport show a job:
//
//   regions, MPI calls   per rank: calls and inclusive time (MPI calls also
//                        bytes sent and received); over the ranks: min, mean,
//                        max, the rank holding the max, imbalance
//                        (max - mean) / max. A rank without the region counts
//                        as 0 (it spent no time there).
//   messages             the rank x rank matrix of point-to-point bytes,
//                        from each rank's own row (sparse: only its peers)
//   ranks                per rank: run time, time in MPI calls, time in
//                        regions outside MPI calls ("work"), losses
//
// Each rank serialises its part (serialize_rank: a few dozen bytes per region,
// MPI call and peer), rank 0 gathers the parts and adds them (add_rank).
// Rank 0's memory: the parts while they are added, then 8 bytes per rank for
// each region and MPI call (the per-rank times the heat map shows) and 16
// bytes per nonzero cell of the matrix. All ranks must run on one byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profile_model.hpp"

namespace ferret::profile {

/// min, mean, max over the ranks of a job, and where the max is.
struct spread {
  std::int64_t min = 0, max = 0;
  double mean = 0.0;
  std::uint32_t max_rank = 0;
  /// (max - mean) / max: 0 when balanced, towards 1 when one rank carries it all.
  double imbalance() const noexcept { return max > 0 ? (static_cast<double>(max) - mean) / static_cast<double>(max) : 0.0; }
};
spread spread_of(const std::vector<std::int64_t>& per_rank);

struct job_row {
  std::string name, domain;
  std::vector<std::int64_t> time_ns;  // inclusive, per rank
  std::vector<std::uint64_t> calls;   // per rank
  std::uint32_t ranks = 0;            // ranks where it ran
  volume sent, received;              // MPI calls: over all ranks
  std::uint64_t total_calls() const noexcept;
};

struct job_rank {
  bool reported = false;  // its part arrived
  std::int64_t run_ns = 0;
  std::int64_t mpi_ns = 0;   // inclusive time in MPI calls (outermost)
  std::int64_t work_ns = 0;  // exclusive time of all regions outside MPI calls
  std::uint64_t gpu_operations = 0;
  std::vector<std::string> losses;
};

/// A node of one rank's calling-context tree, parents before children.
struct job_context {
  std::uint32_t parent = 0;
  std::string name, domain;
  std::uint64_t calls = 0;
  std::int64_t inclusive_ns = 0, exclusive_ns = 0;
};

/// This rank's part of the job profile.
std::string serialize_rank(const profile_model& model);
/// This rank's calling-context tree, its first `most` nodes (parents come first).
std::string serialize_tree(const profile_model& model, std::size_t most);

class job_profile {
 public:
  explicit job_profile(std::uint32_t size);
  /// Adds rank `rank`'s part; false (nothing added) when it does not parse.
  bool add_rank(std::uint32_t rank, std::string_view part);

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(ranks_.size()); }
  const std::vector<job_rank>& ranks() const noexcept { return ranks_; }
  /// Host regions (all domains but mpi), then MPI calls, by name.
  const std::vector<job_row>& regions() const noexcept { return regions_; }
  const std::vector<job_row>& mpi_calls() const noexcept { return mpi_calls_; }
  /// (from, to) -> point-to-point messages.
  const std::map<std::pair<std::uint32_t, std::uint32_t>, volume>& messages() const noexcept {
    return messages_;
  }
  /// The rank with the most work (time in regions outside MPI calls).
  std::uint32_t busiest_rank() const noexcept;
  /// Sets the busiest rank's tree (serialize_tree); false when it does not parse.
  bool set_busiest_tree(std::string_view tree);
  const std::vector<job_context>& busiest_tree() const noexcept { return busiest_tree_; }
  /// What the reduction cost at rank 0: the parts' bytes, and the time from
  /// its first collective to the job profile (the slowest rank's arrival excluded).
  void set_reduction(std::size_t part_bytes, std::int64_t ns) noexcept {
    part_bytes_ = part_bytes;
    reduction_ns_ = ns;
  }
  std::size_t part_bytes() const noexcept { return part_bytes_; }
  std::int64_t reduction_ns() const noexcept { return reduction_ns_; }

 private:
  job_row& row(std::vector<job_row>& rows, std::map<std::pair<std::string, std::string>, std::size_t>& index,
               const std::string& name, const std::string& domain);

  std::vector<job_rank> ranks_;
  std::vector<job_row> regions_, mpi_calls_;
  std::map<std::pair<std::string, std::string>, std::size_t> region_index_, mpi_index_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, volume> messages_;
  std::vector<job_context> busiest_tree_;
  std::size_t part_bytes_ = 0;
  std::int64_t reduction_ns_ = 0;
};

}  // namespace ferret::profile
