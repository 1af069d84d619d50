// The report page. See report_page.hpp. The page's files are compiled in
// (embed_page.cmake writes page_files.cpp), so the backend needs no files at
// run time.
#include "report_page.hpp"

#include <string>

namespace ferret::report {

// page_files.cpp, generated at build time.
extern const char report_html[];
extern const char report_css[];
extern const char report_js[];

namespace {

// Replaces the one `marker` in `page` with `content`.
void put(std::string& page, std::string_view marker, std::string_view content) {
  const std::size_t at = page.find(marker);
  if (at != std::string::npos) page.replace(at, marker.size(), content);
}

}  // namespace

std::string report_page(std::string_view data, std::string_view job) {
  std::string page = report_html;
  // The script and data contain no "</script" (the build checks the script;
  // the data escapes every '<'), so nothing ends their elements early.
  put(page, "/*ferret:style*/", report_css);
  put(page, "/*ferret:script*/", report_js);
  put(page, "/*ferret:data*/", data);
  put(page, "/*ferret:job*/", job);
  return page;
}

}  // namespace ferret::report
