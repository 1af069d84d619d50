#include "sample_attribution.hpp"

#include <algorithm>

namespace ferret::cupti {

using runtime::gpu_activity;
using runtime::gpu_operation;
using runtime::gpu_sample_batch;

void sample_attribution::add(std::uint32_t device, const char* function, std::uint64_t pc_offset,
                             const char* file, std::uint32_t line,
                             const runtime::gpu_stall_reason* reason, std::uint32_t samples) {
  if (samples == 0 || function == nullptr || reason == nullptr) return;
  const function_key key{device, function};
  auto [it, inserted] = pending_.try_emplace(key);
  pending_function& pending = it->second;
  if (inserted) pending.first_ns = previous_collection_ns_;
  if (pending.last_ns != -1) {
    pending.last_ns = -1;  // set by collected()
    touched_.push_back(key);
  }
  const auto [at, added] = pending.index.try_emplace(instruction_key{pc_offset, reason},
                                                     pending.instructions.size());
  if (added)
    pending.instructions.push_back({pc_offset, file, line, reason, samples});
  else
    pending.instructions[at->second].samples += samples;
}

void sample_attribution::collected(std::int64_t now_ns) {
  for (const function_key& key : touched_)
    if (const auto it = pending_.find(key); it != pending_.end()) it->second.last_ns = now_ns;
  touched_.clear();
  previous_collection_ns_ = now_ns;
}

void sample_attribution::hold_kernels(std::vector<gpu_activity>& activities) {
  // Only kernels of sampled devices wait; the others have no samples to wait for.
  const auto kernels = std::stable_partition(activities.begin(), activities.end(), [this](const gpu_activity& a) {
    return a.operation != gpu_operation::kernel || clocks_.count(a.device) == 0;
  });
  for (auto it = kernels; it != activities.end(); ++it) held_.push_back(held_kernel{*it, 0, {}, {}});
  activities.erase(kernels, activities.end());
}

namespace {
// A launch samples may go to: held (its totals still open) or released.
struct candidate {
  std::uint64_t correlation;
  std::int64_t start_ns, end_ns;
  double weight;
};

// By the time each ran in [from, to]; by duration if none ran in it.
double weigh(std::vector<candidate>& launches, std::int64_t from, std::int64_t to) {
  double total = 0;
  for (candidate& launch : launches) {
    const std::int64_t start = std::max(launch.start_ns, from);
    const std::int64_t end = std::min(launch.end_ns, to);
    launch.weight = end > start ? static_cast<double>(end - start) : 0.0;
    total += launch.weight;
  }
  if (total <= 0)
    for (candidate& launch : launches) {
      launch.weight = static_cast<double>(std::max<std::int64_t>(launch.end_ns - launch.start_ns, 1));
      total += launch.weight;
    }
  return total;
}
}  // namespace

sample_attribution::launches_by_function sample_attribution::index_launches() {
  launches_by_function index;
  for (held_kernel& kernel : held_)
    if (kernel.activity.name != nullptr)
      index.held[{kernel.activity.device, kernel.activity.name}].push_back(&kernel);
  for (const released_kernel& kernel : recent_)
    if (kernel.name != nullptr) index.recent[{kernel.device, kernel.name}].push_back(&kernel);
  return index;
}

bool sample_attribution::share(const function_key& key, pending_function& pending,
                               const launches_by_function& index, std::vector<gpu_sample_batch>& batches) {
  const std::pair<std::uint32_t, std::string_view> function{key.first, key.second};
  std::vector<candidate> launches;
  std::vector<held_kernel*> held;
  if (const auto found = index.held.find(function); found != index.held.end())
    for (held_kernel* kernel : found->second) {
      launches.push_back({kernel->activity.launch.correlation, kernel->activity.start_ns,
                          kernel->activity.end_ns, 0});
      held.push_back(kernel);
    }
  if (launches.empty())
    if (const auto found = index.recent.find(function); found != index.recent.end())
      for (const released_kernel* kernel : found->second)
        launches.push_back({kernel->correlation, kernel->start_ns, kernel->end_ns, 0});
  if (launches.empty()) return false;
  // The window is widened by the latency, for samples that came one collection late.
  const double total = weigh(launches, pending.first_ns - latency_ns_, pending.last_ns);
  gpu_sample_batch& batch = batches.emplace_back();
  batch.device = key.first;
  batch.function = key.second;
  batch.instructions = std::move(pending.instructions);
  for (const candidate& launch : launches)
    if (launch.weight > 0) batch.launches.push_back({launch.correlation, launch.weight});
  for (std::size_t i = 0; i < held.size(); ++i) {
    held_kernel* kernel = held[i];
    const double weight = launches[i].weight;
    if (weight <= 0) continue;
    const double fraction = weight / total;
    for (const gpu_sample_batch::instruction& instruction : batch.instructions) {
      const double samples = instruction.samples * fraction;
      kernel->samples += samples;
      kernel->by_stall[static_cast<std::size_t>(instruction.reason->stall)] += samples;
      auto known = std::find_if(kernel->reasons.begin(), kernel->reasons.end(),
                                [&](const auto& entry) { return entry.first == instruction.reason; });
      if (known == kernel->reasons.end())
        kernel->reasons.emplace_back(instruction.reason, samples);
      else
        known->second += samples;
    }
  }
  return true;
}

runtime::gpu_kernel_samples sample_attribution::totals_of(const held_kernel& kernel) const {
  runtime::gpu_kernel_samples totals{};
  totals.samples = kernel.samples;
  std::copy(std::begin(kernel.by_stall), std::end(kernel.by_stall), std::begin(totals.by_stall));
  if (const auto clock = clocks_.find(kernel.activity.device); clock != clocks_.end()) {
    const device_clock& c = clock->second;
    totals.period_cycles = c.period_cycles;
    if (c.period_cycles > 0) {
      const double duration = static_cast<double>(kernel.activity.end_ns - kernel.activity.start_ns);
      totals.expected = duration * c.cycles_per_ns * c.multiprocessors / c.period_cycles;
    }
  }
  // The stalls that dominate: "selected" is an issue, not a stall.
  std::vector<std::pair<const runtime::gpu_stall_reason*, double>> stalls;
  for (const auto& entry : kernel.reasons)
    if (entry.first->stall != runtime::gpu_stall::none) stalls.push_back(entry);
  std::sort(stalls.begin(), stalls.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first->id < b.first->id;
  });
  for (std::size_t i = 0; i < std::size(totals.top_reasons) && i < stalls.size(); ++i) {
    totals.top_reasons[i] = stalls[i].first;
    totals.top_reason_samples[i] = stalls[i].second;
  }
  return totals;
}

void sample_attribution::release(std::int64_t now_ns, bool final, std::vector<gpu_activity>& activities,
                                 std::vector<gpu_sample_batch>& batches) {
  const launches_by_function index = index_launches();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (share(it->first, it->second, index, batches)) {
      it = pending_.erase(it);
    } else if (final) {
      // No launch of its function ran: the runtime counts these samples.
      gpu_sample_batch& batch = batches.emplace_back();
      batch.device = it->first.first;
      batch.function = it->first.second;
      batch.instructions = std::move(it->second.instructions);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  touched_.clear();
  released_totals_.clear();
  std::deque<held_kernel> still_held;
  for (held_kernel& kernel : held_) {
    if (!final && now_ns < kernel.activity.end_ns + latency_ns_) {
      still_held.push_back(std::move(kernel));
      continue;
    }
    gpu_activity& released = activities.emplace_back(kernel.activity);
    released.samples = &released_totals_.emplace_back(totals_of(kernel));
    recent_.push_back({kernel.activity.device, kernel.activity.name, kernel.activity.launch.correlation,
                       kernel.activity.start_ns, kernel.activity.end_ns, now_ns});
  }
  held_.swap(still_held);
  while (!recent_.empty() && recent_.front().released_ns + recent_ns < now_ns) recent_.pop_front();
}

}  // namespace ferret::cupti
