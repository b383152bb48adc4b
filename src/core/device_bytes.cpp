#include "lemon/core/device_bytes.h"

#include <cmath>
#include <cstdlib>

namespace lemon {

std::optional<BudgetRule> BudgetRule::parse(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(number) || number <= 0) {
    return std::nullopt;
  }
  std::string unit(end);
  BudgetRule rule;
  if (unit == "%") {
    if (number > 100) {
      return std::nullopt;
    }
    rule.fraction = number / 100.0;
    return rule;
  }
  if (unit.empty() && number <= 1.0) {
    rule.fraction = number;
    return rule;
  }
  double scale = 1;
  if (unit == "K" || unit == "KB" || unit == "KiB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MB" || unit == "MiB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GB" || unit == "GiB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TB" || unit == "TiB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else if (!unit.empty() && unit != "B") {
    return std::nullopt;
  }
  const double bytes = number * scale;
  if (bytes < 1 || bytes > 9e18) {
    return std::nullopt;
  }
  rule.ram_bytes = static_cast<std::int64_t>(bytes);
  return rule;
}

}  // namespace lemon
