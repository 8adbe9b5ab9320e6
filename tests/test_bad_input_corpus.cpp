// The bad-input corpus as data (tests/bad_input/cases.yaml, files in tests/bad_input/files/): every case runs the
// sapp binary and checks its exit code, that its one error line names what it must, that nothing went to stdout
// and that no output file was left behind. A pending case states what sapp should do once another change lands
// and is skipped with its reason until then.
#include <cctype>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/files.hpp"
#include "helpers.hpp"

namespace fs = std::filesystem;

namespace {

struct CorpusCase {
  std::string name;
  std::string args;
  int exit_code = 1;
  std::vector<std::string> says;
  bool pending = false;
  std::string reason;
};

// What GoogleTest prints for a case: its name.
void PrintTo(const CorpusCase& c, std::ostream* os) { *os << c.name; }

std::string corpus_dir() { return std::string(SAPP_SOURCE_DIR) + "/tests/bad_input"; }

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

std::vector<CorpusCase> load_cases() {
  std::string file = corpus_dir() + "/cases.yaml";
  nlohmann::json tree = sapp::io::read_tree(file);
  sapp::io::Reader top{tree, file, ""};
  top.only({"cases"});
  std::vector<CorpusCase> out;
  const auto& list = tree.at("cases");
  for (std::size_t i = 0; i < list.size(); ++i) {
    sapp::io::Reader rd{list[i], file, "cases[" + std::to_string(i) + "]"};
    rd.only({"name", "args", "exit", "says", "pending", "reason"});
    CorpusCase c;
    c.name = rd.string("name");
    c.args = rd.string("args");
    c.exit_code = static_cast<int>(rd.integer("exit"));
    for (const auto& s : list[i].at("says")) c.says.push_back(s.get<std::string>());
    c.pending = rd.boolean_or("pending", false);
    c.reason = rd.string_or("reason", "");
    out.push_back(c);
  }
  return out;
}

// A test name from a case name: letters and digits, words joined by '_'.
std::string test_name(const std::string& name) {
  std::string out;
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

class BadInputCorpus : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(BadInputCorpus, RefusedByName) {
  const CorpusCase& c = GetParam();
  if (c.pending) GTEST_SKIP() << "pending: " << c.reason;
  std::string dir = sapp::test::temp_dir();
  std::string output = dir + "/result.out";
  std::string args = replace_all(replace_all(c.args, "{files}", corpus_dir() + "/files"), "{data}", sapp::test::data_dir());
  bool takes_output = args.rfind("check", 0) != 0;
  auto r = sapp::test::run_sapp(takes_output ? args + " --output " + output : args);
  EXPECT_EQ(r.status, c.exit_code) << c.name << ": " << r.err;
  EXPECT_TRUE(r.out.empty()) << c.name << ": printed to stdout: " << r.out;
  EXPECT_FALSE(fs::exists(output)) << c.name << ": left an output file";
  std::string line = r.err;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  EXPECT_FALSE(line.empty()) << c.name << ": no error message";
  EXPECT_EQ(line.find('\n'), std::string::npos) << c.name << ": more than one line: " << r.err;
  for (const auto& s : c.says) EXPECT_NE(r.err.find(s), std::string::npos) << c.name << ": '" << s << "' not in: " << r.err;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputCorpus, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& param) { return test_name(param.param.name); });

TEST(BadInputCorpusTable, HasSixtyCasesWithUniqueNamesAndEveryFileUsed) {
  auto cases = load_cases();
  EXPECT_GE(cases.size(), 60U);
  std::set<std::string> names;
  std::string all_args;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(test_name(c.name)).second) << "two cases named " << c.name;
    EXPECT_TRUE(c.exit_code == 1 || c.exit_code == 2) << c.name << ": exit " << c.exit_code;
    EXPECT_FALSE(c.says.empty()) << c.name << ": names nothing the message must hold";
    EXPECT_TRUE(!c.pending || !c.reason.empty()) << c.name << ": pending without a reason";
    all_args += c.args + " ";
  }
  // Every file of the corpus is used by some case (hw-good.yaml and model-good.json are the controls).
  for (const auto& entry : fs::directory_iterator(corpus_dir() + "/files")) {
    std::string name = entry.path().filename().string();
    if (name == "model-good.json") continue;
    EXPECT_NE(all_args.find("/" + name), std::string::npos) << name << " is used by no case";
  }
}

TEST(BadInputCorpusTable, TheControlsAreAccepted) {
  for (const char* name : {"hw-good.yaml", "model-good.json"}) {
    auto r = sapp::test::run_sapp("check " + corpus_dir() + "/files/" + name);
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find(std::string(name) + ": ok ("), std::string::npos) << r.out;
  }
}

// `sapp check` on every bundled data file: ok, and the kind told from the file's keys is the folder's.
TEST(Check, EveryBundledFileIsOkAsItsKind) {
  std::string root = SAPP_SOURCE_DIR;
  std::vector<std::pair<std::string, std::string>> files = {{"data/op_records.yaml", "op-records"},       {"data/frameworks.yaml", "frameworks"},
                                                            {"data/layers/demo.json", "layers"},          {"examples/manual-strategy.yaml", "manual"},
                                                            {"examples/measured-peaks.yaml", "measured"}, {"validation/runs-h100-fp8.yaml", "runs"},
                                                            {"validation/runs.yaml", "validation"}};
  for (const auto& [folder, kind] :
       std::vector<std::pair<std::string, std::string>>{{"data/hardware", "hardware"}, {"data/models", "model"}, {"data/op_profiles", "op-profile"}}) {
    for (const auto& entry : fs::directory_iterator(root + "/" + folder)) files.emplace_back(folder + "/" + entry.path().filename().string(), kind);
  }
  for (const auto& [file, kind] : files) {
    auto r = sapp::test::run_sapp("check " + root + "/" + file);
    EXPECT_EQ(r.status, 0) << file << ": " << r.err;
    EXPECT_EQ(r.out, root + "/" + file + ": ok (" + kind + ")\n") << file;
  }
}

}  // namespace
