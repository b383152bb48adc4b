// What the image routes take (docs/api.md "Images"), checked before a model
// is loaded or a byte reaches sd-server. sd-server itself checks little: it
// clamps `n` to 8 without saying so, falls back to 512x512 for a `size` it
// cannot read, skips an image it cannot decode and generates from the prompt
// alone, and tries any size it is given (stable-diffusion.cpp
// examples/server/main.cpp at 1f30df9). Pure checks; any thread.
#pragma once

#include <string_view>
#include <vector>

#include "lemon/backends/wrapped_server.h"
#include "lemon/core/error.h"
#include "lemon/http/multipart.h"

namespace lemon::api {

// sd-server returns at most this many images a request.
inline constexpr int kMaxImagesPerRequest = 8;
// The longest side an image request may ask for: sd-server has no limit and
// runs out of memory far below what the size syntax allows.
inline constexpr int kMaxImageSide = 2048;

// OK, or kInvalidRequest about `size` unless it is WIDTHxHEIGHT with each
// side from 1 to kMaxImageSide.
Status check_image_size(std::string_view size);

// sd-server takes its settings from the first <sd_cpp_extra_args> block of
// the prompt, before the router's: a prompt with one could set any size,
// count or step count. kInvalidRequest about `prompt` when it has one.
Status check_image_prompt(std::string_view prompt);

// sd-server runs at most this many steps (it cuts more to 100).
inline constexpr int kMaxImageSteps = 100;

// True when `bytes` start as a PNG, JPEG, BMP or GIF file does: the formats
// sd-server decodes (stb_image). A file of another kind would be skipped.
bool is_decodable_image(std::string_view bytes);

// The form images/edits (kImageEdits) or images/variations
// (kImageVariations) takes: OK, or kInvalidRequest naming the first field
// that is missing, unknown, or out of range, or an image or mask that is
// empty or not a PNG, JPEG, BMP or GIF.
Status check_image_form(ApiRoute route, const std::vector<http::MultipartPart>& parts);

}  // namespace lemon::api
