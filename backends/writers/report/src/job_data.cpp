// The rank view's data. See job_data.hpp.
#include "job_data.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "json_writer.hpp"

namespace ferret::report {
namespace {

void write_rows(json_writer& out, std::string_view key, const std::vector<profile::job_row>& rows, bool mpi) {
  std::vector<std::pair<std::int64_t, const profile::job_row*>> ordered;
  for (const profile::job_row& row : rows) ordered.emplace_back(profile::spread_of(row.time_ns).max, &row);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first
                              : std::tie(a.second->name, a.second->domain) < std::tie(b.second->name, b.second->domain);
  });
  const std::size_t shown = std::min(ordered.size(), job_rows);
  out.key(key);
  out.begin_array();
  for (std::size_t i = 0; i < shown; ++i) {
    const profile::job_row& row = *ordered[i].second;
    const profile::spread over_ranks = profile::spread_of(row.time_ns);
    out.begin_object();
    out.field("name", row.name);
    out.field("domain", row.domain);
    out.field("ranks", row.ranks);
    out.field("calls", row.total_calls());
    out.key("time_ns");
    out.begin_array();
    for (const std::int64_t ns : row.time_ns) out.value(ns);
    out.end_array();
    out.field("min", over_ranks.min);
    out.field("mean", over_ranks.mean);
    out.field("max", over_ranks.max);
    out.field("max_rank", over_ranks.max_rank);
    out.field("imbalance", over_ranks.imbalance());
    if (mpi) {
      out.field("bytes_sent", row.sent.bytes);
      out.field("bytes_received", row.received.bytes);
    }
    out.end_object();
  }
  out.end_array();
  out.field(std::string{key} + "_left_out", ordered.size() - shown);
}

}  // namespace

std::string job_data(const profile::job_profile& job) {
  json_writer out;
  out.begin_object();
  out.field("size", job.size());
  out.field("busiest_rank", job.busiest_rank());
  out.key("ranks");
  out.begin_array();
  for (const profile::job_rank& rank : job.ranks()) {
    out.begin_object();
    out.field("reported", rank.reported);
    out.field("run_ns", rank.run_ns);
    out.field("work_ns", rank.work_ns);
    out.field("mpi_ns", rank.mpi_ns);
    out.end_object();
  }
  out.end_array();
  write_rows(out, "regions", job.regions(), false);
  write_rows(out, "mpi_calls", job.mpi_calls(), true);
  out.key("messages");
  out.begin_array();
  for (const auto& [ends, messages] : job.messages()) {
    out.begin_array();
    out.value(ends.first);
    out.value(ends.second);
    out.value(messages.bytes);
    out.value(messages.operations);
    out.end_array();
  }
  out.end_array();
  out.key("busiest_tree");
  out.begin_array();
  for (const profile::job_context& node : job.busiest_tree()) {
    out.begin_object();
    out.field("parent", node.parent);
    out.field("name", node.name);
    out.field("domain", node.domain);
    out.field("calls", node.calls);
    out.field("inclusive_ns", node.inclusive_ns);
    out.field("exclusive_ns", node.exclusive_ns);
    out.end_object();
  }
  out.end_array();
  out.end_object();
  return out.text();
}

}  // namespace ferret::report
