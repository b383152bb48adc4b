#include "lemon/options/setting.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace lemon {

SettingValues::Value& SettingValues::reset(const Setting& setting, const std::string& text) {
  Value& value = values_[setting.key];
  switch (setting.shape) {
    case SettingShape::kInteger:
      value = std::stoi(text);
      break;
    case SettingShape::kLongInteger:
      value = std::stoll(text);
      break;
    case SettingShape::kNumber:
      value = std::stod(text);
      break;
    case SettingShape::kSwitch:
      value = text == "true";
      break;
    case SettingShape::kWords: {
      std::vector<std::string> words;
      std::istringstream in(text);
      for (std::string word; in >> word;) {
        words.push_back(word);
      }
      value = std::move(words);
      break;
    }
    case SettingShape::kSection:
      value = nlohmann::json::parse(text);
      break;
    case SettingShape::kText:
    case SettingShape::kList:
    case SettingShape::kOptionalValue:
      value = text;
      break;
  }
  return value;
}

void SettingValues::set_section(const std::string& key, nlohmann::json value) {
  values_[key] = std::move(value);
}

const SettingValues::Value& SettingValues::at(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    throw std::out_of_range("no setting '" + std::string(key) + "' was read");
  }
  return it->second;
}

std::chrono::milliseconds SettingValues::duration(std::string_view key) const {
  return std::chrono::milliseconds(std::llround(std::clamp(number(key), 0.0, 1e12) * 1000.0));
}

std::int64_t SettingValues::mebibytes(std::string_view key) const {
  return static_cast<std::int64_t>(std::clamp(number(key), 0.0, 1e12) * 1024.0 * 1024.0);
}

std::vector<std::string> SettingValues::list(std::string_view key,
                                             std::string_view trim_end) const {
  const std::string blank = " \t";
  const std::string end_chars = blank + std::string(trim_end);
  std::vector<std::string> out;
  std::stringstream items(text(key));
  for (std::string item; std::getline(items, item, ',');) {
    const auto start = item.find_first_not_of(blank);
    if (start == std::string::npos) {
      continue;
    }
    const auto end = item.find_last_not_of(end_chars);
    out.push_back(item.substr(start, end - start + 1));
  }
  return out;
}

}  // namespace lemon
