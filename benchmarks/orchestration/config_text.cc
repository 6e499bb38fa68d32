#include "benchmarks/orchestration/config_text.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::orchestration {
namespace {

std::string Unquote(absl::string_view v) {
  v = absl::StripAsciiWhitespace(v);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return std::string(v);
}

// Splits on whitespace outside double quotes.
std::vector<std::string> Tokens(absl::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (!quoted && absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace

std::optional<ConfigValue> ConfigFile::Get(absl::string_view key) const {
  std::optional<ConfigValue> found;
  for (const ConfigLine& l : lines) {
    for (const ConfigValue& p : l.pairs) {
      if (absl::EqualsIgnoreCase(p.key, key)) found = p;
    }
  }
  return found;
}

ConfigFile ParseSlurmConfig(absl::string_view text, const std::string& source) {
  ConfigFile file;
  file.source = source;
  int n = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++n;
    absl::string_view line = raw;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    ConfigLine cl;
    cl.line = n;
    cl.text = std::string(line);
    for (const std::string& tok : Tokens(line)) {
      size_t eq = tok.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      cl.pairs.push_back({tok.substr(0, eq), Unquote(tok.substr(eq + 1)), n, source});
    }
    file.lines.push_back(std::move(cl));
  }
  return file;
}

ConfigFile ParseScontrolConfig(absl::string_view text) {
  ConfigFile file;
  file.source = "scontrol show config";
  int n = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++n;
    size_t eq = raw.find(" = ");
    if (eq == absl::string_view::npos) continue;
    std::string key(absl::StripAsciiWhitespace(raw.substr(0, eq)));
    if (key.empty() || key.find(' ') != std::string::npos) continue;
    ConfigLine cl;
    cl.line = n;
    cl.text = std::string(absl::StripAsciiWhitespace(raw));
    std::string value = Unquote(raw.substr(eq + 3));
    if (value == "(null)") value.clear();
    cl.pairs.push_back({key, value, n, file.source});
    file.lines.push_back(std::move(cl));
  }
  return file;
}

std::map<std::string, ConfigValue> ParseScontrolNode(absl::string_view text) {
  std::map<std::string, ConfigValue> out;
  int n = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++n;
    // Reason= runs to the end of its line ("Reason=cmax: health fail [root@...]").
    absl::string_view stripped = absl::StripLeadingAsciiWhitespace(raw);
    if (absl::StartsWith(stripped, "Reason=")) {
      if (!out.count("Reason")) {
        out["Reason"] = {"Reason", std::string(absl::StripTrailingAsciiWhitespace(stripped.substr(7))),
                         n, "scontrol show node"};
      }
      continue;
    }
    for (const std::string& tok : Tokens(raw)) {
      size_t eq = tok.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      std::string key = tok.substr(0, eq);
      if (out.count(key)) continue;
      out[key] = {key, Unquote(tok.substr(eq + 1)), n, "scontrol show node"};
    }
  }
  return out;
}

std::map<std::string, ConfigValue> ParseTopLevelYaml(absl::string_view text,
                                                     const std::string& source) {
  std::map<std::string, ConfigValue> out;
  int n = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++n;
    if (raw.empty() || absl::ascii_isspace(static_cast<unsigned char>(raw[0])) ||
        raw[0] == '#' || raw[0] == '-') {
      continue;
    }
    size_t colon = raw.find(':');
    if (colon == absl::string_view::npos) continue;
    absl::string_view value = raw.substr(colon + 1);
    if (size_t hash = value.find(" #"); hash != absl::string_view::npos) {
      value = value.substr(0, hash);
    }
    std::string key(absl::StripAsciiWhitespace(raw.substr(0, colon)));
    out[key] = {key, Unquote(value), n, source};
  }
  return out;
}

std::optional<std::vector<std::string>> ExpandHostlist(absl::string_view expr,
                                                       size_t max_items) {
  std::vector<std::string> out;
  // Split on commas outside brackets.
  std::vector<std::string> items;
  int depth = 0;
  std::string cur;
  for (char c : expr) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) return std::nullopt;
    if (c == ',' && depth == 0) {
      items.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (depth != 0) return std::nullopt;
  items.push_back(std::move(cur));
  for (std::string item : items) {
    item = std::string(absl::StripAsciiWhitespace(item));
    if (item.empty()) continue;
    std::vector<std::string> partial = {""};
    size_t i = 0;
    while (i < item.size()) {
      size_t open = item.find('[', i);
      std::string literal = item.substr(i, open == std::string::npos ? std::string::npos : open - i);
      for (std::string& p : partial) p += literal;
      if (open == std::string::npos) break;
      size_t close = item.find(']', open);
      if (close == std::string::npos) return std::nullopt;
      std::vector<std::string> choices;
      for (absl::string_view range :
           absl::StrSplit(absl::string_view(item).substr(open + 1, close - open - 1), ',')) {
        std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
        uint64_t lo = 0, hi = 0;
        if (ends.size() > 2 || ends[0].empty() || !absl::SimpleAtoi(ends[0], &lo)) {
          return std::nullopt;
        }
        hi = lo;
        if (ends.size() == 2 && (ends[1].empty() || !absl::SimpleAtoi(ends[1], &hi))) {
          return std::nullopt;
        }
        if (hi < lo || hi - lo >= max_items) return std::nullopt;
        const size_t width = ends[0].size();
        for (uint64_t v = lo; v <= hi; ++v) {
          std::string digits = absl::StrCat(v);
          if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
          choices.push_back(std::move(digits));
          if (choices.size() > max_items) return std::nullopt;
        }
      }
      std::vector<std::string> next;
      for (const std::string& p : partial) {
        for (const std::string& c : choices) {
          next.push_back(p + c);
          if (next.size() > max_items) return std::nullopt;
        }
      }
      partial = std::move(next);
      i = close + 1;
    }
    for (std::string& p : partial) {
      out.push_back(std::move(p));
      if (out.size() > max_items) return std::nullopt;
    }
  }
  return out;
}

std::vector<std::string> SplitList(absl::string_view value) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    out.push_back(absl::AsciiStrToLower(absl::StripAsciiWhitespace(item)));
  }
  return out;
}

std::string Where(const ConfigValue& v) {
  if (absl::StartsWith(v.source, "scontrol")) {
    return absl::StrCat(v.source, ": ", v.key, " (output line ", v.line, ")");
  }
  return absl::StrCat(v.source, ":", v.line);
}

}  // namespace cmax::orchestration
