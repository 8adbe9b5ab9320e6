// config/megatron: Megatron-LM / MindSpeed arguments, from a launch script (bash variables, arrays, line
// continuations, torchrun's device counts) or an arguments file, read into a request and written back.
// Flag meanings: Megatron-LM core_v0.14.0 megatron/training/arguments.py and transformer_block.py; MindSpeed's
// own flags from its arguments.py (docs/configs.md restates what sapp reads).
#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/internal.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "cost/terms.hpp"
#include "model/model_spec.hpp"

namespace sapp::config::detail {

namespace {

struct Shell {
  std::map<std::string, std::vector<std::string>> vars;  // scalars are one-item lists
  std::vector<std::vector<std::string>> commands;        // non-assignment commands, expanded
  std::vector<std::string> assigned;                     // variable names, in the order first assigned
  std::vector<std::string> warnings;                     // what the script does that sapp read only in part
};

// Hand-written scanners for the shell forms read and written here: std::regex matches by recursion, one stack
// frame per character, so a long line (a joined MODEL_ARGS of a few thousand characters, under a sanitiser's
// larger frames) overflowed the stack (fuzz_megatron, 2026-12-07).
bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool shell_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool line_end(char c) { return c == '\n' || c == '\r'; }

// The end of the shell variable name starting at `i` ([A-Za-z_][A-Za-z0-9_]*), or `i` when none starts there.
std::size_t name_end(const std::string& s, std::size_t i) {
  if (i >= s.size() || !name_start(s[i])) return i;
  while (i < s.size() && name_char(s[i])) ++i;
  return i;
}

// `i` past "export" and the blanks after it, when the text there is that; else `i`.
std::size_t past_export(const std::string& s, std::size_t i) {
  if (s.compare(i, 6, "export") != 0 || i + 6 >= s.size() || !shell_space(s[i + 6])) return i;
  i += 6;
  while (i < s.size() && shell_space(s[i])) ++i;
  return i;
}

// NAME=value, NAME+=value or export NAME=value, on one line (a value holding a line break is not one).
struct ShellAssignment {
  std::string name;
  bool append = false;
  std::string value;
};
std::optional<ShellAssignment> shell_assignment(const std::string& line) {
  const std::size_t at = past_export(line, 0);
  const std::size_t end = name_end(line, at);
  if (end == at) return std::nullopt;
  ShellAssignment a;
  a.name = line.substr(at, end - at);
  std::size_t i = end;
  if (i < line.size() && line[i] == '+') {
    a.append = true;
    ++i;
  }
  if (i >= line.size() || line[i] != '=') return std::nullopt;
  a.value = line.substr(i + 1);
  if (std::any_of(a.value.begin(), a.value.end(), line_end)) return std::nullopt;
  return a;
}

// The variable a word names whole ($NAME, ${NAME}), if it is one.
std::optional<std::string> variable_reference(const std::string& w) {
  if (w.empty() || w[0] != '$') return std::nullopt;
  std::size_t i = w.size() > 1 && w[1] == '{' ? 2 : 1;
  const std::size_t end = name_end(w, i);
  if (end == i) return std::nullopt;
  std::size_t tail = end;
  if (tail < w.size() && w[tail] == '}') ++tail;
  if (tail != w.size()) return std::nullopt;
  return w.substr(i, end - i);
}

// A line assigning a plain word: [blanks][export ]NAME=["]word["][blanks][# comment], the word of letters, digits,
// '_', '.' and '-': its parts, so that the word can be replaced keeping the rest.
struct PlainAssignment {
  std::string lead, name, open, close, trail;
};
std::optional<PlainAssignment> plain_assignment(const std::string& line) {
  std::size_t i = 0;
  while (i < line.size() && shell_space(line[i])) ++i;
  const std::size_t at = past_export(line, i);
  const std::size_t end = name_end(line, at);
  if (end == at || end >= line.size() || line[end] != '=') return std::nullopt;
  PlainAssignment a;
  a.lead = line.substr(0, at);
  a.name = line.substr(at, end - at);
  i = end + 1;
  if (i < line.size() && line[i] == '"') a.open = line.substr(i++, 1);
  auto word_char = [](char c) { return name_char(c) || c == '.' || c == '-'; };
  while (i < line.size() && word_char(line[i])) ++i;
  if (i < line.size() && line[i] == '"') a.close = line.substr(i++, 1);
  const std::size_t trail = i;
  while (i < line.size() && shell_space(line[i])) ++i;
  if (i < line.size() && (line[i] != '#' || std::any_of(line.begin() + static_cast<std::ptrdiff_t>(i), line.end(), line_end))) return std::nullopt;
  a.trail = line.substr(trail);
  return a;
}

std::string join_continuations(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (text[i] == '\\' && i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
      i += 2;
      continue;
    }
    out += text[i];
  }
  return out;
}

// Shell text sapp does not evaluate (a variable it does not know, $RANDOM, $?): a variable assigned from it
// stays unknown (run_shell), where a number beyond 64 bits or a division by zero is an error.
struct Unevaluable : Error {
  using Error::Error;
};

long long arith(const std::string& expr, const std::string& where) {
  // Integers with + - * / and no precedence surprises: * and / bind tighter.
  std::vector<long long> terms;
  std::vector<char> ops;
  long long cur = 0;
  char pending = '*';
  long long acc = 1;
  std::size_t i = 0;
  auto flush_term = [&](char next) {
    terms.push_back(acc);
    ops.push_back(next);
    acc = 1;
    pending = '*';
  };
  std::string e;
  for (char c : expr) {
    if (!std::isspace(static_cast<unsigned char>(c))) e += c;
  }
  while (i <= e.size()) {
    if (i < e.size() && std::isdigit(static_cast<unsigned char>(e[i]))) {
      cur = 0;
      while (i < e.size() && std::isdigit(static_cast<unsigned char>(e[i]))) {
        if (__builtin_mul_overflow(cur, 10LL, &cur) || __builtin_add_overflow(cur, static_cast<long long>(e[i++] - '0'), &cur)) {
          fail(where, "a number in $(( {} )) is beyond 64 bits", expr);
        }
      }
      if (pending == '*') {
        if (__builtin_mul_overflow(acc, cur, &acc)) fail(where, "$(( {} )) is beyond 64 bits", expr);
      } else if (cur != 0)
        acc /= cur;
      else
        fail(where, "division by zero in $(( {} ))", expr);
      continue;
    }
    char c = i < e.size() ? e[i] : '\0';
    if (c == '*' || c == '/') {
      pending = c;
    } else if (c == '+' || c == '-' || c == '\0') {
      flush_term(c);
    } else {
      throw Unevaluable(fmt::format("{}: cannot evaluate $(( {} )): only whole numbers with + - * / are read", where, expr));
    }
    ++i;
  }
  long long sum = terms.empty() ? 0 : terms[0];
  for (std::size_t t = 1; t < terms.size(); ++t) {
    bool overflow = ops[t - 1] == '-' ? __builtin_sub_overflow(sum, terms[t], &sum) : __builtin_add_overflow(sum, terms[t], &sum);
    if (overflow) fail(where, "$(( {} )) is beyond 64 bits", expr);
  }
  return sum;
}

// Expands $NAME, ${NAME}, ${NAME:-default}, ${NAME[@]}, ${#NAME[@]}, ${#NAME} and $((...)) in one word; arrays and unquoted
// expansions split into several words.
std::vector<std::string> expand(const std::string& word, const Shell& sh, const std::string& file) {
  std::string out;
  bool split = false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    char c = word[i];
    if (c != '$' || i + 1 >= word.size()) {
      out += c;
      continue;
    }
    if (word.compare(i, 3, "$((") == 0) {
      std::size_t end = word.find("))", i + 3);
      if (end == std::string::npos) throw Unevaluable(fmt::format("{}: unterminated $(( in '{}'", file, word));
      std::string expanded;
      for (const auto& w : expand(word.substr(i + 3, end - i - 3), sh, file)) expanded += w;
      // Bare names are variables inside $(( )): $((MBS * N)).
      std::string inner;
      for (std::size_t k = 0; k < expanded.size();) {
        if (const std::size_t j = name_end(expanded, k); j > k) {
          auto it = sh.vars.find(expanded.substr(k, j - k));
          inner += it != sh.vars.end() && it->second.size() == 1 ? it->second.front() : expanded.substr(k, j - k);
          k = j;
        } else {
          inner += expanded[k++];
        }
      }
      out += std::to_string(arith(inner, file));
      i = end + 1;
      continue;
    }
    std::string name, fallback;
    bool has_fallback = false;
    if (word[i + 1] == '{') {
      std::size_t end = word.find('}', i + 2);
      if (end == std::string::npos) fail(file, "unterminated ${{ in '{}'", word);
      name = word.substr(i + 2, end - i - 2);
      std::size_t dflt = name.find(":-");
      if (dflt != std::string::npos) {
        fallback = name.substr(dflt + 2);
        fallback.erase(std::remove(fallback.begin(), fallback.end(), '"'), fallback.end());
        name = name.substr(0, dflt);
        has_fallback = true;
      }
      if (name.size() > 3 && name.compare(name.size() - 3, 3, "[@]") == 0) {
        name = name.substr(0, name.size() - 3);
        split = true;
      }
      i = end;
      // ${#NAME[@]}: the array's length (a launcher's node count from its list of hosts); ${#NAME}: a string's.
      if (!has_fallback && name.size() > 1 && name.front() == '#') {
        const bool items = split;
        split = false;
        auto it = sh.vars.find(name.substr(1));
        if (it == sh.vars.end())
          out += "${" + name + "}";  // unknown: kept, refused if a flag sapp reads needs it
        else
          out += std::to_string(items ? it->second.size() : it->second.empty() ? 0 : it->second.front().size());
        continue;
      }
    } else {
      std::size_t j = i + 1;
      while (j < word.size() && (std::isalnum(static_cast<unsigned char>(word[j])) || word[j] == '_')) ++j;
      name = word.substr(i + 1, j - i - 1);
      if (name.empty()) {
        out += c;
        continue;
      }
      i = j - 1;
    }
    auto it = sh.vars.find(name);
    if (it != sh.vars.end()) {
      for (std::size_t k = 0; k < it->second.size(); ++k) out += (k ? " " : "") + it->second[k];
      // An array, or a string of several words (ARGS="--a 1 --b 2" expanded as ${ARGS}: bash splits it).
      if (it->second.size() > 1 || (it->second.size() == 1 && it->second.front().find_first_of(" \t\n") != std::string::npos)) split = true;
    } else if (has_fallback) {
      out += fallback;
    } else {
      out += "${" + name + "}";  // unknown: kept, refused if a flag sapp reads needs it
    }
  }
  if (!split) return {out};
  std::vector<std::string> words;
  std::stringstream ss(out);
  for (std::string w; ss >> w;) words.push_back(w);
  return words;
}

// Shell-style words of one line: quotes kept together (their content, quotes removed), comments dropped.
std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur += c;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == '#' && !in_word) break;
    if (line.compare(i, 3, "$((") == 0) {
      // Shell arithmetic is one word, blanks included: $((A + B)).
      std::size_t end = line.find("))", i + 3);
      std::size_t stop = end == std::string::npos ? line.size() : end + 2;
      cur += line.substr(i, stop - i);
      in_word = true;
      i = stop - 1;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (in_word) words.push_back(cur);
  return words;
}

// The script's logical lines: continuations joined, a double-quoted string that spans lines kept on one (its line
// breaks as blanks), and statements separated by an unquoted ';' apart (`TP=2; PP=8`, `if [ .. ]; then`).
std::vector<std::string> statements_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(join_continuations(text));
  std::string pending;
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pending += pending.empty() ? line : " " + line;
    char quote = 0;
    bool comment = false;
    for (std::size_t i = 0; i < pending.size() && !comment; ++i) {
      const char c = pending[i];
      if (c == '\\' && quote != '\'') {
        ++i;  // an escaped character
      } else if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(pending[i - 1])))) {
        comment = true;
      }
    }
    if (quote == '"') continue;  // the string goes on over the next line
    std::string cur;
    quote = 0;
    int depth = 0;  // inside $(( )) or ( ): a ';' there is not a separator
    for (std::size_t i = 0; i < pending.size(); ++i) {
      const char c = pending[i];
      if (c == '\\' && quote != '\'' && i + 1 < pending.size()) {
        cur += c;
        cur += pending[++i];
        continue;
      }
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(pending[i - 1])))) {
        cur += pending.substr(i);
        break;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        depth = std::max(0, depth - 1);
      } else if (c == ';' && depth == 0) {
        if (i + 1 < pending.size() && pending[i + 1] == ';') ++i;  // a case item's ';;'
        out.push_back(cur);
        cur.clear();
        continue;
      }
      cur += c;
    }
    out.push_back(cur);
    pending.clear();
  }
  if (!pending.empty()) out.push_back(pending);
  return out;
}

std::optional<long long> whole_number(const std::string& text);

// A test of `if` / `elif` as scripts write them: [ a == b ], [[ a != b ]], [ a -eq n ] (and -ne -lt -le -gt -ge),
// [ -n a ] / [ -z a ]; words already expanded. None when it is not one of those or a side is not known.
std::optional<bool> shell_test(std::vector<std::string> w) {
  if (w.size() < 2) return std::nullopt;
  const std::string open = w.front(), close = w.back();
  if (!((open == "[" && close == "]") || (open == "[[" && close == "]]"))) return std::nullopt;
  w = std::vector<std::string>(w.begin() + 1, w.end() - 1);
  auto unknown = [](const std::string& x) { return x.find("${") != std::string::npos || x.find('$') != std::string::npos; };
  for (const auto& x : w)
    if (unknown(x)) return std::nullopt;
  if (w.size() == 2 && (w[0] == "-n" || w[0] == "-z")) return (w[0] == "-n") == !w[1].empty();
  if (w.size() == 1 && (w[0] == "-n" || w[0] == "-z")) return w[0] == "-z";  // an empty expansion
  if (w.size() != 3) return std::nullopt;
  const std::string& op = w[1];
  if (op == "==" || op == "=") return w[0] == w[2];
  if (op == "!=") return w[0] != w[2];
  const auto x = whole_number(w[0]), y = whole_number(w[2]);
  if (!x || !y) return std::nullopt;
  if (op == "-eq") return *x == *y;
  if (op == "-ne") return *x != *y;
  if (op == "-lt") return *x < *y;
  if (op == "-le") return *x <= *y;
  if (op == "-gt") return *x > *y;
  if (op == "-ge") return *x >= *y;
  return std::nullopt;
}

Shell run_shell(const std::string& text, const std::string& file) {
  Shell sh;
  std::string pending_array;  // name of an array being filled over several lines
  bool append = false;
  std::vector<std::string> array_items;
  // The array's closing parenthesis: its words (each item split at blanks) go into the variable.
  auto close_array = [&] {
    auto& v = sh.vars[pending_array];
    if (!append) v.clear();
    for (auto& item : array_items) {
      std::stringstream is(item);
      for (std::string w; is >> w;) v.push_back(w);
    }
    pending_array.clear();
    array_items.clear();
  };
  // if / elif / else / fi: the branch whose test holds is read, the others skipped; a test sapp cannot evaluate
  // reads every branch (the last assignment wins) and says so.
  struct Branch {
    bool outer = true;     // the enclosing block is read
    bool reading = true;   // this branch is read
    bool taken = false;    // a branch whose test held came before
    bool guessed = false;  // a test could not be evaluated
  };
  std::vector<Branch> branches;
  auto reading = [&] { return branches.empty() || (branches.back().outer && branches.back().reading); };
  auto test_of = [&](const std::vector<std::string>& words) -> std::optional<bool> {
    std::vector<std::string> expanded;
    try {
      for (std::size_t i = 1; i < words.size(); ++i)
        for (const auto& e : expand(words[i], sh, file)) expanded.push_back(e);
    } catch (const Error&) {
      return std::nullopt;
    }
    // Tests joined by || and && (left to right, as bash runs them), each possibly negated by !.
    std::optional<bool> result;
    std::string joiner;
    std::vector<std::string> one;
    auto fold = [&]() -> bool {
      const bool negate = !one.empty() && one.front() == "!";
      if (negate) one.erase(one.begin());
      const auto held = shell_test(one);
      one.clear();
      if (!held) return false;
      const bool value = negate != *held;
      result = !result ? value : joiner == "||" ? (*result || value) : (*result && value);
      return true;
    };
    for (const auto& w : expanded) {
      if (w == "||" || w == "&&") {
        if (!fold()) return std::nullopt;
        joiner = w;
      } else {
        one.push_back(w);
      }
    }
    if (!fold()) return std::nullopt;
    return result;
  };
  std::set<std::string> guessed_names;  // variables assigned inside a branch whose test was not evaluated
  auto in_guessed = [&] { return std::any_of(branches.begin(), branches.end(), [](const Branch& b) { return b.guessed && b.reading; }); };
  for (const std::string& line : statements_of(text)) {
    std::size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    std::string body = line.substr(a);
    if (pending_array.empty()) {
      const std::vector<std::string> ws = words_of(body);
      const std::string head = ws.empty() ? "" : ws.front();
      if (head == "if") {
        Branch b;
        b.outer = reading();
        const auto held = b.outer ? test_of(ws) : std::optional<bool>(false);
        b.guessed = b.outer && !held;
        b.reading = !held || *held;
        b.taken = held.value_or(false);
        branches.push_back(b);
        continue;
      }
      if ((head == "elif" || head == "else") && !branches.empty()) {
        Branch& b = branches.back();
        if (b.taken) {
          b.reading = false;
        } else if (head == "else") {
          b.reading = true;
        } else {
          const auto held = b.outer ? test_of(ws) : std::optional<bool>(false);
          if (b.outer && !held) b.guessed = true;
          b.reading = !held || *held;
          b.taken = held.value_or(false);
        }
        continue;
      }
      if (head == "fi" && !branches.empty()) {
        branches.pop_back();
        continue;
      }
      if (head == "then" || head == "do" || head == "done") continue;
      if (!reading()) continue;
    }
    if (!pending_array.empty()) {
      std::vector<std::string> ws = words_of(body);
      bool closed = false;
      for (auto& w : ws) {
        if (w == ")") {
          closed = true;
          break;
        }
        if (!w.empty() && w.back() == ')' && w.find('(') == std::string::npos) {
          w.pop_back();
          closed = true;
        }
        if (!w.empty())
          for (const auto& e : expand(w, sh, file)) array_items.push_back(e);
        if (closed) break;
      }
      if (closed) close_array();
      continue;
    }
    if (auto assignment = shell_assignment(body)) {
      std::string name = assignment->name;
      if (in_guessed()) guessed_names.insert(name);
      append = assignment->append;
      std::string value = assignment->value;
      if (!value.empty() && value[0] == '(') {
        pending_array = name;
        if (!sh.vars.count(name)) sh.assigned.push_back(name);
        array_items.clear();
        std::string rest = value.substr(1);
        // one-line array: NAME=(a b c)
        std::size_t close = rest.rfind(')');
        bool closed = close != std::string::npos && rest.find("((") == std::string::npos;
        std::string inner = closed ? rest.substr(0, close) : rest;
        for (const auto& w : words_of(inner))
          for (const auto& e : expand(w, sh, file)) array_items.push_back(e);
        if (closed) close_array();
        continue;
      }
      std::vector<std::string> ws = words_of(value);
      std::string joined;
      try {
        for (const auto& w : ws)
          for (const auto& e : expand(w, sh, file)) joined += (joined.empty() ? "" : " ") + e;
      } catch (const Unevaluable&) {
        // A value sapp cannot evaluate ($RANDOM, $?, a command's output): the variable stays unknown, refused
        // only if a flag sapp reads needs it.
        joined = "${" + name + "}";
      }
      if (!sh.vars.count(name)) sh.assigned.push_back(name);
      sh.vars[name] = {joined};
      continue;
    }
    std::vector<std::string> cmd;
    for (const auto& w : words_of(body))
      for (const auto& e : expand(w, sh, file)) cmd.push_back(e);
    if (!cmd.empty()) sh.commands.push_back(cmd);
  }
  if (!guessed_names.empty())
    sh.warnings.push_back(
        fmt::format("{} set in an if/elif branch whose test sapp could not evaluate (a value it does not know, or a test other than "
                    "==, !=, -eq .. -ge, -n, -z): every branch was read, the last assignment winning",
                    fmt::join(guessed_names, ", ")));
  return sh;
}

const std::set<std::string>& torchrun_flags() {
  static const std::set<std::string> f = {"--nproc_per_node", "--nproc-per-node",   "--nnodes",       "--node_rank",
                                          "--node-rank",      "--master_addr",      "--master-addr",  "--master_port",
                                          "--master-port",    "--rdzv_backend",     "--rdzv-backend", "--rdzv_endpoint",
                                          "--rdzv-endpoint",  "--rdzv_id",          "--rdzv-id",      "--standalone",
                                          "--max_restarts",   "--max-restarts",     "--tee",          "--log_dir",
                                          "--log-dir",        "--redirects",        "--role",         "--local-ranks-filter",
                                          "--no_python",      "--run_path",         "--worker_num",   "--local_worker_num",
                                          "--join",           "--cluster_time_out", "--bind_core",    "--sim_level"};
  return f;
}

const std::set<std::string>& mindspeed_flags() {
  static const std::set<std::string> flags = [] {
    std::set<std::string> out;
    std::stringstream ss(io::read_text(io::data_dir() + "/formats/mindspeed-extra-flags.txt"));
    for (std::string line; std::getline(ss, line);) {
      if (line.rfind("--", 0) == 0) out.insert(line.substr(0, line.find_first_of(" \t")));
    }
    return out;
  }();
  return flags;
}

// A whole number written in full (a sign allowed), or none.
std::optional<long long> whole_number(const std::string& text) {
  std::size_t pos = 0;
  long long out = 0;
  try {
    out = std::stoll(text, &pos);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  return out;
}

// A real number written in full, or none.
std::optional<double> real_number(const std::string& text) {
  std::size_t pos = 0;
  double out = 0;
  try {
    out = std::stod(text, &pos);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (pos != text.size() || !std::isfinite(out)) return std::nullopt;
  return out;
}

struct Args {
  std::map<std::string, std::vector<std::string>> flags;  // flag -> values (empty: store_true)
  std::vector<std::string> order;
  std::set<std::string> used;
  std::string file;
  std::vector<std::string> programs;  // the Python files the commands launch (pretrain_gpt.py, inference.py, ...)

  bool on(const std::string& f) {
    used.insert(f);
    return flags.count(f) > 0;
  }
  // The value as written, shell variables left unexpanded (for messages and lookups that may fail quietly).
  std::optional<std::string> raw(const std::string& f) {
    used.insert(f);
    auto it = flags.find(f);
    if (it == flags.end() || it->second.empty()) return std::nullopt;
    return it->second.front();
  }
  std::optional<std::string> value(const std::string& f) {
    used.insert(f);
    auto it = flags.find(f);
    if (it == flags.end()) return std::nullopt;
    if (it->second.empty()) fail(at(file, f), "expects a value");
    const std::string& v = it->second.front();
    if (v.find("${") != std::string::npos) fail(at(file, f), "'{}' names a shell variable the file does not set", v);
    return v;
  }
  std::optional<long long> whole(const std::string& f, long long lowest = 1) {
    auto v = value(f);
    if (!v) return std::nullopt;
    std::optional<long long> parsed = whole_number(*v);
    if (!parsed) fail(at(file, f), "'{}' is not a whole number", *v);
    const long long out = *parsed;
    if (out < lowest) fail(at(file, f), "{} is below the minimum of {}", out, lowest);
    if (out > (1LL << 40)) fail(at(file, f), "{} is above the limit of {}", out, 1LL << 40);
    return out;
  }
};

Args parse_args(const Shell& sh, const std::string& file) {
  Args a;
  a.file = file;
  for (const auto& cmd : sh.commands) {
    std::string current;
    for (const auto& w : cmd) {
      if (w.size() > 3 && w.back() == ')' && w.rfind("--", 0) == 0 && w.find('=') == std::string::npos) {
        current.clear();  // a `case` pattern of the script's own option parsing (--data-path)), not a flag
        continue;
      }
      if (w.size() > 3 && w.rfind("--", 0) != 0 && w.compare(w.size() - 3, 3, ".py") == 0) a.programs.push_back(w);
      if (w.rfind("--", 0) == 0 && w.size() > 2) {
        std::string flag = w;
        std::string inline_value;
        bool has_inline = false;
        std::size_t eq = w.find('=');
        if (eq != std::string::npos) {
          flag = w.substr(0, eq);
          inline_value = w.substr(eq + 1);
          has_inline = true;
        }
        if (!a.flags.count(flag)) a.order.push_back(flag);
        a.flags[flag].clear();
        if (has_inline) a.flags[flag].push_back(inline_value);
        current = flag;
      } else if (!current.empty()) {
        a.flags[current].push_back(w);
      }
    }
  }
  return a;
}

// Megatron's layout string: E embedding, L loss, t layer, m MTP; | between stages (chunk-major); (..)*n and x*n.
plan::ChunkCounts parse_layout(const std::string& text, int pp, long long layers, const std::string& where) {
  std::string s;
  for (char c : text) {
    if (c != ',' && c != ' ') s += c;
  }
  // The count after "*" at `at` (digits), or nullopt; its end in `end`.
  auto count_at = [&](std::size_t at, std::size_t& end) -> std::optional<long long> {
    if (at >= s.size() || s[at] != '*') return std::nullopt;
    end = at + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) != 0) ++end;
    if (end == at + 1) return std::nullopt;
    long long n = 0;
    for (std::size_t i = at + 1; i < end; ++i) n = std::min(n * 10 + (s[i] - '0'), 1000000000LL);
    if (n > 100000) fail(where, "repeat count {} is too large", s.substr(at + 1, end - at - 1));
    return n;
  };
  // (..)*n, the leftmost first: a group is the text from "(" to the next ")" (at least one character).
  for (std::size_t open = s.find('('); open != std::string::npos;) {
    const std::size_t close = s.find(')', open + 1);
    if (close == std::string::npos) break;
    std::size_t end = 0;
    const std::optional<long long> n = close > open + 1 ? count_at(close + 1, end) : std::nullopt;
    if (!n) {
      open = s.find('(', open + 1);
      continue;
    }
    const std::string unit = s.substr(open + 1, close - open - 1);
    std::string rep;
    for (long long i = 0; i < *n && rep.size() <= 1000000; ++i) rep += unit;
    s = s.substr(0, open) + rep + s.substr(end);
    if (s.size() > 1000000) fail(where, "expands beyond a million characters");
    open = s.find('(');
  }
  // x*n: one character (not a line break) repeated.
  for (std::size_t at = 0; at + 1 < s.size();) {
    std::size_t end = 0;
    const std::optional<long long> n = line_end(s[at]) ? std::nullopt : count_at(at + 1, end);
    if (!n) {
      ++at;
      continue;
    }
    s = s.substr(0, at) + std::string(static_cast<std::size_t>(*n), s[at]) + s.substr(end);
    if (s.size() > 1000000) fail(where, "expands beyond a million characters");
    at = 0;
  }
  std::vector<std::string> stages;
  std::size_t start = 0;
  while (true) {
    std::size_t bar = s.find('|', start);
    stages.push_back(s.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  if (stages.size() % static_cast<std::size_t>(pp) != 0) fail(where, "'{}' has {} stages, not a multiple of PP {}", text, stages.size(), pp);
  int vpp = static_cast<int>(stages.size() / static_cast<std::size_t>(pp));
  plan::ChunkCounts out(static_cast<std::size_t>(vpp), std::vector<long long>(static_cast<std::size_t>(pp), 0));
  long long t = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    for (char c : stages[i]) {
      if (c == 't') {
        ++out[i / static_cast<std::size_t>(pp)][i % static_cast<std::size_t>(pp)];
        ++t;
      } else if (c != 'E' && c != 'L' && c != 'm') {
        fail(where, "'{}' is not a layout character (E, L, t, m, |)", std::string(1, c));
      }
    }
  }
  if (s.empty() || s.front() != 'E') fail(where, "'{}' must start with E (the embedding)", text);
  if (s.back() != 'L') fail(where, "'{}' must end with L (the loss)", text);
  if (t != layers) fail(where, "'{}' places {} transformer layers, but --num-layers is {}", text, t, layers);
  return out;
}

// The MoE layers as --moe-layer-freq states them (moe_layer_pattern reads it back), from a pattern (1: a MoE layer)
// or from the model: none when every layer is MoE; "([0]*k+[1]*n)" for k dense layers first; the shortest repeating
// unit times its count ("([0,1]*24)", Llama 4 Maverick's alternation); else the runs one after another.
std::optional<std::string> moe_layer_freq_text(const std::vector<int>& pattern) {
  if (std::ranges::all_of(pattern, [](int x) { return x == 1; })) return std::nullopt;
  const std::size_t n = pattern.size();
  std::vector<std::pair<int, std::size_t>> runs;
  for (int x : pattern) {
    if (runs.empty() || runs.back().first != x) runs.emplace_back(x, 0);
    ++runs.back().second;
  }
  if (runs.size() > 2 || runs.front().first != 0) {
    for (std::size_t period = 1; period <= n / 2; ++period) {
      if (n % period != 0) continue;
      bool repeats = true;
      for (std::size_t i = period; i < n && repeats; ++i) repeats = pattern[i] == pattern[i - period];
      if (repeats) return fmt::format("([{}]*{})", fmt::join(pattern.begin(), pattern.begin() + static_cast<std::ptrdiff_t>(period), ","), n / period);
    }
  }
  std::vector<std::string> terms;
  terms.reserve(runs.size());
  for (const auto& [x, count] : runs) terms.push_back(fmt::format("[{}]*{}", x, count));
  return fmt::format("({})", fmt::join(terms, "+"));
}
std::optional<std::string> moe_layer_freq_text(const model::ModelSpec& m) {
  std::vector<int> pattern(static_cast<std::size_t>(m.num_layers));
  for (model::Count i = 0; i < m.num_layers; ++i) pattern[static_cast<std::size_t>(i)] = m.routes_layer(i) ? 1 : 0;
  return moe_layer_freq_text(pattern);
}

// The flags that state which layers attend a sliding window and how wide (internal.hpp; reader: window_keys,
// window_layer_pattern, --interleave-sliding-window): Megatron-Core's --window-size for GPT-OSS (its windowed layers
// by --window-attn-skip-freq) and for a dense Llama-type model windowed in every layer (Mistral 7B v0.1, Phi-3);
// MindSpeed-LLM's --interleave-sliding-window for Gemma 2's alternation. Other windowed stacks are refused.
}  // namespace

std::vector<std::string> megatron_window_flags(const Plan& plan, const std::string& model_name) {
  const std::vector<int>& windowed = plan.windowed_layers;
  if (!plan.model || std::ranges::find(windowed, 1) == windowed.end()) return {};
  const model::ModelSpec& m = *plan.model;
  const long long keys = m.sliding_window.value_or(0);
  // Gemma 2's flag also names its layer stack (four norms a layer), so it is written whatever the window's length.
  if (m.arch == "gemma2") return {fmt::format("--interleave-sliding-window {}", keys), "--post-norm"};
  if (keys >= plan.seq) return {};  // a window as long as the sequence attends every earlier key: full attention
  const bool every = std::ranges::find(windowed, 0) == windowed.end();
  if (m.arch == "gpt_oss") {
    std::vector<std::string> out = {fmt::format("--window-size {},0", keys - 1)};
    if (every) return out;
    // An int N when layer number l (from 1) is windowed exactly when l % N != 0, else the list (1: windowed).
    for (std::size_t n = 2; n <= windowed.size(); ++n) {
      bool matches = true;
      for (std::size_t l = 1; l <= windowed.size() && matches; ++l) matches = (windowed[l - 1] == 1) == (l % n != 0);
      if (matches) {
        out.push_back(fmt::format("--window-attn-skip-freq {}", n));
        return out;
      }
    }
    out.push_back(fmt::format("--window-attn-skip-freq ([{}])", fmt::join(windowed, ",")));
    return out;
  }
  if (every && (m.arch == "mistral" || m.arch == "phi3" || m.arch == "llama")) return {fmt::format("--window-size {},0", keys - 1)};
  const auto count = static_cast<long long>(std::ranges::count(windowed, 1));
  fail("--emit megatron",
       "{} attends a sliding window in {} of its {} layers ({} family), which no Megatron-LM or MindSpeed-LLM flag sapp reads states for it: write "
       "hyperparallel, automodel or mindformers",
       model_name, count, windowed.size(), m.arch);
}

namespace {

// Counts one level of nesting for as long as it lives.
struct DepthGuard {
  int& depth;
  explicit DepthGuard(int& d) : depth(d) { ++depth; }
  ~DepthGuard() { --depth; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  DepthGuard(DepthGuard&&) = delete;
  DepthGuard& operator=(DepthGuard&&) = delete;
};

// A per-layer flag list as Megatron-LM's moe_freq_type evaluates it (arguments.py at core_v0.17.1, for
// --moe-layer-freq and --window-attn-skip-freq): an int N, returned as such, or a Python list expression such as
// "([0]*3+[1]*58)" or "([0,1]*24)": sums of list literals of 0 and 1 and parenthesised expressions, each repeated by
// "*n" or "n*". A list must have one entry per layer.
std::variant<long long, std::vector<int>> layer_flags(const std::string& written, long long layers, const std::string& where) {
  std::string text;
  for (char c : written)
    if (c != ' ' && c != '"' && c != '\'') text += c;
  if (auto n = whole_number(text)) {
    if (*n == 0) fail(where, "0 is not a layer frequency");
    return *n;
  }
  constexpr std::size_t kLongest = 1000000;
  std::size_t pos = 0;
  auto refuse = [&](const char* what) -> void {
    fail(where,
         "'{}' is not a layer pattern sapp reads ({} at character {}): an int N, or sums of lists of 0 and 1 such as [0]*3+[1]*58 "
         "or [0,1]*24",
         written, what, pos + 1);
  };
  auto number = [&]() -> long long {
    std::size_t end = pos;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) ++end;
    if (end == pos || end - pos > 7) refuse("a count expected");
    const long long n = std::stoll(text.substr(pos, end - pos));
    pos = end;
    return n;
  };
  auto repeat = [&](std::vector<int> items, long long n) {
    if (n > 0 && items.size() * static_cast<std::size_t>(n) > kLongest) refuse("more than a million layers");
    std::vector<int> out;
    for (long long i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return out;
  };
  std::function<std::vector<int>()> sum;
  std::function<std::vector<int>()> factor;
  int depth = 0;
  factor = [&]() -> std::vector<int> {
    if (pos >= text.size()) refuse("the text ends");
    if (depth > 64) refuse("nesting deeper than 64");
    const DepthGuard guard(depth);
    if (std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {  // n*[...]
      const long long n = number();
      if (pos >= text.size() || text[pos] != '*') refuse("'*' expected");
      ++pos;
      return repeat(factor(), n);
    }
    std::vector<int> items;
    if (text[pos] == '(') {
      ++pos;
      items = sum();
      if (pos >= text.size() || text[pos] != ')') refuse("')' expected");
      ++pos;
    } else if (text[pos] == '[') {
      ++pos;
      while (pos < text.size() && text[pos] != ']') {
        const long long x = number();
        if (x > 1) refuse("an entry other than 0 or 1");
        items.push_back(static_cast<int>(x));
        if (pos < text.size() && text[pos] == ',') ++pos;
      }
      if (pos >= text.size()) refuse("']' expected");
      ++pos;
    } else {
      refuse("'[' or '(' expected");
    }
    while (pos < text.size() && text[pos] == '*') {
      ++pos;
      items = repeat(std::move(items), number());
    }
    return items;
  };
  sum = [&]() {
    std::vector<int> out = factor();
    while (pos < text.size() && text[pos] == '+') {
      ++pos;
      std::vector<int> more = factor();
      if (out.size() + more.size() > kLongest) refuse("more than a million layers");
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  };
  std::vector<int> out = sum();
  if (pos != text.size()) refuse("unexpected text");
  if (static_cast<long long>(out.size()) != layers) fail(where, "'{}' states {} layers, but --num-layers is {}", written, out.size(), layers);
  return out;
}

// Megatron-Core's MoE layers (get_moe_layer_pattern, gpt_layer_specs.py at core_v0.17.1): an int N makes layer i
// (from 0) MoE when i % N == 0 (Python's modulo, whose zero test ignores the sign); a list states each layer (1: MoE).
std::vector<int> moe_layer_pattern(const std::string& written, long long layers, const std::string& where) {
  const auto flags = layer_flags(written, layers, where);
  std::vector<int> out(static_cast<std::size_t>(layers));
  if (const auto* n = std::get_if<long long>(&flags)) {
    for (long long i = 0; i < layers; ++i) out[static_cast<std::size_t>(i)] = i % *n == 0 ? 1 : 0;
  } else {
    out = std::get<std::vector<int>>(flags);
  }
  if (std::ranges::find(out, 1) == out.end()) fail(where, "'{}' makes no layer MoE; drop --num-experts for a dense model", written);
  return out;
}

// Megatron-Core's windowed layers (is_layer_window_attention, transformer/utils.py at core_v0.17.1), given a
// --window-size: every layer without --window-attn-skip-freq; with an int N, layer number l (from 1) when
// l % N != 0; with a list, the layers whose entry is 1.
std::vector<int> window_layer_pattern(const std::optional<std::string>& written, long long layers, const std::string& where) {
  std::vector<int> out(static_cast<std::size_t>(layers), 1);
  if (!written) return out;
  const auto flags = layer_flags(*written, layers, where);
  if (const auto* n = std::get_if<long long>(&flags)) {
    for (long long l = 1; l <= layers; ++l) out[static_cast<std::size_t>(l - 1)] = l % *n != 0 ? 1 : 0;
    return out;
  }
  return std::get<std::vector<int>>(flags);
}

// Per-stage layer counts as a split: each stage's layers in VPP equal chunks.
plan::StageSplit even_chunks(const std::vector<long long>& per_stage, long long vpp, const std::string& where) {
  plan::StageSplit split;
  split.layers.assign(static_cast<std::size_t>(vpp), std::vector<long long>(per_stage.size(), 0));
  for (std::size_t s = 0; s < per_stage.size(); ++s) {
    if (per_stage[s] % vpp != 0) fail(where, "stage {} holds {} layers, which VPP {} does not divide", s, per_stage[s], vpp);
    for (long long c = 0; c < vpp; ++c) split.layers[static_cast<std::size_t>(c)][s] = per_stage[s] / vpp;
  }
  return split;
}

}  // namespace

// The vocabulary a script leaves to its tokenizer, where sapp knows it without opening the tokenizer: GPT-2's
// BPE (--tokenizer-type GPT2BPETokenizer, or the --vocab-file/--merge-file pair of the older scripts): 50,257
// tokens (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" §2.2); a HuggingFace
// tokenizer named by a model id sapp bundles: that model's embedding rows (its config's vocab_size). Padded as
// Megatron pads the tokenizer's count (megatron/core/tokenizers/utils/build_tokenizer.py, vocab_size_with_padding:
// a multiple of --make-vocab-size-divisible-by, default 128, x TP). Returns the size and a note saying where it
// came from; none when sapp cannot tell.
std::optional<std::pair<long long, std::string>> tokenizer_vocab(Args& a, long long tp) {
  const std::string type = a.raw("--tokenizer-type").value_or("");
  std::string model = a.raw("--tokenizer-model").value_or("");
  if (model.find('$') != std::string::npos) model.clear();  // a path the script takes from its caller
  long long raw = 0;
  std::string from;
  if (type == "GPT2BPETokenizer" || (type.empty() && a.flags.count("--merge-file"))) {
    raw = 50257;
    from = "GPT-2's BPE (50257 tokens)";
  } else if (type == "Llama2Tokenizer") {
    // A SentencePiece model; Llama 2's has 32000 tokens (Touvron et al. 2023, "Llama 2", §2.1), as have the
    // Mistral / Mixtral models' these scripts point it at.
    raw = 32000;
    from = "Llama2Tokenizer's SentencePiece model, taken as Llama 2's 32000 tokens (state --vocab-size if yours differs)";
  } else if (!model.empty() && model.find('/') != std::string::npos && (type.empty() || type == "HuggingFaceTokenizer")) {
    // The bundled config that HuggingFace id names (model::bundled_model_named: the id's last part as a file name,
    // or a file whose `_source` or `_hf_ids` states the id).
    const std::optional<std::string> named = model::bundled_model_named(model, io::data_dir());
    if (!named) return std::nullopt;
    const std::string path = io::data_dir() + "/models/" + *named + ".json";
    const nlohmann::json config = io::read_tree(path);
    const nlohmann::json& text = config.contains("text_config") ? config.at("text_config") : config;
    if (!text.contains("vocab_size") || !text.at("vocab_size").is_number_integer()) return std::nullopt;
    raw = text.at("vocab_size").get<long long>();
    from = fmt::format("the bundled {} config's embedding rows ({})", io::last_component(path), raw);
  } else {
    return std::nullopt;
  }
  const long long multiple = a.whole("--make-vocab-size-divisible-by").value_or(128) * tp;
  const long long padded = (raw + multiple - 1) / multiple * multiple;
  return std::pair{padded, fmt::format("--vocab-size is not stated: {} from {}, padded to a multiple of {} as Megatron pads it", padded, from, multiple)};
}

// A hybrid stack's pattern (pretrain_mamba.py): --hybrid-override-pattern up to core_v0.16, --hybrid-layer-pattern
// from core_v0.17 (which keeps the first as its deprecated name). core_v0.17 (megatron/core/ssm/
// mamba_hybrid_layer_allocation.py) cuts the main pattern into pipeline segments with '|' and starts MTP patterns
// with '/'; a pattern stated in the new flag or holding a cut is read by its rules (cuts_form).
struct HybridPattern {
  std::string flag;                 // the flag it was read from
  std::string symbols;              // one symbol per layer, the cuts removed
  std::vector<long long> segments;  // layers per '|' segment, in the pattern's order (one: no cuts)
  bool cuts_form = false;
  std::string error;  // why sapp does not read it (a model error: the layout is still read)
};

std::optional<HybridPattern> hybrid_pattern(Args& a, const std::string& file) {
  const bool layer_pattern = a.flags.count("--hybrid-layer-pattern") > 0;
  if (layer_pattern && a.flags.count("--hybrid-override-pattern"))
    fail(at(file, "--hybrid-layer-pattern"),
         "and --hybrid-override-pattern are both stated; Megatron-LM refuses that (the second is the first's deprecated name)");
  HybridPattern p;
  p.flag = layer_pattern ? "--hybrid-layer-pattern" : "--hybrid-override-pattern";
  const std::optional<std::string> raw = a.raw(p.flag);
  if (!raw) return std::nullopt;
  std::string text = *raw;
  std::erase_if(text, [](char c) { return c == '"' || c == '\'' || c == ' '; });
  p.cuts_form = layer_pattern || text.find('|') != std::string::npos;
  const std::string main = text.substr(0, text.find('/'));
  if (main.find_first_not_of("M*-E|") != std::string::npos || main.find_first_of("M*-E") == std::string::npos) {
    p.error = fmt::format("{}: '{}' states symbols beside M (Mamba-2), * (attention), - (MLP), E (MoE) and the pipeline cut |, which sapp does not read",
                          at(file, p.flag), *raw);
  } else {
    // The main pattern's layers and cuts are read even beside MTP patterns (the layout stays readable).
    if (main.size() < text.size())
      p.error = fmt::format("{}: '{}' states multi-token prediction patterns after '/', which sapp does not read for a hybrid stack", at(file, p.flag), *raw);
    p.segments.push_back(0);
    for (char c : main) {
      if (c == '|') {
        p.segments.push_back(0);
      } else {
        p.symbols.push_back(c);
        ++p.segments.back();
      }
    }
  }
  return p;
}

// The device: a MindSpeed script runs on Ascend NPUs and says so in the runtime variables it exports (HCCL_*,
// ASCEND_*, PYTORCH_NPU_ALLOC_CONF, NPUS_PER_NODE). An A3 node (Atlas 900 A3 / CloudMatrix) shows 16 NPU dies,
// an A2 node (Atlas 800T A2) 8 NPUs (MindSpeed-LLM's examples/mcore/*_A3 and *_A2 scripts); --hardware overrides.
// Sets it and says whether the script runs on Ascend.
bool set_ascend_device(const Shell& sh, std::optional<long long> processes_per_node, Loaded& out) {
  const bool ascend = std::any_of(sh.vars.begin(), sh.vars.end(), [](const auto& v) {
    const std::string& name = v.first;
    return name.rfind("HCCL_", 0) == 0 || name.rfind("ASCEND_", 0) == 0 || name == "PYTORCH_NPU_ALLOC_CONF" || name.rfind("NPUS_", 0) == 0;
  });
  if (!ascend) return false;
  const bool a3 = processes_per_node == 16;
  put(out, "hardware", a3 ? "ascend-910c" : "ascend-910b",
      a3 ? "Ascend runtime variables (HCCL_*, ...) and 16 NPUs per node (A3)" : "Ascend runtime variables (HCCL_*, ...), not 16 NPUs per node (A2)");
  return true;
}

// torchrun's processes per node (--nproc-per-node or --nproc_per_node) and its world (x --nnodes), put as the
// devices; none when the launch states no process count.
std::pair<std::optional<long long>, std::optional<long long>> torchrun_world(Args& a, Loaded& out) {
  const auto nproc = a.flags.count("--nproc-per-node") ? a.whole("--nproc-per-node") : a.whole("--nproc_per_node");
  if (!nproc) return {std::nullopt, std::nullopt};
  const long long nodes = a.whole("--nnodes").value_or(1);
  if (*nproc > (1LL << 40) / nodes) fail(at(a.file, "--nnodes"), "{} nodes x {} processes per node is above the limit of {} devices", nodes, *nproc, 1LL << 40);
  put(out, "devices", *nproc * nodes, "--nproc_per_node x --nnodes");
  return {nproc, *nproc * nodes};
}

// MindSpeed-LLM's FSDP2 trainer (train_fsdp2.py at Ascend/MindSpeed-LLM c77308a1): a YAML of model / data /
// parallel / training / optimization sections, each key overridable on the launch line as --section.key (the
// command line wins: mindspeed_llm/fsdp2/utils/arguments.py _merge_yaml_into_cmd_args). Read as that code runs it:
// - mesh (distributed/parallel_state.py): fsdp_size must equal the world size and TP is 1; CP ranks are FSDP ranks
//   (dense weights sharded over every rank); experts split over ep_size ranks, each rank's experts sharded over
//   ep_fsdp_size (ep x ep_fsdp = world in every example; fewer leaves replicas whose sync the code does not show:
//   refused);
// - batch (trainer.py): per_device_train_batch_size x gradient_accumulation_steps x world / cp; the sequence is
//   data.cutoff_len (default 2048), fixed for pre-training (stage pt), an upper bound for fine-tuning batches padded
//   to their longest sample (stage sft without packing: said); FSDP2 reduce-scatters on every micro-batch (no no_sync);
// - precision: fp32 master weights (the model is loaded in float32: model_loader.py) gathered in param_dtype (bf16),
//   gradients reduced in reduce_dtype (fp32 unless stated), two fp32 AdamW moments: the mindspeed_fsdp2 profile;
// - reshard_after_forward (default true) ZeRO-3, false ZeRO-2 as FSDP2 runs it; recompute true checkpoints whole
//   decoder layers (full);
// - kernels (OptimizationArguments, all default false): use_fused_rmsnorm takes effect only through a registered
//   model class (model.model_id) other than dense qwen3, whose patch reads the flag from the wrong object (qwen3.py
//   register_patches): otherwise the norms are Transformers' eager RMSNorm; use_flash_attn is read by gpt_oss and
//   minimax_m27 only (their eager attention without it); the other models run Transformers' default attention,
//   priced as a fused kernel, which is said.
Loaded read_mindspeed_fsdp2(const Shell& sh, Args& a, const std::string& file, const std::string& trainer) {
  Loaded out;
  auto set = setter(out);
  out.warnings = sh.warnings;
  out.dialect = kMindSpeedFsdp2Dialect;
  set("framework", "mindspeed_fsdp2", trainer);
  // The YAML: the word after train_fsdp2.py, resolved from the working directory or from the script's folder and
  // its parents (the examples name it from the MindSpeed-LLM checkout's root).
  std::string yaml_path;
  for (const auto& cmd : sh.commands) {
    for (std::size_t i = 0; i + 1 < cmd.size(); ++i) {
      if (io::last_component(cmd[i]) == "train_fsdp2.py" && (cmd[i + 1].ends_with(".yaml") || cmd[i + 1].ends_with(".yml"))) yaml_path = cmd[i + 1];
    }
  }
  json tree = json::object();
  std::string yaml_file;
  if (!yaml_path.empty()) {
    std::vector<std::string> tried = {yaml_path};
    if (!yaml_path.starts_with("/")) {
      for (std::string dir = file.substr(0, file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/')); !dir.empty();) {
        tried.push_back(dir + "/" + yaml_path);
        const std::size_t slash = dir.find_last_of('/');
        dir = slash == std::string::npos || slash == 0 ? std::string() : dir.substr(0, slash);
      }
    }
    for (const std::string& path : tried) {
      if (io::exists(path)) {
        yaml_file = path;
        break;
      }
    }
    if (yaml_file.empty())
      fail(at(file, trainer),
           "its YAML {} is found neither from the working directory nor from the script's folders: run sapp from the "
           "MindSpeed-LLM checkout the script names it from",
           yaml_path);
    tree = io::read_tree(yaml_file);
    if (!tree.is_object()) fail(yaml_file, "is not a mapping of sections (model, data, parallel, training)");
  }
  // A key's value: the launch line's --section.key (a bare flag: true), else the YAML's, as text.
  std::set<std::string> read;
  auto stated = [&](const std::string& key) -> std::optional<std::string> {
    read.insert(key);
    const std::string flag = "--" + key;
    if (auto it = a.flags.find(flag); it != a.flags.end()) {
      a.used.insert(flag);
      if (it->second.empty()) return "true";
      if (it->second.front().find("${") != std::string::npos) fail(at(file, flag), "'{}' names a shell variable the file does not set", it->second.front());
      return it->second.front();
    }
    const json* node = stated_at(tree, key);
    if (node == nullptr || node->is_null()) return std::nullopt;
    if (node->is_string()) {
      // YAML's None is the string "None" to the trainer's loader (yaml.safe_load), which its arguments treat as unset.
      if (node->get<std::string>() == "None") return std::nullopt;
      return node->get<std::string>();
    }
    if (node->is_boolean()) return node->get<bool>() ? "true" : "false";
    if (node->is_number()) return node->dump();
    return std::nullopt;
  };
  auto where = [&](const std::string& key) { return a.flags.count("--" + key) ? at(file, "--" + key) : at(yaml_file.empty() ? file : yaml_file, key); };
  auto whole = [&](const std::string& key, long long fallback, long long lowest = 1) {
    const auto v = stated(key);
    if (!v) return fallback;
    const std::optional<long long> n = whole_number(*v);
    if (!n || *n < lowest || *n > (1LL << 40)) fail(where(key), "'{}' is not a whole number from {} to 2^40", *v, lowest);
    return *n;
  };
  auto flag = [&](const std::string& key, bool fallback) {
    const auto v = stated(key);
    if (!v) return fallback;
    const std::string t = io::lower(*v);
    if (t == "true" || t == "1" || t == "yes" || t == "y" || t == "t") return true;
    if (t == "false" || t == "0" || t == "no" || t == "n" || t == "f") return false;
    fail(where(key), "'{}' is not a boolean", *v);
  };

  // Devices: torchrun's processes per node x nodes.
  const auto [nproc, world] = torchrun_world(a, out);
  (void)set_ascend_device(sh, nproc, out);

  // Mesh.
  if (const long long tp = whole("parallel.tp_size", 1); tp != 1)
    fail(where("parallel.tp_size"), "{}: MindSpeed-LLM's FSDP2 mesh (c77308a1 distributed/parallel_state.py) runs TP 1 only", tp);
  set("tp", 1, "parallel.tp_size (TP 1: MindSpeed-LLM's FSDP2 mesh)");
  set("pp", 1, "train_fsdp2.py (no pipeline)");
  const long long fsdp = whole("parallel.fsdp_size", world.value_or(1));
  if (world && fsdp != *world)
    fail(where("parallel.fsdp_size"), "{} is not the world size {}: MindSpeed-LLM's FSDP2 mesh requires fsdp_size = world (no replicas)", fsdp, *world);
  if (!world) set("devices", fsdp, "parallel.fsdp_size (= the world size)");
  const long long devices = world.value_or(fsdp);
  const long long cp = whole("parallel.cp_size", 1);
  set("cp", cp, "parallel.cp_size");
  if (cp > 1) {
    const std::string cp_type = io::lower(stated("parallel.cp_type").value_or("ulysses"));
    if (cp_type == "ulysses")
      set("cp_algo", "all2all", "parallel.cp_type ulysses");
    else if (cp_type == "ring")
      set("cp_algo", "ring", "parallel.cp_type ring");
    else if (cp_type == "kvallgather") {
      set("cp_algo", "ring", "parallel.cp_type kvallgather");
      out.warnings.push_back("parallel.cp_type kvallgather: K and V all-gathered, priced as ring CP's exchange of the same blocks");
    } else
      fail(where("parallel.cp_type"), "'{}' is none of ulysses, ring, kvallgather", cp_type);
  }
  const long long ep = whole("parallel.ep_size", 1);
  set("ep", ep, "parallel.ep_size");
  const long long ep_fsdp = whole("parallel.ep_fsdp_size", 1);
  if (ep > 1 && ep * ep_fsdp != devices)
    fail(where("parallel.ep_fsdp_size"),
         "{} x ep_size {} is not the world size {}: the expert replicas this leaves are not synchronised in the "
         "code sapp read (MindSpeed-LLM c77308a1); every example states ep x ep_fsdp = world",
         ep_fsdp, ep, devices);
  set("zero", flag("parallel.reshard_after_forward", true) ? 3 : 2, "parallel.reshard_after_forward (FSDP2)");
  set("recompute", flag("parallel.recompute", false) ? "full" : "off", "parallel.recompute (whole decoder layers)");
  if (const json* modules = stated_at(tree, "parallel.recompute_modules"); modules != nullptr && modules->is_array()) {
    for (const auto& m : *modules) {
      if (!m.is_string() || m.get<std::string>() != "model.layers.{*}")
        out.warnings.push_back(fmt::format("parallel.recompute_modules {}: priced as whole decoder layers recomputed", m.dump()));
    }
  }
  const std::string reduce = io::lower(stated("parallel.reduce_dtype").value_or("fp32"));
  if (reduce != "fp32") set("reduce_bytes", 2, "parallel.reduce_dtype " + reduce);
  if (const std::string param = io::lower(stated("parallel.param_dtype").value_or("bf16")); param == "fp32")
    set("gather_bytes", 4, "parallel.param_dtype fp32");

  // Batch and sequence.
  const long long mbs = whole("training.per_device_train_batch_size", 1);
  const long long accumulation = whole("training.gradient_accumulation_steps", 1);
  if (devices % cp != 0) fail(where("parallel.cp_size"), "{} does not divide the world size {}", cp, devices);
  set("mbs", mbs, "training.per_device_train_batch_size");
  // The batch is per device (the launch's world decides the global one): with --devices the global batch follows.
  out.batch_from_devices = Loaded::BatchFromDevices{mbs * accumulation, cp, "per_device_train_batch_size x gradient_accumulation_steps x world / cp_size"};
  set("seq", whole("data.cutoff_len", 2048), "data.cutoff_len");
  const std::string stage = io::lower(stated("training.stage").value_or("sft"));
  if (stage == "sft" && !flag("data.packing", false) && !flag("data.neat_packing", false))
    out.warnings.push_back(
        "training.stage sft without packing: batches are padded to their longest sample (a multiple of 8), at most "
        "data.cutoff_len, priced at cutoff_len");

  // Model: the local HuggingFace folder's config.json, or the bundled model its folder names.
  const std::optional<std::string> path = stated("model.model_name_or_path");
  const std::string model_id = stated("model.model_id").value_or("");
  if (path) {
    std::string id = *path;
    while (id.size() > 1 && id.back() == '/') id.pop_back();
    if (io::exists(id + "/config.json")) {
      id += "/config.json";
    } else if (!io::exists(id)) {
      // The folder's name, as a HuggingFace id's model name (Qwen3-8B), without the "-hf" its examples add to a
      // converted checkpoint's folder (gpt-oss-20b-hf).
      id = io::last_component(id);
      const std::string lower = io::lower(id);
      if ((lower.ends_with("-hf") || lower.ends_with("_hf")) && model::bundled_model_named(id.substr(0, id.size() - 3), io::data_dir()))
        id = id.substr(0, id.size() - 3);
    }
    if (auto name = bundled_name(id, where("model.model_name_or_path"), "give sapp --model NAME or the folder's config.json", out))
      set("model", *name, "model.model_name_or_path");
  }
  // Kernels.
  const bool fused_norm = flag("optimization.use_fused_rmsnorm", false) && !model_id.empty() && model_id != "qwen3";
  if (!fused_norm) set("eager_norms", true, "optimization.use_fused_rmsnorm off or without effect (model.model_id unset or qwen3)");
  if (model_id == "gpt_oss" || model_id == "minimax_m27") {
    if (!flag("optimization.use_flash_attn", false)) {
      set("no_flash_attention", true, "optimization.use_flash_attn off (" + model_id + ")");
      out.warnings.push_back(fmt::format("optimization.use_flash_attn off: {} runs its eager attention (an s x s score tensor per head), priced so", model_id));
    }
  } else if (model_id != "qwen3_next" && cp == 1) {
    out.warnings.push_back(
        fmt::format("attention: {} runs Transformers' default attention implementation (optimization.use_flash_attn is "
                    "read only by gpt_oss and minimax_m27), priced as a fused kernel",
                    model_id.empty() ? std::string("the model") : model_id));
  }
  // optimization.chunk_loss_size > 0 under pre-training (trainer.py: chunk_loss over token chunks, each chunk's
  // gradient taken in the forward): the logits are never held whole.
  if (whole("optimization.chunk_loss_size", 0, 0) > 0 && stage == "pt") {
    set("loss_chunked", true, "optimization.chunk_loss_size");
    out.warnings.push_back(
        "optimization.chunk_loss_size: the loss over token chunks holds no whole logits; priced as a chunked loss, "
        "which computes the logits again in the backward where MindSpeed-LLM takes each chunk's gradient in the forward");
  }
  if (model_id.find("moe") != std::string::npos && !flag("optimization.moe_grouped_gemm", false))
    out.warnings.push_back(
        "optimization.moe_grouped_gemm off: Transformers' experts run one GEMM per expert in a loop, slower than the "
        "grouped GEMM priced");
  if (auto q = stated("model.quant_recipe_name"); q && io::lower(*q) != "none")
    out.warnings.push_back(fmt::format("model.quant_recipe_name {}: quantized training is not priced (BF16 GEMMs)", *q));
  if (flag("parallel.enable_chunk_batch", false)) out.warnings.push_back("parallel.enable_chunk_batch: micro-batch slicing is not priced");
  // What is left unread: the YAML's keys and the launch line's --section.key flags.
  read.insert("parallel.recompute_modules");
  for (const auto& [section, keys] : tree.items()) {
    if (!keys.is_object()) continue;
    for (const auto& [key, unused] : keys.items()) {
      if (!read.count(section + "." + key) && !a.flags.count("--" + section + "." + key)) out.unused.push_back(section + "." + key);
    }
  }
  for (const auto& f : a.order) {
    if (!a.used.count(f) && !torchrun_flags().count(f)) out.unused.push_back(f);
  }
  return out;
}

Loaded read_megatron(const std::string& text, const std::string& file) {
  Shell sh = run_shell(text, file);
  Args a = parse_args(sh, file);
  for (const std::string& program : a.programs) {
    if (io::last_component(program) == "train_fsdp2.py") return read_mindspeed_fsdp2(sh, a, file, program);
  }
  Loaded out;
  auto set = setter(out);
  out.warnings = sh.warnings;
  // A model-config script that a launcher sources (Megatron-LM's examples/post_training/modelopt/conf/*.sh and
  // examples/rl/model_configs/*.sh at core_v0.17.1: MODEL_ARGS="--num-layers 36 ...") runs no command with its
  // flags. Then the flags are read from every variable holding one, in the order the variables were first assigned
  // (a flag stated twice: the later wins, as on a command line joining them), and that is said.
  if (a.order.empty()) {
    Shell sourced;
    std::vector<std::string> holders;
    for (const std::string& name : sh.assigned) {
      std::vector<std::string> words;
      for (const std::string& item : sh.vars.at(name)) {
        std::stringstream is(item);
        for (std::string w; is >> w;) words.push_back(w);
      }
      if (std::ranges::none_of(words, [](const std::string& w) { return w.size() > 2 && w.rfind("--", 0) == 0; })) continue;
      sourced.commands.push_back(std::move(words));
      holders.push_back(name);
    }
    if (!holders.empty()) {
      // Megatron-LM's modelopt launchers (examples/post_training/modelopt/finetune.sh ...) pass the tokenizer the
      // sourced config names: --tokenizer-model ${TOKENIZER_MODEL}.
      std::string tokenizer;
      if (auto it = sh.vars.find("TOKENIZER_MODEL"); it != sh.vars.end() && it->second.size() == 1 && it->second.front().find('$') == std::string::npos)
        tokenizer = it->second.front();
      a = parse_args(sourced, file);
      std::string added;
      if (!tokenizer.empty() && !a.flags.count("--tokenizer-model")) {
        a.flags["--tokenizer-model"] = {tokenizer};
        a.order.emplace_back("--tokenizer-model");
        added = fmt::format(", and --tokenizer-model {} from TOKENIZER_MODEL, as Megatron-LM's modelopt launchers pass it", tokenizer);
      }
      out.warnings.push_back(
          fmt::format("runs no command with Megatron flags: read them from the variables {} (a script a launcher sources){}", fmt::join(holders, ", "), added));
    }
  }
  // A checkpoint conversion (MindSpeed-LLM's convert_ckpt*.py, Megatron-LM's tools/checkpoint/convert.py) states some
  // model flags and its target degrees (--target-tensor-parallel-size ...) but trains nothing, nor does a data
  // preprocessing step (preprocess_data.py: --seq-length and the tokenizer): a script launching one and no training
  // program (a name with "train" or "tune") is refused, naming it.
  // A script that launches generation or evaluation (MindSpeed-LLM's inference.py / evaluation.py, Megatron-LM's
  // run_text_generation.py, --max-new-tokens): priced as training of its model and layout all the same, and said.
  std::string conversion, preprocessing, training_program, inference_program;
  for (const std::string& program : a.programs) {
    const std::string name = io::lower(io::last_component(program));
    auto names = [&name](std::initializer_list<const char*> words) {
      return std::ranges::any_of(words, [&name](const char* w) { return name.find(w) != std::string::npos; });
    };
    if (names({"train", "tune"})) training_program = program;
    if (names({"convert", "ckpt", "checkpoint"})) conversion = program;
    if (names({"preprocess"})) preprocessing = program;
    if (names({"inference", "generat", "evaluat"}) && inference_program.empty()) inference_program = program;
  }
  if (!conversion.empty() && training_program.empty()) {
    fail(file, "launches {}, a checkpoint conversion, not training: give sapp the script that launches the training (pretrain_*.py)", conversion);
  }
  if (!preprocessing.empty() && training_program.empty()) {
    fail(file, "launches {}, a data preprocessing step, not training: give sapp the script that launches the training (pretrain_*.py)", preprocessing);
  }
  if (a.on("--max-new-tokens") || !inference_program.empty()) {
    out.warnings.push_back(
        fmt::format("{} is not training: sapp prices training of this model and layout (gradients, optimizer states, activations "
                    "kept for the backward), not the generation or evaluation it launches",
                    inference_program.empty() ? "a script stating --max-new-tokens" : inference_program));
  }

  // Devices: torchrun's processes per node x nodes, or WORLD_SIZE.
  auto [nproc, devices] = torchrun_world(a, out);
  if (!nproc && a.flags.count("--worker_num")) {
    // MindSpore's msrun launcher (MindSpeed-LLM's MindSpore backend): --worker_num processes in all,
    // --local_worker_num of them per node.
    devices = a.whole("--worker_num");
    set("devices", *devices, "msrun --worker_num");
    if (a.flags.count("--local_worker_num")) nproc = a.whole("--local_worker_num");
  } else if (!nproc && sh.vars.count("WORLD_SIZE")) {
    const std::string w = sh.vars.at("WORLD_SIZE").front();
    if (!w.empty() && w.find_first_not_of("0123456789") == std::string::npos) {
      // Read as a flag's value is (a count from 1 to 2^40; 0 devices, or a product beyond 64 bits, is refused).
      const std::optional<long long> n = whole_number(w);
      if (!n || *n < 1 || *n > (1LL << 40)) fail(at(file, "WORLD_SIZE"), "'{}' is not a device count", w);
      devices = *n;
      set("devices", *devices, "WORLD_SIZE");
    }
  }
  if (!devices) {
    const auto world = sh.vars.find("WORLD_SIZE");
    // WORLD_SIZE from what the file does not set ($SLURM_NTASKS, or arithmetic on it, which the reader leaves as itself).
    const std::string stated = world != sh.vars.end() ? fmt::format("{}", fmt::join(world->second, " ")) : "";
    out.devices_hint = world == sh.vars.end() ? "the launch states no device count (no torchrun --nproc_per_node, msrun --worker_num or WORLD_SIZE)"
                       : stated == "${WORLD_SIZE}" || stated.empty()
                           ? "the launch's WORLD_SIZE comes from what the file does not set"
                           : fmt::format("the launch's WORLD_SIZE '{}' comes from what the file does not set", stated);
  }

  if (set_ascend_device(sh, nproc, out)) {
    // MindSpeed runs its fused attention (npu_fusion_attention) only with --use-flash-attn: without it its
    // dot_product_attention_forward_wrapper (Ascend/MindSpeed mindspeed/core/transformer/dot_product_attention.py)
    // falls back to Megatron-Core's local DotProductAttention, which builds the s x s scores. On a GPU, Transformer
    // Engine's attention is fused whatever the flag says.
    if (!a.on("--use-flash-attn")) {
      set("no_flash_attention", true, "no --use-flash-attn on Ascend");
      out.warnings.push_back(
          "no --use-flash-attn: MindSpeed runs Megatron-Core's unfused attention (an s x s score tensor per head), priced so; add the flag "
          "for its fused kernel");
    }
  }
  set("framework", "megatron", "Megatron-LM arguments");
  const auto [tp, pp, cp, ep] =
      read_degrees(a, out, {"--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size", "--expert-model-parallel-size"});
  bool moe = a.whole("--num-experts", 0).value_or(0) > 1;
  if (auto etp = a.whole("--expert-tensor-parallel-size")) {
    set("etp", *etp, "--expert-tensor-parallel-size");
  } else if (moe) {
    set("etp", tp, "--expert-tensor-parallel-size (default: TP)");
  }
  // MindSpeed's --moe-tp-extend-ep: the TP group splits the experts among its ranks instead of each expert's weights
  // (MindSpeed docs/zh/features/megatron_moe/megatron-moe-tp-extend-ep.md): expert parallelism EP x TP, no expert TP.
  if (moe && a.on("--moe-tp-extend-ep") && tp > 1) {
    set("ep", ep * tp, "--expert-model-parallel-size x TP (--moe-tp-extend-ep)");
    set("etp", 1, "--moe-tp-extend-ep");
  }
  if (a.on("--sequence-parallel") && tp > 1) set("sp", true, "--sequence-parallel");
  // Communication overlap the script switches on: --tp-comm-overlap (Transformer Engine's userbuffers), and the EP
  // all-to-all hidden behind another micro-batch's compute by Megatron-Core's --overlap-moe-expert-parallel-comm or
  // MindSpeed's --moe-fb-overlap (mindspeed/features_manager/moe/fb_overlap.py).
  if (a.on("--tp-comm-overlap") && tp > 1) set("overlap_tp", cost::terms::kUserbuffersTpOverlap, "--tp-comm-overlap");
  // MindSpeed's --use-ascend-coc (docs communication-over-computation.md): each TP GEMM and its collective split into
  // --coc-parallel-num pieces (default 1: no split, nothing hidden) and pipelined, or one fused kernel with
  // --coc-fused-kernel (priced as userbuffers).
  if (a.on("--use-ascend-coc") && tp > 1) {
    if (a.on("--coc-fused-kernel")) {
      set("overlap_tp", cost::terms::kUserbuffersTpOverlap, "--use-ascend-coc --coc-fused-kernel");
    } else {
      set("overlap_tp", cost::terms::chunked_tp_overlap(a.whole("--coc-parallel-num").value_or(1)), "--use-ascend-coc --coc-parallel-num");
    }
  }
  for (const char* flag : {"--overlap-moe-expert-parallel-comm", "--moe-fb-overlap"}) {
    if (a.on(flag) && moe && ep > 1) {
      set("overlap_ep", cost::terms::kOverlappedEpAllToAll, flag);
      break;
    }
  }
  // The token dispatcher: DeepEP / HybridEP (--moe-token-dispatcher-type flex with --moe-flex-dispatcher-backend, or
  // core_v0.14's --moe-enable-deepep) send a token once per remote node; alltoall and allgather every routed copy.
  if (moe) {
    const std::string dispatcher = a.value("--moe-token-dispatcher-type").value_or("allgather");
    const std::string backend = a.value("--moe-flex-dispatcher-backend").value_or("deepep");
    if (a.on("--moe-enable-deepep") || (dispatcher == "flex" && (backend == "deepep" || backend == "hybridep")))
      set("moe_dispatcher", "deepep", a.on("--moe-enable-deepep") ? "--moe-enable-deepep" : "--moe-token-dispatcher-type flex");
    if (a.on("--moe-shared-expert-overlap")) set("shared_expert_overlap", true, "--moe-shared-expert-overlap");
    // What sapp prices and the script does not run: without --moe-grouped-gemm Megatron-Core builds SequentialMLP,
    // one GEMM per local expert in a Python loop; the allgather dispatcher (core_v0.14.0's default) gathers every
    // token of the TP x EP group on every rank, where alltoall sends each routed copy to its expert's rank once.
    if (!a.on("--moe-grouped-gemm") && !a.on("--moe-use-legacy-grouped-gemm"))
      out.warnings.push_back("MoE without --moe-grouped-gemm: Megatron-Core runs the local experts one GEMM each (SequentialMLP); priced as a grouped GEMM");
    if (dispatcher == "allgather" && ep * tp > 1 && !a.on("--moe-enable-deepep"))
      out.warnings.push_back(
          fmt::format("--moe-token-dispatcher-type allgather{}: every token is gathered over the TP x EP group; priced as the alltoall dispatcher",
                      a.value("--moe-token-dispatcher-type") ? "" : " (Megatron's default)"));
    // Token dropping: --moe-expert-capacity-factor c caps each expert at c x its mean tokens; with
    // --moe-pad-expert-input-to-capacity every expert's input is padded to that capacity, so the experts compute,
    // store and exchange c x the routed tokens (arguments.py; moe_utils.py).
    if (auto c = a.value("--moe-expert-capacity-factor")) {
      const std::string where = at(file, "--moe-expert-capacity-factor");
      const auto factor = real_number(*c);
      if (!factor || *factor <= 0) fail(where, "'{}' is not a positive factor", *c);
      if (a.on("--moe-pad-expert-input-to-capacity")) set("capacity_factor", *factor, "--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity");
    }
  }
  // Megatron-LM overlaps neither the gradient reduce nor the distributed optimizer's parameter gather unless asked
  // (arguments.py: --overlap-grad-reduce, --overlap-param-gather, both off by default): a script stating neither has
  // its DP collectives exposed.
  const bool grad_overlap = a.on("--overlap-grad-reduce");
  const bool gather_overlap = a.on("--overlap-param-gather");
  if (!grad_overlap && !gather_overlap) set("overlap_dp", 0.0, "no --overlap-grad-reduce / --overlap-param-gather");

  // Model.
  std::optional<long long> layers = a.whole("--num-layers");
  const std::optional<HybridPattern> hybrid = hybrid_pattern(a, file);
  out.hybrid_pipeline_cuts = hybrid && hybrid->cuts_form;
  if (hybrid && !hybrid->segments.empty() && hybrid->cuts_form) {
    // core_v0.17's arguments.py takes the layer count from the pattern (a differing --num-layers is warned about and
    // ignored).
    const auto count = static_cast<long long>(hybrid->symbols.size());
    if (layers && *layers != count)
      out.warnings.push_back(fmt::format("{}: --num-layers {} differs from the {} layers of {}; read as Megatron-Core does, {} layers", file, *layers, count,
                                         hybrid->flag, count));
    layers = count;
    a.used.insert("--num-layers");
  }
  // MindSpeed's --noop-layers: indices (from 0) of --num-layers' layers that are empty placeholders, so that PP
  // (x VPP) divides the count; the model has the others, and each stage holds its share of the real ones.
  std::set<long long> noop;
  if (auto list = a.value("--noop-layers")) {
    const std::string where = at(file, "--noop-layers");
    if (!layers) fail(where, "needs --num-layers");
    for (const std::string& item : io::split_commas(*list)) {
      const long long i = whole_number(io::trim(item)).value_or(-1);
      if (i < 0 || i >= *layers) fail(where, "'{}': '{}' is not a layer index below --num-layers {}", *list, item, *layers);
      if (!noop.insert(i).second) fail(where, "'{}' names layer {} twice", *list, i);
    }
    if (static_cast<long long>(noop.size()) >= *layers) fail(where, "'{}' leaves no real layer of --num-layers {}", *list, *layers);
  }
  if (a.flags.count("--hidden-size")) {
    json m = json::object();
    m["_source"] = file;
    if (!layers) fail(at(file, "--num-layers"), "is required when the file defines the model (--hidden-size is stated)");
    long long h = *a.whole("--hidden-size");
    long long heads = a.whole("--num-attention-heads").value_or(0);
    if (heads == 0) fail(at(file, "--num-attention-heads"), "is required when the file defines the model");
    m["num_hidden_layers"] = *layers - static_cast<long long>(noop.size());
    m["hidden_size"] = h;
    m["num_attention_heads"] = heads;
    bool swiglu = a.on("--swiglu");
    // MindSpeed-LLM's --geglu and --gelu-tanh make the MLP gated (gated_linear_unit, mindspeed_llm/core/transformer/
    // mlp.py): Gemma's GeGLU; with --interleave-sliding-window (every other layer attends a window) it is Gemma 2's
    // layer stack (--post-norm: its four norms per layer).
    bool gated_gelu = a.on("--geglu") || a.on("--gelu-tanh");
    auto window = a.whole("--interleave-sliding-window");
    long long ffn = a.whole("--ffn-hidden-size").value_or(swiglu || gated_gelu ? (4 * h * 2 / 3) / 64 * 64 : 4 * h);
    m["intermediate_size"] = ffn;
    if (a.on("--group-query-attention"))
      m["num_key_value_heads"] = a.whole("--num-query-groups").value_or(1);
    else
      a.used.insert("--num-query-groups");
    if (auto kv = a.whole("--kv-channels")) m["head_dim"] = *kv;
    if (auto pos = a.whole("--max-position-embeddings")) m["max_position_embeddings"] = *pos;
    auto vocab = a.whole("--vocab-size");
    if (!vocab) vocab = a.whole("--padded-vocab-size");
    if (!vocab) {
      if (auto known = tokenizer_vocab(a, tp)) {
        vocab = known->first;
        out.warnings.push_back(known->second);
        a.used.insert("--vocab-file");
        a.used.insert("--merge-file");
      }
    }
    if (vocab) {
      m["vocab_size"] = *vocab;
    } else {
      // Refused when the model is priced from this file: a --model on the command line replaces it (fill()).
      out.model_error = fmt::format(
          "{}: is not stated, and the vocabulary otherwise comes from the tokenizer ({}), which sapp does not open; add --vocab-size to the script, or give "
          "sapp --model (a bundled model or a config.json)",
          at(file, "--vocab-size"),
          a.raw("--tokenizer-type") || a.raw("--tokenizer-model")
              ? fmt::format("--tokenizer-type {}, --tokenizer-model {}", a.raw("--tokenizer-type").value_or("unset"),
                            a.raw("--tokenizer-model").value_or("unset"))
              : std::string("none named"));
    }
    a.used.insert("--tokenizer-type");
    a.used.insert("--tokenizer-model");
    bool mla = a.on("--multi-latent-attention") || a.on("--multi-head-latent-attention");
    bool qk_norm = a.on("--qk-layernorm");
    bool no_bias = a.on("--disable-bias-linear");
    bool qkv_bias = a.on("--add-qkv-bias");
    m["tie_word_embeddings"] = !a.on("--untie-embeddings-and-output-weights");
    if (mla) {
      m["kv_lora_rank"] = a.whole("--kv-lora-rank").value_or(32);
      if (auto q = a.whole("--q-lora-rank")) m["q_lora_rank"] = *q;
      m["qk_nope_head_dim"] = a.flags.count("--qk-nope-head-dim") ? *a.whole("--qk-nope-head-dim") : a.whole("--qk-head-dim").value_or(128);
      m["qk_rope_head_dim"] = a.flags.count("--qk-rope-head-dim") ? *a.whole("--qk-rope-head-dim") : a.whole("--qk-pos-emb-head-dim").value_or(64);
      m["v_head_dim"] = a.whole("--v-head-dim").value_or(128);
    }
    if (moe) {
      long long experts = *a.whole("--num-experts");
      m["n_routed_experts"] = experts;
      m["num_experts_per_tok"] = a.whole("--moe-router-topk").value_or(2);
      if (auto w = a.whole("--moe-ffn-hidden-size")) {
        m["moe_intermediate_size"] = *w;
      } else if (auto old_name = a.whole("--moe-intermediate-size")) {
        m["moe_intermediate_size"] = *old_name;  // MindSpeed-LLM's deprecated name for --moe-ffn-hidden-size
      } else if (experts > 16 || a.flags.count("--n-shared-experts") > 0) {
        // Megatron-LM's arguments.py: moe_ffn_hidden_size defaults to ffn_hidden_size. Said aloud for fine-grained
        // experts (Mixtral's 8 are as wide as a dense FFN), since a script that forgot the flag prices them as wide
        // as its dense layers (a 16B model read as 116B).
        out.warnings.push_back(
            fmt::format("--num-experts without --moe-ffn-hidden-size: each expert is {} wide, the dense FFN's (Megatron's default); "
                        "state --moe-ffn-hidden-size if the experts are narrower",
                        ffn));
      }
      if (auto w = a.whole("--moe-shared-expert-intermediate-size")) m["shared_expert_intermediate_size"] = *w;
      if (auto n = a.whole("--n-shared-experts", 0)) m["n_shared_experts"] = *n;
      // Which layers are MoE. Megatron-Core: an int N makes layer i MoE when i % N == 0 (Python's modulo: 1 and
      // -1 both mean every layer), a list expression states each layer (moe_layer_pattern). MindSpeed-LLM's
      // --first-k-dense-replace k (mindspeed_llm/core/transformer/transformer_block.py) makes layers i < k dense on
      // top of that (k <= 0: none). Both count --num-layers' positions, MindSpeed's --noop-layers among them: the
      // model's layers are the others, in order.
      long long dense_first = 0;
      std::vector<long long> routed;  // the MoE layers' indices, where the pattern is not k dense layers first
      if (auto freq = a.value("--moe-layer-freq")) {
        std::vector<int> pattern;
        const std::vector<int> positions = moe_layer_pattern(*freq, *layers, at(file, "--moe-layer-freq"));
        for (long long i = 0; i < *layers; ++i)
          if (!noop.contains(i)) pattern.push_back(positions[static_cast<std::size_t>(i)]);
        const auto leading = static_cast<long long>(std::distance(pattern.begin(), std::ranges::find(pattern, 1)));
        if (std::all_of(pattern.begin() + leading, pattern.end(), [](int x) { return x == 1; })) {
          dense_first = leading;
        } else {
          for (std::size_t i = 0; i < pattern.size(); ++i)
            if (pattern[i] == 1) routed.push_back(static_cast<long long>(i));
          m["moe_layers"] = routed;
        }
      }
      if (auto stated = a.whole("--first-k-dense-replace", -(1LL << 40))) {
        const long long k = *stated > 0 ? *stated - static_cast<long long>(std::distance(noop.begin(), noop.lower_bound(*stated))) : *stated;
        if (*stated >= *layers || (*stated > 0 && k >= *layers - static_cast<long long>(noop.size())))
          fail(at(file, "--first-k-dense-replace"), "{} dense layers leave no MoE layer of --num-layers {}", *stated, *layers);
        if (k > 0 && dense_first > 0 && k != dense_first)
          fail(at(file, "--first-k-dense-replace"), "{} dense layers, but --moe-layer-freq states {}", k, dense_first);
        dense_first = std::max(dense_first, k);
      }
      if (dense_first > 0) m["first_k_dense_replace"] = dense_first;
    }
    if (auto mtp = a.whole("--mtp-num-layers", 0)) m["num_nextn_predict_layers"] = *mtp;
    // DeepSeek Sparse Attention: Megatron-Core's --experimental-attention-variant dsa with --dsa-indexer-* (and
    // MindSpeed-LLM's --index-n-heads / --index-head-dim / --index-topk): DeepSeek-V3.2's layers (deepseek_v32).
    bool dsa = false;
    bool gated_delta_net = false;
    if (auto variant = a.value("--experimental-attention-variant")) {
      if (*variant != "dsa" && *variant != "gated_delta_net")
        fail(at(file, "--experimental-attention-variant"), "'{}' is not priced: sapp reads dsa (DeepSeek Sparse Attention) and gated_delta_net", *variant);
      dsa = *variant == "dsa";
      gated_delta_net = *variant == "gated_delta_net";
    }
    const std::array<std::array<const char*, 3>, 3> index_flags = {{{"--dsa-indexer-n-heads", "--index-n-heads", "index_n_heads"},
                                                                    {"--dsa-indexer-head-dim", "--index-head-dim", "index_head_dim"},
                                                                    {"--dsa-indexer-topk", "--index-topk", "index_topk"}}};
    // MindSpeed-LLM switches the indexer on with --enable-dsa-indexer, its three sizes defaulting to 64 heads of 128
    // and top-2048 (mindspeed_llm/features_manager/transformer/multi_latent_attention/dsa_indexer_feature.py at
    // c77308a1); Megatron-Core states all three.
    const bool mindspeed_indexer = a.on("--enable-dsa-indexer");
    const std::array<long long, 3> mindspeed_defaults = {64, 128, 2048};
    int index_stated = 0;
    for (std::size_t i = 0; i < index_flags.size(); ++i) {
      const auto& [core_flag, mindspeed_flag, key] = index_flags[i];
      auto v = a.flags.count(core_flag) ? a.whole(core_flag) : a.whole(mindspeed_flag);
      if (!v && mindspeed_indexer) v = mindspeed_defaults[i];
      if (v) {
        m[key] = *v;
        ++index_stated;
      }
    }
    if (index_stated > 0 || dsa) {
      if (index_stated < 3 || !mla) {
        fail(at(file, index_stated < 3 ? "--dsa-indexer-topk" : "--multi-latent-attention"),
             "DeepSeek Sparse Attention is priced on MLA layers with all of --dsa-indexer-n-heads, --dsa-indexer-head-dim and "
             "--dsa-indexer-topk (or MindSpeed-LLM's --index-n-heads, --index-head-dim, --index-topk); {} of the three stated{}",
             index_stated, mla ? "" : ", and no --multi-latent-attention");
      }
      dsa = true;
      a.used.insert("--dsa-indexer-loss-coeff");
      a.used.insert("--indexer-loss-coeff");
      if (a.flags.count("--dsa-indexer-n-heads") && !a.on("--dsa-indexer-use-sparse-loss")) {
        out.warnings.push_back(
            "without --dsa-indexer-use-sparse-loss Megatron-Core distils the indexer over every earlier key; sapp prices the sparse "
            "loss (over the selected keys) of the DeepSeek-V3.2 report's sparse stage");
      }
    }
    m["model_type"] = dsa        ? "deepseek_v32"
                      : mla      ? "deepseek_v3"
                      : moe      ? (qk_norm ? "qwen3_moe" : "mixtral")
                      : qk_norm  ? "qwen3"
                      : qkv_bias ? "qwen2"
                      : swiglu   ? "llama"
                      // An ungated squared-ReLU MLP without biases: Nemotron-3 / Nemotron-4 (NeMo's NemotronConfig).
                      : (no_bias && a.flags.count("--squared-relu") > 0) ? "nemotron"
                                                                         : "gpt3";
    // Megatron-Core's hybrid stacks (pretrain_mamba.py; Nemotron-H, Nemotron 3): each symbol of the pattern is a layer
    // of its own, Mamba-2 (M), attention (*), MLP (-) or MoE (E): read as the nemotron_h family with Megatron-Core's
    // MambaMixer defaults (--mamba-head-dim 64, --mamba-num-groups 8, --mamba-state-dim 128, heads 2 x hidden / head
    // dim, a 4-wide convolution). A pattern with other symbols (Gated DeltaNet's G, MTP patterns after '/') and the
    // ratio form (--hybrid-attention-ratio / --hybrid-mlp-ratio) are refused when the model is priced from this file,
    // never priced as something else.
    a.used.insert("--is-hybrid-model");
    if (hybrid && !hybrid->error.empty() && out.model_error.empty()) out.model_error = hybrid->error;
    if (hybrid && hybrid->error.empty()) {
      m["model_type"] = "nemotron_h";
      m["hybrid_override_pattern"] = hybrid->symbols;
      const long long head_dim = a.whole("--mamba-head-dim").value_or(64);
      m["mamba_head_dim"] = head_dim;
      m["mamba_num_heads"] = a.whole("--mamba-num-heads").value_or(2 * h / head_dim);
      m["n_groups"] = a.whole("--mamba-num-groups").value_or(8);
      m["ssm_state_size"] = a.whole("--mamba-state-dim").value_or(128);
      m["conv_kernel"] = 4;
    }
    for (const char* flag : {"--hybrid-attention-ratio", "--hybrid-mlp-ratio"}) {
      if (auto v = a.raw(flag); v && out.model_error.empty() && !hybrid) {
        out.model_error = fmt::format(
            "{}: '{}' states a hybrid stack sapp does not read (it reads --hybrid-layer-pattern / --hybrid-override-pattern); give sapp --model for a model it "
            "bundles",
            at(file, flag), *v);
      }
    }
    // Gated DeltaNet layers with every N-th layer full attention (Qwen3-Next's full_attention_interval; layer i full
    // when (i + 1) % N == 0), the DeltaNet's dimensions as Transformers' linear_* keys; MoE: qwen3_next, dense: qwen3_5
    // (the same layers with a dense FFN). Two forms: Megatron-Core's (core_v0.17.0: transformer_config.py,
    // experimental_attention_variant_module_specs.py) --experimental-attention-variant gated_delta_net with
    // --linear-attention-freq N and --linear-conv-kernel-dim, the dataclass's defaults where a dimension is missing;
    // MindSpeed-LLM's (examples/mcore/qwen3_next) --full-attention-interval N with --mamba-d-conv, every dimension stated.
    std::optional<long long> interval;
    if (gated_delta_net) {
      const std::string where = at(file, "--experimental-attention-variant");
      const std::optional<std::string> freq = a.value("--linear-attention-freq");
      if (!freq) fail(where, "gated_delta_net needs --linear-attention-freq (Megatron-Core asserts it)");
      interval = whole_number(*freq);
      if (!interval || *interval < 1)
        fail(at(file, "--linear-attention-freq"), "'{}': sapp reads an interval N (every N-th layer full attention), not a list pattern", *freq);
      if (mla) fail(where, "gated_delta_net beside multi-latent attention is not priced");
    } else if (!mla) {
      interval = a.whole("--full-attention-interval");
    }
    if (interval) {
      m["model_type"] = moe ? "qwen3_next" : "qwen3_5";
      m["full_attention_interval"] = *interval;
      struct Dim {
        const char* key;
        const char* core_flag;
        const char* mindspeed_flag;
        long long core_default;
      };
      for (const Dim& d : {Dim{"linear_num_key_heads", "--linear-num-key-heads", "--linear-num-key-heads", 16},
                           Dim{"linear_key_head_dim", "--linear-key-head-dim", "--linear-key-head-dim", 128},
                           Dim{"linear_num_value_heads", "--linear-num-value-heads", "--linear-num-value-heads", 32},
                           Dim{"linear_value_head_dim", "--linear-value-head-dim", "--linear-value-head-dim", 128},
                           Dim{"linear_conv_kernel_dim", "--linear-conv-kernel-dim", "--mamba-d-conv", 4}}) {
        const std::optional<long long> v = a.whole(gated_delta_net ? d.core_flag : d.mindspeed_flag);
        if (v || gated_delta_net) m[d.key] = v.value_or(d.core_default);
      }
      if (!gated_delta_net) {
        if (!m.contains("linear_num_key_heads") || !m.contains("linear_conv_kernel_dim"))
          fail(at(file, "--full-attention-interval"),
               "needs the linear attention's --linear-num-key-heads, --linear-key-head-dim, --linear-num-value-heads, "
               "--linear-value-head-dim and --mamba-d-conv");
        for (const char* f : {"--shared-expert-gate", "--mamba-expand", "--mamba-chunk-size", "--partial-rotary-factor", "--use-triton-gdn"})
          a.used.insert(f);  // Qwen3-Next's shared-expert gate is its family's; the others have no weights
      }
    }
    // Megatron-Core's --window-size L,R (core_v0.17.1: a query attends L keys back and R ahead, -1 without limit):
    // L + 1 keys, Transformers' sliding_window; 0 where unstated.
    auto window_keys = [&]() -> long long {
      const auto w = a.value("--window-size");
      if (!w) return 0;
      const std::string where = at(file, "--window-size");
      const auto parts = io::split_commas(*w);
      const long long left = parts.empty() ? -1 : whole_number(io::trim(parts.front())).value_or(-1);
      const long long right = parts.size() == 2 ? whole_number(io::trim(parts.back())).value_or(-1) : -1;
      if (left < 0 || right != 0) fail(where, "'{}' is not a causal window like 127,0", *w);
      return left + 1;
    };
    // GPT-OSS as Megatron-Core states it (examples/gptoss): attention sinks (--softmax-type learnable), a window of
    // --window-size W,0 (W + 1 keys, Transformers' sliding_window) skipped every --window-attn-skip-freq-th layer
    // (those attend fully), experts with biases and a clamped SwiGLU (--quick-geglu): the gpt_oss family.
    if (moe && !mla && a.value("--softmax-type").value_or("") == "learnable") {
      m["model_type"] = "gpt_oss";
      const long long keys = window_keys();
      const long long counted = *layers - static_cast<long long>(noop.size());
      const std::vector<int> windowed = window_layer_pattern(a.value("--window-attn-skip-freq"), counted, at(file, "--window-attn-skip-freq"));
      json types = json::array();
      for (long long i = 0; i < counted; ++i) types.push_back(keys > 0 && windowed[static_cast<std::size_t>(i)] == 1 ? "sliding_attention" : "full_attention");
      m["layer_types"] = types;
      if (keys > 0) m["sliding_window"] = keys;
      m["attention_bias"] = !no_bias || a.on("--add-qkv-bias");
      for (const char* f : {"--quick-geglu", "--glu-linear-offset", "--activation-func-clamp-value", "--rope-type", "--yarn-rotary-scaling-factor",
                            "--yarn-original-max-position-embeddings", "--yarn-beta-fast", "--yarn-beta-slow", "--yarn-mscale", "--yarn-mscale-all-dim"})
        a.used.insert(f);  // the family's activation, its clamp and RoPE scaling: no weights
    }
    if (gated_gelu && !mla && !moe) {
      m["model_type"] = window ? "gemma2" : "gemma";
      if (window) m["sliding_window"] = *window;
      if (!window && a.on("--post-norm")) out.warnings.push_back("--post-norm without --interleave-sliding-window: priced as Gemma's two norms per layer");
      for (const char* f :
           {"--post-norm", "--query-pre-attn-scalar", "--attn-logit-softcapping", "--output-logit-softcapping", "--add-rmsnorm-offset", "--input-embeds-norm"})
        a.used.insert(f);  // scalars and element-wise passes without weights
    }
    // A window on a dense Llama-type model (Mistral 7B v0.1, Phi-3): every layer windowed is the mistral family's
    // sliding kind; windowed and full layers mixed are not a stack that family prices.
    if (!moe && !mla && !gated_gelu && m.value("model_type", std::string()) == "llama" && a.flags.count("--window-size")) {
      const long long keys = window_keys();
      const std::vector<int> windowed = window_layer_pattern(a.value("--window-attn-skip-freq"), *layers, at(file, "--window-attn-skip-freq"));
      if (std::ranges::find(windowed, 0) != windowed.end())
        fail(at(file, "--window-attn-skip-freq"), "full-attention layers between windowed ones are priced for GPT-OSS only (--softmax-type learnable)");
      m["model_type"] = "mistral";
      m["sliding_window"] = keys;
    }
    if (a.flags.count("--window-size") && !m.contains("sliding_window")) {
      a.used.insert({"--window-size", "--window-attn-skip-freq"});  // said here, not among the flags of no effect
      out.warnings.push_back(
          "--window-size: a window is priced for GPT-OSS (--softmax-type learnable) and for a dense Llama-type model windowed in every layer; "
          "this model is priced with full attention in every layer");
    }
    if (!no_bias && (swiglu || gated_gelu || mla || moe))
      out.warnings.push_back("linear layers keep Megatron's default biases (no --disable-bias-linear); sapp prices the family's biases");
    if (a.on("--squared-relu")) m["hidden_act"] = "relu2";  // an ungated MLP (MindSpeed-LLM's PLM, Nemotron)
    // Dropout: Megatron-LM runs 0.1 after attention and on the hidden state unless told otherwise (arguments.py
    // --attention-dropout / --hidden-dropout at core_v0.14.0, TransformerConfig's defaults at core_v0.17.1).
    for (const auto& [flag, key] : {std::pair{"--attention-dropout", "attention_dropout"}, std::pair{"--hidden-dropout", "hidden_dropout"}}) {
      const auto drop = a.value(flag);
      const auto p = drop ? real_number(*drop) : std::optional<double>(0.1);
      if (!p || *p < 0 || *p > 1) fail(at(file, flag), "'{}' is not a dropout probability", *drop);
      m[key] = *p;
    }
    if (!a.flags.count("--attention-dropout") && !a.flags.count("--hidden-dropout"))
      out.warnings.push_back(
          "no --attention-dropout / --hidden-dropout: Megatron-LM's default 0.1 each, whose masks are priced; state 0.0 if the run has none");
    // Positions: Megatron-LM's default --position-embedding-type is learned_absolute, a table of
    // --max-position-embeddings rows (the sequence length where unstated) of hidden-size weights (arguments.py at
    // core_v0.14.0, which takes the legacy --use-rotary-position-embeddings as rope and refuses
    // --no-position-embedding beside any other type: read as no table); the other types (rope, yarn, mrope, none,
    // MindSpeed-LLM's alibi) have no weights.
    std::string positions = a.value("--position-embedding-type").value_or("learned_absolute");
    if (a.on("--use-rotary-position-embeddings") || a.on("--no-position-embedding")) positions = "rope";
    if (positions == "learned_absolute") {
      const long long rows = m.value("max_position_embeddings", a.whole("--seq-length").value_or(0));
      if (rows > 0) m["learned_position_embeddings"] = rows;
      if (!a.flags.count("--position-embedding-type") && (swiglu || gated_gelu || moe || mla || qk_norm))
        out.warnings.push_back("no --position-embedding-type: Megatron-LM's learned_absolute, whose position table is priced; state rope if the model rotates");
    }
    out.model_config = m;
    set("model", file, "--num-layers, --hidden-size, ...");
    for (const char* f : {"--normalization", "--rotary-base", "--rotary-percent", "--norm-epsilon", "--use-mcore-models", "--make-vocab-size-divisible-by",
                          "--moe-router-score-function", "--moe-router-num-groups", "--moe-router-group-topk"})
      a.used.insert(f);
  }

  // Batch and sequence.
  long long mbs = a.whole("--micro-batch-size").value_or(1);
  set("mbs", mbs, "--micro-batch-size");
  if (auto gbs = a.whole("--global-batch-size")) {
    set("global_batch", *gbs, "--global-batch-size");
  } else if (devices && *devices % (tp * pp * cp) == 0) {
    set("global_batch", mbs * (*devices / (tp * pp * cp)), "--micro-batch-size x DP (no --global-batch-size)");
  }
  if (auto seq = a.whole("--seq-length")) set("seq", *seq, "--seq-length");

  // Precision.
  bool bf16 = a.on("--bf16");
  bool fp16 = a.on("--fp16");
  if (!bf16 && !fp16) {
    set("param_bytes", 4, "no --bf16 / --fp16 (fp32 training)");
    set("compute_bytes", 4, "no --bf16 / --fp16 (fp32 training)");
    set("optimizer_bytes", 8, "no --bf16 / --fp16 (fp32 training: Adam moments only)");
  }
  // The gradient buffer: Megatron-LM's validate_args keeps it in the parameters' dtype unless gradients are
  // accumulated in fp32, which bf16 forces unless --grad-reduce-in-bf16; fp16 only with
  // --accumulate-allreduce-grads-in-fp32 (DDP: grad_dtype = float if grad_reduce_in_fp32 else param dtype).
  const bool fp32_grads = a.on("--accumulate-allreduce-grads-in-fp32");
  if (bf16 && a.on("--grad-reduce-in-bf16")) set("grad_bytes", 2, "--bf16 --grad-reduce-in-bf16");
  if (fp16 && !fp32_grads) set("grad_bytes", 2, "--fp16 without --accumulate-allreduce-grads-in-fp32");
  if (a.value("--fp8-format")) set("fp8", true, "--fp8-format");
  if (a.on("--fp8-param-gather")) set("fp8_param_gather", true, "--fp8-param-gather");
  // NVFP4 (arguments.py: --fp4-format e2m1 with --fp4-recipe nvfp4, Transformer Engine's NVFP4BlockScaling):
  // Transformer Engine's low-precision machinery at NVFP4's rate and sizes; --fp4-param-gather keeps the weights in
  // NVFP4 as --fp8-param-gather keeps them in FP8.
  if (a.value("--fp4-format")) set("fp4", true, "--fp4-format");
  if (a.on("--fp4-param-gather")) set("fp8_param_gather", true, "--fp4-param-gather");
  if (auto recipe = a.value("--fp4-recipe"); recipe && *recipe != "nvfp4")
    out.warnings.push_back(fmt::format("--fp4-recipe {}: priced as NVFP4BlockScaling (nvfp4), the recipe sapp knows", *recipe));
  // What runs outside NVFP4 (or FP8) that sapp prices in it: the first and last layers, a per-module precision file,
  // and Transformer Engine's switches that keep the backward GEMMs in BF16 (read from the script's environment).
  if (a.value("--fp4-format") || a.value("--fp8-format")) {
    if (a.on("--first-last-layers-bf16"))
      out.warnings.push_back("--first-last-layers-bf16: the first and last layers' GEMMs run in BF16, priced in the low precision like the others");
    if (a.value("--te-precision-config-file"))
      out.warnings.push_back("--te-precision-config-file: modules its matchers keep in BF16 are priced in the low precision like the others");
    for (const char* env : {"NVTE_BACKWARD_OVERRIDE", "NVTE_KEEP_BACKWARD_UNQUANTIZED"}) {
      if (sh.vars.count(env) != 0)
        out.warnings.push_back(fmt::format("{} is set: the backward GEMMs run in high precision, priced in the low precision like the forward", env));
    }
  }
  // Transformer Engine's precision-aware optimizer: the fp32 master copy and Adam's two moments each in the dtype
  // stated (arguments.py --main-params-dtype, --exp-avg-dtype, --exp-avg-sq-dtype; fp32 by default), and the main
  // gradients in --main-grads-dtype (bf16: no fp32 accumulation, validate_args).
  if (a.on("--use-precision-aware-optimizer")) {
    auto bytes_of = [&](const char* flag) {
      const std::string dtype = a.value(flag).value_or("fp32");
      return dtype == "fp8" ? 1.0 : dtype_bytes(dtype, at(file, flag));
    };
    set("optimizer_bytes", bytes_of("--main-params-dtype") + bytes_of("--exp-avg-dtype") + bytes_of("--exp-avg-sq-dtype"),
        "--use-precision-aware-optimizer (--main-params-dtype + --exp-avg-dtype + --exp-avg-sq-dtype)");
    if (bf16 && !fp32_grads && bytes_of("--main-grads-dtype") == 2) set("grad_bytes", 2, "--use-precision-aware-optimizer --main-grads-dtype bf16");
  }
  // MindSpeed's --reuse-fp32-param: the fp32 master copy is kept as the bf16 parameter plus a 16-bit residual, so it
  // costs 2 bytes per parameter instead of 4 (sharded like the rest of the optimizer state under the distributed
  // optimizer: the saving is 2 bytes x parameters / DP; MindSpeed docs/zh/features/reuse-fp32-param.md).
  // MindSpeed-LLM's O2 (docs/en/pytorch/features/mcore/o2.md, bf16 training only): --o2-optimizer keeps Adam's two
  // moments in bf16 (4 bytes per parameter less, sharded with the optimizer), --o2-gradient accumulates the
  // gradients in bf16 (2 bytes per parameter less).
  const bool reuse = bf16 && a.on("--reuse-fp32-param");
  const bool o2_optimizer = bf16 && a.on("--o2-optimizer");
  if (reuse || o2_optimizer)
    set("optimizer_bytes", 12 - (reuse ? 2 : 0) - (o2_optimizer ? 4 : 0),
        reuse && o2_optimizer ? "--reuse-fp32-param --o2-optimizer"
        : reuse               ? "--reuse-fp32-param (fp32 master as bf16 + residual)"
                              : "--o2-optimizer (bf16 Adam moments)");
  if (bf16 && a.on("--o2-gradient")) set("grad_bytes", 2, "--o2-gradient (bf16 gradient accumulation)");
  // MindSpeed's --swap-optimizer: the optimizer's fp32 state waits in host memory through forward and backward and
  // comes back 1/--swap-optimizer-times (default 16) at a time during the step (MindSpeed
  // docs/zh/features/swap-optimizer.md): priced as two such portions resident, 12 x 2 / times bytes per parameter.
  if (a.on("--swap-optimizer")) {
    const long long times = a.whole("--swap-optimizer-times").value_or(16);
    set("optimizer_bytes", 24.0 / static_cast<double>(times), "--swap-optimizer (two of --swap-optimizer-times portions on the device)");
    out.warnings.emplace_back(
        "--swap-optimizer: the optimizer state's host round trip (12 bytes per parameter each way per step) is not priced in the step time");
  }
  // MindSpeed-LLM's instruction fine-tuning without padding: each sample runs at its own length.
  if (a.on("--no-pad-to-seq-lengths"))
    out.warnings.emplace_back(
        "--no-pad-to-seq-lengths: samples run at their own lengths, below --seq-length; sapp prices every sample at --seq-length (an upper bound)");
  // Megatron-LM's --variable-seq-lengths (MindSpeed-LLM's fine-tuning scripts): each micro-batch is padded to its own
  // longest sample (a multiple of --pad-to-multiple-of), not to --seq-length.
  if (a.on("--variable-seq-lengths"))
    out.warnings.emplace_back(
        "--variable-seq-lengths: each micro-batch is padded to its longest sample, not to --seq-length; sapp prices every micro-batch at "
        "--seq-length (an upper bound on memory and time)");
  // LoRA fine-tuning (MindSpeed-LLM's --lora-r; its --lora-target-modules are priced as every linear layer).
  if (auto r = a.whole("--lora-r")) {
    set("lora_rank", *r, "--lora-r");
    a.used.insert("--lora-target-modules");
  }
  if (a.on("--swap-attention"))
    out.warnings.push_back("--swap-attention: sapp keeps the attention activations MindSpeed swaps to host memory on the device (the peak is an upper bound)");

  // Optimizer sharding.
  int zero = a.on("--use-distributed-optimizer") ? 1 : 0;
  std::string zero_from = "--use-distributed-optimizer";
  if (a.on("--use-megatron-fsdp") || a.on("--use-custom-fsdp")) {
    std::string strategy = a.value("--data-parallel-sharding-strategy").value_or("no_shard");
    static const std::map<std::string, int> levels = {{"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
    if (!levels.count(strategy))
      fail(at(file, "--data-parallel-sharding-strategy"), "'{}' is not no_shard, optim, optim_grads or optim_grads_params", strategy);
    zero = levels.at(strategy);
    zero_from = "--data-parallel-sharding-strategy";
  }
  if (a.on("--use-torch-fsdp2")) {
    zero = a.on("--torch-fsdp2-no-reshard-after-forward") ? 2 : 3;
    zero_from = "--use-torch-fsdp2";
  }
  set("zero", zero, zero_from);

  // Context parallelism.
  if (cp > 1) {
    if (auto algo = a.value("--context-parallel-algo")) {
      set("cp_algo", *algo == "ulysses_cp_algo" ? "all2all" : "ring", "--context-parallel-algo");
      if (*algo != "ulysses_cp_algo" && *algo != "megatron_cp_algo")
        out.warnings.push_back(fmt::format("--context-parallel-algo {} is priced as ring CP", *algo));
    } else if (auto type = a.value("--cp-comm-type")) {
      set("cp_algo", *type == "a2a" ? "all2all" : "ring", "--cp-comm-type");
      if (*type != "a2a" && *type != "p2p") out.warnings.push_back(fmt::format("--cp-comm-type {} is priced as ring (p2p) CP", *type));
    }
  } else {
    a.used.insert("--cp-comm-type");
    a.used.insert("--context-parallel-algo");
  }

  // Virtual pipeline and the stage split.
  long long vpp = 1;
  if (auto v = a.whole("--num-virtual-stages-per-pipeline-rank")) vpp = *v;
  const bool layer_list = a.flags.count("--num-layer-list") > 0;
  std::optional<plan::StageSplit> split;
  if (hybrid && !hybrid->segments.empty() && hybrid->cuts_form) {
    // core_v0.17 (arguments.py, mamba_hybrid_layer_allocation.py select_pipeline_segment): the pattern's '|' cuts
    // are the pipeline layout, PP x VPP segments, segment v x PP + r on rank r's chunk v (VPP = segments / PP); no
    // other split or virtual-pipeline flag is read beside it. A pattern without cuts splits evenly over PP, or by
    // --decoder-first/last-pipeline-num-layers (read below), without a virtual pipeline.
    for (const char* flag :
         {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-layout",
          "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split", "--num-layer-list", "--pipeline-num-transformer-layers"}) {
      if (a.flags.count(flag))
        fail(at(file, flag), "Megatron-Core (core_v0.17) reads a hybrid stack's pipeline layout from the '|' cuts of {}; drop the flag", hybrid->flag);
    }
    const auto segments = static_cast<long long>(hybrid->segments.size());
    if (segments > 1) {
      for (const char* flag : {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"}) {
        if (a.flags.count(flag)) fail(at(file, flag), "the '|' cuts of {} already state the pipeline layout; drop the flag", hybrid->flag);
      }
      if (pp == 1) fail(at(file, hybrid->flag), "{} pipeline segments with PP 1: Megatron-LM runs an interleaved schedule only over PP > 1", segments);
      if (segments % pp != 0) fail(at(file, hybrid->flag), "{} pipeline segments do not divide over PP {}", segments, pp);
      vpp = segments / pp;
      split.emplace();
      split->layers.assign(static_cast<std::size_t>(vpp), std::vector<long long>(static_cast<std::size_t>(pp), 0));
      for (long long k = 0; k < segments; ++k) split->layers[static_cast<std::size_t>(k / pp)][static_cast<std::size_t>(k % pp)] = hybrid->segments[k];
    } else if (pp > 1 && !a.flags.count("--decoder-first-pipeline-num-layers") && !a.flags.count("--decoder-last-pipeline-num-layers") && layers &&
               *layers % pp != 0) {
      fail(at(file, hybrid->flag), "{} layers do not divide over PP {}: state the split as '|' cuts in the pattern", *layers, pp);
    }
  } else if (hybrid && !hybrid->cuts_form && pp > 1) {
    // Before core_v0.17 Megatron-Core's hybrid stack runs an even split without a virtual pipeline
    // (plan::hybrid_stack_runs_pipeline) and reads none of the split flags.
    if (vpp > 1) fail(at(file, "--num-virtual-stages-per-pipeline-rank"), "{}: Megatron-Core's hybrid stack (pretrain_mamba.py) runs no virtual pipeline", vpp);
    for (const char* flag : {"--num-layers-per-virtual-pipeline-stage", "--pipeline-model-parallel-layout", "--decoder-first-pipeline-num-layers",
                             "--decoder-last-pipeline-num-layers", "--num-layer-list"}) {
      if (a.flags.count(flag))
        fail(at(file, flag), "Megatron-Core's hybrid stack (pretrain_mamba.py) ignores it and splits --num-layers evenly over PP; drop the flag");
    }
    if (layers && *layers % pp != 0)
      fail(at(file, "--num-layers"), "{} over PP {}: Megatron-Core's hybrid stack gives each stage {} layers and drops the other {}", *layers, pp, *layers / pp,
           *layers % pp);
  }
  // MindSpeed's --schedules-method dualpipev (mindspeed/features_manager/pipeline_parallel/dualpipev_feature.py):
  // DualPipe-V, two chunks per rank in a V, --num-layers split evenly over the 2 x PP chunks.
  const std::optional<std::string> schedules = a.value("--schedules-method");
  const bool dualpipev = schedules == std::optional<std::string>("dualpipev") && pp > 1;
  if (schedules && *schedules != "dualpipev") fail(at(file, "--schedules-method"), "'{}' is not a schedule MindSpeed defines (dualpipev)", *schedules);
  if (dualpipev) {
    if (layer_list || a.flags.count("--num-layers-per-virtual-pipeline-stage") || vpp > 1)
      fail(at(file, "--schedules-method"), "dualpipev splits the layers itself: drop --num-layer-list and the virtual-pipeline flags");
    if (!layers || *layers % (2 * pp) != 0) fail(at(file, "--schedules-method"), "dualpipev needs --num-layers divisible by 2 x PP = {}", 2 * pp);
    vpp = 2;
    set("dualpipe_v", true, "--schedules-method dualpipev");
  }
  // --account-for-embedding/loss-in-pipeline-split: the embedding and the loss each take a layer's place in the even
  // split (arguments.py adds one to --num-layers for each before dividing by PP and the virtual stage size).
  const bool embedding_counts = a.on("--account-for-embedding-in-pipeline-split");
  const bool loss_counts = a.on("--account-for-loss-in-pipeline-split");
  const long long accounted = (embedding_counts ? 1 : 0) + (loss_counts ? 1 : 0);
  if (accounted > 0) {
    set("split_counts_embedding_and_loss", true,
        embedding_counts && loss_counts ? "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
        : embedding_counts              ? "--account-for-embedding-in-pipeline-split"
                                        : "--account-for-loss-in-pipeline-split");
    if (accounted == 1)
      out.warnings.emplace_back(fmt::format("{}: sapp's split counts the embedding and the loss together; priced with both counted as layers",
                                            embedding_counts ? "--account-for-embedding-in-pipeline-split" : "--account-for-loss-in-pipeline-split"));
  }
  if (auto per = a.whole("--num-layers-per-virtual-pipeline-stage"); per && !layer_list) {
    if (!layers) fail(at(file, "--num-layers-per-virtual-pipeline-stage"), "needs --num-layers");
    const long long counted = *layers + accounted;
    if (counted % (pp * *per) != 0)
      fail(at(file, "--num-layers-per-virtual-pipeline-stage"), "{} does not divide --num-layers {}{} / PP {}", *per, *layers,
           accounted > 0 ? fmt::format(" + {} (the embedding / loss counted as layers)", accounted) : "", pp);
    vpp = counted / pp / *per;
  }
  if (split) {
    // the hybrid pattern's cuts, above
  } else if (auto layout = a.value("--pipeline-model-parallel-layout")) {
    if (!layers) fail(at(file, "--pipeline-model-parallel-layout"), "needs --num-layers");
    split.emplace();
    split->layers = parse_layout(*layout, static_cast<int>(pp), *layers, at(file, "--pipeline-model-parallel-layout"));
    if (a.flags.count("--num-virtual-stages-per-pipeline-rank") && split->vpp() != vpp)
      fail(file, "--pipeline-model-parallel-layout has {} chunks per stage but --num-virtual-stages-per-pipeline-rank is {}", split->vpp(), vpp);
    vpp = split->vpp();
  } else if (a.flags.count("--decoder-first-pipeline-num-layers") || a.flags.count("--decoder-last-pipeline-num-layers")) {
    if (!layers) fail(at(file, "--decoder-first-pipeline-num-layers"), "needs --num-layers");
    long long first = a.whole("--decoder-first-pipeline-num-layers", 0).value_or(-1);
    long long last = a.whole("--decoder-last-pipeline-num-layers", 0).value_or(-1);
    long long middle_stages = pp - (first >= 0 ? 1 : 0) - (last >= 0 ? 1 : 0);
    long long rest = *layers - std::max(0LL, first) - std::max(0LL, last);
    if (rest < 0 || (middle_stages > 0 && rest % middle_stages != 0) || (middle_stages == 0 && rest != 0)) {
      fail(file,
           "--decoder-first-pipeline-num-layers {} and --decoder-last-pipeline-num-layers {} leave {} of --num-layers {} for {} other stage(s), which does "
           "not divide",
           first, last, rest, *layers, middle_stages);
    }
    std::vector<long long> per_stage(static_cast<std::size_t>(pp), middle_stages > 0 ? rest / middle_stages : 0);
    if (first >= 0) per_stage.front() = first;
    if (last >= 0) per_stage.back() = last;
    split = even_chunks(per_stage, vpp, file);
  } else if (layer_list) {
    // MindSpeed's uneven split: PP comma-separated layer counts, one per stage; with VPP each stage's count in
    // chunks of --num-layers-per-virtual-pipeline-stage layers.
    const std::string where = at(file, "--num-layer-list");
    const std::string list_text = a.value("--num-layer-list").value_or("");
    if (!layers) fail(where, "needs --num-layers");
    std::vector<long long> per_stage;
    std::stringstream ss(list_text);
    for (std::string item; std::getline(ss, item, ',');) {
      const long long n = whole_number(item).value_or(-1);
      if (n < 0) fail(where, "'{}': '{}' is not a layer count", list_text, item);
      per_stage.push_back(n);
    }
    if (static_cast<long long>(per_stage.size()) != pp) fail(where, "'{}' lists {} stages, but PP is {}", list_text, per_stage.size(), pp);
    if (std::accumulate(per_stage.begin(), per_stage.end(), 0LL) != *layers)
      fail(where, "'{}' places {} layers, but --num-layers is {}", list_text, std::accumulate(per_stage.begin(), per_stage.end(), 0LL), *layers);
    if (auto per = a.whole("--num-layers-per-virtual-pipeline-stage")) {
      for (std::size_t s = 0; s < per_stage.size(); ++s) {
        if (per_stage[s] % *per != 0 || per_stage[s] / *per != per_stage[0] / *per)
          fail(where,
               "'{}' with --num-layers-per-virtual-pipeline-stage {}: stage {} would run {} chunk(s) and stage 0 {}; sapp prices the same number of chunks on "
               "every stage",
               list_text, *per, s, static_cast<double>(per_stage[s]) / static_cast<double>(*per),
               static_cast<double>(per_stage[0]) / static_cast<double>(*per));
      }
      vpp = per_stage[0] / *per;
    }
    split = even_chunks(per_stage, vpp, where);
  } else if (auto ms = a.value("--pipeline-num-transformer-layers")) {
    // MindSpeed: a nested list, PP entries of per-chunk counts.
    json list = io::parse_yaml(*ms, at(file, "--pipeline-num-transformer-layers"));
    if (!list.is_array() || static_cast<long long>(list.size()) != pp)
      fail(at(file, "--pipeline-num-transformer-layers"), "'{}' must list PP {} stages", *ms, pp);
    split.emplace();
    std::size_t v = list[0].is_array() ? list[0].size() : 1;
    split->layers.assign(v, std::vector<long long>(static_cast<std::size_t>(pp), 0));
    for (std::size_t s = 0; s < list.size(); ++s) {
      json row = list[s].is_array() ? list[s] : json::array({list[s]});
      if (row.size() != v) fail(at(file, "--pipeline-num-transformer-layers"), "stage {} lists {} chunks, stage 0 lists {}", s, row.size(), v);
      for (std::size_t c = 0; c < v; ++c) {
        if (!row[c].is_number_integer() || row[c].get<long long>() < 0)
          fail(at(file, "--pipeline-num-transformer-layers"), "{} is not a layer count", row[c].dump());
        split->layers[c][s] = row[c].get<long long>();
      }
    }
    vpp = static_cast<long long>(v);
  }
  set("vpp", vpp, hybrid && hybrid->segments.size() > 1 ? hybrid->flag : "--num-virtual-stages-per-pipeline-rank");

  // Recompute.
  std::string granularity;
  if (a.on("--recompute-activations")) granularity = "selective";
  if (auto g = a.value("--recompute-granularity")) granularity = *g;
  if (!granularity.empty() && granularity != "full" && granularity != "selective")
    fail(at(file, "--recompute-granularity"), "'{}' is not full or selective", granularity);
  auto method = a.value("--recompute-method");
  auto count = a.whole("--recompute-num-layers", 0);
  if (granularity == "full" && method == std::optional<std::string>("block")) {
    if (!count) fail(at(file, "--recompute-num-layers"), "is required with --recompute-method block");
    if (!layers) fail(at(file, "--recompute-method"), "block recompute needs --num-layers");
    if (!split) split = plan::even_split(*layers, static_cast<int>(pp), static_cast<int>(vpp));
    split->full = split->layers;
    bool per_rank = a.on("--enable-recompute-layers-per-pp-rank");
    for (std::size_t s = 0; s < static_cast<std::size_t>(pp); ++s) {
      long long left = *count;
      for (std::size_t c = 0; c < split->layers.size(); ++c) {
        long long n = std::min(per_rank ? left : *count, split->layers[c][s]);
        split->full[c][s] = n;
        left -= n;
      }
    }
    set("recompute", "off", "--recompute-method block");
  } else if (!granularity.empty()) {
    if (method && *method != "uniform" && *method != "block") fail(at(file, "--recompute-method"), "'{}' is not uniform or block", *method);
    set("recompute", granularity, a.flags.count("--recompute-granularity") ? "--recompute-granularity" : "--recompute-activations");
  } else {
    set("recompute", "off", "no --recompute-granularity");
  }
  // What selective recomputes: Megatron-Core's --recompute-modules (default core_attn); MindSpeed's
  // --recompute-activation-function drops the MLP activation's output and recomputes it before the down
  // projection's backward (MindSpeed docs/zh/features/activation-function-recompute.md), on the layers full
  // recompute leaves (block method: those past --recompute-num-layers).
  std::vector<std::string> modules;
  if (auto it = a.flags.find("--recompute-modules"); it != a.flags.end() && granularity == "selective") modules = it->second;
  a.used.insert("--recompute-modules");
  const bool block_full = granularity == "full" && method == std::optional<std::string>("block");
  if (a.on("--recompute-activation-function") && (granularity != "full" || block_full)) {
    if (granularity == "selective" && modules.empty()) modules.emplace_back("core_attn");
    modules.insert(modules.end(), {"dense_act", "act"});
    if (granularity != "selective") set("recompute", "selective", "--recompute-activation-function");
    if (a.on("--recompute-activation-function-num-layers"))
      out.warnings.push_back("--recompute-activation-function-num-layers: sapp recomputes the activation function on every layer full recompute leaves");
  }
  if (!modules.empty()) set("recompute_modules", modules, a.flags.count("--recompute-modules") ? "--recompute-modules" : "--recompute-activation-function");
  if (!noop.empty()) {
    // Layers run chunk by chunk, stage by stage (chunk 0 of stages 0..PP-1, then chunk 1, ...): each cell loses the
    // placeholders in its range of indices.
    if (!split) split = plan::even_split(*layers, static_cast<int>(pp), static_cast<int>(vpp));
    long long first = 0;
    for (std::size_t c = 0; c < split->layers.size(); ++c) {
      for (std::size_t k = 0; k < split->layers[c].size(); ++k) {
        // Virtual stage c x PP + k, on its rank (DualPipe-V's second chunks run back up the ranks).
        const auto st = static_cast<std::size_t>(plan::rank_of_virtual(pp, static_cast<long long>(c) * pp + static_cast<long long>(k), dualpipev));
        long long& n = split->layers[c][st];
        const long long end = first + n;
        n -= static_cast<long long>(std::distance(noop.lower_bound(first), noop.lower_bound(end)));
        if (!split->full.empty()) split->full[c][st] = std::min(split->full[c][st], n);
        first = end;
      }
    }
  }
  out.split = split;

  // What is left: flags sapp does not read, and flags neither Megatron-LM core_v0.14.0 nor core_v0.17.0's nor the
  // dev branch's (1d9edcf8c7) additions to its arguments.py know (data/formats/megatron-flags.txt; but those sapp reads: newer Megatron-LM's, e.g.
  // GPT-OSS's --softmax-type, are not misspellings).
  std::vector<std::string> unknown;
  const auto& known = megatron_flags(true);
  for (const auto& f : a.order) {
    if (torchrun_flags().count(f)) continue;
    if (!a.used.count(f)) out.unused.push_back(f);
    if (!a.used.count(f) && std::find(known.begin(), known.end(), f) == known.end() && !mindspeed_flags().count(f)) unknown.push_back(f);
  }
  if (!unknown.empty()) {
    out.warnings.push_back(fmt::format(
        "flag(s) neither Megatron-LM (core_v0.14.0, core_v0.17.0's and the 2025-11 dev branch's additions) nor MindSpeed nor MindSpeed-LLM define: {}",
        fmt::join(unknown, ", ")));
  }
  if (a.order.empty()) fail(file, "states no --flag arguments");
  return out;
}

namespace {

// Text edits of an arguments file or launch script: set a flag's value, or remove a flag.
struct ScriptEditor {
  std::vector<std::string> lines;
  std::map<std::string, std::string> assignments;  // NAME -> its one literal value line index (as text)

  explicit ScriptEditor(const std::string& text) {
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) lines.push_back(line);
  }

  // Finds `--flag` as a whole word: (line, column) or (-1, -1).
  std::pair<long long, std::size_t> find(const std::string& flag) const {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      std::size_t hash = l.find('#');
      std::size_t p = 0;
      while ((p = l.find(flag, p)) != std::string::npos) {
        if (hash != std::string::npos && p > hash) break;
        bool start = p == 0 || std::isspace(static_cast<unsigned char>(l[p - 1])) || l[p - 1] == '"' || l[p - 1] == '(';
        std::size_t e = p + flag.size();
        bool end = e == l.size() || std::isspace(static_cast<unsigned char>(l[e])) || l[e] == '=' || l[e] == '"' || l[e] == ')';
        if (start && end) return {static_cast<long long>(i), p};
        p = e;
      }
    }
    return {-1, 0};
  }

  // Whether the flag's value is written in double quotes ("([0]*3+[1]*58)" on a command line; inside a quoted
  // variable it is not).
  [[nodiscard]] bool value_quoted(const std::string& flag) const {
    auto [line, p] = find(flag);
    if (line < 0) return false;
    const std::string& l = lines[static_cast<std::size_t>(line)];
    auto span = value_span(l, p, flag);
    return span && l[span->first] == '"';
  }

  // The value word after the flag on the same line: [begin, end) columns, or nothing.
  static std::optional<std::pair<std::size_t, std::size_t>> value_span(const std::string& l, std::size_t p, const std::string& flag) {
    std::size_t e = p + flag.size();
    if (e < l.size() && l[e] == '=') {
      std::size_t b = e + 1;
      std::size_t end = l.find_first_of(" \t\"", b);
      return std::make_pair(b, end == std::string::npos ? l.size() : end);
    }
    std::size_t b = l.find_first_not_of(" \t", e);
    if (b == std::string::npos || l[b] == '\\' || l[b] == '#' || l.compare(b, 2, "--") == 0 || l[b] == ')') return std::nullopt;
    if (l[b] == '"') {
      // A quoted value ("Et*3|t*5L", a hybrid pattern with its cuts, "$PATTERN"): through its closing quote; not
      // one holding flags or another shell expansion ("$@", "${ARGS[@]}"), which is not this flag's value.
      const std::size_t close = l.find('"', b + 1);
      if (close == std::string::npos) return std::nullopt;
      const std::string inner = l.substr(b + 1, close - b - 1);
      if (inner.rfind("--", 0) == 0 || (inner.find('$') != std::string::npos && !variable_reference(inner))) return std::nullopt;
      return std::make_pair(b, close + 1);
    }
    std::size_t end = l.find_first_of(" \t\")", b);
    return std::make_pair(b, end == std::string::npos ? l.size() : end);
  }

  void set_variable_or_token(std::size_t line, std::size_t b, std::size_t e, const std::string& value) {
    std::string token = lines[line].substr(b, e - b);
    if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);  // "$VAR"
    if (auto named = variable_reference(token)) {
      const std::string& name = *named;
      long long hit = -1;
      for (std::size_t i = 0; i < lines.size(); ++i) {
        auto assignment = plain_assignment(lines[i]);
        if (assignment && assignment->name == name) {
          if (hit >= 0) {
            hit = -2;
            break;
          }
          hit = static_cast<long long>(i);
        }
      }
      if (hit >= 0) {
        const PlainAssignment a = *plain_assignment(lines[static_cast<std::size_t>(hit)]);
        lines[static_cast<std::size_t>(hit)] = a.lead + name + "=" + a.open + value + a.close + a.trail;
        return;
      }
    }
    lines[line] = lines[line].substr(0, b) + value + lines[line].substr(e);
  }

  void set(const std::string& flag, const std::optional<std::string>& value, const std::string& anchor) {
    auto [line, p] = find(flag);
    if (line >= 0) {
      std::size_t li = static_cast<std::size_t>(line);
      if (!value) return;  // a switch already on
      auto span = value_span(lines[li], p, flag);
      if (span) {
        set_variable_or_token(li, span->first, span->second, *value);
      } else {
        lines[li].insert(p + flag.size(), " " + *value);
      }
      return;
    }
    std::string item = flag + (value ? " " + *value : "");
    std::string found = anchor;  // the flag the new one goes after: the anchor, else the first of these the file has
    auto [aline, ap] = find(anchor);
    if (aline < 0) {
      for (const char* f : {"--micro-batch-size", "--num-layers", "--tensor-model-parallel-size"}) {
        std::tie(aline, ap) = find(f);
        found = f;
        if (aline >= 0) break;
      }
    }
    if (aline < 0) {
      // No anchor flag: onto the end of the last line stating a flag (the command), before its continuation, so
      // that the script stays one command; a file without one gets a line of its own.
      for (std::size_t i = lines.size(); i-- > 0;) {
        std::string& l = lines[i];
        const std::size_t first = l.find_first_not_of(" \t");
        if (first == std::string::npos || l[first] == '#' || l.find("--") == std::string::npos) continue;
        std::size_t e = l.find_last_not_of(" \t");
        if (l[e] == '\\') e = l.find_last_not_of(" \t", e - 1);
        l.insert(e + 1, " " + item);
        return;
      }
      lines.push_back(item);
      return;
    }
    std::size_t ai = static_cast<std::size_t>(aline);
    const std::string& al = lines[ai];
    std::string indent = al.substr(0, al.find_first_not_of(" \t"));
    auto ends_with_backslash = [](const std::string& l) {
      std::size_t e = l.find_last_not_of(" \t");
      return e != std::string::npos && l[e] == '\\';
    };
    bool alone = al.find_first_not_of(" \t") == ap;  // the anchor starts its line
    if (!alone) {
      // Several flags on one line: add the new one right after the anchor flag and its value.
      auto span = value_span(al, ap, found);
      std::size_t at_col = span ? span->second : ap + found.size();
      lines[ai].insert(at_col, " " + item);
    } else if (ends_with_backslash(al)) {
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(ai + 1), indent + item + " \\");
    } else if (ai > 0 && ends_with_backslash(lines[ai - 1])) {
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(ai), indent + item + " \\");
    } else {
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(ai + 1), indent + item);
    }
  }

  void remove(const std::string& flag) {
    while (true) {
      auto [line, p] = find(flag);
      if (line < 0) return;
      std::size_t li = static_cast<std::size_t>(line);
      std::string& l = lines[li];
      auto span = value_span(l, p, flag);
      std::size_t e = span ? span->second : p + flag.size();
      l.erase(p, e - p);
      if (p > 0 && std::isspace(static_cast<unsigned char>(l[p - 1])) && (p == l.size() || std::isspace(static_cast<unsigned char>(l[p]))))
        l.erase(p - 1, 1);  // the blank before it
      std::string rest = l;
      rest.erase(std::remove_if(rest.begin(), rest.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '\\'; }), rest.end());
      if (rest.empty()) {
        // A line that held only this flag: drop it (a trailing backslash moves to the previous line's role).
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(li));
      }
    }
  }

  [[nodiscard]] std::string text() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

std::string layout_string(const plan::StageSplit& split, long long mtp) {
  std::string out;
  int pp = split.pp();
  for (int c = 0; c < split.vpp(); ++c) {
    for (int s = 0; s < pp; ++s) {
      if (c + s > 0) out += "|";
      std::string stage;
      if (c == 0 && s == 0) stage = "E";
      long long n = split.layers[static_cast<std::size_t>(c)][static_cast<std::size_t>(s)];
      if (n > 0) stage += std::string(stage.empty() ? "" : ",") + (n == 1 ? "t" : fmt::format("t*{}", n));
      if (c == split.vpp() - 1 && s == pp - 1) {
        for (long long i = 0; i < mtp; ++i) stage += std::string(stage.empty() ? "" : ",") + "m";
        stage += std::string(stage.empty() ? "" : ",") + "L";
      }
      out += stage;
    }
  }
  return out;
}

// A hybrid stack's pattern with the split's pipeline cuts as core_v0.17 reads them: segment v x PP + r (chunk v of
// stage r) holds the next layers[v][r] symbols; one segment (no cut) without a pipeline.
std::string hybrid_cut_pattern(const std::string& symbols, const plan::StageSplit& split) {
  std::vector<std::string> segments;
  std::size_t next = 0;
  for (const auto& chunk : split.layers) {
    for (long long n : chunk) {
      segments.push_back(symbols.substr(std::min(next, symbols.size()), static_cast<std::size_t>(n)));
      next += static_cast<std::size_t>(n);
    }
  }
  if (next != symbols.size()) fail("--emit megatron", "the split places {} of the hybrid pattern's {} layers", next, symbols.size());
  return fmt::format("{}", fmt::join(segments, "|"));
}

}  // namespace

// torchrun's device count in an edited launch: the processes per node kept, the nodes set (or one node of all the
// devices when they do not divide).
void set_torchrun_devices(ScriptEditor& ed, const Loaded& original, long long devices) {
  const std::string nproc_flag = ed.find("--nproc_per_node").first >= 0 ? "--nproc_per_node" : "--nproc-per-node";
  if (ed.find(nproc_flag).first < 0 || !original.values.contains("devices")) return;
  const long long old_devices = original.values.at("devices").get<long long>();
  if (devices == old_devices) return;
  Shell sh = run_shell(original.text, original.file);
  Args a = parse_args(sh, original.file);
  const long long nproc = a.whole(nproc_flag).value_or(old_devices);
  if (devices % nproc == 0) {
    ed.set("--nnodes", std::to_string(devices / nproc), nproc_flag);
  } else {
    ed.set(nproc_flag, std::to_string(devices), nproc_flag);
    ed.set("--nnodes", "1", nproc_flag);
  }
}

// MindSpeed-LLM's FSDP2 launch edited to the plan: its launch line's --section.key flags, which win over its YAML
// (the YAML itself is left as it is): fsdp_size the world, ep_size and ep_fsdp_size = world / ep, cp_size and
// cp_type, the per-device batch and the accumulation steps, recompute and reshard_after_forward; the world itself
// by torchrun's node count, as --emit megatron sets it.
std::string emit_mindspeed_fsdp2(const Plan& plan, const Loaded* original) {
  // What the trainer cannot run (TP, PP, selective recompute, ZeRO 0/1) emit() refuses through its Expressible.
  if (original == nullptr)
    fail("--emit mindspeed-fsdp2",
         "edits the MindSpeed-LLM FSDP2 launch given with --from (its YAML holds what sapp does not write): give --from the launch script");
  const plan::Layout& l = plan.layout;
  ScriptEditor ed(original->text);
  set_torchrun_devices(ed, *original, plan.devices);
  // New flags go after the trainer's YAML argument's line, where the examples state theirs.
  const std::string anchor = ed.find("--parallel.fsdp_size").first >= 0 ? "--parallel.fsdp_size" : "train_fsdp2.py";
  ed.set("--parallel.fsdp_size", std::to_string(plan.devices), anchor);
  ed.set("--parallel.cp_size", std::to_string(l.cp), "--parallel.fsdp_size");
  if (l.cp > 1) ed.set("--parallel.cp_type", l.cp_algo == plan::CpAlgo::Ring ? "ring" : "ulysses", "--parallel.cp_size");
  ed.set("--parallel.ep_size", std::to_string(l.ep), "--parallel.fsdp_size");
  ed.set("--parallel.ep_fsdp_size", std::to_string(plan.devices / std::max(1, l.ep)), "--parallel.ep_size");
  ed.set("--parallel.recompute", l.recompute == plan::Recompute::Full ? "True" : "False", "--parallel.fsdp_size");
  ed.set("--parallel.reshard_after_forward", l.zero >= 3 ? "True" : "False", "--parallel.fsdp_size");
  ed.set("--training.per_device_train_batch_size", std::to_string(l.mbs), "--parallel.fsdp_size");
  ed.set("--training.gradient_accumulation_steps", std::to_string(l.micro_batches), "--training.per_device_train_batch_size");
  return ed.text();
}

std::string emit_megatron(const Plan& plan, const Loaded* original, const std::string& model_name, std::vector<std::string>* notes) {
  const plan::Layout& l = plan.layout;
  // Megatron-Core's hybrid stack runs an even split without a virtual pipeline (plan::hybrid_stack_runs_pipeline):
  // nothing else is written; from core_v0.17, which a file stating its pattern that way shows, the pattern's '|'
  // cuts state any split (hybrid_cut_pattern).
  const bool hybrid_stack = plan.model && !plan.model->hybrid_pattern.empty();
  const bool hybrid_cuts = hybrid_stack && original != nullptr && original->hybrid_pipeline_cuts;
  if (hybrid_stack && plan.dualpipe_v)
    fail("--emit megatron",
         "DualPipe-V: Megatron-Core's hybrid stack (pretrain_mamba.py) runs no DualPipe-V schedule (MindSpeed's dualpipev builds GPT models)");
  if (hybrid_stack && !hybrid_cuts && l.pp > 1) {
    const long long layers = plan.model->num_layers;
    if (!plan::hybrid_stack_runs_pipeline(layers, l)) {
      if (l.vpp > 1) fail("--emit megatron", "VPP {}: Megatron-Core's hybrid stack (pretrain_mamba.py) runs no virtual pipeline", l.vpp);
      fail("--emit megatron", "{} layers over PP {}: Megatron-Core's hybrid stack gives each stage {} layers and drops the other {}", layers, l.pp,
           layers / l.pp, layers % l.pp);
    }
    if (plan.split) {
      for (long long n : plan.split->layers.front()) {
        if (n != layers / l.pp)
          fail("--emit megatron", "the split {} is uneven: Megatron-Core's hybrid stack gives every stage {} layers",
               fmt::join(plan.split->layers.front(), ","), layers / l.pp);
      }
    }
  }
  ScriptEditor ed(original ? original->text : std::string());
  if (!original) {
    if (plan.model && plan.model->linear && !hybrid_stack && !plan.model->attention_period)
      fail("--emit megatron",
           "{} runs Gated DeltaNet linear attention without one interval of full-attention layers, which Megatron-Core's "
           "--linear-attention-freq N does not state: start from such a script with --from, or write another format",
           model_name);
    ed.lines.push_back(fmt::format("# Megatron-LM (core_v0.14.0) arguments for {} on {} devices, written by sapp.", model_name, plan.devices));
    ed.lines.push_back(fmt::format("# torchrun --nproc_per_node <devices per node> --nnodes <nodes> {} $(cat this-file)",
                                   hybrid_stack ? "pretrain_mamba.py" : "pretrain_gpt.py"));
    if (hybrid_stack && plan.model->linear && plan.model->linear->conv_kernel_dim != 4 && notes)
      notes->push_back(fmt::format("the model's Mamba-2 convolution is {} wide; Megatron-Core's MambaMixer runs 4 (no flag states another)",
                                   plan.model->linear->conv_kernel_dim));
    if (plan.model) {
      const model::ModelSpec& m = *plan.model;
      ed.lines.push_back(fmt::format("--num-layers {}", m.num_layers));
      ed.lines.push_back(fmt::format("--hidden-size {}", m.hidden_size));
      ed.lines.push_back(fmt::format("--num-attention-heads {}", m.num_heads));
      if (m.intermediate_size) ed.lines.push_back(fmt::format("--ffn-hidden-size {}", *m.intermediate_size));
      if (m.num_kv_heads && *m.num_kv_heads != m.num_heads) {
        ed.lines.emplace_back("--group-query-attention");
        ed.lines.push_back(fmt::format("--num-query-groups {}", *m.num_kv_heads));
      }
      if (m.head_dim) ed.lines.push_back(fmt::format("--kv-channels {}", *m.head_dim));
      ed.lines.push_back(fmt::format("--vocab-size {}", m.vocab_size));
      ed.lines.push_back(fmt::format("--max-position-embeddings {}",
                                     std::max<long long>(plan.seq, m.learned_position_embeddings.value_or(m.max_position_embeddings.value_or(plan.seq)))));
      ed.lines.push_back(fmt::format("--position-embedding-type {}", m.learned_position_embeddings ? "learned_absolute" : hybrid_stack ? "none" : "rope"));
      // The MLP's activation: squared ReLU ungated (Nemotron's relu2), GPT-2/3's plain GeLU (Megatron's default),
      // else SwiGLU (a relu2 model had been written gated: more weights than it has).
      const std::string act = m.hidden_act.value_or("silu");
      if (act == "relu2" || act == "squared_relu")
        ed.lines.emplace_back("--squared-relu");
      else if (m.arch == "gpt_oss")
        // GPT-OSS's clamped SwiGLU with attention sinks, as Megatron-LM's examples/gptoss/02_train.sh states them.
        ed.lines.insert(ed.lines.end(), {"--quick-geglu", "--glu-linear-offset 1.0", "--activation-func-clamp-value 7.0", "--softmax-type learnable"});
      else if (m.arch == "gemma" || m.arch == "gemma2")
        ed.lines.emplace_back("--geglu");  // MindSpeed-LLM's gated GeLU (Gemma's MLP)
      else if (m.model_type != "gpt2" && m.model_type != "gpt3")
        ed.lines.emplace_back("--swiglu");
      for (const std::string& line : megatron_window_flags(plan, model_name)) ed.lines.push_back(line);
      if (hybrid_stack) {
        // Megatron-Core's hybrid stack, one symbol per layer (pretrain_mamba.py), its Mamba-2 mixer's dimensions.
        ed.lines.emplace_back("--is-hybrid-model");
        ed.lines.push_back(fmt::format("--hybrid-override-pattern {}", m.hybrid_pattern));
        if (m.linear) {
          ed.lines.push_back(fmt::format("--mamba-num-heads {}", m.linear->num_value_heads));
          ed.lines.push_back(fmt::format("--mamba-head-dim {}", m.linear->value_head_dim));
          ed.lines.push_back(fmt::format("--mamba-num-groups {}", m.linear->num_key_heads));
          ed.lines.push_back(fmt::format("--mamba-state-dim {}", m.linear->key_head_dim));
        }
      }
      // Megatron's linear layers carry biases unless --disable-bias-linear; --add-qkv-bias puts the q, k, v ones back.
      if (!plan.linear_bias) {
        ed.lines.emplace_back("--disable-bias-linear");
        if (plan.qkv_bias) ed.lines.emplace_back("--add-qkv-bias");
      }
      if (!m.tie_word_embeddings) ed.lines.emplace_back("--untie-embeddings-and-output-weights");
      if (m.is_moe()) {
        ed.lines.push_back(fmt::format("--num-experts {}", *m.num_experts));
        ed.lines.push_back(fmt::format("--moe-router-topk {}", m.experts_per_token.value_or(1)));
        ed.lines.push_back(fmt::format("--moe-ffn-hidden-size {}", m.routed_expert_width()));
        if (m.shared_expert_width() > 0) ed.lines.push_back(fmt::format("--moe-shared-expert-intermediate-size {}", m.shared_expert_width()));
        if (auto freq = moe_layer_freq_text(m)) ed.lines.push_back("--moe-layer-freq " + *freq);
      }
      if (m.is_mla()) {
        ed.lines.emplace_back("--multi-latent-attention");
        ed.lines.push_back(fmt::format("--kv-lora-rank {}", *m.kv_lora_rank));
        if (m.q_lora_rank) ed.lines.push_back(fmt::format("--q-lora-rank {}", *m.q_lora_rank));
        ed.lines.push_back(fmt::format("--qk-head-dim {}", *m.qk_nope_head_dim));
        ed.lines.push_back(fmt::format("--qk-pos-emb-head-dim {}", *m.qk_rope_head_dim));
        ed.lines.push_back(fmt::format("--v-head-dim {}", *m.v_head_dim));
        if (m.indexer) {
          // DeepSeek Sparse Attention as Megatron-Core states it (after core_v0.14.0), its sparse distillation loss
          // the one sapp priced.
          ed.lines.emplace_back("--experimental-attention-variant dsa");
          ed.lines.push_back(fmt::format("--dsa-indexer-n-heads {}", m.indexer->heads));
          ed.lines.push_back(fmt::format("--dsa-indexer-head-dim {}", m.indexer->head_dim));
          ed.lines.push_back(fmt::format("--dsa-indexer-topk {}", m.indexer->topk));
          ed.lines.emplace_back("--dsa-indexer-use-sparse-loss");
        }
      }
      if (m.linear && !hybrid_stack) {
        // Gated DeltaNet as Megatron-Core states it (core_v0.17.0, after core_v0.14.0): every --linear-attention-freq-th
        // layer full attention, the DeltaNet's dimensions.
        ed.lines.emplace_back("--experimental-attention-variant gated_delta_net");
        ed.lines.push_back(fmt::format("--linear-attention-freq {}", *m.attention_period));
        ed.lines.push_back(fmt::format("--linear-num-key-heads {}", m.linear->num_key_heads));
        ed.lines.push_back(fmt::format("--linear-key-head-dim {}", m.linear->key_head_dim));
        ed.lines.push_back(fmt::format("--linear-num-value-heads {}", m.linear->num_value_heads));
        ed.lines.push_back(fmt::format("--linear-value-head-dim {}", m.linear->value_head_dim));
        ed.lines.push_back(fmt::format("--linear-conv-kernel-dim {}", m.linear->conv_kernel_dim));
      }
      // Megatron-LM's dropout defaults to 0.1 (reader: the same), so the model's is always stated.
      ed.lines.push_back(fmt::format("--attention-dropout {}", plan.dropout));
      ed.lines.push_back(fmt::format("--hidden-dropout {}", plan.dropout));
      if (m.mtp_depth.value_or(0) > 0) ed.lines.push_back(fmt::format("--mtp-num-layers {}", *m.mtp_depth));
      if (m.qk_norm.value_or(false)) ed.lines.emplace_back("--qk-layernorm");
    }
    ed.lines.push_back(fmt::format("--seq-length {}", plan.seq));
    ed.lines.emplace_back("--bf16");
  } else {
    set_torchrun_devices(ed, *original, plan.devices);
  }
  const std::string anchor = "--micro-batch-size";
  ed.set("--tensor-model-parallel-size", std::to_string(l.tp), anchor);
  ed.set("--pipeline-model-parallel-size", std::to_string(l.pp), "--tensor-model-parallel-size");
  ed.set("--context-parallel-size", std::to_string(l.cp), "--tensor-model-parallel-size");
  // MindSpeed's --moe-tp-extend-ep reads EP as a factor of TP (the reader's EP x TP): kept when the layout has no
  // expert TP and EP is a multiple of TP, else dropped and the degrees written as they are.
  const bool extend_ep = ed.find("--moe-tp-extend-ep").first >= 0 && l.etp == 1 && l.tp > 1 && l.ep % l.tp == 0;
  if (!extend_ep) ed.remove("--moe-tp-extend-ep");
  if (l.ep > 1 || ed.find("--expert-model-parallel-size").first >= 0)
    ed.set("--expert-model-parallel-size", std::to_string(extend_ep ? l.ep / l.tp : l.ep), "--tensor-model-parallel-size");
  // Expert TP: written when it is not the reader's default for an MoE model (TP), or already stated.
  const bool moe_model = plan.model && plan.model->is_moe();
  if (!extend_ep && (l.ep > 1 || l.etp > 1 || (moe_model && l.etp != l.tp) || ed.find("--expert-tensor-parallel-size").first >= 0))
    ed.set("--expert-tensor-parallel-size", std::to_string(l.etp), "--tensor-model-parallel-size");
  if (moe_model) {
    // The experts as priced: one grouped GEMM over the local experts (without the flag Megatron-Core loops over
    // them, SequentialMLP), and the dispatcher sapp priced: DeepEP as core_v0.14.0 states it (flex with
    // --moe-enable-deepep) unless the file names a flex backend already, else alltoall (Megatron's default
    // allgather gathers every token of the TP x EP group).
    if (ed.find("--moe-use-legacy-grouped-gemm").first < 0) ed.set("--moe-grouped-gemm", std::nullopt, "--num-experts");
    const bool flex_backend = ed.find("--moe-flex-dispatcher-backend").first >= 0;
    if (plan.moe_deepep) {
      ed.set("--moe-token-dispatcher-type", "flex", "--num-experts");
      if (!flex_backend) ed.set("--moe-enable-deepep", std::nullopt, "--moe-token-dispatcher-type");
    } else {
      ed.set("--moe-token-dispatcher-type", "alltoall", "--num-experts");
      ed.remove("--moe-enable-deepep");
      ed.remove("--moe-flex-dispatcher-backend");
    }
  }
  if (l.sp && l.tp > 1)
    ed.set("--sequence-parallel", std::nullopt, "--tensor-model-parallel-size");
  else
    ed.remove("--sequence-parallel");
  ed.set("--micro-batch-size", std::to_string(l.mbs), "--tensor-model-parallel-size");
  ed.set("--global-batch-size", std::to_string(plan.global_batch), anchor);
  ed.remove("--num-layers-per-virtual-pipeline-stage");
  // A split in the flag the file used: MindSpeed's --num-layer-list (one chunk per stage) or
  // --pipeline-num-transformer-layers (per-chunk counts per stage), else Megatron-Core's layout string.
  const bool layer_list = ed.find("--num-layer-list").first >= 0 && plan.split && plan.split->vpp() == 1;
  const bool ms_layers = ed.find("--pipeline-num-transformer-layers").first >= 0 && plan.split;
  // MindSpeed's placeholder layers go: the written split places the model's real layers.
  if (ed.find("--noop-layers").first >= 0 && plan.num_layers > 0) {
    ed.remove("--noop-layers");
    ed.set("--num-layers", std::to_string(plan.num_layers), "--pipeline-model-parallel-size");
  }
  ed.remove("--decoder-first-pipeline-num-layers");
  ed.remove("--decoder-last-pipeline-num-layers");
  if (!ms_layers) ed.remove("--pipeline-num-transformer-layers");
  if (!layer_list) ed.remove("--num-layer-list");
  ed.remove("--pipeline-model-parallel-layout");
  ed.remove("--num-virtual-stages-per-pipeline-rank");
  long long mtp = plan.model ? plan.model->mtp_depth.value_or(0) : 0;
  ed.remove("--schedules-method");  // written again below for a DualPipe-V plan
  if (plan.dualpipe_v) {
    // MindSpeed's dualpipev splits --num-layers evenly over the 2 x PP chunks of its V: a split of unequal chunks is
    // written as that many layers per chunk with the missing ones as --noop-layers at each chunk's end.
    ed.remove("--num-layer-list");
    ed.remove("--pipeline-num-transformer-layers");
    ed.set("--schedules-method", "dualpipev", "--pipeline-model-parallel-size");
    const plan::StageSplit split = placed_split(plan);
    std::vector<long long> per_virtual;
    for (std::size_t c = 0; c < split.layers.size(); ++c) {
      for (std::size_t k = 0; k < split.layers[c].size(); ++k)
        per_virtual.push_back(
            split.layers[c][static_cast<std::size_t>(plan::rank_of_virtual(l.pp, static_cast<long long>(c) * l.pp + static_cast<long long>(k), true))]);
    }
    if (per_virtual.empty()) fail("--emit megatron", "a DualPipe-V plan needs its two chunks per stage");
    const long long widest = *std::max_element(per_virtual.begin(), per_virtual.end());
    std::vector<long long> noop;
    for (std::size_t k = 0; k < per_virtual.size(); ++k)
      for (long long i = per_virtual[k]; i < widest; ++i) noop.push_back(static_cast<long long>(k) * widest + i);
    const long long positions = widest * static_cast<long long>(per_virtual.size());
    ed.set("--num-layers", std::to_string(positions), "--pipeline-model-parallel-size");
    if (!noop.empty()) ed.set("--noop-layers", fmt::format("{}", fmt::join(noop, ",")), "--num-layers");
    if (!noop.empty() && plan.model && plan.model->is_moe()) {
      // --first-k-dense-replace and --moe-layer-freq count --num-layers' positions, the placeholders among them (as
      // the reader does): the model's pattern is restated over the positions, each placeholder taking the value of the
      // layer before it.
      const std::set<long long> holes(noop.begin(), noop.end());
      std::vector<int> pattern;
      long long real = 0;
      for (long long i = 0; i < positions; ++i) {
        if (!holes.contains(i))
          pattern.push_back(plan.model->routes_layer(real++) ? 1 : 0);
        else
          pattern.push_back(pattern.empty() ? 0 : pattern.back());
      }
      const auto dense = static_cast<long long>(std::distance(pattern.begin(), std::ranges::find(pattern, 1)));
      const bool dense_first = std::all_of(pattern.begin() + dense, pattern.end(), [](int x) { return x == 1; });
      const bool first_k = ed.find("--first-k-dense-replace").first >= 0;
      const bool stated_freq = ed.find("--moe-layer-freq").first >= 0 && !(dense_first && first_k);
      if (first_k) ed.set("--first-k-dense-replace", std::to_string(dense_first ? dense : 0), "--num-experts");
      if (stated_freq) {
        const std::string freq = moe_layer_freq_text(pattern).value_or("1");
        ed.set("--moe-layer-freq", ed.value_quoted("--moe-layer-freq") ? "\"" + freq + "\"" : freq, "--num-experts");
      } else if (!dense_first) {
        fail("--emit megatron",
             "the model's MoE layers are not its first dense ones then MoE, and the file states them by neither "
             "--moe-layer-freq nor --first-k-dense-replace: the placeholder layers of this DualPipe-V split cannot be placed");
      }
    }
  } else if (layer_list) {
    ed.set("--num-layer-list", fmt::format("{}", fmt::join(plan.split->layers[0], ",")), "--pipeline-model-parallel-size");
  } else if (ms_layers) {
    std::vector<std::string> stages;
    for (std::size_t st = 0; st < plan.split->layers[0].size(); ++st) {
      std::vector<long long> chunks;
      for (const auto& chunk : plan.split->layers) chunks.push_back(chunk[st]);
      stages.push_back(fmt::format("[{}]", fmt::join(chunks, ",")));
    }
    ed.set("--pipeline-num-transformer-layers", fmt::format("\"[{}]\"", fmt::join(stages, ",")), "--pipeline-model-parallel-size");
  } else if (hybrid_cuts) {
    const char* flag = ed.find("--hybrid-layer-pattern").first >= 0 ? "--hybrid-layer-pattern" : "--hybrid-override-pattern";
    ed.set(flag, "\"" + hybrid_cut_pattern(plan.model->hybrid_pattern, placed_split(plan)) + "\"", "--pipeline-model-parallel-size");
  } else if (plan.split && !hybrid_stack) {
    ed.set("--pipeline-model-parallel-layout", "\"" + layout_string(*plan.split, mtp) + "\"", "--pipeline-model-parallel-size");
  } else if (l.vpp > 1) {
    ed.set("--num-virtual-stages-per-pipeline-rank", std::to_string(l.vpp), "--pipeline-model-parallel-size");
  }
  // ZeRO: 0 plain DDP, 1 the distributed optimizer, 2/3 Megatron FSDP's sharding strategies.
  ed.remove("--use-distributed-optimizer");
  ed.remove("--use-megatron-fsdp");
  ed.remove("--use-custom-fsdp");
  ed.remove("--data-parallel-sharding-strategy");
  ed.remove("--use-torch-fsdp2");
  if (l.zero == 1) ed.set("--use-distributed-optimizer", std::nullopt, anchor);
  if (l.zero >= 2) {
    ed.set("--use-megatron-fsdp", std::nullopt, anchor);
    ed.set("--data-parallel-sharding-strategy", l.zero == 2 ? "optim_grads" : "optim_grads_params", anchor);
  }
  // Recompute.
  ed.remove("--recompute-activations");
  ed.remove("--recompute-granularity");
  ed.remove("--recompute-method");
  ed.remove("--recompute-num-layers");
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  const bool all_selective =
      plan.split && plan.split->states_recompute() && plan.split->full_total() == 0 && plan.split->selective_total() == plan.split->total();
  if (all_selective) {
    // Every layer recomputed selectively: Megatron's selective granularity (its --recompute-modules kept).
    ed.set("--recompute-granularity", "selective", anchor);
  } else if (plan.split && plan.split->states_recompute()) {
    // Megatron recomputes the first --recompute-num-layers layers of every chunk (block method): one count for all,
    // exact when every chunk recomputes min(n, its layers) (sapp plan --emit megatron balances only such plans).
    long long n = 0;
    for (const auto& row : plan.split->full) {
      for (long long c : row) n = std::max(n, c);
    }
    if (n > 0) {
      ed.set("--recompute-granularity", "full", anchor);
      ed.set("--recompute-method", "block", anchor);
      ed.set("--recompute-num-layers", std::to_string(n), anchor);
    }
    bool exact = true;
    for (std::size_t v = 0; v < plan.split->full.size(); ++v) {
      for (std::size_t s = 0; s < plan.split->full[v].size(); ++s) exact = exact && plan.split->full[v][s] == std::min(n, plan.split->layers[v][s]);
    }
    if (!exact) {
      std::string rows;
      for (const auto& row : plan.split->full) rows += (rows.empty() ? "" : " / ") + fmt::format("{}", fmt::join(row, ","));
      note(
          fmt::format("the plan recomputes {} layers per stage (and chunk); Megatron states one count for every chunk "
                      "(--recompute-num-layers): written as {}, more recompute than planned (slower, and it fits)",
                      rows, n));
    }
    const bool selective = plan.split->selective_total() > 0;
    if (selective) note("the plan's selectively recomputed layers have no Megatron flag of their own: written without recompute (more memory than planned)");
    if (!selective) {
      for (const char* f : {"--recompute-activation-function", "--recompute-activation-function-num-layers", "--recompute-modules"}) ed.remove(f);
    }
  } else if (l.recompute == plan::Recompute::Off) {
    // Nothing recomputed: MindSpeed's selective switches go too (they were read as selective recompute).
    for (const char* f : {"--recompute-activation-function", "--recompute-activation-function-num-layers", "--recompute-modules"}) ed.remove(f);
  } else {
    ed.set("--recompute-granularity", l.recompute == plan::Recompute::Full ? "full" : "selective", anchor);
    if (l.recompute == plan::Recompute::Full) {
      ed.set("--recompute-method", "uniform", anchor);
      ed.set("--recompute-num-layers", "1", anchor);
    }
  }
  if (l.cp > 1) ed.set("--cp-comm-type", l.cp_algo == plan::CpAlgo::AllToAll ? "a2a" : "p2p", "--context-parallel-size");
  if (plan.fp4) {  // the two are exclusive (Megatron-Bridge's MixedPrecisionConfig refuses both)
    ed.remove("--fp8-format");
    ed.set("--fp4-format", "e2m1", anchor);
    ed.set("--fp4-recipe", "nvfp4", anchor);
    note(
        "--fp4-format and --fp4-recipe are Megatron-LM's after core_v0.14.0 (its arguments.py at main; Transformer Engine >= 2.7 for "
        "NVFP4BlockScaling): run the script with such a Megatron-LM");
  } else if (plan.fp8) {
    ed.set("--fp8-format", "hybrid", anchor);
  }
  if (plan.model && plan.model->indexer) {
    note(
        "--experimental-attention-variant dsa and --dsa-indexer-* (DeepSeek Sparse Attention) are Megatron-Core's after core_v0.14.0: run the "
        "script with such a Megatron-LM");
  }
  if (!original && plan.model && plan.model->linear && !hybrid_stack) {
    note(
        "--experimental-attention-variant gated_delta_net, --linear-attention-freq and --linear-* (Gated DeltaNet) are Megatron-Core's after "
        "core_v0.14.0 (core_v0.17.0 has them): run the script with such a Megatron-LM");
  }
  // Priced without Transformer Engine's FP8 weight cache: the script must keep the weights in FP8 too.
  if (plan.fp8 && plan.fp8_param_gather && l.zero >= 1) ed.set(plan.fp4 ? "--fp4-param-gather" : "--fp8-param-gather", std::nullopt, anchor);
  // The DP collectives as priced: Megatron overlaps neither unless asked (the reader takes a script without these
  // flags as exposed), and --overlap-param-gather needs the distributed optimizer or Megatron FSDP (ZeRO >= 1).
  if (plan.dp_overlap) ed.set("--overlap-grad-reduce", std::nullopt, anchor);
  if (plan.dp_overlap && l.zero >= 1) ed.set("--overlap-param-gather", std::nullopt, anchor);
  if (!plan.dp_overlap) ed.remove("--overlap-grad-reduce");
  if (!plan.dp_overlap || l.zero == 0) ed.remove("--overlap-param-gather");
  if (!original) {
    ed.lines.push_back(fmt::format("# {} devices: DP = {} / (TP {} x PP {} x CP {}) = {}", plan.devices, plan.devices, l.tp, l.pp, l.cp, l.dp));
  }
  return ed.text();
}

}  // namespace sapp::config::detail
