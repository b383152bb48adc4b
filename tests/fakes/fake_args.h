// A tiny command-line parser with the strictness of the real backends: every
// option must be known, values must be present, integers must parse. Errors
// are printed to stderr in the imitated program's style and exit with code 1.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fake {

enum class ArgKind {
  kFlag,           // no value
  kValue,          // exactly one value (any text)
  kInt,            // exactly one integer value
  kOptionalValue,  // a value only if the next argument is one of `choices`
};

struct ArgSpec {
  std::vector<std::string> names;  // names[0] is the key used for lookups
  ArgKind kind = ArgKind::kFlag;
  std::vector<std::string> choices = {};  // for kOptionalValue
};

// How a program words its argument errors.
struct ArgErrorStyle {
  std::string unknown_prefix = "error: invalid argument: ";
  bool allow_positional = false;
};

class ParsedArgs {
 public:
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::string get(const std::string& key, const std::string& fallback = "") const;
  int get_int(const std::string& key, int fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend ParsedArgs parse_args(const std::vector<std::string>&, const std::vector<ArgSpec>&,
                               const ArgErrorStyle&);
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// Parses `args` (without the program name). Exits 1 on any error.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<ArgSpec>& specs,
                      const ArgErrorStyle& style = {});

}  // namespace fake
