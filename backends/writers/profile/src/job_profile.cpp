// The job profile: each rank's part, serialised for the gather, and rank 0's
// reduction of the parts (job_profile.hpp).
#include "job_profile.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace ferret::profile {
namespace {

constexpr std::string_view mpi_domain = "mpi";

// Native byte order: the ranks of one job run one build on one architecture.
class part_writer {
 public:
  template <typename T>
  void number(T value) {
    static_assert(std::is_arithmetic_v<T>);
    text_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void text(std::string_view value) {
    number(static_cast<std::uint32_t>(value.size()));
    text_.append(value);
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

class part_reader {
 public:
  explicit part_reader(std::string_view part) : rest_(part) {}
  template <typename T>
  T number() {
    T value{};
    if (rest_.size() < sizeof value) {
      failed_ = true;
      return value;
    }
    std::memcpy(&value, rest_.data(), sizeof value);
    rest_.remove_prefix(sizeof value);
    return value;
  }
  std::string text() {
    const auto length = number<std::uint32_t>();
    if (rest_.size() < length) {
      failed_ = true;
      return {};
    }
    std::string value{rest_.substr(0, length)};
    rest_.remove_prefix(length);
    return value;
  }
  /// A count of entries, each at least `smallest` bytes: more than fit is a bad part.
  std::uint32_t count(std::size_t smallest) {
    const auto value = number<std::uint32_t>();
    if (static_cast<std::size_t>(value) * smallest > rest_.size()) {
      failed_ = true;
      return 0;
    }
    return value;
  }
  bool ok() const noexcept { return !failed_ && rest_.empty(); }
  bool failed() const noexcept { return failed_; }

 private:
  std::string_view rest_;
  bool failed_ = false;
};

}  // namespace

spread spread_of(const std::vector<std::int64_t>& per_rank) {
  spread result;
  if (per_rank.empty()) return result;
  result.min = result.max = per_rank.front();
  long double sum = 0;
  for (std::uint32_t rank = 0; rank < per_rank.size(); ++rank) {
    const std::int64_t value = per_rank[rank];
    sum += static_cast<long double>(value);
    result.min = std::min(result.min, value);
    if (value > result.max) {
      result.max = value;
      result.max_rank = rank;
    }
  }
  result.mean = static_cast<double>(sum / static_cast<long double>(per_rank.size()));
  return result;
}

std::uint64_t job_row::total_calls() const noexcept {
  std::uint64_t total = 0;
  for (const std::uint64_t count : calls) total += count;
  return total;
}

std::string serialize_rank(const profile_model& model) {
  part_writer out;
  out.number(model.end_ns());
  out.number(model.gpu_operations());
  std::int64_t mpi_ns = 0, work_ns = 0;
  const std::vector<context>& contexts = model.contexts();
  for (std::size_t node = 1; node < contexts.size(); ++node) {
    const context& here = contexts[node];
    if (here.domain != mpi_domain)
      work_ns += here.exclusive_ns();
    else if (contexts[here.parent].domain != mpi_domain)
      mpi_ns += here.inclusive_ns;
  }
  out.number(mpi_ns);
  out.number(work_ns);
  const std::vector<profile_model::region_row> regions = model.regions_by_name();
  out.number(static_cast<std::uint32_t>(regions.size()));
  for (const profile_model::region_row& region : regions) {
    out.text(region.name);
    out.text(region.domain);
    out.number(region.calls);
    out.number(region.inclusive_ns);
  }
  out.number(static_cast<std::uint32_t>(model.mpi_calls().size()));
  for (const auto& [call, totals] : model.mpi_calls()) {
    out.text(call);
    out.number(totals.sent.bytes);
    out.number(totals.sent.operations);
    out.number(totals.received.bytes);
    out.number(totals.received.operations);
  }
  std::uint32_t peers = 0;
  const std::uint32_t rank = model.rank().value_or(0);
  for (const auto& [ends, messages] : model.messages()) peers += ends.first == rank ? 1 : 0;
  out.number(peers);
  for (const auto& [ends, messages] : model.messages()) {
    if (ends.first != rank) continue;
    out.number(ends.second);
    out.number(messages.bytes);
    out.number(messages.operations);
  }
  out.number(static_cast<std::uint32_t>(model.losses().size()));
  for (const std::string& loss : model.losses()) out.text(loss);
  return out.take();
}

std::string serialize_tree(const profile_model& model, std::size_t most) {
  part_writer out;
  const std::vector<context>& contexts = model.contexts();
  const std::size_t nodes = std::min(contexts.size(), most);
  out.number(static_cast<std::uint32_t>(nodes));
  for (std::size_t node = 0; node < nodes; ++node) {
    const context& here = contexts[node];
    out.number(here.parent);
    out.text(here.name);
    out.text(here.domain);
    out.number(here.calls);
    out.number(here.inclusive_ns);
    out.number(here.exclusive_ns());
  }
  return out.take();
}

bool job_profile::set_busiest_tree(std::string_view tree) {
  part_reader in{tree};
  std::vector<job_context> nodes(in.count(36));
  for (std::size_t node = 0; node < nodes.size(); ++node) {
    job_context& here = nodes[node];
    here.parent = in.number<std::uint32_t>();
    here.name = in.text();
    here.domain = in.text();
    here.calls = in.number<std::uint64_t>();
    here.inclusive_ns = in.number<std::int64_t>();
    here.exclusive_ns = in.number<std::int64_t>();
    if (here.parent > node) return false;  // parents come first
  }
  if (!in.ok()) return false;
  busiest_tree_ = std::move(nodes);
  return true;
}

job_profile::job_profile(std::uint32_t size) : ranks_(size) {}

job_row& job_profile::row(std::vector<job_row>& rows,
                          std::map<std::pair<std::string, std::string>, std::size_t>& index,
                          const std::string& name, const std::string& domain) {
  const auto [it, inserted] = index.try_emplace({name, domain}, rows.size());
  if (inserted) {
    rows.emplace_back();
    rows.back().name = name;
    rows.back().domain = domain;
    rows.back().time_ns.assign(ranks_.size(), 0);
    rows.back().calls.assign(ranks_.size(), 0);
  }
  return rows[it->second];
}

bool job_profile::add_rank(std::uint32_t rank, std::string_view part) {
  if (rank >= ranks_.size() || ranks_[rank].reported) return false;
  // Parsed completely before anything is added: a bad part adds nothing.
  part_reader in{part};
  job_rank parsed;
  parsed.run_ns = in.number<std::int64_t>();
  parsed.gpu_operations = in.number<std::uint64_t>();
  parsed.mpi_ns = in.number<std::int64_t>();
  parsed.work_ns = in.number<std::int64_t>();
  struct region_part {
    std::string name, domain;
    std::uint64_t calls;
    std::int64_t inclusive_ns;
  };
  std::vector<region_part> regions(in.count(24));
  for (region_part& region : regions) {
    region.name = in.text();
    region.domain = in.text();
    region.calls = in.number<std::uint64_t>();
    region.inclusive_ns = in.number<std::int64_t>();
  }
  std::vector<std::pair<std::string, profile_model::mpi_call_totals>> calls(in.count(36));
  for (auto& [name, totals] : calls) {
    name = in.text();
    totals.sent.bytes = in.number<std::uint64_t>();
    totals.sent.operations = in.number<std::uint64_t>();
    totals.received.bytes = in.number<std::uint64_t>();
    totals.received.operations = in.number<std::uint64_t>();
  }
  std::vector<std::pair<std::uint32_t, volume>> peers(in.count(20));
  for (auto& [to, messages] : peers) {
    to = in.number<std::uint32_t>();
    messages.bytes = in.number<std::uint64_t>();
    messages.operations = in.number<std::uint64_t>();
  }
  parsed.losses.resize(in.count(4));
  for (std::string& loss : parsed.losses) loss = in.text();
  if (!in.ok()) return false;

  parsed.reported = true;
  ranks_[rank] = std::move(parsed);
  for (const region_part& region : regions) {
    const bool mpi = region.domain == mpi_domain;
    job_row& into = mpi ? row(mpi_calls_, mpi_index_, region.name, region.domain)
                        : row(regions_, region_index_, region.name, region.domain);
    into.time_ns[rank] = region.inclusive_ns;
    into.calls[rank] = region.calls;
    ++into.ranks;
  }
  for (const auto& [name, totals] : calls) {
    job_row& into = row(mpi_calls_, mpi_index_, name, std::string{mpi_domain});
    into.sent.bytes += totals.sent.bytes;
    into.sent.operations += totals.sent.operations;
    into.received.bytes += totals.received.bytes;
    into.received.operations += totals.received.operations;
  }
  for (const auto& [to, messages] : peers) messages_[{rank, to}] = messages;
  return true;
}

std::uint32_t job_profile::busiest_rank() const noexcept {
  std::uint32_t busiest = 0;
  for (std::uint32_t rank = 0; rank < ranks_.size(); ++rank)
    if (ranks_[rank].work_ns > ranks_[busiest].work_ns) busiest = rank;
  return busiest;
}

}  // namespace ferret::profile
