// The report page: page/report.html with its style, its script and the run's
// data (report_data.hpp) put in, one self-contained file that any modern
// browser opens from disk, offline.
#pragma once

#include <string>
#include <string_view>

namespace ferret::report {

/// The whole page for `data` (a JSON document from report_data()) and `job`
/// (job_data() on rank 0 of an MPI job, else "null": no rank view).
std::string report_page(std::string_view data, std::string_view job = "null");

}  // namespace ferret::report
