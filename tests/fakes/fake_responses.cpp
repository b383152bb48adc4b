#include "fake_responses.h"

#include <memory>

#include "fake_reply.h"
#include "fake_request.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

struct Resp {
  std::string id;
  std::string msg_id;
  std::string model;
  int64_t created = 0;
  int input_tokens = 0;
  TokenCount tokens;
  int seq = 0;  // sequence_number of the next streamed event
};

json output_text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
}

json message_item(const Resp& r, bool done) {
  json content = done ? json::array({output_text_part(generated_text(r.tokens.n))}) : json::array();
  return {{"type", "message"},
          {"id", r.msg_id},
          {"status", done ? "completed" : "in_progress"},
          {"role", "assistant"},
          {"content", content}};
}

json response_object(const Resp& r, bool done) {
  json j = {{"id", r.id},
            {"object", "response"},
            {"created_at", r.created},
            {"status", done ? "completed" : "in_progress"},
            {"model", r.model},
            {"output", done ? json::array({message_item(r, true)}) : json::array()}};
  if (done) {
    j["usage"] = {{"input_tokens", r.input_tokens},
                  {"output_tokens", r.tokens.n},
                  {"total_tokens", r.input_tokens + r.tokens.n}};
  } else {
    j["usage"] = nullptr;
  }
  return j;
}

std::string event(Resp& r, const char* type, json j) {
  j["type"] = type;
  j["sequence_number"] = r.seq++;
  return sse_event(type, j);
}

std::vector<std::string> head_events(Resp& r) {
  return {event(r, "response.created", {{"response", response_object(r, false)}}),
          event(r, "response.output_item.added",
                {{"output_index", 0}, {"item", message_item(r, false)}}),
          event(r, "response.content_part.added",
                {{"item_id", r.msg_id},
                 {"output_index", 0},
                 {"content_index", 0},
                 {"part", output_text_part("")}})};
}

std::string delta_event(Resp& r, const std::string& piece) {
  return event(r, "response.output_text.delta",
               {{"item_id", r.msg_id},
                {"output_index", 0},
                {"content_index", 0},
                {"delta", piece},
                {"fake_ts_ns", mono_ns()}});
}

std::vector<std::string> tail_events(Resp& r) {
  std::string text = generated_text(r.tokens.n);
  json where = {{"item_id", r.msg_id}, {"output_index", 0}, {"content_index", 0}};
  json text_done = where;
  text_done["text"] = text;
  json part_done = where;
  part_done["part"] = output_text_part(text);
  return {
      event(r, "response.output_text.done", text_done),
      event(r, "response.content_part.done", part_done),
      event(r, "response.output_item.done", {{"output_index", 0}, {"item", message_item(r, true)}}),
      event(r, "response.completed", {{"response", response_object(r, true)}})};
}

std::string error_event(Resp& r) {
  return event(r, "error",
               {{"code", "exceed_context_size_error"},
                {"message", "Context size has been exceeded."},
                {"param", nullptr}});
}

void handle(const std::string& model_id, const httplib::Request& req, httplib::Response& res) {
  JobPtr job = admit(req, res);
  json body;
  if (!job || !parse_json_body(job, req, res, &body)) {
    return;
  }
  if (!body.contains("input") || !(body["input"].is_string() || body["input"].is_array())) {
    reply_bad_request(job, res, "'input' is required and must be a string or an array");
    return;
  }
  GenParams params = request_params(runtime().knobs, body);
  auto r = std::make_shared<Resp>();
  r->id = make_id("resp_");
  r->msg_id = make_id("msg_");
  r->model = model_name(body, model_id);
  r->created = unix_seconds();
  r->input_tokens = prompt_tokens(req);
  r->tokens = count_tokens(params, body, {"max_output_tokens"});

  if (!json_true(body, "stream")) {
    int gen_ms = params.stream_chunk_delay_ms > 0 ? params.stream_chunk_delay_ms * r->tokens.n : 0;
    reply_later(job, res, params, gen_ms, dump(response_object(*r, true)));
    return;
  }
  StreamPlan plan;
  plan.tokens = r->tokens.n;
  plan.head = [r] { return head_events(*r); };
  plan.token_event = [r](int, const std::string& piece) { return delta_event(*r, piece); };
  plan.tail = [r] { return tail_events(*r); };
  plan.error_event = [r] { return error_event(*r); };
  reply_stream(job, res, params, std::move(plan));
}

}  // namespace

httplib::Server::Handler responses_handler(const std::string& model_id) {
  return [model_id](const httplib::Request& req, httplib::Response& res) {
    handle(model_id, req, res);
  };
}

}  // namespace fake
