// GgufHeader: the metadata of a GGUF file that a memory estimate needs
//: the architecture, layer count, embedding size, attention
// head counts and key/value lengths, the training context, and the tensors'
// total size. Only the header is read (key/value pairs and tensor infos,
// never the tensor data); large arrays (the vocabulary) are skipped.
//
// The reader trusts nothing: every length is checked against the file size
// and against fixed bounds, so a truncated or hostile file gives an error,
// never a crash or a huge allocation.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lemon/core/error.h"

namespace lemon {

struct GgufHeader {
  std::uint32_t version = 0;
  std::string architecture;       // general.architecture ("llama", "bert", ...)
  std::uint64_t block_count = 0;  // <arch>.block_count (layers)
  std::uint64_t embedding_length = 0;
  std::uint64_t head_count = 0;
  std::uint64_t head_count_kv = 0;  // defaults to head_count when absent
  std::uint64_t key_length = 0;     // per head; defaults to embedding_length / head_count
  std::uint64_t value_length = 0;
  std::uint64_t context_length = 0;  // <arch>.context_length (training context)
  std::uint64_t tensor_count = 0;
  std::uint64_t tensor_bytes = 0;  // sum of the tensors' data sizes

  // Bytes of K and V cache per token of context (f16 cache): 2 (K and V) x
  // layers x kv heads x (key_length + value_length) / 2 x 2 bytes. 0 when the
  // header lacks the fields (embedding models often do).
  std::uint64_t kv_bytes_per_token() const;
};

// Reads the header of the GGUF file at `path`. kInvalidOption naming the
// file on anything that is not a well-formed GGUF header.
Result<GgufHeader> read_gguf_header(const std::string& path);
// The same for a file already in memory (tests, fuzzing).
Result<GgufHeader> parse_gguf_header(std::string_view bytes);

}  // namespace lemon
