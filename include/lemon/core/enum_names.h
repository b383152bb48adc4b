// The names an enum's values go by, as one table of rows: a value's name
// and the value a name stands for read the same rows, so the two cannot
// disagree.
//
//   constexpr auto kColourNames =
//       std::to_array<EnumName<Colour>>({{Colour::kRed, "red"}, {Colour::kBlue, "blue"}});
//   name_of(kColourNames, Colour::kRed, "")  // "red"
//   value_named(kColourNames, "blue")        // Colour::kBlue
//
// Thread-safety: constexpr values and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace lemon {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

// The name of `value`'s row; `fallback` when no row has it.
template <typename Enum, std::size_t N>
constexpr const char* name_of(const std::array<EnumName<Enum>, N>& rows, Enum value,
                              const char* fallback) {
  for (const EnumName<Enum>& row : rows) {
    if (row.value == value) {
      return row.name;
    }
  }
  return fallback;
}

// The value of the first row named `name`; nullopt when no row is.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> value_named(const std::array<EnumName<Enum>, N>& rows,
                                          std::string_view name) {
  for (const EnumName<Enum>& row : rows) {
    if (name == row.name) {
      return row.value;
    }
  }
  return std::nullopt;
}

}  // namespace lemon
