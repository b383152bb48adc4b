#include "lemon/backends/bind_failure.h"

namespace lemon {

bool output_reports_bind_failure(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    if (line.find("couldn't bind") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace lemon
