// The rank view's data. See job_data.hpp.
#include "job_data.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "page_json.hpp"

namespace ferret::report {
namespace {

// The first job_rows rows by their largest time on a rank.
void add_rows(page_json& document, const std::string& key, const std::vector<profile::job_row>& rows, bool mpi) {
  std::vector<std::pair<std::int64_t, const profile::job_row*>> ordered;
  for (const profile::job_row& row : rows) ordered.emplace_back(profile::spread_of(row.time_ns).max, &row);
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first
                              : std::tie(a.second->name, a.second->domain) < std::tie(b.second->name, b.second->domain);
  });
  const std::size_t shown = std::min(ordered.size(), job_rows);
  page_json out = page_json::array();
  for (std::size_t i = 0; i < shown; ++i) {
    const profile::job_row& row = *ordered[i].second;
    const profile::spread over_ranks = profile::spread_of(row.time_ns);
    page_json entry = {{"name", row.name},
                       {"domain", row.domain},
                       {"ranks", row.ranks},
                       {"calls", row.total_calls()},
                       {"time_ns", row.time_ns},
                       {"min", over_ranks.min},
                       {"mean", over_ranks.mean},
                       {"max", over_ranks.max},
                       {"max_rank", over_ranks.max_rank},
                       {"imbalance", over_ranks.imbalance()}};
    if (mpi) {
      entry["bytes_sent"] = row.sent.bytes;
      entry["bytes_received"] = row.received.bytes;
    }
    out.push_back(std::move(entry));
  }
  document[key] = std::move(out);
  document[key + "_left_out"] = ordered.size() - shown;
}

}  // namespace

std::string job_data(const profile::job_profile& job) {
  page_json document;
  document["size"] = job.size();
  document["busiest_rank"] = job.busiest_rank();
  page_json ranks = page_json::array();
  for (const profile::job_rank& rank : job.ranks())
    ranks.push_back({{"reported", rank.reported},
                     {"run_ns", rank.run_ns},
                     {"work_ns", rank.work_ns},
                     {"mpi_ns", rank.mpi_ns}});
  document["ranks"] = std::move(ranks);
  add_rows(document, "regions", job.regions(), false);
  add_rows(document, "mpi_calls", job.mpi_calls(), true);
  page_json messages = page_json::array();
  for (const auto& [ends, totals] : job.messages())
    messages.push_back(page_json::array({ends.first, ends.second, totals.bytes, totals.operations}));
  document["messages"] = std::move(messages);
  page_json tree = page_json::array();
  for (const profile::job_context& node : job.busiest_tree())
    tree.push_back({{"parent", node.parent},
                    {"name", node.name},
                    {"domain", node.domain},
                    {"calls", node.calls},
                    {"inclusive_ns", node.inclusive_ns},
                    {"exclusive_ns", node.exclusive_ns}});
  document["busiest_tree"] = std::move(tree);
  make_readable(document);
  return page_safe_text(document);
}

}  // namespace ferret::report
