#include "snapshot/snapshot_plan.h"

namespace lemon::snapshot {
namespace {

using nlohmann::json;
using testing::form_field;
using testing::form_file;
using testing::FormPart;

constexpr const char* kBadJson = "{oops";
const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "pixels";

// `base` with `extra`'s fields added or replaced.
json with(json base, const json& extra) {
  base.update(extra);
  return base;
}

std::string body_summary(const std::string& body) {
  constexpr std::size_t kMax = 160;
  if (body.size() <= kMax) {
    return body;
  }
  return body.substr(0, kMax) + "... (" + std::to_string(body.size()) + " bytes)";
}

// Builds the list: each call appends one request.
class PlanBuilder {
 public:
  std::vector<Case> cases;

  Case& send(const std::string& method, const std::string& path, const std::string& body,
             const std::string& note) {
    Case c;
    c.method = method;
    c.path = path;
    c.body = body;
    if (!body.empty()) {
      c.content_type = "application/json";
    }
    c.summary = body_summary(body);
    c.note = note;
    cases.push_back(std::move(c));
    return cases.back();
  }
  Case& get(const std::string& path, const std::string& note) {
    return send("GET", path, "", note);
  }
  Case& post(const std::string& path, const json& body, const std::string& note) {
    return send("POST", path, body.dump(), note);
  }
  Case& bad_json(const std::string& path, const std::string& method = "POST") {
    return send(method, path, kBadJson, "malformed JSON");
  }
  Case& form(const std::string& path, const std::vector<FormPart>& parts, const std::string& note) {
    Case& c = send("POST", path, testing::multipart_body(parts), note);
    c.content_type = testing::multipart_content_type();
    c.summary = "multipart:";
    for (const auto& part : parts) {
      c.summary +=
          " " + part.name + (part.filename.empty() ? "=" + part.data : "<" + part.filename);
    }
    return c;
  }
  Case& first_event(const std::string& path, const std::string& note) {
    Case& c = get(path, note);
    c.read = Read::kFirstEvent;
    return c;
  }
  // The other three prefixes: a GET, or for another method a malformed body,
  // which every JSON route refuses in its own API's shape.
  void other_prefixes(const std::string& method, const std::string& suffix) {
    for (std::size_t i = 1; i < api_prefixes().size(); ++i) {
      const std::string path = api_prefixes()[i] + suffix;
      if (method == "GET") {
        get(path, "the route under another prefix");
      } else {
        send(method, path, kBadJson, "the route under another prefix (malformed JSON)");
      }
    }
  }
};

const std::string V1 = "/api/v1/";

void management(PlanBuilder& p) {
  for (const char* suffix : {"health", "live", "ready", "stats", "system-info", "models"}) {
    p.get(V1 + suffix, "nothing loaded yet");
    p.other_prefixes("GET", suffix);
    p.send("DELETE", V1 + suffix, "", "a method the route does not take");
  }
  p.get("/live", "root liveness");
  p.get("/ready", "root readiness");
  p.send("HEAD", V1 + "health", "", "HEAD is GET without a body");
  p.send("OPTIONS", V1 + "health", "", "CORS preflight without an Origin");
  p.send("BREW", V1 + "health", "", "a method HTTP does not define");
  p.get(V1 + "models?show_all=true", "the whole catalogue");
  p.get(V1 + "models/user.a", "one model");
  p.get(V1 + "models/user.nope", "an unknown model");
  p.other_prefixes("GET", "models/user.e");
  p.post(V1 + "test", json::object(), "Lemonade's debug route");
  p.other_prefixes("POST", "test");
  p.get(V1 + "params", "generation defaults");
  p.post(V1 + "params", {{"top_k", 40}}, "set a default");
  p.post(V1 + "params", {{"temprature", 0.5}}, "an unknown field");
  p.bad_json(V1 + "params");
  p.post(V1 + "params", {{"top_k", nullptr}}, "remove the default again");
  p.other_prefixes("GET", "params");
  p.other_prefixes("POST", "params");
  p.send("DELETE", V1 + "params", "", "a method the route does not take");
  p.post(V1 + "log-level", {{"level", "info"}}, "the level it runs at");
  p.post(V1 + "log-level", {{"level", "banana"}}, "an unknown level");
  p.post(V1 + "log-level", json::object(), "a missing level");
  p.bad_json(V1 + "log-level");
  p.other_prefixes("POST", "log-level");
  p.get(V1 + "log-level", "a method the route does not take");
}

void loads(PlanBuilder& p) {
  p.post(V1 + "load", json::object(), "a missing model_name");
  p.bad_json(V1 + "load");
  p.post(V1 + "load", {{"model_name", "user.nope"}}, "an unknown model");
  p.post(V1 + "load", {{"model_name", "user.a"}, {"ctx_size", "big"}}, "a mistyped option");
  p.get(V1 + "load", "a method the route does not take");
  p.other_prefixes("POST", "load");
  for (const char* model : {"user.a", "user.e", "user.r", "user.w", "user.i"}) {
    p.post(V1 + "load", {{"model_name", model}}, "load a model of each type");
  }
  p.get(V1 + "health", "every type loaded");
  p.get(V1 + "stats", "after the loads");
  p.get(V1 + "models", "downloaded and loaded models");
  for (const char* pin : {"/api/v1/internal/pin", "/internal/pin"}) {
    p.post(pin, {{"model_name", "user.a"}, {"pinned", true}}, "pin a loaded model");
    p.post(pin, {{"model_name", "user.a"}}, "a missing pinned");
    p.post(pin, {{"model_name", "user.nope"}, {"pinned", true}}, "an unknown model");
    p.bad_json(pin);
    p.get(pin, "a method the route does not take");
  }
  p.post(V1 + "internal/pin", {{"model", "user.a"}, {"pinned", false}}, "unpin, named by model");
  p.other_prefixes("POST", "internal/pin");
}

// A JSON inference route's usual refusals under /api/v1.
void inference_refusals(PlanBuilder& p, const std::string& suffix, const json& happy) {
  p.bad_json(V1 + suffix);
  p.post(V1 + suffix, json::object(), "no fields at all");
  json unknown = happy;
  unknown["model"] = "user.nope";
  p.post(V1 + suffix, unknown, "an unknown model");
  p.get(V1 + suffix, "a method the route does not take");
  p.send("POST", V1 + suffix, happy.dump(), "a body that is not labelled JSON").content_type =
      "text/plain";
  p.other_prefixes("POST", suffix);
}

void openai(PlanBuilder& p) {
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  const json chat = {{"model", "user.a"}, {"messages", messages}};
  p.post(V1 + "chat/completions", chat, "a chat");
  p.post(V1 + "chat/completions", with(chat, {{"stream", true}}), "a streamed chat");
  p.post(V1 + "chat/completions", json{{"model", "user.a"}}, "no messages");
  p.post(V1 + "chat/completions", json{{"model", "user.e"}, {"messages", messages}},
         "a model of another type");
  p.post(V1 + "chat/completions", json{{"model", "preset.coder"}, {"messages", messages}},
         "a preset");
  p.post(V1 + "chat/completions", with(chat, {{"stream", "yes"}}), "a mistyped stream");
  p.post("/v1/chat/completions", chat, "a chat where OpenAI's clients send it");
  inference_refusals(p, "chat/completions", chat);

  const json completion = {{"model", "user.a"}, {"prompt", "hi"}};
  p.post(V1 + "completions", completion, "a completion");
  p.post(V1 + "completions", with(completion, {{"stream", true}}), "a streamed completion");
  inference_refusals(p, "completions", completion);

  const json responses = {{"model", "user.a"}, {"input", "hi"}};
  p.post(V1 + "responses", responses, "a response");
  p.post(V1 + "responses", with(responses, {{"stream", true}}), "a streamed response");
  inference_refusals(p, "responses", responses);

  const json embed = {{"model", "user.e"}, {"input", "hi"}};
  p.post(V1 + "embeddings", embed, "an embedding");
  p.post(V1 + "embeddings", with(embed, {{"encoding_format", "base64"}}), "base64");
  p.post(V1 + "embeddings", with(embed, {{"stream", true}}), "a stream it cannot give");
  p.post(V1 + "embeddings", json{{"model", "user.a"}, {"input", "hi"}}, "an llm");
  inference_refusals(p, "embeddings", embed);

  const json rerank = {{"model", "user.r"}, {"query", "q"}, {"documents", {"a", "b"}}};
  for (const char* suffix : {"reranking", "rerank", "reranker"}) {
    p.post(V1 + suffix, rerank, "a rerank");
    p.post(V1 + suffix, json{{"model", "user.r"}, {"query", "q"}}, "no documents");
    inference_refusals(p, suffix, rerank);
  }

  const json image = {{"model", "user.i"}, {"prompt", "a cat"}, {"size", "64x64"}};
  p.post(V1 + "images/generations", image, "an image");
  p.post(V1 + "images/generations", with(image, {{"n", 9}}), "too many images");
  inference_refusals(p, "images/generations", image);

  for (const char* suffix : {"images/edits", "images/variations"}) {
    p.form(V1 + suffix,
           {form_field("model", "user.i"), form_field("prompt", "blue"),
            form_file("image", kPng, "in.png", "image/png")},
           "an image form");
    p.form(V1 + suffix, {form_field("model", "user.i"), form_field("prompt", "blue")}, "no image");
    p.form(V1 + suffix,
           {form_field("model", "user.nope"), form_field("prompt", "blue"),
            form_file("image", kPng, "in.png", "image/png")},
           "an unknown model");
    p.post(V1 + suffix, json{{"model", "user.i"}}, "JSON where a form is wanted");
    p.get(V1 + suffix, "a method the route does not take");
    p.other_prefixes("POST", suffix);
  }

  const std::string wav = testing::wav_bytes(1600);
  const std::string speech = "audio/transcriptions";
  p.form(V1 + speech, {form_file("file", wav, "a.wav", "audio/wav"), form_field("model", "user.w")},
         "a transcription");
  p.form(V1 + speech,
         {form_file("file", wav, "a.wav", "audio/wav"), form_field("model", "user.w"),
          form_field("response_format", "text")},
         "a transcription as text");
  p.form(V1 + speech, {form_field("model", "user.w")}, "no file");
  p.form(V1 + speech,
         {form_file("file", wav, "a.wav", "audio/wav"), form_field("model", "user.nope")},
         "an unknown model");
  p.post(V1 + speech, json{{"model", "user.w"}}, "JSON where a form is wanted");
  p.get(V1 + speech, "a method the route does not take");
  p.other_prefixes("POST", speech);

  const json tts = {{"model", "user.a"}, {"input", "Hello"}, {"voice", "af_sky"}};
  p.post(V1 + "audio/speech", tts, "no recipe serves speech");
  p.post(V1 + "audio/speech", json{{"model", "user.a"}}, "no input");
  inference_refusals(p, "audio/speech", tts);
}

void anthropic(PlanBuilder& p) {
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  const json message = {{"model", "user.a"}, {"max_tokens", 16}, {"messages", messages}};
  p.post(V1 + "messages", message, "a message");
  p.post(V1 + "messages", with(message, {{"stream", true}}), "a streamed message");
  p.post(V1 + "messages", json{{"model", "user.a"}, {"messages", messages}}, "no max_tokens");
  p.post("/v1/messages", message, "where Anthropic's clients send it");
  inference_refusals(p, "messages", message);
  const json count = {{"model", "user.a"}, {"messages", messages}};
  p.post(V1 + "messages/count_tokens", count, "count tokens");
  p.post(V1 + "messages/count_tokens", json{{"model", "user.a"}}, "no messages");
  inference_refusals(p, "messages/count_tokens", count);
}

void ollama(PlanBuilder& p) {
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  p.post("/api/chat", {{"model", "user.a"}, {"messages", messages}, {"stream", false}}, "a chat");
  p.post("/api/chat", {{"model", "user.a:latest"}, {"messages", messages}}, "a streamed chat");
  p.post("/api/chat", {{"model", "user.nope"}, {"messages", messages}}, "an unknown model");
  p.post("/api/chat", {{"messages", messages}}, "no model");
  p.bad_json("/api/chat");
  p.get("/api/chat", "a method the route does not take");
  p.post("/api/generate", {{"model", "user.a"}, {"prompt", "hi"}, {"stream", false}}, "generate");
  p.post("/api/generate", {{"model", "user.a"}, {"prompt", "hi"}}, "a streamed generate");
  p.post("/api/generate", {{"model", "user.a"}, {"prompt", "x"}, {"raw", true}}, "raw");
  p.bad_json("/api/generate");
  p.post("/api/embed", {{"model", "user.e"}, {"input", {"hello", "world"}}}, "embed");
  p.post("/api/embed", {{"model", "user.nope"}, {"input", "x"}}, "an unknown model");
  p.bad_json("/api/embed");
  p.post("/api/embeddings", {{"model", "user.e"}, {"prompt", "hello"}}, "the old embeddings");
  p.bad_json("/api/embeddings");
  p.get("/api/tags", "the models");
  p.get("/api/ps", "the loaded models");
  p.get("/api/version", "the version");
  p.post("/api/show", {{"model", "user.a:latest"}}, "show a model");
  p.post("/api/show", {{"model", "user.nope"}}, "an unknown model");
  p.bad_json("/api/show");
  p.post("/api/pull", {{"model", "user.a"}, {"stream", false}}, "pull a model on disk");
  p.post("/api/pull", {{"name", "user.a:latest"}}, "a streamed pull");
  p.post("/api/pull", {{"model", "user.nope"}}, "an unknown model");
  p.send("DELETE", "/api/delete", json{{"model", "user.nope"}}.dump(), "an unknown model");
  p.bad_json("/api/delete", "DELETE");
  p.post("/api/delete", {{"model", "user.nope"}}, "a method the route does not take");
  for (const std::string& path : not_implemented_paths()) {
    const std::string concrete = path.substr(0, path.find("{id}")) +
                                 (path.find("{id}") == std::string::npos ? "" : "sha256-00");
    p.post(concrete, {{"model", "x"}}, "a route Ollama has and this router does not");
    p.get(concrete, "the same with another method");
  }
  Case& ollama_root = p.get("/", "the Ollama listener's root");
  ollama_root.listener = Listener::kOllama;
  p.get("/api/version", "the Ollama listener").listener = Listener::kOllama;
  p.get("/api/v1/health", "the Ollama listener serves every route").listener = Listener::kOllama;
}

void llamacpp(PlanBuilder& p) {
  p.get("/health", "llama-server's health at the root");
  p.get("/models", "the models in llama.cpp's shape");
  p.get("/models?reload=1", "the model sources read again");
  p.post("/models", {{"model", "not a repo"}}, "a download of a name that is no hub model");
  p.post("/models", json::object(), "a download without a model");
  p.bad_json("/models");
  p.send("DELETE", "/models", "", "a delete without ?model=");
  p.send("DELETE", "/models?model=nope", "", "a delete of an unknown model");
  p.post("/models/load", json::object(), "a load without a model");
  p.post("/models/load", {{"model", "nope"}}, "a load of an unknown model");
  p.bad_json("/models/load");
  p.post("/models/unload", {{"model", "nope"}}, "an unload of an unknown model");
  p.post("/models/unload", {{"model", "e"}}, "an unload of a model that is not running");
  p.bad_json("/models/unload");
  p.send("HEAD", "/models/sse", "", "the model event stream's head");
  p.get("/models/sse", "the model events (none until a model changes)").read = Read::kHead;
  p.get("/props", "the router's props");
  p.get("/props?model=nope", "an unknown model's props");
  p.get("/slots", "slots without ?model=");
  p.get("/slots?model=nope&autoload=false", "an unknown model's slots");
  const json messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  p.post("/chat/completions", {{"model", "a"}, {"messages", messages}},
         "a chat at the root, the model by llama.cpp's name");
  p.post("/chat/completions?autoload=false", {{"model", "nope"}, {"messages", messages}},
         "autoload off, an unknown model");
  p.post("/tokenize", {{"model", "a"}, {"content", "hi"}}, "llama-server's own route");
  p.post("/completion", {{"prompt", "hi"}}, "no model in the body");
  for (const char* path : {"/completions", "/infill", "/embeddings", "/embedding", "/rerank",
                           "/reranking", "/detokenize", "/apply-template"}) {
    p.bad_json(path);
  }
}

void sessions(PlanBuilder& p) {
  const std::string s = V1 + "sessions";
  p.post(s, json::object(), "no model");
  p.post(s, {{"model", "user.nope"}}, "an unknown model");
  p.post(s, {{"model", "user.e"}}, "a model that cannot hold a session");
  p.bad_json(s);
  p.post(s, {{"model", "user.a"}, {"system", "be brief"}}, "a session").capture = "session";
  p.post(s + "/{session}/messages", {{"role", "user"}, {"content", "hi"}}, "a message");
  p.post(s + "/{session}/messages", {{"role", "robot"}, {"content", "hi"}}, "an unknown role");
  p.post(s + "/{session}/generate", json::object(), "the next turn");
  p.post(s + "/{session}/messages", {{"role", "user"}, {"content", "more"}}, "another message");
  p.post(s + "/{session}/generate", {{"stream", true}}, "a streamed turn");
  p.post(s + "/{session}/cancel", json::object(), "cancel with nothing running");
  p.post(s + "/{session}/bogus", json::object(), "an unknown action");
  p.get(s, "the sessions");
  p.get(s + "/{session}", "the session with its history");
  p.get(s + "/sess_nope", "an unknown session");
  p.post(s + "/sess_nope/generate", json::object(), "an unknown session");
  p.send("PUT", s + "/{session}", "{}", "a method the route does not take");
  p.send("DELETE", s + "/{session}", "", "end it");
  p.send("DELETE", s + "/{session}", "", "end it again");
  p.other_prefixes("GET", "sessions");
  p.other_prefixes("POST", "sessions");
  p.other_prefixes("GET", "sessions/sess_nope");
  p.other_prefixes("POST", "sessions/sess_nope/generate");
  for (std::size_t i = 1; i < api_prefixes().size(); ++i) {
    p.send("DELETE", api_prefixes()[i] + "sessions/sess_nope", "", "another prefix");
  }
}

void presets(PlanBuilder& p) {
  const std::string ps = V1 + "presets";
  p.get(ps, "the presets");
  p.get(ps + "/coder", "one preset");
  p.get(ps + "/nope", "an unknown preset");
  const json made = {{"id", "snap2"}, {"model", "user.a"}, {"sampling", {{"temperature", 0.5}}}};
  p.post(ps, made, "create a preset");
  p.post(ps, made, "create it again");
  p.post(ps, {{"id", "snap3"}}, "no model");
  p.post(ps, {{"id", "snap3"}, {"model", "user.nope"}}, "an unknown model");
  p.bad_json(ps);
  p.send("PUT", ps + "/snap2", json{{"model", "user.a"}, {"ctx_size", 2048}}.dump(), "replace it");
  p.send("PUT", ps + "/snap2", json{{"model", "user.a"}, {"ctx_size", "big"}}.dump(),
         "a mistyped field");
  p.bad_json(ps + "/snap2", "PUT");
  p.send("DELETE", ps + "/snap2", "", "delete it");
  p.send("DELETE", ps + "/snap2", "", "delete it again");
  p.send("PATCH", ps + "/coder", "{}", "a method the route does not take");
  p.send("DELETE", ps, "", "a method the route does not take");
  p.other_prefixes("GET", "presets");
  p.other_prefixes("POST", "presets");
  p.other_prefixes("GET", "presets/coder");
  p.other_prefixes("PUT", "presets/nope");
  for (std::size_t i = 1; i < api_prefixes().size(); ++i) {
    p.send("DELETE", api_prefixes()[i] + "presets/nope", "", "another prefix");
  }
}

void observe(PlanBuilder& p) {
  p.get(V1 + "metrics", "metric families");
  p.other_prefixes("GET", "metrics");
  p.get("/metrics", "where Prometheus looks");
  p.post("/metrics", json::object(), "a method the route does not take");
  for (const std::string& prefix : api_prefixes()) {
    p.first_event(prefix + "events?backlog=1000", "the first event the router kept");
    p.first_event(prefix + "logs/stream?tail=1", "the last log line");
  }
  // The WebSocket routes: a handshake without its key is refused before any
  // upgrade; one with a version other than 13 is told which one to use.
  for (const std::string& prefix : api_prefixes()) {
    for (const char* socket : {"logs/stream", "realtime"}) {
      Case& c = p.get(prefix + socket, "a WebSocket handshake without Sec-WebSocket-Key");
      c.headers = {
          {"Upgrade", "websocket"}, {"Connection", "Upgrade"}, {"Sec-WebSocket-Version", "13"}};
    }
  }
  Case& old_version = p.get(V1 + "realtime", "a WebSocket handshake of another version");
  old_version.headers = {{"Upgrade", "websocket"},
                         {"Connection", "Upgrade"},
                         {"Sec-WebSocket-Version", "8"},
                         {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}};
  p.send("HEAD", V1 + "events", "", "HEAD");
  p.get(V1 + "events?backlog=x", "a bad backlog");
  p.first_event(V1 + "logs/stream?tail=x", "a bad tail");
  p.get(V1 + "system-stats", "system figures");
  p.other_prefixes("GET", "system-stats");
}

void internal(PlanBuilder& p) {
  for (const char* routes : {"/api/v1/internal/routes", "/internal/routes"}) {
    p.get(routes, "every route and its scope");
  }
  p.other_prefixes("GET", "internal/routes");
  for (const char* config : {"/api/v1/internal/config", "/internal/config"}) {
    p.get(config, "the configuration");
  }
  p.other_prefixes("GET", "internal/config");
  p.get("/internal/config?sources=1", "each setting's value and source");
  for (const char* defaults : {"/api/v1/internal/config/defaults", "/internal/config/defaults"}) {
    p.get(defaults, "every setting's default");
  }
  p.other_prefixes("GET", "internal/config/defaults");
  p.post("/internal/cleanup-cache", json::object(), "a dry run: nothing stray");
  p.post("/internal/cleanup-cache", {{"dry_run", "no"}}, "a dry_run that is no boolean");
  p.bad_json("/internal/cleanup-cache");
  p.post("/internal/simulate-vram-pressure", {{"pct", 0.95}}, "pressure without auto_evict");
  p.post("/internal/simulate-vram-pressure", {{"pct", "high"}}, "a pct that is no number");
  p.bad_json("/internal/simulate-vram-pressure");
  for (const char* set : {"/api/v1/internal/set", "/internal/set"}) {
    p.post(set, {{"keep_alive", 600}}, "a setting applied at once");
    p.post(set, {{"no_such_setting", 1}}, "an unknown setting");
    p.bad_json(set);
    p.get(set, "a method the route does not take");
  }
  p.other_prefixes("POST", "internal/set");
  for (const char* profile : {"/api/v1/internal/profile", "/internal/profile"}) {
    p.post(profile, {{"name", "snap"}}, "switch to a profile");
    p.post(profile, {{"name", "nope"}}, "an unknown profile");
    p.post(profile, json::object(), "no name");
    p.bad_json(profile);
  }
  p.other_prefixes("POST", "internal/profile");
}

void store(PlanBuilder& p) {
  p.post(V1 + "pull", {{"model_name", "user.a"}}, "pull a model on disk");
  p.post(V1 + "pull", {{"model_name", "user.a"}, {"stream", true}}, "a streamed pull");
  p.post(V1 + "pull", json::object(), "no model_name");
  p.post(V1 + "pull", {{"model_name", "NonExistentModel-XYZ-123"}}, "an unknown model");
  p.post(V1 + "pull", {{"model_name", "user.a"}, {"stream", "yes"}}, "a mistyped stream");
  p.bad_json(V1 + "pull");
  p.get(V1 + "pull", "a method the route does not take");
  p.other_prefixes("POST", "pull");
  p.post(V1 + "delete", {{"model_name", "NonExistentModel-XYZ-123"}}, "an unknown model");
  p.post(V1 + "delete", {{"model_name", "Qwen3-0.6B-GGUF"}}, "a model not downloaded");
  p.post(V1 + "delete", json::object(), "no model_name");
  p.bad_json(V1 + "delete");
  p.other_prefixes("POST", "delete");
  p.post(V1 + "install", json::object(), "no recipe");
  p.post(V1 + "install", {{"recipe", "nope"}, {"backend", "cpu"}}, "an unknown recipe");
  p.bad_json(V1 + "install");
  p.other_prefixes("POST", "install");
  p.post(V1 + "uninstall", {{"recipe", "llamacpp"}}, "no backend");
  p.post(V1 + "uninstall", {{"recipe", "nope"}, {"backend", "cpu"}}, "an unknown recipe");
  p.bad_json(V1 + "uninstall");
  p.other_prefixes("POST", "uninstall");
  const json policy = {
      {"version", "1"},
      {"model_name", "user.snap-router"},
      {"recipe", "collection.router"},
      {"components", {"user.a", "user.e"}},
      {"routing",
       {{"candidates", {"user.a", "user.e"}},
        {"default_model", "user.a"},
        {"rules", {{{"id", "long"}, {"match", {{"min_chars", 40}}}, {"route_to", "user.e"}}}}}}};
  p.post(V1 + "routing/validate", {{"policy", policy}, {"prompt", "hi"}},
         "a policy that falls open to its default");
  p.post(V1 + "routing/validate",
         {{"policy", policy}, {"prompt", std::string(50, 'x')}, {"has_tools", true}},
         "a policy whose rule matches");
  p.post(V1 + "routing/validate",
         {{"policy", with(policy, {{"components", {"user.a", "user.nope"}}})}},
         "a component that is not registered");
  p.post(V1 + "routing/validate", {{"prompt", "hi"}}, "no policy");
  p.post(V1 + "routing/validate", {{"policy", policy}, {"metadata", {{"k", 1}}}},
         "metadata that is not strings");
  p.bad_json(V1 + "routing/validate");
  p.other_prefixes("POST", "routing/validate");
}

void dashboard(PlanBuilder& p) {
  for (const char* page : {"/", "/status", "/api/v1", "/api/v0", "/web-app", "/favicon.ico"}) {
    p.get(page, "the dashboard");
  }
  for (const char* file : {"index.html", "app.js", "app.css", "favicon.svg"}) {
    p.get(std::string("/web/") + file, "a dashboard file");
  }
  p.get("/web/nope.js", "a file that is not there");
  p.get("/web/..%2fsecret", "a name that is not plain");
  p.post("/", json::object(), "a method the page does not take");
}

void unloads_and_errors(PlanBuilder& p) {
  p.get("/nope", "an unknown path");
  p.get(V1 + "nope", "an unknown API path");
  p.send("BREW", "/nope", "", "an unknown method on an unknown path");
  p.send("OPTIONS", V1 + "chat/completions", "", "a CORS preflight from an origin")
      .headers.emplace_back("Origin", "http://evil.example");
  p.post(V1 + "load", {{"model_name", "user.r"}}, "load another model");
  p.post(V1 + "unload", {{"model_name", "user.r"}}, "unload one model");
  p.post(V1 + "unload", {{"model_name", "user.r"}}, "unload it again");
  p.post(V1 + "unload", {{"model_name", 5}}, "a mistyped model_name");
  p.bad_json(V1 + "unload");
  p.get(V1 + "unload", "a method the route does not take");
  p.other_prefixes("POST", "unload");
  p.post(V1 + "unload", json::object(), "unload every model");
  p.get(V1 + "health", "nothing loaded");
  p.get("/internal/shutdown", "a method the route does not take");
  // The route reads no body (malformed JSON would shut the router down too),
  // so the last request is the only one.
  p.post("/internal/shutdown", json::object(), "shut down (last)");
}

// Lemonade 11's routes: per-model options, registration, files, aliases,
// the downloads the router owns and the registry (no hub answers here).
void lemonade11(PlanBuilder& p) {
  p.get(V1 + "models/a/options", "a model's options, by its bare name");
  p.post(V1 + "models/user.a/options", {{"ctx_size", 2048}}, "save an option");
  p.post(V1 + "models/a/options", {{"ctx_size", 1024}, {"dry_run", true}}, "a dry run");
  p.post(V1 + "models/a/options", {{"bogus", 1}}, "an unknown option");
  p.post(V1 + "models/a/options", {{"pinned", true}}, "a pin is no saved option");
  p.send("DELETE", V1 + "models/a/options", "", "forget the options");
  p.get(V1 + "models/user.nope/options", "an unknown model");
  p.other_prefixes("GET", "models/a/options");
  p.other_prefixes("POST", "models/a/options");
  for (std::size_t i = 1; i < api_prefixes().size(); ++i) {
    p.send("DELETE", api_prefixes()[i] + "models/user.nope/options", "",
           "the route under another prefix");
  }
  p.get(V1 + "models/a/files", "a model's files");
  p.get(V1 + "models/a/files?include_paths=true", "with their paths");
  p.other_prefixes("GET", "models/a/files");
  p.post(V1 + "models/register",
         {{"model_name", "user.reg"}, {"checkpoint", "org/reg-GGUF:Q4_0"}, {"recipe", "llamacpp"}},
         "register without a download");
  p.post(
      V1 + "models/register",
      {{"model_name", "builtin.reg"}, {"checkpoint", "org/reg-GGUF:Q4_0"}, {"recipe", "llamacpp"}},
      "a reserved name");
  p.other_prefixes("POST", "models/register");
  for (const std::string& aliases : {std::string("/internal/aliases"), V1 + "internal/aliases"}) {
    p.post(aliases, {{"alias", "snap-alias"}, {"target", "a"}}, "set an alias");
    p.get(aliases, "the aliases");
    p.post(aliases, {{"alias", "a"}, {"target", "snap-alias"}}, "a model's own name");
    p.post(aliases, {{"alias", "user.x"}, {"target", "a"}}, "a reserved prefix");
    p.send("DELETE", aliases + "/snap-alias", "", "remove it");
    p.send("DELETE", aliases + "/snap-alias", "", "an unknown alias");
  }
  p.other_prefixes("GET", "internal/aliases");
  p.other_prefixes("POST", "internal/aliases");
  for (std::size_t i = 1; i < api_prefixes().size(); ++i) {
    p.send("DELETE", api_prefixes()[i] + "internal/aliases/none", "",
           "the route under another prefix");
  }
  p.get(V1 + "downloads", "no download the router owns");
  p.post(V1 + "downloads/control", {{"id", "model:x"}, {"action", "remove"}}, "remove an unknown");
  p.post(V1 + "downloads/control", {{"id", "model:x"}, {"action", "pause"}}, "pause an unknown");
  p.post(V1 + "downloads/control", {{"id", "model:x"}, {"action", "explode"}}, "an unknown action");
  p.other_prefixes("GET", "downloads");
  p.other_prefixes("POST", "downloads/control");
  p.get(V1 + "registry/search?query=tiny", "a search the hub cannot answer");
  p.get(V1 + "registry/search?query=ti", "a short query");
  p.other_prefixes("GET", "registry/search?query=tiny");
  p.get(V1 + "pull/variants?checkpoint=org/none", "a repository nobody has");
  p.get(V1 + "pull/variants", "no checkpoint");
  p.other_prefixes("GET", "pull/variants");
  p.post(V1 + "models/check-updates", json::object(), "an update check");
  p.other_prefixes("POST", "models/check-updates");
}

}  // namespace

const std::vector<std::string>& api_prefixes() {
  static const std::vector<std::string> kPrefixes = {"/api/v1/", "/api/v0/", "/v1/", "/v0/"};
  return kPrefixes;
}

const std::vector<std::string>& not_implemented_paths() {
  static const std::vector<std::string> kPaths = {"/api/create", "/api/copy", "/api/push",
                                                  "/api/blobs/{id}"};
  return kPaths;
}

std::vector<Case> open_plan() {
  PlanBuilder p;
  management(p);
  loads(p);
  openai(p);
  anthropic(p);
  ollama(p);
  llamacpp(p);
  sessions(p);
  presets(p);
  observe(p);
  internal(p);
  store(p);
  lemonade11(p);
  dashboard(p);
  unloads_and_errors(p);
  return std::move(p.cases);
}

std::vector<Case> keyed_plan() {
  PlanBuilder p;
  auto with_key = [](Case& c, const std::string& header, const std::string& value) {
    c.headers.emplace_back(header, value);
  };
  with_key(p.get(V1 + "health", "the user key"), "Authorization",
           std::string("Bearer ") + kUserKey);
  with_key(p.post(V1 + "load", json::object(), "the user key on an admin route"), "Authorization",
           std::string("Bearer ") + kUserKey);
  with_key(p.get("/internal/routes", "the admin key"), "Authorization",
           std::string("Bearer ") + kAdminKey);
  with_key(p.get(V1 + "health", "a wrong key"), "Authorization", "Bearer wrong");
  with_key(p.post("/v1/messages", json::object(), "a wrong key, Anthropic's header"), "x-api-key",
           "wrong");
  with_key(p.post("/api/chat", json::object(), "a wrong key, Ollama's route"), "Authorization",
           "Bearer wrong");
  with_key(p.get("/api/tags", "the user key on an Ollama route"), "Authorization",
           std::string("Bearer ") + kUserKey);
  // llama.cpp's model event stream sends nothing until a model changes: a
  // wrong key is answered at once.
  with_key(p.get("/models/sse", "a wrong key, llama.cpp's event stream"), "Authorization",
           "Bearer wrong");
  return std::move(p.cases);
}

}  // namespace lemon::snapshot
