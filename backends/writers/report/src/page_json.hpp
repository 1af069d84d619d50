// The JSON documents the report page reads (report_data.hpp, job_data.hpp):
// built with nlohmann::json, their strings made readable, their text safe
// to place inside <script type="application/json">.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ferret::report {

// Keys stay in the order written: a document reads top to bottom as its
// header lists it.
using page_json = nlohmann::ordered_json;

/// Every string of `value` through readable_text and cut to 1000 columns.
void make_readable(page_json& value);

/// The document's text for a <script type="application/json"> element.
std::string page_safe_text(const page_json& document);

}  // namespace ferret::report
