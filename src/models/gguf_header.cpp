#include "lemon/models/gguf_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

namespace lemon {
namespace {

// GGUF metadata value types.
enum class ValueType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

constexpr std::uint64_t kMaxStringBytes = 1u << 20;  // a key or a scalar string
constexpr std::uint64_t kMaxDims = 8;

// ggml tensor types: elements per block and bytes per block (ggml.c's
// type_traits). Types not listed are refused.
struct TypeSize {
  std::uint32_t type;
  std::uint64_t block_elements;
  std::uint64_t block_bytes;
};
constexpr std::array<TypeSize, 30> kTypes = {{
    {0, 1, 4},       // F32
    {1, 1, 2},       // F16
    {2, 32, 18},     // Q4_0
    {3, 32, 20},     // Q4_1
    {6, 32, 22},     // Q5_0
    {7, 32, 24},     // Q5_1
    {8, 32, 34},     // Q8_0
    {9, 32, 36},     // Q8_1
    {10, 256, 84},   // Q2_K
    {11, 256, 110},  // Q3_K
    {12, 256, 144},  // Q4_K
    {13, 256, 176},  // Q5_K
    {14, 256, 210},  // Q6_K
    {15, 256, 292},  // Q8_K
    {16, 256, 66},   // IQ2_XXS
    {17, 256, 74},   // IQ2_XS
    {18, 256, 98},   // IQ3_XXS
    {19, 256, 50},   // IQ1_S
    {20, 32, 18},    // IQ4_NL
    {21, 256, 110},  // IQ3_S
    {22, 256, 82},   // IQ2_S
    {23, 256, 136},  // IQ4_XS
    {24, 1, 1},      // I8
    {25, 1, 2},      // I16
    {26, 1, 4},      // I32
    {27, 1, 8},      // I64
    {28, 1, 8},      // F64
    {29, 256, 56},   // IQ1_M
    {30, 1, 2},      // BF16
    {34, 256, 54},   // TQ1_0
}};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  std::optional<T> scalar() {
    if (remaining() < sizeof(T)) {
      return std::nullopt;
    }
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // GGUF is little-endian, as x86 and arm64
    pos_ += sizeof(T);
    return v;
  }
  std::optional<std::string> string(std::uint64_t max) {
    auto len = scalar<std::uint64_t>();
    if (!len || *len > max || *len > bytes_.size() - pos_) {
      return std::nullopt;
    }
    std::string s(bytes_.substr(pos_, *len));
    pos_ += *len;
    return s;
  }
  bool skip(std::uint64_t n) {
    if (n > bytes_.size() - pos_) {
      return false;
    }
    pos_ += n;
    return true;
  }
  std::size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

std::optional<std::uint64_t> fixed_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return std::nullopt;
  }
  return std::nullopt;
}

// A signed integer value that is not negative, or nullopt.
template <typename Int>
std::optional<std::uint64_t> read_non_negative(Reader& r) {
  auto v = r.scalar<Int>();
  return v && *v >= 0 ? std::optional<std::uint64_t>(*v) : std::nullopt;
}

// An unsigned integer value of any integer type, or nullopt.
std::optional<std::uint64_t> read_uint(Reader& r, ValueType t) {
  switch (t) {
    case ValueType::kU8:
      return r.scalar<std::uint8_t>();
    case ValueType::kU16:
      return r.scalar<std::uint16_t>();
    case ValueType::kU32:
      return r.scalar<std::uint32_t>();
    case ValueType::kU64:
      return r.scalar<std::uint64_t>();
    case ValueType::kI8:
      return read_non_negative<std::int8_t>(r);
    case ValueType::kI16:
      return read_non_negative<std::int16_t>(r);
    case ValueType::kI32:
      return read_non_negative<std::int32_t>(r);
    case ValueType::kI64:
      return read_non_negative<std::int64_t>(r);
    default:
      return std::nullopt;
  }
}

// Skips one value of type `t`; false when the file ends or is malformed.
bool skip_value(Reader& r, ValueType t, int depth) {
  if (auto size = fixed_size(t)) {
    return r.skip(*size);
  }
  if (t == ValueType::kString) {
    auto len = r.scalar<std::uint64_t>();
    return len && r.skip(*len);
  }
  if (t != ValueType::kArray || depth > 2) {
    return false;
  }
  auto inner = r.scalar<std::uint32_t>();
  auto count = r.scalar<std::uint64_t>();
  if (!inner || !count || *inner > 12) {
    return false;
  }
  auto inner_type = static_cast<ValueType>(*inner);
  if (auto size = fixed_size(inner_type)) {
    if (*count > std::numeric_limits<std::uint64_t>::max() / *size) {
      return false;
    }
    return r.skip(*count * *size);
  }
  for (std::uint64_t i = 0; i < *count; ++i) {
    if (r.remaining() == 0 || !skip_value(r, inner_type, depth + 1)) {
      return false;
    }
  }
  return true;
}

Error malformed(const std::string& what) {
  return Error(ErrorCode::kInvalidOption, "not a well-formed GGUF file: " + what);
}

}  // namespace

std::uint64_t GgufHeader::kv_bytes_per_token() const {
  if (block_count == 0 || head_count_kv == 0 || (key_length == 0 && value_length == 0)) {
    return 0;
  }
  return block_count * head_count_kv * (key_length + value_length) * 2;  // f16
}

Result<GgufHeader> parse_gguf_header(std::string_view bytes) {
  Reader r(bytes);
  auto magic = r.scalar<std::uint32_t>();
  if (!magic || *magic != 0x46554747u) {  // "GGUF"
    return malformed("no GGUF magic");
  }
  GgufHeader h;
  auto version = r.scalar<std::uint32_t>();
  if (!version || *version < 2 || *version > 3) {
    return malformed("unsupported version");
  }
  h.version = *version;
  auto tensors = r.scalar<std::uint64_t>();
  auto kvs = r.scalar<std::uint64_t>();
  if (!tensors || !kvs || *tensors > (1u << 24) || *kvs > (1u << 24)) {
    return malformed("bad counts");
  }
  h.tensor_count = *tensors;
  std::string arch;
  struct Field {
    const char* suffix;
    std::uint64_t* out;
  };
  const Field fields[] = {
      {".block_count", &h.block_count},         {".embedding_length", &h.embedding_length},
      {".attention.head_count", &h.head_count}, {".attention.head_count_kv", &h.head_count_kv},
      {".attention.key_length", &h.key_length}, {".attention.value_length", &h.value_length},
      {".context_length", &h.context_length},   {".nextn_predict_layers", &h.nextn_predict_layers}};
  for (std::uint64_t i = 0; i < *kvs; ++i) {
    auto key = r.string(kMaxStringBytes);
    auto type = r.scalar<std::uint32_t>();
    if (!key || !type || *type > 12) {
      return malformed("bad key/value pair");
    }
    auto t = static_cast<ValueType>(*type);
    if (*key == "general.architecture" && t == ValueType::kString) {
      auto value = r.string(256);
      if (!value) {
        return malformed("bad architecture");
      }
      h.architecture = *value;
      continue;
    }
    bool taken = false;
    if (!h.architecture.empty() && key->starts_with(h.architecture) && fixed_size(t) &&
        t != ValueType::kF32 && t != ValueType::kF64 && t != ValueType::kBool) {
      const std::string_view rest = std::string_view(*key).substr(h.architecture.size());
      for (const auto& f : fields) {
        if (rest == f.suffix) {
          auto v = read_uint(r, t);
          if (!v) {
            return malformed(*key);
          }
          *f.out = *v;
          taken = true;
          break;
        }
      }
    }
    if (!taken && !skip_value(r, t, 0)) {
      return malformed("truncated at " + *key);
    }
  }
  for (std::uint64_t i = 0; i < h.tensor_count; ++i) {
    auto name = r.string(4096);
    auto dims = r.scalar<std::uint32_t>();
    if (!name || !dims || *dims == 0 || *dims > kMaxDims) {
      return malformed("bad tensor info");
    }
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < *dims; ++d) {
      auto n = r.scalar<std::uint64_t>();
      if (!n || (*n != 0 && elements > std::numeric_limits<std::uint64_t>::max() / *n)) {
        return malformed("bad tensor shape");
      }
      elements *= *n;
    }
    auto type = r.scalar<std::uint32_t>();
    auto offset = r.scalar<std::uint64_t>();
    if (!type || !offset) {
      return malformed("truncated tensor info");
    }
    const TypeSize* size = nullptr;
    for (const auto& ts : kTypes) {
      if (ts.type == *type) {
        size = &ts;
      }
    }
    if (size == nullptr) {
      return malformed("unknown tensor type " + std::to_string(*type));
    }
    const std::uint64_t blocks = (elements + size->block_elements - 1) / size->block_elements;
    if (blocks > std::numeric_limits<std::uint64_t>::max() / size->block_bytes) {
      return malformed("tensor too large");
    }
    h.tensor_bytes += blocks * size->block_bytes;
  }
  if (h.head_count_kv == 0) {
    h.head_count_kv = h.head_count;
  }
  if (h.head_count > 0 && h.embedding_length > 0) {
    if (h.key_length == 0) {
      h.key_length = h.embedding_length / h.head_count;
    }
    if (h.value_length == 0) {
      h.value_length = h.embedding_length / h.head_count;
    }
  }
  return h;
}

Result<GgufHeader> read_gguf_header(const std::string& path) {
  // The header usually fits in 4 MiB; a very large vocabulary needs more:
  // then up to 64 MiB.
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kModelFilesMissing, "cannot read " + path);
  }
  // Never more than the file holds: a small file costs no 4 MiB buffer.
  std::error_code size_error;
  const auto file_size = std::filesystem::file_size(path, size_error);
  std::string bytes;
  Result<GgufHeader> h = malformed("empty");
  for (std::size_t limit : {std::size_t{4} << 20, std::size_t{64} << 20}) {
    if (!size_error) {
      limit = std::min<std::size_t>(limit, file_size);
    }
    const std::size_t have = bytes.size();
    bytes.resize(limit);
    in.read(bytes.data() + have, static_cast<std::streamsize>(limit - have));
    bytes.resize(have + static_cast<std::size_t>(in.gcount()));
    h = parse_gguf_header(bytes);
    if (h.ok() || bytes.size() < limit || (!size_error && bytes.size() >= file_size)) {
      break;  // parsed, or the whole file was read
    }
  }
  if (!h.ok()) {
    return Error(ErrorCode::kInvalidOption, path + " is " + h.error().message());
  }
  return h;
}

}  // namespace lemon
