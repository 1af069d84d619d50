// Unit tests of the strict TAU profile checker (tools/ferret-tau-check): a
// valid profile passes, and each rule fails on a file that breaks it.
#include "tau_check.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

namespace tc = ferret::tau_check;

constexpr std::string_view header_metadata =
    "<metadata><attribute><name>Metric Name</name><value>TIME</value></attribute>"
    "<attribute><name>Hostname</name><value>node &amp; 1 &#x23;2 &#xF6;</value></attribute>"
    "<attribute><name>TAU_CALLPATH</name><value>on</value></attribute>"
    "<attribute><name>TAU_CALLPATH_DEPTH</name><value>32</value></attribute></metadata>";

// A valid profile: main called twice from the root, compute once from each
// main, extra once from the root. The root's times are whole numbers (its
// exclusive time 99.5 rounded).
std::string valid_profile() {
  return std::string{
             "7 templated_functions_MULTI_TIME\n"
             "# Name Calls Subrs Excl Incl ProfileCalls # "} +
         std::string{header_metadata} +
         "\n"
         "\".TAU application\" 1 3 100 1000 0 GROUP=\"TAU_DEFAULT\" \n"
         "\"main\" 2 2 300 900 0 GROUP=\"TAU_USER\" \n"
         "\"compute [{a.cpp} {3,0}]\" 2 0 600 600 0 GROUP=\"TAU_USER\" \n"
         "\".TAU application => main\" 2 2 300 900 0 GROUP=\"TAU_CALLPATH|TAU_USER\" \n"
         "\".TAU application => main => compute [{a.cpp} {3,0}]\" 2 0 600 600 0 "
         "GROUP=\"TAU_CALLPATH|TAU_USER\" \n"
         "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n"
         "\".TAU application => extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_CALLPATH|TAU_USER\" \n"
         "0 aggregates\n"
         "3 userevents\n"
         "# eventname numevents max min mean sumsqr\n"
         "\"bytes\" 2 30 10 20 1000\n"
         "\"bytes : .TAU application => main\" 1 30 30 30 900\n"
         "\"bytes : .TAU application\" 1 10 10 10 100\n";
}

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "test text lacks: " << from);
  text.replace(at, from.size(), to);
  return text;
}

std::string all_errors(const tc::report& r) {
  std::string text;
  for (const std::string& line : r.errors) text += line + "\n";
  return text;
}

bool has_error(const tc::report& r, std::string_view needle) {
  for (const std::string& line : r.errors)
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

// The text fails with an error line containing `needle`.
void check_fails(const std::string& text, std::string_view needle) {
  const tc::report r = tc::check_profile_text(text);
  INFO(all_errors(r));
  CHECK_FALSE(r.ok());
  CHECK_MESSAGE(has_error(r, needle), "no error mentions: " << needle);
}

class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ferret-tau-check-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error(std::strerror(errno));
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream{file} << text;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace

TEST_CASE("a valid profile passes and is read back") {
  const tc::report r = tc::check_profile_text(valid_profile());
  INFO(all_errors(r));
  REQUIRE(r.ok());
  const tc::profile& p = r.profiles.begin()->second;
  CHECK(p.metric == "TIME");
  CHECK(p.attribute("Hostname") == "node & 1 #2 ö");
  REQUIRE(p.functions.size() == 7);
  const tc::function_line* compute = p.function("compute [{a.cpp} {3,0}]");
  REQUIRE(compute != nullptr);
  CHECK(compute->calls == 2);
  CHECK(compute->inclusive == 600);
  CHECK(compute->group == "TAU_USER");
  REQUIRE(p.user_event("bytes") != nullptr);
  CHECK(p.user_event("bytes")->sum_of_squares == 1000);
}

TEST_CASE("layout rules: counts, column header, aggregates, line ends") {
  check_fails(replaced(valid_profile(), "7 templated", "8 templated"), "function lines announced");
  check_fails(replaced(valid_profile(), "7 templated", "6 templated"), "expected '0 aggregates'");
  check_fails(replaced(valid_profile(), "templated_functions_MULTI_TIME", "templated_functions"),
              "templated_functions_MULTI_");
  check_fails(replaced(valid_profile(), "ProfileCalls # ", "ProfileCalls "), "expected '# Name");
  check_fails(replaced(valid_profile(), "0 aggregates\n", ""), "expected '0 aggregates'");
  check_fails(replaced(valid_profile(), "3 userevents", "4 userevents"), "user events announced");
  check_fails(replaced(valid_profile(), "# eventname", "# event name"), "expected '# eventname");
  check_fails(valid_profile() + "more\n", "text after the user events");
  std::string unterminated = valid_profile();
  unterminated.pop_back();
  check_fails(unterminated, "user events announced");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"extr\xff\""), "UTF-8");
}

TEST_CASE("metadata: well-formed XML, Metric Name first and equal to the metric") {
  check_fails(replaced(valid_profile(), "node &amp; 1", "node & 1"), "well-formed");
  check_fails(replaced(valid_profile(), "<value>TIME</value>", "<value>TIME</valu>"), "well-formed");
  check_fails(replaced(valid_profile(), "<name>Metric Name</name>", "<name>Metric</name>"),
              "'Metric Name'");
  check_fails(replaced(valid_profile(), "<value>TIME</value>", "<value>CYCLES</value>"),
              "Metric Name 'CYCLES'");
  check_fails(replaced(valid_profile(), "&#x23;2", " #2"), "(M3)");
  check_fails(replaced(valid_profile(), "<attribute><name>Hostname", "<other><name>Hostname"),
              "well-formed");
}

TEST_CASE("the XML check is strict") {
  CHECK(tc::xml_error("<a>text &amp; &lt; &#233; &#xe9;<b x='1' y=\"2\"/><![CDATA[<&]]></a>").empty());
  CHECK(tc::xml_error("<a><!-- note --></a>").empty());
  CHECK_FALSE(tc::xml_error("<a>").empty());
  CHECK_FALSE(tc::xml_error("<a></b>").empty());
  CHECK_FALSE(tc::xml_error("<a>&nbsp;</a>").empty());
  CHECK_FALSE(tc::xml_error("<a>&#0;</a>").empty());
  CHECK_FALSE(tc::xml_error("<a>x < y</a>").empty());
  CHECK_FALSE(tc::xml_error("<a>]]></a>").empty());
  CHECK_FALSE(tc::xml_error("<a x=1></a>").empty());
  CHECK_FALSE(tc::xml_error("<a x='1' x='2'></a>").empty());
  CHECK_FALSE(tc::xml_error("<a></a><b></b>").empty());
  CHECK_FALSE(tc::xml_error("<a>\x01</a>").empty());
  CHECK_FALSE(tc::xml_error("<1a></1a>").empty());
  CHECK_FALSE(tc::xml_error("<a><!-- x -- y --></a>").empty());
}

TEST_CASE("function lines: columns, quotes, trailing blank, values") {
  const std::string extra = "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n";
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1x 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n"),
              "bad columns");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 0.5 nan 0 GROUP=\"TAU_USER\" \n"),
              "bad columns");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 0.5 0x1 0 GROUP=\"TAU_USER\" \n"),
              "bad columns");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 0.5 0.5 1 GROUP=\"TAU_USER\" \n"),
              "bad columns");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\"\n"),
              "after the name");
  check_fails(replaced(valid_profile(), extra, "\"ex\"tra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n"),
              "after the name");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 0 0 0 0 0 GROUP=\"TAU_USER\" \n"), "0 calls");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 0.6 0.5 0 GROUP=\"TAU_USER\" \n"),
              "(L3)");
  check_fails(replaced(valid_profile(), extra, "\"extra\" 1 0 -1 0.5 0 GROUP=\"TAU_USER\" \n"), "(L3)");
  check_fails(replaced(valid_profile(), "\"extra\" 1 0", "\"main\" 1 0"), "appears twice");
  check_fails(replaced(valid_profile(), "\".TAU application\" 1 3", "\".TAU application\" 2 3"),
              "not 1 call");
  check_fails(replaced(valid_profile(), extra, "\"ex\rtra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n"),
              "control character");
}

TEST_CASE("call paths agree with the flat entries and with each other") {
  // calls of the paths do not add up to the flat calls
  check_fails(replaced(valid_profile(), "\"compute [{a.cpp} {3,0}]\" 2 0 600 600",
                       "\"compute [{a.cpp} {3,0}]\" 3 0 600 600"),
              "(P3)");
  // inclusive does not add up
  check_fails(replaced(valid_profile(), "\"compute [{a.cpp} {3,0}]\" 2 0 600 600",
                       "\"compute [{a.cpp} {3,0}]\" 2 0 600 700"),
              "(P3)");
  // a path's group is not TAU_CALLPATH|<leaf group>
  check_fails(replaced(valid_profile(), "600 600 0 GROUP=\"TAU_CALLPATH|TAU_USER\"",
                       "600 600 0 GROUP=\"TAU_CALLPATH\""),
              "(P1)");
  // a flat entry in TAU_CALLPATH
  check_fails(replaced(valid_profile(), "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\"",
                       "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_CALLPATH|TAU_USER\""),
              "(P1)");
  // subrs of a path are not the calls of its children
  check_fails(replaced(valid_profile(), "\".TAU application => main\" 2 2", "\".TAU application => main\" 2 3"),
              "(P4)");
  // exclusive is not inclusive minus the children's inclusive (the root: by more than rounding)
  check_fails(replaced(valid_profile(), "\".TAU application => main\" 2 2 300 900",
                       "\".TAU application => main\" 2 2 300 901"),
              "(P4)");
  check_fails(replaced(valid_profile(), "\".TAU application\" 1 3 100 1000", "\".TAU application\" 1 3 98 1000"),
              "(P4)");
  CHECK(tc::check_profile_text(
            replaced(valid_profile(), "\".TAU application\" 1 3 100 1000", "\".TAU application\" 1 3 99 1000"))
            .ok());
  // a path whose caller path is missing, and a flat entry without paths
  const std::string orphan = replaced(
      replaced(valid_profile(), "\".TAU application => main\" 2 2 300 900 0 GROUP=\"TAU_CALLPATH|TAU_USER\" \n", ""),
      "7 templated", "6 templated");
  check_fails(orphan, "caller path");
  check_fails(orphan, "no call path");
}

TEST_CASE("user events: statistics and contexts") {
  check_fails(replaced(valid_profile(), "\"bytes\" 2 30 10 20 1000", "\"bytes\" 2 30 10 40 1000"), "(U2)");
  check_fails(replaced(valid_profile(), "\"bytes\" 2 30 10 20 1000", "\"bytes\" 2 30 10 20 700"), "(U2)");
  check_fails(replaced(valid_profile(), "\"bytes\" 2 30 10 20 1000", "\"bytes\" 3 30 10 20 1500"), "(U3)");
  check_fails(replaced(valid_profile(), "\"bytes : .TAU application => main\"", "\"bytes : .TAU application => nowhere\""),
              "(U3)");
  check_fails(replaced(valid_profile(), "\"bytes\" 2 30 10 20 1000", "\"bytes\" 0 30 10 20 1000"), "bad columns");
}

// --- what TAU's readers do: each rule fails on the profile that breaks its reader ---

TEST_CASE("ParaProf: an empty name makes it drop the rest of the file") {
  check_fails(replaced(valid_profile(), "\"extra\" 1 0", "\"\" 1 0"), "ParaProf reads \"\"");
}

TEST_CASE("ParaProf: without TAU_CALLPATH=on it shows every region twice in its call tree") {
  const std::string on = "<attribute><name>TAU_CALLPATH</name><value>on</value></attribute>";
  check_fails(replaced(valid_profile(), on, ""), "(M5)");
  check_fails(replaced(valid_profile(), "<value>on</value>", "<value>off</value>"), "(M5)");
  check_fails(replaced(valid_profile(), "<value>32</value>", "<value>1</value>"), "(M5)");
}

TEST_CASE("ParaProf: bytes beyond ASCII in the metadata become blanks") {
  check_fails(replaced(valid_profile(), "&#xF6;", "\xC3\xB6"), "(M4)");
}

TEST_CASE("ParaProf: a name that looks like a source annotation and is not one throws") {
  check_fails(replaced(valid_profile(), "\"extra\"", "\"x [{f.cpp} {abc,1}]\""), "(L5)");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"x [{f.cpp} {1,1}-{2,z}]\""), "(L5)");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"x [ <n> ]\""), "(L5)");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"OpenMP location: here\""), "(L5)");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"read file: x line: y\""), "(L5)");
  check_fails(replaced(valid_profile(), "\"extra\"", "\"!$omp do @a.f:x\""), "(L5)");
  // TAU's own forms pass
  for (const char* name : {"x [{f.cpp} {12}]", "x [{f.cpp} {12,3}]", "x [{f.cpp} {1,1}-{5,5}]",
                           "x [ <n> = <3> ]", "x [ {f.cpp} {abc,1}]", "parallel [OpenMP location: file:a.c <31, 48>]",
                           "MPI_Send [file:ring.c line:37]", "!$omp do @a.f:12", "profile: x"}) {
    const std::string text = replaced(replaced(valid_profile(), "\"extra\"", std::string{"\""} + name + "\""),
                                      "\".TAU application => extra\"",
                                      std::string{"\".TAU application => "} + name + "\"");
    const tc::report r = tc::check_profile_text(text);
    INFO(std::string{name} << "\n" << all_errors(r));
    CHECK(r.ok());
  }
}

TEST_CASE("ParaProf: names that differ only in runs of blanks merge") {
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"ex  tra\""), "=> extra\"", "=> ex  tra\""),
              "run of blanks");
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\" extra\""), "=> extra\"", "=>  extra\""),
              "(L4)");
}

TEST_CASE("ParaProf: ' : ' in a function name or twice in a user event breaks its context events") {
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"ex : tra\""), "=> extra\"", "=> ex : tra\""),
              "(L8)");
  check_fails(replaced(replaced(valid_profile(), "\"bytes : .TAU application\" 1",
                                "\"bytes : x : .TAU application\" 1"),
                       "x", "x"),
              "(U3)");
}

TEST_CASE("ParaProf and hatchet: '=>' inside a name reads as a call path") {
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"a=>b\""), "=> extra\"", "=> a=>b\""), "(L8)");
}

TEST_CASE("hatchet: the .TAU application line comes first, in whole numbers") {
  check_fails(replaced(valid_profile(), "\".TAU application\" 1 3 100 1000", "\".TAU application\" 1 3 99.5 1000"),
              "(L6)");
  const std::string root = "\".TAU application\" 1 3 100 1000 0 GROUP=\"TAU_DEFAULT\" \n";
  const std::string extra = "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n";
  check_fails(replaced(replaced(valid_profile(), root, extra), "\"extra\" 1 0 0.5 0.5 0 GROUP=\"TAU_USER\" \n\".TAU",
                       std::string{root} + "\".TAU"),
              "(L6)");
}

TEST_CASE("hatchet: a call path's source location needs integer line numbers") {
  // ParaProf finds the location after the name; hatchet's regular expression
  // starts at the name's first '{' and reads "[a.cpp" as the line.
  const std::string braces = replaced(valid_profile(), "compute [{a.cpp} {3,0}]", "comp{u}te [{a.cpp} {3,0}]");
  check_fails(replaced(braces, "compute [{a.cpp} {3,0}]", "comp{u}te [{a.cpp} {3,0}]"), "(L7)");
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"a [@] b\""), "=> extra\"", "=> a [@] b\""),
              "(L7)");
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"x[{a.cpp} {3,0}]\""), "=> extra\"",
                       "=> x[{a.cpp} {3,0}]\""),
              "(L7)");
}

TEST_CASE("hatchet: a blank before '#' in the metadata") {
  check_fails(replaced(valid_profile(), "&#x23;2", " #2"), "(M3)");
  check_fails(replaced(valid_profile(), "&#x23;2", "\t#2"), "(M3)");
}

TEST_CASE("pprof: a line of 64 KiB or more is cut and its rest read as the next line") {
  const std::string name(64 * 1024, 'x');
  check_fails(replaced(replaced(valid_profile(), "\"extra\"", "\"" + name + "\""), "=> extra\"", "=> " + name + "\""),
              "(F6)");
}

TEST_CASE("a sum of squares beyond the largest double is written as the largest double") {
  const std::string huge = "\"bytes\" 1 1e+200 1e+200 1e+200 1.7976931348623157e+308\n";
  const std::string text = replaced(
      replaced(replaced(valid_profile(), "\"bytes\" 2 30 10 20 1000\n", huge), "3 userevents", "1 userevents"),
      "\"bytes : .TAU application => main\" 1 30 30 30 900\n\"bytes : .TAU application\" 1 10 10 10 100\n", "");
  const tc::report r = tc::check_profile_text(text);
  INFO(all_errors(r));
  CHECK(r.ok());
  check_fails(replaced(text, "1.7976931348623157e+308", "1e+307"), "(U2)");
  check_fails(replaced(text, "1.7976931348623157e+308", "inf"), "bad columns");
  check_fails(replaced(text, "1.7976931348623157e+308", "1e+400"), "bad columns");
}

TEST_CASE("calls nested deeper than TAU_CALLPATH_DEPTH are folded and counted") {
  // Depth 2: paths of at most two names; compute, called inside main, is folded.
  const std::string folded =
      "3 templated_functions_MULTI_TIME\n"
      "# Name Calls Subrs Excl Incl ProfileCalls # <metadata><attribute><name>Metric Name</name><value>TIME</value>"
      "</attribute><attribute><name>TAU_CALLPATH</name><value>on</value></attribute><attribute><name>"
      "TAU_CALLPATH_DEPTH</name><value>2</value></attribute><attribute><name>callpath-folded-calls</name><value>2"
      "</value></attribute></metadata>\n"
      "\".TAU application\" 1 1 100 1000 0 GROUP=\"TAU_DEFAULT\" \n"
      "\"main\" 1 2 300 900 0 GROUP=\"TAU_USER\" \n"
      "\"compute\" 2 0 600 600 0 GROUP=\"TAU_USER\" \n"
      "\".TAU application => main\" 1 2 300 900 0 GROUP=\"TAU_CALLPATH|TAU_USER\" \n"
      "0 aggregates\n";
  const tc::report r = tc::check_profile_text(replaced(folded, "3 templated", "4 templated"));
  INFO(all_errors(r));
  CHECK(r.ok());
  check_fails(replaced(replaced(folded, "3 templated", "4 templated"), "\"compute\" 2 0", "\"compute\" 3 0"),
              "(P3)");
  check_fails(replaced(replaced(folded, "3 templated", "4 templated"), "callpath-folded-calls</name><value>2",
                       "callpath-folded-calls</name><value>1"),
              "(P3)");
  check_fails(replaced(replaced(folded, "3 templated", "4 templated"), "callpath-folded-calls</name><value>2",
                       "callpath-folded-calls</name><value>0"),
              "(P2)");
  check_fails(replaced(replaced(folded, "3 templated", "4 templated"), "<value>2</value></attribute><attribute><name>call",
                       "<value>1</value></attribute><attribute><name>call"),
              "(M5)");
}

TEST_CASE("directories: file names, thread numbers, MULTI__ agreement") {
  SUBCASE("a plain directory passes") {
    temp_dir dir;
    dir.write("profile.0.0.0", valid_profile());
    dir.write("profile.0.0.1", valid_profile());
    const tc::report r = tc::check_directory(dir.path().string());
    INFO(all_errors(r));
    CHECK(r.ok());
    CHECK(r.profiles.size() == 2);
    CHECK(r.find(0, 1) != nullptr);
  }
  SUBCASE("a gap in the thread numbers") {
    temp_dir dir;
    dir.write("profile.0.0.0", valid_profile());
    dir.write("profile.0.0.2", valid_profile());
    CHECK(has_error(tc::check_directory(dir.path().string()), "(D1)"));
  }
  SUBCASE("a bad file name, an empty directory, a missing one") {
    temp_dir dir;
    CHECK(has_error(tc::check_directory(dir.path().string()), "(D2)"));
    dir.write("profile.0.0.x", valid_profile());
    CHECK(has_error(tc::check_directory(dir.path().string()), "(D1)"));
    CHECK(has_error(tc::check_directory((dir.path() / "missing").string()), "not a directory"));
  }
  SUBCASE("MULTI__ directories: same files and functions, the right metric") {
    temp_dir dir;
    const std::string cycles =
        replaced(replaced(valid_profile(), "MULTI_TIME", "MULTI_CYCLES"), "<value>TIME", "<value>CYCLES");
    dir.write("MULTI__TIME/profile.0.0.0", valid_profile());
    dir.write("MULTI__CYCLES/profile.0.0.0", cycles);
    const tc::report good = tc::check_directory(dir.path().string());
    INFO(all_errors(good));
    CHECK(good.ok());
    CHECK(good.metrics == std::vector<std::string>{"CYCLES", "TIME"});
    CHECK(good.find(0, 0, "CYCLES") != nullptr);

    dir.write("MULTI__CYCLES/profile.0.0.0", replaced(cycles, "\"extra\" 1 0", "\"extra\" 2 0"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "(D3)"));
    dir.write("MULTI__CYCLES/profile.0.0.0", valid_profile());
    CHECK(has_error(tc::check_directory(dir.path().string()), "directory of metric 'CYCLES'"));
    dir.write("MULTI__CYCLES/profile.0.0.0", cycles);
    dir.write("MULTI__CYCLES/profile.0.0.1", cycles);
    CHECK(has_error(tc::check_directory(dir.path().string()), "same files"));
    dir.write("profile.0.0.0", valid_profile());
    CHECK(has_error(tc::check_directory(dir.path().string()), "(D2)"));
  }
}

TEST_CASE("jobs: the ranks of an MPI run in one directory, as pprof, ParaProf and hatchet need") {
  const auto rank_profile = [](std::string_view rank, std::string_view size) {
    return replaced(valid_profile(), "</metadata>",
                    "<attribute><name>mpi-rank</name><value>" + std::string{rank} +
                        "</value></attribute><attribute><name>mpi-size</name><value>" +
                        std::string{size} + "</value></attribute></metadata>");
  };
  SUBCASE("nodes 0..N-1 with their ranks pass") {
    temp_dir dir;
    for (int rank = 0; rank < 3; ++rank) dir.write("profile." + std::to_string(rank) + ".0.0", rank_profile(std::to_string(rank), "3"));
    dir.write("profile.1.0.1", rank_profile("1", "3"));
    const tc::report r = tc::check_directory(dir.path().string());
    INFO(all_errors(r));
    CHECK(r.ok());
  }
  SUBCASE("only rank 1's profile, as each rank's own directory held before: pprof finds no node 0") {
    temp_dir dir;
    dir.write("profile.1.0.0", rank_profile("1", "2"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "nodes are not 0..0"));
  }
  SUBCASE("a missing rank") {
    temp_dir dir;
    dir.write("profile.0.0.0", rank_profile("0", "3"));
    dir.write("profile.2.0.0", rank_profile("2", "3"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "(J1)"));
  }
  SUBCASE("a rank of another run (mpi-size), a rank in the wrong file, or no context 0") {
    temp_dir dir;
    dir.write("profile.0.0.0", rank_profile("0", "2"));
    dir.write("profile.1.0.0", rank_profile("1", "4"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "in a job of 2 nodes (J2)"));
    dir.write("profile.1.0.0", rank_profile("0", "2"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "mpi-rank '0'"));
    temp_dir contexts;
    contexts.write("profile.0.0.0", valid_profile());
    contexts.write("profile.1.1.0", valid_profile());
    CHECK(has_error(tc::check_directory(contexts.path().string()), "no context 0 (J1)"));
  }
  SUBCASE("call-path settings that differ between ranks") {
    temp_dir dir;
    dir.write("profile.0.0.0", rank_profile("0", "2"));
    dir.write("profile.1.0.0", replaced(rank_profile("1", "2"), "<value>32<", "<value>16<"));
    CHECK(has_error(tc::check_directory(dir.path().string()), "(J2)"));
  }
}
