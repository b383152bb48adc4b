// RouteInput: what a routing policy reads of a request (Lemonade 11's route
// context): the text it routes on, whether it carries tools or images, its
// metadata. Built from a chat, completions or Responses body.
//
// - text: chat `messages`: the last message with role "user" (a string
//   content as is; an array's "text"/"input_text" parts joined with "\n");
//   else `prompt` (a string, or an array's strings joined with "\n"); else
//   `input` (a string; an array's last user item, or when there is none
//   every plain string and role-less item's text, joined with "\n").
//   System and assistant turns and earlier user turns are never read.
// - has_tools: `tools` is a non-empty array.
// - has_images: any message (or input item) has an "image_url" or
//   "input_image" part.
// - metadata: the body's `metadata` object, its string values only.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::routing {

struct RouteInput {
  std::string text;
  bool has_tools = false;
  bool has_images = false;
  std::map<std::string, std::string> metadata;

  // The length rules' measure: UTF-8 bytes, not characters or tokens.
  std::size_t chars() const { return text.size(); }
};

RouteInput route_input_from_body(const nlohmann::json& body);

// The body's `route_trace` (absent: false); kInvalidRequest (param
// "route_trace") when it is not a boolean.
Result<bool> route_trace_requested(const nlohmann::json& body);

// A conversation's identity across its turns, for counting how often a
// policy switches a conversation's model: 64-bit FNV-1a over the first
// system message's text, "\x1f", and the first user message's text (for a
// `prompt` or string `input`: "\x1f" and that text).
std::uint64_t conversation_fingerprint(const nlohmann::json& body);

}  // namespace lemon::routing
