// JSON for the report page. See page_json.hpp.
#include "page_json.hpp"

#include "readable_text.hpp"

namespace ferret::report {
namespace {

// Display columns of a string at most: names may be of any length.
constexpr std::size_t longest_string = 1000;

}  // namespace

// Every string of the document as the page shows it: through readable_text
// (valid UTF-8, nothing a display acts on) and cut to `longest_string`
// columns. Done over the finished document, so that no string is missed.
// Keys are this file's own names and are left as they are.
void make_readable(page_json& value) {
  if (value.is_string()) {
    value = profile::cut_end(profile::readable_text(value.get_ref<const std::string&>()),
                             longest_string);
  } else if (value.is_structured()) {
    for (page_json& element : value) make_readable(element);
  }
}

// The document as text that can sit inside <script type="application/json">:
// '<', '>' and '&' (markup, "</script", "<!--") and U+2028, U+2029 (line ends
// to older JavaScript) as \u escapes. JSON's structure is ASCII without any of
// them, so each one found is inside a string, where the escape means the same.
std::string page_safe_text(const page_json& document) {
  const std::string text = document.dump(-1, ' ', false, page_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default:
        if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
            (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
          out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
          i += 2;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace ferret::report
