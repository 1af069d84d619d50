// The rules, as TAU writes profiles (Profiler.cpp, TauCallPath.cpp, TauEnv.cpp)
// and its readers parse them: ParaProf (perfdmf's TauDataSource, Function,
// UserEvent; paraprof's CallPathModel, ContextEventTreeNode), pprof
// (utils/pprof.cpp) and hatchet (hatchet/readers/tau_reader.py). A rule that one
// reader needs names it; breaking it there loses data (a file read only up to
// the line, an entry merged into another) or makes the reader throw.
//
// File layout
//   F1  line 1: "<n> templated_functions_MULTI_<metric>"; inside MULTI__<m>/, <metric> is <m>
//   F2  line 2: "# Name Calls Subrs Excl Incl ProfileCalls # <metadata>...</metadata>"
//   F3  then exactly n function lines, then "0 aggregates"
//   F4  then nothing, or "<k> userevents", "# eventname numevents max min mean sumsqr" and k lines
//   F5  every line ends in '\n', nothing follows the last section, text is valid UTF-8 (hatchet
//       decodes the file as UTF-8)
//   F6  pprof: function and user event lines are shorter than 64 KiB (it reads lines into
//       SIZE_OF_LINE bytes and takes the rest of a longer one as the next line)
// Metadata
//   M1  the block is well-formed XML (xml_error): <metadata> holding only
//       <attribute><name>..</name><value>..</value></attribute> elements
//   M2  the first attribute is "Metric Name", its value the metric of line 1 (hatchet takes the
//       first <value> as the metric)
//   M3  hatchet: no blank before a '#' in the block (it splits the column header at "\s#")
//   M4  ParaProf: the block is ASCII (it reads it as bytes: every byte above 0x7F becomes a
//       blank); characters beyond ASCII are character references
//   M5  ParaProf: with call paths, TAU_CALLPATH is "on" and TAU_CALLPATH_DEPTH an integer >= 2,
//       as TAU writes them (else ParaProf shows every flat entry again as a root of the call tree)
// Function lines: "\"<name>\" <calls> <subrs> <excl> <incl> 0 GROUP=\"<group>\" "
//   L1  ParaProf: the name is not empty ("" makes it drop the rest of the file); no '"' in it;
//       calls and subrs are unsigned integers, calls > 0; excl and incl finite decimal
//       numbers; ProfileCalls 0; the group has no blank or '"'; the trailing blank is there
//   L2  names are unique; ".TAU application" is there with 1 call
//   L3  TIME: 0 <= excl <= incl
//   L4  no blank at either end of a name or call-path component, no run of blanks: TAU drops
//       leading blanks, ParaProf collapses runs (merging the entries), hatchet strips
//       components
//   L5  ParaProf: a source annotation ("[{file} {line,col}]", "OpenMP location: file:f <l, c>",
//       mpiP's "[file:f line:l]", "!$omp … @f:l") or parameter list ("[ <a> = <b> ]") in a
//       function name or call-path component parses as its Function.getSourceLink parses it
//       (else it throws when the user opens the function's menu)
//   L6  hatchet: the first function line is ".TAU application", its calls, subrs, excl and incl
//       whole numbers (read with int()), in every metric's file
//   L7  hatchet: a source location in a call path's leaf is " [{file} {line,col}]" with
//       integer line numbers; a " [@] " call site has words on both sides (else it throws)
//   L8  ParaProf, hatchet: "=>" occurs only as the call-path separator " => ", and " : " not at
//       all (ParaProf splits context events at the last " : ")
// Call paths ("a => b => c", TAU_CALLPATH_DEPTH = D)
//   P1  the first component is ".TAU application" (hatchet cannot place a path that does not
//       start there); at most D components; the group is TAU_CALLPATH|<the leaf's flat group>;
//       flat entries do not carry TAU_CALLPATH
//   P2  the leaf has a flat entry; the path without its leaf is an entry too (or ".TAU
//       application"); with any call path in the file, every flat entry has at least one
//       (unless all its calls were folded, P3)
//   P3  per leaf, the paths' calls, subrs and excl add up to the flat entry's; the incl of the
//       paths where the leaf is not also a caller adds up to the flat incl (a recursive call's
//       time is in its outermost call's). Calls nested deeper than D - 1 levels are in the flat
//       entries only, folded into the path at the limit: with "callpath-folded-calls" > 0 in
//       the metadata the paths add up to at most the flat entry (TIME), and the flat calls
//       exceed the paths' calls by exactly that count
//   P4  per path of fewer than D components (and ".TAU application"): subrs = the calls of its
//       child paths, excl = incl - the incl of its child paths; ".TAU application" is in whole
//       units (L6), so its excl may differ by rounding, less than 1. A path of D components
//       has no child paths: TIME excl <= incl
// User events
//   U1  "\"<name>\" <count> <max> <min> <mean> <sumsqr>", count an unsigned integer > 0, the
//       rest finite decimal numbers; names unique; no blank at either end, no run of blanks
//   U2  min <= mean <= max, sumsqr >= count * mean^2, except that a sum of squares beyond the
//       largest double is written as the largest double (a lower bound)
//   U3  ParaProf: a name with " : " is a context event "<event> : <path>" with one " : ";
//       <event> is a user event, <path> ".TAU application" or a call path; the contexts of an
//       event add up to its count, their max and min are its max and min
//   (hatchet reads every line with "=>" as a call path, context events too, and throws: TAU's
//   own call-path profiles hit that as well; it is not checked here)
// Directory
//   D1  files are profile.N.C.T (unsigned integers); per (N, C), T runs 0..k-1
//   D2  either plain files or MULTI__<metric> directories, not both, not none
//   D3  every MULTI__ directory has the same files, and each file the same function names in
//       the same order with the same calls and subrs, and the same user events (hatchet
//       reads the metrics' files line by line together)
// Job (several nodes: the ranks of an MPI run in one directory, as TAU writes them)
//   J1  the nodes are 0..N-1, each with context 0: pprof opens profile.0.0.0 first ("Could not
//       open profile.0.0.0" without it), hatchet's tree needs node 0 (KeyError: 0), ParaProf
//       shows a gap as a missing rank
//   J2  the metadata agree: with "mpi-size" in any node's thread 0, every node's thread 0 has
//       mpi-size = N and mpi-rank = its node number; TAU_CALLPATH and TAU_CALLPATH_DEPTH are the
//       same in every file (ParaProf reads the call-path setting once for the trial)
#include "tau_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ferret/runtime/text.hpp"

namespace ferret::tau_check {
namespace {

constexpr std::string_view application = ".TAU application";
constexpr std::string_view path_separator = " => ";
constexpr std::string_view context_separator = " : ";
constexpr std::string_view column_header = "# Name Calls Subrs Excl Incl ProfileCalls # ";
constexpr std::string_view user_event_header = "# eventname numevents max min mean sumsqr";
constexpr std::size_t pprof_line_buffer = 64 * 1024;  // SIZE_OF_LINE, with the '\n' and the '\0'

void add_error(report& r, std::string line) {
  ++r.error_count;
  if (r.errors.size() < max_stored_errors) r.errors.push_back(std::move(line));
}

// Numbers written in decimal and added up in another order agree to about 1e-15
// relatively; the slack is wider so that only real disagreements fail.
bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({std::fabs(a), std::fabs(b), 1.0});
}
bool at_most(double a, double b) { return a <= b || close(a, b); }

std::optional<std::uint64_t> unsigned_integer(std::string_view token) {
  if (token.empty() || token.size() > 19 ||
      !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::strtoull(std::string{token}.c_str(), nullptr, 10);
}

// What Python's int() and Java's Integer.parseInt both take: a sign and digits.
bool whole_number(std::string_view token) {
  if (!token.empty() && (token.front() == '-' || token.front() == '+')) token.remove_prefix(1);
  return !token.empty() && std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool java_int(std::string_view token) {
  if (!whole_number(token)) return false;
  const long long value = std::strtoll(std::string{token}.c_str(), nullptr, 10);
  return token.size() <= 11 && value >= -2147483648LL && value <= 2147483647LL;
}

std::optional<double> finite_number(std::string_view token) {
  if (token.empty()) return std::nullopt;
  const std::string text{token};
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    return std::nullopt;
  // strtod also takes hexadecimal, "inf" and "nan", which TAU's readers do not.
  if (text.find_first_not_of("0123456789+-.eE") != std::string::npos) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view text, std::string_view separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + separator.size();
  }
}

// Python's str.split() without arguments: words between runs of blanks.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    const std::size_t start = at;
    while (at < text.size() && text[at] != ' ' && text[at] != '\t') ++at;
    if (at > start) out.push_back(text.substr(start, at - start));
  }
  return out;
}

// L4: "" when `name` has no blank at either end and no run of blanks.
std::string blank_error(std::string_view name) {
  if (!name.empty() && (name.front() == ' ' || name.back() == ' '))
    return "a blank at an end (TAU drops leading blanks, hatchet strips both ends)";
  if (name.find("  ") != std::string_view::npos)
    return "a run of blanks (ParaProf collapses it and merges the entry with another)";
  return {};
}

// Java's String.indexOf(needle, from): -1 when absent.
long index_of(std::string_view text, std::string_view needle, long from = 0) {
  if (from < 0) from = 0;
  if (static_cast<std::size_t>(from) > text.size()) return -1;
  const std::size_t at = text.find(needle, static_cast<std::size_t>(from));
  return at == std::string_view::npos ? -1 : static_cast<long>(at);
}

// Java's String.trim(): without the characters up to ' ' at both ends.
std::string_view java_trim(std::string_view text) {
  while (!text.empty() && static_cast<unsigned char>(text.front()) <= ' ') text.remove_prefix(1);
  while (!text.empty() && static_cast<unsigned char>(text.back()) <= ' ') text.remove_suffix(1);
  return text;
}

// L5: ParaProf's Function.getSourceLink(String) on one function name (it is
// given the leaf of a call path, and then each caller): "" or why it throws.
// Java's substring(begin, end) throws when end < begin (an index of -1 included)
// and Integer.parseInt on anything but an int.
std::string paraprof_source_link_error(std::string_view name) {
  const auto piece = [&](long begin, long end) -> std::optional<std::string_view> {
    if (begin < 0 || end < begin || static_cast<std::size_t>(end) > name.size()) return std::nullopt;
    return name.substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
  };
  const auto number = [&](long begin, long end, bool trim) {
    const auto text = piece(begin, end);
    return text && java_int(trim ? java_trim(*text) : *text);
  };
  if (index_of(name, "OpenMP location:") != -1) {  // Opari: "OpenMP location: file:f.c <31, 48>"
    const long file = index_of(name, "file:"), left = index_of(name, "<"), comma = index_of(name, ","),
               right = index_of(name, ">");
    if (!piece(0, file) || !piece(file + 5, left) || !number(left + 1, comma, true) ||
        !number(comma + 1, right, true))
      return "an 'OpenMP location:' annotation that does not parse";
  }
  if (index_of(name, "file:") != -1 && index_of(name, "line:") != -1) {  // mpiP: "[file:ring.c line:37]"
    const std::size_t bracket = name.rfind('[');
    if (bracket == std::string_view::npos) return "'file:' and 'line:' (mpiP's annotation) without '['";
    const std::string_view tail = name.substr(bracket);
    const long file = index_of(tail, "file:"), line = index_of(tail, "line:");
    const auto tail_piece = [&](long begin, long end) -> std::optional<std::string_view> {
      if (begin < 0 || end < begin || static_cast<std::size_t>(end) > tail.size()) return std::nullopt;
      return tail.substr(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
    };
    const long close_at = index_of(tail, "]", line);
    const auto digits = close_at != -1 ? tail_piece(line + 5, index_of(tail, "]"))
                                       : tail_piece(line + 5, static_cast<long>(tail.size()));
    if (!tail_piece(file + 5, line) || !digits || !java_int(close_at != -1 ? *digits : java_trim(*digits)))
      return "'file:' and 'line:' (mpiP's annotation) that do not parse";
    return {};
  }
  if (name.rfind("!$omp", 0) == 0) {  // "!$omp parallel @file.f:12"
    const std::size_t at = name.rfind('@'), colon = name.rfind(':');
    if (at == std::string_view::npos || colon == std::string_view::npos || colon < at) return {};
    return java_int(name.substr(colon + 1)) ? std::string{} : "an '!$omp … @file:line' annotation that does not parse";
  }
  for (long start = index_of(name, "[ <"); start != -1;) {  // "[ <name> = <value>, <…> ]"
    long end = index_of(name, "> = <", start);
    if (!piece(start + 3, end)) return "a parameter list '[ <' without '> = <'";
    start = index_of(name, "<", end);
    end = index_of(name, ">", start);
    if (!piece(start + 1, end)) return "a parameter value without '>'";
    start = index_of(name, ", <", end);
  }
  const long file_start = index_of(name, "[{");  // "[{file} {line,column}-{line,column}]"
  if (file_start == -1) return {};
  const long file_end = index_of(name, "}", file_start);
  if (file_end == -1) return {};
  const long open1 = index_of(name, "{", file_end + 1);
  long comma1 = index_of(name, ",", file_end + 1);
  const long close1 = index_of(name, "}", file_end + 1);
  long dash = index_of(name, "-", close1 + 1);
  const long open2 = index_of(name, "{", open1 + 1);
  const long comma2 = index_of(name, ",", comma1 + 1);
  const long close2 = index_of(name, "}", close1 + 1);
  if (open1 == -1) return {};
  if (comma1 > close1) comma1 = -1;
  if (dash > close2) dash = -1;
  const std::string bad = "a source location whose line or column is not an integer";
  if (dash == -1) {
    if (comma1 == -1) return close1 == -1 || number(open1 + 1, close1, false) ? std::string{} : bad;
    return number(open1 + 1, comma1, false) ? std::string{} : bad;
  }
  if (open2 == -1 || comma1 == -1 || comma2 == -1 || close1 == -1 || close2 == -1) return {};
  return number(open1 + 1, comma1, false) && number(comma1 + 1, close1, false) &&
                 number(open2 + 1, comma2, false) && number(comma2 + 1, close2, false)
             ? std::string{}
             : bad;
}

// L7: hatchet's TAUReader on the leaf of a call path: "" or why it throws.
std::string hatchet_leaf_error(std::string_view leaf) {
  if (leaf.find("[{") != std::string_view::npos) {
    // re.search(r"\{.*\}\]", leaf).group(0).split()[1], then the line numbers
    const std::size_t open = leaf.find('{');
    const std::size_t close_at = leaf.rfind("}]");
    if (open == std::string_view::npos || close_at == std::string_view::npos || close_at < open)
      return "a '[{' without '}]' after it";
    const std::vector<std::string_view> tokens = words(leaf.substr(open, close_at + 2 - open));
    if (tokens.size() < 2) return "a source location without line numbers";
    std::string lines{tokens[1]};
    while (!lines.empty() && (lines.front() == '}' || lines.front() == ']')) lines.erase(0, 1);
    while (!lines.empty() && (lines.back() == '}' || lines.back() == ']')) lines.pop_back();
    lines.erase(std::remove(lines.begin(), lines.end(), '{'), lines.end());
    std::string_view start = lines, end = "0";
    if (lines.find('-') != std::string::npos) {
      const std::vector<std::string_view> range = split(lines, "-");
      start = split(range[0], ",")[0];
      end = split(range[1], ",")[0];
    } else if (lines.find(',') != std::string::npos) {
      const std::vector<std::string_view> pair = split(lines, ",");
      start = pair[0];
      end = pair[1];
    }
    if (!whole_number(start) || !whole_number(end))
      return fmt::format("a source location whose line numbers '{}' are not integers", lines);
  }
  if (leaf.find(" C ") != std::string_view::npos) return {};
  if (leaf.find(" [@] ") != std::string_view::npos) {
    const std::vector<std::string_view> parts = split(leaf, " [@] ");
    if (words(parts[0]).size() < 2) return "a ' [@] ' call site without a file before it";
    if (parts[1].find("[{") != std::string_view::npos) {
      const std::vector<std::string_view> module = split(parts[1], " [{");
      if (module.size() < 2 || words(module[1]).empty()) return "a ' [@] ' call site without a module";
    } else if (words(parts[1]).size() < 2) {
      return "a ' [@] ' call site without a module";
    }
    return {};
  }
  if (leaf.find("[{") != std::string_view::npos) {
    const std::vector<std::string_view> parts = split(leaf, " [{");
    if (parts.size() < 2 || words(parts[1]).empty()) return "a '[{' without a blank before it";
  }
  return {};
}

// --- XML --------------------------------------------------------------------

struct xml_element {
  std::string name;
  std::string text;  // character data, decoded, of this element alone
  std::vector<xml_element> children;
};

// A strict parser for one element: names, attributes, character and entity
// references, CDATA sections and comments as XML 1.0 defines them (no DTD,
// no processing instructions: TAU writes neither).
class xml_parser {
 public:
  explicit xml_parser(std::string_view text) : text_(text) {}

  std::optional<xml_element> document() {
    if (!runtime::valid_utf8(text_)) return failure("not valid UTF-8");
    xml_element root;
    if (!element(root)) return std::nullopt;
    skip_blanks();
    if (at_ != text_.size()) return failure("text after the root element");
    return root;
  }

  const std::string& error() const { return error_; }

 private:
  std::nullopt_t failure(std::string what) {
    if (error_.empty()) error_ = fmt::format("{} at offset {}", what, at_);
    return std::nullopt;
  }

  bool fail(std::string what) {
    failure(std::move(what));
    return false;
  }

  bool starts(std::string_view prefix) const { return text_.substr(at_, prefix.size()) == prefix; }

  void skip_blanks() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }

  static bool name_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
  }
  static bool name_char(unsigned char c) {
    return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
  }

  bool name(std::string& out) {
    if (at_ >= text_.size() || !name_start(static_cast<unsigned char>(text_[at_])))
      return fail("expected a name");
    const std::size_t start = at_;
    while (at_ < text_.size() && name_char(static_cast<unsigned char>(text_[at_]))) ++at_;
    out = std::string{text_.substr(start, at_ - start)};
    return true;
  }

  static bool xml_char(std::uint32_t c) {
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
           (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
  }

  static void append_utf8(std::string& out, std::uint32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }

  // At '&': a predefined entity or a character reference.
  bool reference(std::string& out) {
    const std::size_t end = text_.find(';', at_);
    if (end == std::string_view::npos) return fail("'&' without ';'");
    const std::string_view body = text_.substr(at_ + 1, end - at_ - 1);
    static const std::pair<std::string_view, char> entities[] = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    for (const auto& [entity, character] : entities) {
      if (body == entity) {
        out += character;
        at_ = end + 1;
        return true;
      }
    }
    if (body.size() >= 2 && body[0] == '#') {
      const bool hex = body[1] == 'x';
      const std::string_view digits = body.substr(hex ? 2 : 1);
      const std::string_view allowed = hex ? "0123456789abcdefABCDEF" : "0123456789";
      if (!digits.empty() && digits.size() <= 8 && digits.find_first_not_of(allowed) == std::string_view::npos) {
        const auto code = static_cast<std::uint32_t>(std::strtoul(std::string{digits}.c_str(), nullptr, hex ? 16 : 10));
        if (xml_char(code)) {
          append_utf8(out, code);
          at_ = end + 1;
          return true;
        }
      }
    }
    return fail(fmt::format("bad reference '&{};'", body));
  }

  // Raw character data: no control characters but tab, newline and carriage return.
  bool raw_character(std::string& out) {
    const auto c = static_cast<unsigned char>(text_[at_]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return fail("control character");
    if (c == 0x7F) return fail("control character");
    out += text_[at_++];
    return true;
  }

  bool attribute_value() {
    if (at_ >= text_.size() || (text_[at_] != '"' && text_[at_] != '\'')) return fail("expected a quoted value");
    const char quote = text_[at_++];
    std::string ignored;
    while (at_ < text_.size() && text_[at_] != quote) {
      if (text_[at_] == '<') return fail("'<' in an attribute value");
      if (text_[at_] == '&') {
        if (!reference(ignored)) return false;
      } else if (!raw_character(ignored)) {
        return false;
      }
    }
    if (at_ >= text_.size()) return fail("unterminated attribute value");
    ++at_;
    return true;
  }

  bool element(xml_element& out) {
    if (++depth_ > 64) return fail("elements nested too deep");
    if (!starts("<")) return fail("expected '<'");
    ++at_;
    if (!name(out.name)) return false;
    std::set<std::string> attributes;
    for (;;) {
      const std::size_t before = at_;
      skip_blanks();
      if (starts("/>")) {
        at_ += 2;
        --depth_;
        return true;
      }
      if (starts(">")) {
        ++at_;
        break;
      }
      if (at_ == before) return fail("expected a blank before an attribute");
      std::string attribute;
      if (!name(attribute)) return false;
      if (!attributes.insert(attribute).second) return fail("attribute given twice");
      skip_blanks();
      if (!starts("=")) return fail("expected '='");
      ++at_;
      skip_blanks();
      if (!attribute_value()) return false;
    }
    for (;;) {
      if (at_ >= text_.size()) return fail(fmt::format("<{}> is not closed", out.name));
      if (starts("</")) {
        at_ += 2;
        std::string closing;
        if (!name(closing)) return false;
        if (closing != out.name) return fail(fmt::format("</{}> closes <{}>", closing, out.name));
        skip_blanks();
        if (!starts(">")) return fail("expected '>'");
        ++at_;
        --depth_;
        return true;
      }
      if (starts("<![CDATA[")) {
        const std::size_t end = text_.find("]]>", at_);
        if (end == std::string_view::npos) return fail("unterminated CDATA section");
        for (at_ += 9; at_ < end;)
          if (!raw_character(out.text)) return false;
        at_ = end + 3;
        continue;
      }
      if (starts("<!--")) {
        const std::size_t end = text_.find("--", at_ + 4);
        if (end == std::string_view::npos || text_.substr(end, 3) != "-->")
          return fail("bad comment");
        at_ = end + 3;
        continue;
      }
      if (starts("<?") || starts("<!")) return fail("unexpected markup");
      if (starts("<")) {
        out.children.emplace_back();
        if (!element(out.children.back())) return false;
        continue;
      }
      if (starts("]]>")) return fail("']]>' in character data");
      if (text_[at_] == '&') {
        if (!reference(out.text)) return false;
      } else if (!raw_character(out.text)) {
        return false;
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
  int depth_ = 0;
  std::string error_;
};


// --- one file -----------------------------------------------------------------

struct line_reader {
  std::string_view text;
  std::size_t at = 0;
  std::size_t number = 0;  // of the last line read, from 1

  std::optional<std::string_view> next() {
    if (at >= text.size()) return std::nullopt;
    const std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) return std::nullopt;  // F5: an unterminated line
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++number;
    return line;
  }
  bool unterminated_tail() const { return at < text.size() && text.find('\n', at) == std::string_view::npos; }
};

// A quoted name at the start of `line`; `rest` gets what follows the closing quote.
std::optional<std::string> quoted_name(std::string_view line, std::string_view& rest) {
  if (line.empty() || line.front() != '"') return std::nullopt;
  const std::size_t end = line.find('"', 1);
  if (end == std::string_view::npos) return std::nullopt;
  rest = line.substr(end + 1);
  return std::string{line.substr(1, end - 1)};
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

class file_checker {
 public:
  file_checker(report& r, std::string name) : report_(r), name_(std::move(name)) {}

  std::optional<profile> parse(std::string_view text, std::string_view expected_metric) {
    line_reader lines{text};
    profile result;
    if (!runtime::valid_utf8(text)) error(0, "not valid UTF-8 (F5)");

    const auto first = lines.next();
    std::size_t count = 0;
    constexpr std::string_view marker = " templated_functions_MULTI_";
    const std::size_t marker_at = first ? first->find(marker) : std::string_view::npos;
    const auto parsed_count = first && marker_at != std::string_view::npos
                                  ? unsigned_integer(first->substr(0, marker_at))
                                  : std::nullopt;
    if (!parsed_count) {
      error(1, "expected '<count> templated_functions_MULTI_<metric>'");
      return std::nullopt;
    }
    count = static_cast<std::size_t>(*parsed_count);
    result.metric = std::string{first->substr(marker_at + marker.size())};
    if (result.metric.empty() || result.metric.find_first_of(" \t\"") != std::string::npos)
      error(1, fmt::format("bad metric name '{}'", result.metric));
    if (!expected_metric.empty() && result.metric != expected_metric)
      error(1, fmt::format("metric '{}' in the directory of metric '{}'", result.metric, expected_metric));

    const auto second = lines.next();
    if (!second || second->substr(0, column_header.size()) != column_header) {
      error(2, fmt::format("expected '{}<metadata>...'", column_header));
      return std::nullopt;
    }
    check_metadata(second->substr(column_header.size()), result);

    for (std::size_t i = 0; i < count; ++i) {
      const auto line = lines.next();
      if (!line || *line == "0 aggregates") {
        error(lines.number + (line ? 0 : 1), fmt::format("{} function lines announced, {} found", count, i));
        return std::nullopt;
      }
      check_line_length(*line, lines.number);
      if (auto function = function_of(*line, lines.number, i == 0))
        result.functions.push_back(std::move(*function));
    }
    const auto aggregates = lines.next();
    if (!aggregates || *aggregates != "0 aggregates") {
      error(lines.number, "expected '0 aggregates' after the function lines");
      return std::nullopt;
    }
    if (const auto events_line = lines.next()) {
      constexpr std::string_view suffix = " userevents";
      const std::size_t at = events_line->rfind(suffix);
      const auto event_count = at != std::string_view::npos && at + suffix.size() == events_line->size()
                                   ? unsigned_integer(events_line->substr(0, at))
                                   : std::nullopt;
      if (!event_count || *event_count == 0) {
        error(lines.number, "expected '<count> userevents' or the end of the file");
        return std::nullopt;
      }
      const auto header = lines.next();
      if (!header || *header != user_event_header) {
        error(lines.number, fmt::format("expected '{}'", user_event_header));
        return std::nullopt;
      }
      for (std::uint64_t i = 0; i < *event_count; ++i) {
        const auto line = lines.next();
        if (!line) {
          error(lines.number + 1, fmt::format("{} user events announced, {} found", *event_count, i));
          return std::nullopt;
        }
        check_line_length(*line, lines.number);
        if (auto event = user_event_of(*line, lines.number)) result.user_events.push_back(std::move(*event));
      }
      if (lines.next()) error(lines.number, "text after the user events");
    }
    if (lines.unterminated_tail()) error(lines.number + 1, "a last line without '\\n'");
    check_functions(result);
    check_user_events(result);
    return result;
  }

 private:
  void error(std::size_t line, std::string what) {
    add_error(report_, line == 0 ? fmt::format("{}: {}", name_, what)
                                 : fmt::format("{}:{}: {}", name_, line, what));
  }

  void check_line_length(std::string_view line, std::size_t number) {
    if (line.size() + 2 > pprof_line_buffer)
      error(number, fmt::format("a line of {} bytes: pprof reads lines into 64 KiB and takes the rest "
                                "as the next line (F6)",
                                line.size()));
  }

  void check_metadata(std::string_view block, profile& result) {
    for (std::size_t at = block.find('#'); at != std::string_view::npos; at = block.find('#', at + 1))
      if (at > 0 && (block[at - 1] == ' ' || block[at - 1] == '\t')) {
        error(2, "a blank before '#' inside the metadata: hatchet splits the header there (M3)");
        break;
      }
    if (std::any_of(block.begin(), block.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
      error(2, "bytes beyond ASCII in the metadata: ParaProf turns each into a blank (M4)");
    xml_parser parser{block};
    const std::optional<xml_element> root = parser.document();
    if (!root) {
      error(2, "metadata is not well-formed XML: " + parser.error());
      return;
    }
    if (root->name != "metadata") error(2, fmt::format("metadata root is <{}>", root->name));
    for (const xml_element& attribute : root->children) {
      if (attribute.name != "attribute" || attribute.children.size() != 2 ||
          attribute.children[0].name != "name" || attribute.children[1].name != "value" ||
          !attribute.children[0].children.empty() || !attribute.children[1].children.empty() ||
          attribute.children[0].text.empty()) {
        error(2, "metadata holds something else than <attribute><name>..</name><value>..</value></attribute>");
        return;
      }
      result.metadata.emplace_back(attribute.children[0].text, attribute.children[1].text);
    }
    if (result.metadata.empty() || result.metadata.front().first != "Metric Name")
      error(2, "the first metadata attribute is not 'Metric Name' (M2)");
    else if (result.metadata.front().second != result.metric)
      error(2, fmt::format("Metric Name '{}' but line 1 names '{}'", result.metadata.front().second, result.metric));
  }

  void check_name(std::string_view name, std::size_t number, bool function) {
    if (has_control_character(name))
      error(number, fmt::format("'{}': a control character (ParaProf and hatchet end a line at '\\r') (L1)", name));
    for (const std::string_view component : split(name, path_separator)) {
      if (const std::string why = blank_error(component); !why.empty())
        error(number, fmt::format("'{}': {} (L4)", name, why));
      if (component.find("=>") != std::string_view::npos)
        error(number, fmt::format("'{}': '=>' inside a name (ParaProf and hatchet take it as a call path) (L8)", name));
      if (function && component.find(context_separator) != std::string_view::npos)
        error(number, fmt::format("'{}': ' : ' in a function name (ParaProf splits context events at the last "
                                  "' : ') (L8)",
                                  name));
    }
  }

  std::optional<function_line> function_of(std::string_view line, std::size_t number, bool first) {
    function_line f;
    std::string_view rest;
    const auto name = quoted_name(line, rest);
    if (!name || name->empty()) {
      error(number, "expected a quoted, non-empty function name: ParaProf reads \"\" as a corrupt file and "
                    "drops the rest of it (L1)");
      return std::nullopt;
    }
    f.name = *name;
    check_name(f.name, number, true);
    // ParaProf parses a call path's leaf, then its callers; each alone.
    for (const std::string_view component : split(f.name, "=>"))
      if (const std::string why = paraprof_source_link_error(java_trim(component)); !why.empty())
        error(number, fmt::format("'{}': {}: ParaProf throws when it builds the source link (L5)", f.name, why));
    if (f.name.find("=>") != std::string::npos) {
      const std::vector<std::string_view> parts = split(f.name, "=>");
      std::string_view leaf = parts.back();
      while (!leaf.empty() && leaf.front() == ' ') leaf.remove_prefix(1);
      while (!leaf.empty() && leaf.back() == ' ') leaf.remove_suffix(1);
      if (const std::string why = hatchet_leaf_error(leaf); !why.empty())
        error(number, fmt::format("'{}': {}: hatchet throws reading it (L7)", f.name, why));
    }
    // rest: ' <calls> <subrs> <excl> <incl> 0 GROUP="<group>" '
    const std::vector<std::string_view> tokens = split(rest, " ");
    if (tokens.size() != 8 || !tokens[0].empty() || !tokens[7].empty()) {
      error(number, fmt::format("'{}': expected ' calls subrs excl incl 0 GROUP=\"..\" ' after the name", f.name));
      return std::nullopt;
    }
    const auto calls = unsigned_integer(tokens[1]);
    const auto subroutines = unsigned_integer(tokens[2]);
    const auto exclusive = finite_number(tokens[3]);
    const auto inclusive = finite_number(tokens[4]);
    const std::string_view group = tokens[6];
    if (!calls || !subroutines || !exclusive || !inclusive || tokens[5] != "0" ||
        group.substr(0, 7) != "GROUP=\"" || group.size() < 8 || group.back() != '"' ||
        group.substr(7, group.size() - 8).find('"') != std::string_view::npos) {
      error(number, fmt::format("'{}': bad columns", f.name));
      return std::nullopt;
    }
    if (first && (f.name != application || !whole_number(tokens[3]) || !whole_number(tokens[4])))
      error(number, "the first function line is not '.TAU application' in whole numbers: hatchet reads it "
                    "with int() (L6)");
    f.calls = *calls;
    f.subroutines = *subroutines;
    f.exclusive = *exclusive;
    f.inclusive = *inclusive;
    f.group = std::string{group.substr(7, group.size() - 8)};
    if (f.calls == 0) error(number, fmt::format("'{}': 0 calls (TAU writes only called functions)", f.name));
    return f;
  }

  std::optional<user_event_line> user_event_of(std::string_view line, std::size_t number) {
    user_event_line e;
    std::string_view rest;
    const auto name = quoted_name(line, rest);
    if (!name || name->empty()) {
      error(number, "expected a quoted, non-empty user event name");
      return std::nullopt;
    }
    e.name = *name;
    check_name(split(e.name, context_separator)[0], number, false);
    if (const auto at = e.name.find(context_separator); at != std::string::npos)
      check_name(std::string_view{e.name}.substr(at + context_separator.size()), number, true);
    const std::vector<std::string_view> tokens = split(rest, " ");
    if (tokens.size() != 6 || !tokens[0].empty()) {
      error(number, fmt::format("'{}': expected ' count max min mean sumsqr' after the name", e.name));
      return std::nullopt;
    }
    const auto count = unsigned_integer(tokens[1]);
    const auto max = finite_number(tokens[2]);
    const auto min = finite_number(tokens[3]);
    const auto mean = finite_number(tokens[4]);
    const auto sum_of_squares = finite_number(tokens[5]);
    if (!count || !max || !min || !mean || !sum_of_squares || *count == 0) {
      error(number, fmt::format("'{}': bad columns", e.name));
      return std::nullopt;
    }
    e.count = *count;
    e.max = *max;
    e.min = *min;
    e.mean = *mean;
    e.sum_of_squares = *sum_of_squares;
    if (!at_most(e.min, e.mean) || !at_most(e.mean, e.max))
      error(number, fmt::format("'{}': not min <= mean <= max ({} {} {}) (U2)", e.name, e.min, e.mean, e.max));
    const long double least = static_cast<long double>(e.count) * e.mean * e.mean;
    const bool saturated = e.sum_of_squares == DBL_MAX;
    if (!saturated && !at_most(static_cast<double>(std::min(least, static_cast<long double>(DBL_MAX))),
                               e.sum_of_squares))
      error(number, fmt::format("'{}': sumsqr {} < count * mean^2 = {} (U2)", e.name, e.sum_of_squares,
                                static_cast<double>(least)));
    return e;
  }

  struct path_totals {
    std::uint64_t child_calls = 0;  // calls of its child paths
    double child_inclusive = 0.0;
  };

  // M5 and the depth of call paths: TAU_CALLPATH_DEPTH, 0 when absent or bad.
  std::size_t callpath_depth(const profile& result) {
    const std::string depth = result.attribute("TAU_CALLPATH_DEPTH");
    const auto value = unsigned_integer(depth);
    if (result.attribute("TAU_CALLPATH") != "on" || !value || *value < 2) {
      error(2, "call paths without TAU_CALLPATH=on and TAU_CALLPATH_DEPTH >= 2 in the metadata: ParaProf "
               "shows every flat entry again as a root of its call tree (M5)");
      return 0;
    }
    return static_cast<std::size_t>(*value);
  }

  void check_functions(const profile& result) {
    const bool time = result.metric == "TIME";
    std::unordered_map<std::string, const function_line*> by_name;
    for (const function_line& f : result.functions)
      if (!by_name.emplace(f.name, &f).second) error(0, fmt::format("'{}' appears twice (L2)", f.name));
    const auto root = by_name.find(std::string{application});
    if (root == by_name.end())
      error(0, "no '.TAU application' entry (L2)");
    else if (root->second->calls != 1)
      error(0, "'.TAU application' has not 1 call (L2)");
    const auto folded = unsigned_integer(result.attribute("callpath-folded-calls")).value_or(0);

    struct leaf_totals {
      std::uint64_t calls = 0, subroutines = 0;
      double exclusive = 0.0, inclusive = 0.0;
    };
    std::unordered_map<std::string, leaf_totals> leaves;
    std::unordered_map<std::string, path_totals> children;  // by parent path
    std::unordered_map<std::string, std::size_t> components;  // by path
    std::size_t depth = 0;
    for (const function_line& f : result.functions) {
      if (time && (f.exclusive < 0 || !at_most(f.exclusive, f.inclusive)))
        error(0, fmt::format("'{}': not 0 <= excl <= incl ({} {}) (L3)", f.name, f.exclusive, f.inclusive));
      const bool is_path = f.name.find(path_separator) != std::string::npos;
      if (!is_path) {
        if (f.group.rfind("TAU_CALLPATH", 0) == 0)
          error(0, fmt::format("'{}': a flat entry in group {} (P1)", f.name, f.group));
        continue;
      }
      if (depth == 0 && (depth = callpath_depth(result)) == 0) depth = std::numeric_limits<std::size_t>::max();
      const std::vector<std::string_view> parts = split(f.name, path_separator);
      components[f.name] = parts.size();
      const std::string leaf{parts.back()};
      const std::string parent{std::string_view{f.name}.substr(0, f.name.size() - leaf.size() - path_separator.size())};
      if (parts.front() != application)
        error(0, fmt::format("'{}': does not start at '.TAU application' (P1)", f.name));
      if (parts.size() > depth)
        error(0, fmt::format("'{}': {} names, more than TAU_CALLPATH_DEPTH {} (P1)", f.name, parts.size(), depth));
      const auto flat = by_name.find(leaf);
      if (flat == by_name.end()) {
        error(0, fmt::format("'{}': no flat entry for '{}' (P2)", f.name, leaf));
        continue;
      }
      if (f.group != "TAU_CALLPATH|" + flat->second->group)
        error(0, fmt::format("'{}': group {} for a leaf of group {} (P1)", f.name, f.group, flat->second->group));
      if (parent != application && by_name.find(parent) == by_name.end())
        error(0, fmt::format("'{}': no entry for its caller path (P2)", f.name));
      leaf_totals& totals = leaves[leaf];
      totals.calls += f.calls;
      totals.subroutines += f.subroutines;
      totals.exclusive += f.exclusive;
      if (std::find(parts.begin(), parts.end() - 1, std::string_view{leaf}) == parts.end() - 1)
        totals.inclusive += f.inclusive;
      path_totals& siblings = children[parent];
      siblings.child_calls += f.calls;
      siblings.child_inclusive += f.inclusive;
    }
    if (depth == 0) return;  // no call paths
    std::uint64_t flat_calls_beyond_paths = 0;
    for (const function_line& f : result.functions) {
      if (f.name == application || f.name.find(path_separator) != std::string::npos) {
        const auto it = components.find(f.name);
        check_children(f, children, it != components.end() && it->second == depth, time);
        continue;
      }
      const auto it = leaves.find(f.name);
      if (it == leaves.end()) {
        if (folded == 0) error(0, fmt::format("'{}': no call path (P2)", f.name));
        flat_calls_beyond_paths += f.calls;  // all its calls were folded
        continue;
      }
      const leaf_totals& t = it->second;
      flat_calls_beyond_paths += f.calls - std::min(f.calls, t.calls);
      const bool same = t.calls == f.calls && t.subroutines == f.subroutines && close(t.exclusive, f.exclusive) &&
                        close(t.inclusive, f.inclusive);
      const bool within = t.calls <= f.calls && t.subroutines <= f.subroutines &&
                          (!time || (at_most(t.exclusive, f.exclusive) && at_most(t.inclusive, f.inclusive)));
      if (!(folded == 0 ? same : within))
        error(0, fmt::format("'{}': calls/subrs/excl/incl {}/{}/{}/{} but its paths add up to {}/{}/{}/{}{} (P3)",
                             f.name, f.calls, f.subroutines, f.exclusive, f.inclusive, t.calls, t.subroutines,
                             t.exclusive, t.inclusive, folded == 0 ? "" : " (more than the flat entry)"));
    }
    if (flat_calls_beyond_paths != folded)
      error(0, fmt::format("the flat entries have {} calls more than their paths, but callpath-folded-calls is "
                           "{} (P3)",
                           flat_calls_beyond_paths, folded));
  }

  // P4 for one path (or the root); `at_limit`: a path of TAU_CALLPATH_DEPTH names.
  void check_children(const function_line& f, const std::unordered_map<std::string, path_totals>& children,
                      bool at_limit, bool time) {
    const auto it = children.find(f.name);
    const path_totals none{};
    const path_totals& c = it == children.end() ? none : it->second;
    if (at_limit) {
      if (time && !at_most(f.exclusive, f.inclusive - c.child_inclusive))
        error(0, fmt::format("'{}': excl {} more than incl {} at the call-path limit (P4)", f.name, f.exclusive,
                             f.inclusive));
      return;
    }
    if (c.child_calls != f.subroutines)
      error(0, fmt::format("'{}': subrs {} but its child paths have {} calls (P4)", f.name, f.subroutines, c.child_calls));
    const double expected = f.inclusive - c.child_inclusive;
    const bool whole_units = f.name == application;  // rounded to whole units (L6)
    if (whole_units ? std::fabs(f.exclusive - expected) > 1.0 + 1e-9 * std::fabs(f.inclusive)
                    : !close(f.exclusive, expected))
      error(0, fmt::format("'{}': excl {} but incl {} - child paths' incl {} = {} (P4)", f.name, f.exclusive,
                           f.inclusive, c.child_inclusive, expected));
  }

  void check_user_events(const profile& result) {
    std::unordered_map<std::string, const user_event_line*> by_name;
    for (const user_event_line& e : result.user_events)
      if (!by_name.emplace(e.name, &e).second) error(0, fmt::format("user event '{}' appears twice (U1)", e.name));
    struct context_totals {
      std::uint64_t count = 0;
      double max = -INFINITY, min = INFINITY;
    };
    std::map<std::string, context_totals> contexts;
    for (const user_event_line& e : result.user_events) {
      const std::size_t at = e.name.find(context_separator);
      if (at == std::string::npos) continue;
      if (e.name.rfind(context_separator) != at) {
        error(0, fmt::format("context event '{}': more than one ' : ' (ParaProf splits at the last) (U3)", e.name));
        continue;
      }
      const std::string event = e.name.substr(0, at);
      const std::string path = e.name.substr(at + context_separator.size());
      if (by_name.find(event) == by_name.end())
        error(0, fmt::format("context event '{}': no user event '{}' (U3)", e.name, event));
      if (path != application && result.function(path) == nullptr)
        error(0, fmt::format("context event '{}': no entry '{}' (U3)", e.name, path));
      context_totals& t = contexts[event];
      t.count += e.count;
      t.max = std::max(t.max, e.max);
      t.min = std::min(t.min, e.min);
    }
    for (const auto& [event, t] : contexts) {
      const auto it = by_name.find(event);
      if (it == by_name.end()) continue;
      const user_event_line& e = *it->second;
      if (t.count != e.count || !close(t.max, e.max) || !close(t.min, e.min))
        error(0, fmt::format("user event '{}': count/max/min {}/{}/{} but its contexts give {}/{}/{} (U3)", event,
                             e.count, e.max, e.min, t.count, t.max, t.min));
    }
  }

  report& report_;
  std::string name_;
};

std::optional<std::string> read_whole(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct profile_id {
  std::uint64_t node, context, thread;
};

std::optional<profile_id> profile_file_name(const std::string& name) {
  constexpr std::string_view prefix = "profile.";
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::vector<std::string_view> parts = split(std::string_view{name}.substr(prefix.size()), ".");
  if (parts.size() != 3) return std::nullopt;
  const auto n = unsigned_integer(parts[0]), c = unsigned_integer(parts[1]), t = unsigned_integer(parts[2]);
  if (!n || !c || !t) return std::nullopt;
  return profile_id{*n, *c, *t};
}

// The profile files of one directory, checked one by one (D1).
std::map<std::string, profile> check_files(report& r, const std::filesystem::path& directory,
                                           const std::string& prefix, std::string_view metric) {
  std::map<std::string, profile> found;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::set<std::uint64_t>> threads;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("profile.", 0) != 0) continue;
    const auto id = profile_file_name(name);
    if (!id || !entry.is_regular_file()) {
      add_error(r, fmt::format("{}{}: not a profile.N.C.T file (D1)", prefix, name));
      continue;
    }
    threads[{id->node, id->context}].insert(id->thread);
    const auto text = read_whole(entry.path());
    if (!text) {
      add_error(r, fmt::format("{}{}: cannot be read", prefix, name));
      continue;
    }
    file_checker checker{r, prefix + name};
    if (auto parsed = checker.parse(*text, metric)) found.emplace(prefix + name, std::move(*parsed));
  }
  if (error) add_error(r, fmt::format("{}: cannot be listed: {}", directory.string(), error.message()));
  for (const auto& [node_context, numbers] : threads)
    if (*numbers.rbegin() + 1 != numbers.size())
      add_error(r, fmt::format("{}profile.{}.{}.*: thread numbers are not 0..{} (D1)", prefix, node_context.first,
                               node_context.second, numbers.size() - 1));
  return found;
}

// D3: the profiles of two metrics describe the same functions and events.
void compare_metrics(report& r, const std::string& file, const profile& a, const profile& b, const std::string& other) {
  bool same = a.functions.size() == b.functions.size() && a.user_events.size() == b.user_events.size();
  for (std::size_t i = 0; same && i < a.functions.size(); ++i)
    same = a.functions[i].name == b.functions[i].name && a.functions[i].calls == b.functions[i].calls &&
           a.functions[i].subroutines == b.functions[i].subroutines;
  for (std::size_t i = 0; same && i < a.user_events.size(); ++i)
    same = a.user_events[i].name == b.user_events[i].name && a.user_events[i].count == b.user_events[i].count;
  if (!same)
    add_error(r, fmt::format("{}: functions or user events differ from {} (D3)", file, other));
}

// J1, J2 over the files of one metric (`prefix`: "" or "MULTI__<m>/").
void check_job(report& r, const std::map<std::string, profile>& profiles, const std::string& prefix) {
  std::map<std::uint64_t, std::set<std::uint64_t>> contexts;  // node -> contexts
  std::map<std::uint64_t, const profile*> first_threads;       // node -> profile.N.0.0
  std::optional<std::pair<std::string, std::string>> callpath;
  std::string callpath_file;
  for (const auto& [file, p] : profiles) {
    if (file.rfind(prefix, 0) != 0 || file.find('/', prefix.size()) != std::string::npos) continue;
    const auto id = profile_file_name(file.substr(prefix.size()));
    if (!id) continue;
    contexts[id->node].insert(id->context);
    if (id->context == 0 && id->thread == 0) first_threads[id->node] = &p;
    const std::pair<std::string, std::string> setting{p.attribute("TAU_CALLPATH"),
                                                      p.attribute("TAU_CALLPATH_DEPTH")};
    if (!callpath) {
      callpath = setting;
      callpath_file = file;
    } else if (setting != *callpath) {
      add_error(r, fmt::format("{}: TAU_CALLPATH '{}', TAU_CALLPATH_DEPTH '{}' differ from {}'s (J2)", file,
                               setting.first, setting.second, callpath_file));
    }
  }
  if (contexts.empty()) return;
  const std::uint64_t nodes = contexts.size();
  if (contexts.rbegin()->first + 1 != nodes)
    add_error(r, fmt::format("{}profile.N.*: nodes are not 0..{} ({} nodes, the highest {}) (J1)", prefix,
                             nodes - 1, nodes, contexts.rbegin()->first));
  for (const auto& [node, node_contexts] : contexts)
    if (node_contexts.count(0) == 0)
      add_error(r, fmt::format("{}profile.{}.0.*: missing: node {} has no context 0 (J1)", prefix, node, node));
  const bool mpi = std::any_of(first_threads.begin(), first_threads.end(),
                               [](const auto& entry) { return !entry.second->attribute("mpi-size").empty(); });
  if (!mpi) return;
  for (const auto& [node, p] : first_threads) {
    const std::string size = p->attribute("mpi-size"), rank = p->attribute("mpi-rank");
    if (size != fmt::format("{}", nodes) || rank != fmt::format("{}", node))
      add_error(r, fmt::format("{}profile.{}.0.0: mpi-rank '{}', mpi-size '{}' in a job of {} nodes (J2)", prefix,
                               node, rank, size, nodes));
  }
}

}  // namespace

const function_line* profile::function(std::string_view name) const {
  for (const function_line& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

const user_event_line* profile::user_event(std::string_view name) const {
  for (const user_event_line& e : user_events)
    if (e.name == name) return &e;
  return nullptr;
}

std::string profile::attribute(std::string_view name) const {
  for (const auto& [key, value] : metadata)
    if (key == name) return value;
  return {};
}

const profile* report::find(std::uint64_t node, std::uint64_t thread, std::string_view metric) const {
  const std::string file = fmt::format("profile.{}.0.{}", node, thread);
  auto it = profiles.find(file);
  if (it == profiles.end()) it = profiles.find(fmt::format("MULTI__{}/{}", metric, file));
  return it == profiles.end() ? nullptr : &it->second;
}

std::string xml_error(std::string_view text) {
  xml_parser parser{text};
  return parser.document() ? std::string{} : parser.error();
}

report check_profile_text(std::string_view text, std::string_view name, std::string_view metric) {
  report r;
  file_checker checker{r, std::string{name}};
  if (auto parsed = checker.parse(text, metric)) {
    r.metrics.push_back(parsed->metric);
    r.profiles.emplace(std::string{name}, std::move(*parsed));
  }
  return r;
}

report check_directory(const std::string& directory) {
  report r;
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(directory, error)) {
    add_error(r, fmt::format("{}: not a directory", directory));
    return r;
  }
  std::vector<std::string> multi;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("MULTI__", 0) == 0 && entry.is_directory()) multi.push_back(name);
  }
  std::sort(multi.begin(), multi.end());
  r.profiles = check_files(r, directory, "", {});
  const bool plain = !r.profiles.empty() || r.error_count != 0;
  if (plain && !multi.empty()) add_error(r, "both profile files and MULTI__ directories (D2)");
  if (!plain && multi.empty()) add_error(r, "no profile files and no MULTI__ directories (D2)");
  if (plain) {
    std::set<std::string> metrics;
    for (const auto& [file, p] : r.profiles) metrics.insert(p.metric);
    r.metrics.assign(metrics.begin(), metrics.end());
    if (metrics.size() > 1) add_error(r, "profile files of several metrics outside MULTI__ directories (D2)");
    check_job(r, r.profiles, "");
    return r;
  }
  std::vector<std::string> first_files;
  for (const std::string& name : multi) {
    const std::string metric = name.substr(7);
    r.metrics.push_back(metric);
    std::map<std::string, profile> found = check_files(r, fs::path{directory} / name, name + "/", metric);
    std::vector<std::string> files;
    for (const auto& [file, p] : found) files.push_back(file.substr(name.size() + 1));
    if (name == multi.front()) {
      first_files = files;
    } else if (files != first_files) {
      add_error(r, fmt::format("{}/ does not hold the same files as {}/ (D3)", name, multi.front()));
    } else {
      for (const auto& [file, p] : found) {
        const std::string other = multi.front() + "/" + file.substr(name.size() + 1);
        const auto it = r.profiles.find(other);
        if (it != r.profiles.end()) compare_metrics(r, file, p, it->second, other);
      }
    }
    r.profiles.merge(found);
  }
  for (const std::string& name : multi) check_job(r, r.profiles, name + "/");
  return r;
}

}  // namespace ferret::tau_check
