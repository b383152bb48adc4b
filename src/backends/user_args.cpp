#include "lemon/backends/user_args.h"

#include <algorithm>
#include <cctype>

namespace lemon {

Result<std::vector<std::string>> split_user_args(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  enum class Quote { kNone, kSingle, kDouble } quote = Quote::kNone;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    switch (quote) {
      case Quote::kSingle:
        if (c == '\'') {
          quote = Quote::kNone;
        } else {
          word += c;
        }
        continue;
      case Quote::kDouble:
        if (c == '"') {
          quote = Quote::kNone;
        } else if (c == '\\' && i + 1 < text.size() &&
                   (text[i + 1] == '"' || text[i + 1] == '\\')) {
          word += text[++i];
        } else {
          word += c;
        }
        continue;
      case Quote::kNone:
        break;
    }
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (in_word) {
        out.push_back(std::move(word));
        word.clear();
        in_word = false;
      }
      continue;
    }
    in_word = true;
    if (c == '\'') {
      quote = Quote::kSingle;
    } else if (c == '"') {
      quote = Quote::kDouble;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (quote != Quote::kNone) {
    return Error(ErrorCode::kInvalidUserArgs,
                 "unterminated quote in llamacpp_args: " + std::string(text), "llamacpp_args");
  }
  if (in_word) {
    out.push_back(std::move(word));
  }
  return out;
}

std::string flag_name(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-') {
    return {};
  }
  if (std::isdigit(static_cast<unsigned char>(arg[1])) != 0 || arg[1] == '.') {
    return {};  // a negative number, e.g. "--seed -1"
  }
  auto eq = arg.find('=');
  return std::string(arg.substr(0, eq));
}

Status check_reserved_flags(const std::vector<std::string>& args,
                            const std::vector<std::string>& reserved) {
  for (const auto& arg : args) {
    std::string flag = flag_name(arg);
    if (!flag.empty() && std::find(reserved.begin(), reserved.end(), flag) != reserved.end()) {
      return Error(ErrorCode::kInvalidUserArgs,
                   "argument '" + flag +
                       "' is managed by lemonade-router and cannot be set in llamacpp_args",
                   "llamacpp_args");
    }
  }
  return ok_status();
}

bool has_any_flag(const std::vector<std::string>& args, const std::vector<std::string>& flags) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& arg) {
    std::string flag = flag_name(arg);
    return !flag.empty() && std::find(flags.begin(), flags.end(), flag) != flags.end();
  });
}

}  // namespace lemon
