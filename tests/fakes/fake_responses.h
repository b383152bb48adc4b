// The OpenAI Responses API (POST /v1/responses) as served by llama-server:
// a single assistant message, streamed as typed server-sent events.
#pragma once

#include <string>

#include <httplib.h>

namespace fake {

httplib::Server::Handler responses_handler(const std::string& model_id);

}  // namespace fake
