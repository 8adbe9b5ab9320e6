#include "helpers.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace sapp::test {

plan::Training training(long long global_batch, long long seq) {
  plan::Training t;
  t.global_batch = global_batch;
  t.seq = seq;
  return t;
}

std::string data_dir() { return std::string(SAPP_SOURCE_DIR) + "/data"; }

const model::Catalog& catalog() {
  static const model::Catalog c = model::load_catalog(data_dir());
  return c;
}

model::Model bundled(const std::string& name) { return model::resolve(model::load_model(name, data_dir()), catalog().records, catalog().profiles); }

void near_published(double got, double published_billions, double rounding_unit_billions, const char* what) {
  double tolerance = std::max(0.005 * published_billions, 0.5 * rounding_unit_billions) * 1e9;
  EXPECT_NEAR(got, published_billions * 1e9, tolerance) << what << ": " << got / 1e9 << " B";
}

hardware::Hardware device(const std::string& name) { return hardware::load_hardware(name, data_dir()); }

void expect_error(const std::function<void()>& f, const std::string& part, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error (one naming '" << part << "' expected)";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << what << ": " << e.what();
  }
}

std::string temp_dir() {
  // Every directory handed out is removed when the test program exits (26 were left in /tmp by one run before).
  struct Created {
    std::vector<std::string> dirs;
    Created() = default;
    Created(const Created&) = delete;
    Created& operator=(const Created&) = delete;
    ~Created() {
      std::error_code ignored;
      for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
    }
  };
  static Created created;
  std::string dir = (std::filesystem::temp_directory_path() / ("sapp_test_" + std::to_string(::getpid()) + "_" + std::to_string(created.dirs.size()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  created.dirs.push_back(dir);
  return dir;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

Run run_sapp(const std::string& args, const std::string& env) {
  std::string dir = temp_dir();
  std::string cmd = env + (env.empty() ? "" : " ") + std::string(SAPP_BINARY) + " " + args + " >" + dir + "/out 2>" + dir + "/err";
  int rc = std::system(cmd.c_str());
  Run r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace sapp::test

#include <stdexcept>

#include "core/files.hpp"

namespace sapp {
std::string io_replace_for_test(const std::string& from, const std::string& to) {
  std::string text = io::read_text(test::data_dir() + "/op_records.yaml");
  auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("test fixture: text not found: " + from);
  return text.replace(at, from.size(), to);
}
nlohmann::json io_yaml_for_test(const std::string& text) { return io::parse_yaml(text, "test.yaml"); }
}  // namespace sapp

namespace sapp::test {
nlohmann::json parse_yaml_for_test(const std::string& text) { return io::parse_yaml(text, "test.yaml"); }
}  // namespace sapp::test
