#include "lemon/inference/chat_answer.h"

namespace lemon::inference {

nlohmann::json chat_completion_as_chunk(const nlohmann::json& completion) {
  nlohmann::json chunk = completion;
  chunk["object"] = "chat.completion.chunk";
  auto choices = completion.find("choices");
  if (choices == completion.end() || !choices->is_array()) {
    return chunk;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& choice : *choices) {
    nlohmann::json c = choice;
    if (auto m = choice.find("message"); m != choice.end() && m->is_object()) {
      nlohmann::json delta = *m;
      if (auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
        for (std::size_t i = 0; i < calls->size(); ++i) {
          if ((*calls)[i].is_object() && !(*calls)[i].contains("index")) {
            (*calls)[i]["index"] = i;
          }
        }
      }
      c.erase("message");
      c["delta"] = std::move(delta);
    }
    out.push_back(std::move(c));
  }
  chunk["choices"] = std::move(out);
  return chunk;
}

void tokens_from_chunk(const nlohmann::json& chunk, int& prompt_tokens, int& completion_tokens) {
  auto take = [](const nlohmann::json& obj, const char* key, int& out) {
    if (auto it = obj.find(key); it != obj.end() && it->is_number_integer()) {
      out = it->get<int>();
    }
  };
  if (auto t = chunk.find("timings"); t != chunk.end() && t->is_object()) {
    take(*t, "prompt_n", prompt_tokens);
    take(*t, "predicted_n", completion_tokens);
  }
  if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
    take(*u, "prompt_tokens", prompt_tokens);
    take(*u, "completion_tokens", completion_tokens);
  }
}

}  // namespace lemon::inference
