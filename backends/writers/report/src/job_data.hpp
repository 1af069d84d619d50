// The data of the report's rank view (rank 0 of an MPI job): the job profile
// (profile/job_profile.hpp) as one JSON document beside the run's own
// (report_data.hpp), which page/report.js draws as the "Ranks" view:
//
//   size, busiest_rank      ranks in the job; the rank with the most work
//   ranks                   per rank: reported, run_ns, work_ns, mpi_ns
//   regions, mpi_calls      the first `job_rows` by their largest time on a
//                           rank: name, domain, ranks, calls, time_ns per rank,
//                           min, mean, max, max_rank, imbalance (and bytes
//                           sent and received for MPI calls); *_left_out counts
//                           the others
//   messages                [from, to, bytes, messages] per nonzero cell
//   busiest_tree            the busiest rank's calling-context tree, parents
//                           first: parent, name, domain, calls, inclusive_ns,
//                           exclusive_ns
#pragma once

#include <cstddef>
#include <string>

#include "job_profile.hpp"

namespace ferret::report {

/// The heat map's rows: regions and MPI calls each.
inline constexpr std::size_t job_rows = 40;

/// The JSON document, safe to place inside <script type="application/json">.
std::string job_data(const profile::job_profile& job);

}  // namespace ferret::report
