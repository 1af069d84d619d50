// The data of a report page: a run's profile_model as one JSON document,
// which the page (page/report.js) renders. Aggregates only, never events,
// and at most `limits` rows of the kinds that can grow with a program's
// size, so that the page stays small for any run; what was left out is
// counted in the document.
//
// Layout (version 1), top level:
//   run            executable, pid, host, command line, start (Unix ns, as a
//                  string), duration_ns, clock, ferret version, GPU operations
//   gpu_metrics    the names of the entries of every "gpu" array below
//   contexts       the calling-context tree, parents before children: parent
//                  index, name, domain, file, line, api_call, synthetic,
//                  calls, inclusive_ns, exclusive_ns, gpu (exclusive)
//   paths          GPU work per region path, as the summary lists it
//   regions        host regions by name: name, domain, calls, inclusive_ns
//   counters       per counter: name, domain, samples, min, mean, max, last
//                  (numbers, null where not finite) and `shown`, the four as
//                  the summary writes them
//   marks          per mark: name, domain, count
//   devices        per GPU: properties, copies and memsets by direction,
//                  kernels, live memory and stream busy time per time bucket
//   kernels, copies  all devices together, as the summary lists them
//   ends, traffic  the host and the GPUs; per matrix (from, to, bytes, operations)
//   objects        data objects: identity, lifetime, bytes by kind, flows,
//                  heat over the address range
//   context_objects, context_traffic  per context: bytes per object and per pair of ends
//   gpu_samples    instruction samples (PC sampling), null without: the
//                  stall classes and the collector's reasons; the summary's
//                  sampling lines and its two tables (by line, by calling
//                  context) as text cells; per context and kernel, and per
//                  context, kernel and GPU line, samples by class and reason
//                  (the code view's GPU rows)
//   device_initiated  kernels' loads and stores to other devices' and host
//                  memory, null without: the summary's totals line and its
//                  two tables (by kernel, line, object and device pair; by
//                  calling context) as text cells, `rest` summing the rows
//                  left out; per context and kernel, and per context,
//                  kernel, line, object and device pair, bytes loaded and
//                  stored and accesses (the code view's GPU rows). Objects
//                  carry theirs by device pair; the second traffic matrix
//                  is "device-initiated"
//   memory, losses, unrecorded_api, metadata, limits
#pragma once

#include <cstddef>
#include <string>

#include "profile_model.hpp"

namespace ferret::report {

struct limits {
  std::size_t contexts = 10'000;
  // No more than the model keeps of the released objects, so that the ones it
  // left out could not have been shown.
  std::size_t objects = profile::released_objects_kept;
  std::size_t kernels_per_device = 1'000;
  // GPU lines per calling context and kernel, the most sampled first.
  std::size_t gpu_lines = 5'000;
  // Rows of the device-initiated tables (the summary shows 20), the most bytes first.
  std::size_t remote_rows = 200;
};

/// The JSON document, safe to place inside <script type="application/json">:
/// every string is shown through readable_text (valid UTF-8, no control
/// characters), cut to 1000 columns, and '<', '>', '&', U+2028 and U+2029 are
/// \u escapes, so that no name can end the element or be read as markup.
std::string report_data(const profile::profile_model& model, const limits& bounds = {});

}  // namespace ferret::report
