#include "fake_args.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace fake {
namespace {

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  std::exit(1);
}

const ArgSpec* find_spec(const std::vector<ArgSpec>& specs, const std::string& name) {
  for (const ArgSpec& spec : specs) {
    for (const std::string& n : spec.names) {
      if (n == name) {
        return &spec;
      }
    }
  }
  return nullptr;
}

bool parses_as_int(const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool is_choice(const ArgSpec& spec, const std::string& text) {
  for (const std::string& c : spec.choices) {
    if (c == text) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ParsedArgs::get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

int ParsedArgs::get_int(const std::string& key, int fallback) const {
  auto it = values_.find(key);
  if (it == values_.end() || !parses_as_int(it->second)) {
    return fallback;
  }
  return std::stoi(it->second);
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<ArgSpec>& specs,
                      const ArgErrorStyle& style) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!style.allow_positional) {
        fail(style.unknown_prefix + arg);
      }
      out.positional_.push_back(arg);
      continue;
    }
    const ArgSpec* spec = find_spec(specs, arg);
    if (spec == nullptr) {
      fail(style.unknown_prefix + arg);
    }
    const std::string& key = spec->names.front();
    switch (spec->kind) {
      case ArgKind::kFlag:
        out.values_[key] = "1";
        break;
      case ArgKind::kOptionalValue:
        if (i + 1 < args.size() && is_choice(*spec, args[i + 1])) {
          out.values_[key] = args[++i];
        } else {
          out.values_[key] = "";
        }
        break;
      case ArgKind::kValue:
      case ArgKind::kInt:
        if (i + 1 >= args.size()) {
          fail("error while handling argument \"" + arg + "\": expected value for argument");
        }
        if (spec->kind == ArgKind::kInt && !parses_as_int(args[i + 1])) {
          fail("error while handling argument \"" + arg + "\": invalid integer value '" +
               args[i + 1] + "'");
        }
        out.values_[key] = args[++i];
        break;
    }
  }
  return out;
}

}  // namespace fake
