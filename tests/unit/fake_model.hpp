#pragma once
// A loopback server that speaks the chat-completions protocol for the tests (cpp-httplib): each
// request goes to the test's handler, which answers as a model (or a failing server) would.

#include "autodriver/llm/client.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace autodriver::testing {

using namespace std::chrono_literals;

/// A server on 127.0.0.1 (a free port) answering /v1/chat/completions with `handler`.
class FakeModel {
public:
  explicit FakeModel(std::function<void(const httplib::Request&, httplib::Response&)> handler) {
    m_server.Post("/v1/chat/completions", [this, handler](const httplib::Request& req, httplib::Response& res) {
      ++requests;
      last_body = req.body;
      last_auth = req.get_header_value("Authorization");
      handler(req, res);
    });
    m_port = m_server.bind_to_any_port("127.0.0.1");
    m_thread = std::thread([this] { m_server.listen_after_bind(); });
    while (!m_server.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~FakeModel() {
    m_server.stop();
    m_thread.join();
  }
  autodriver::llm::Endpoint endpoint() const {
    autodriver::llm::Endpoint e;
    e.base_url = "http://127.0.0.1:" + std::to_string(m_port) + "/v1";
    e.model = "fake";
    e.key_env = "AD_TEST_LLM_KEY";
    e.backoff = 10ms;
    e.retries = 3;
    e.timeout = 5s;
    e.stall = 2s;
    return e;
  }
  std::atomic<int> requests{0};
  std::string last_body, last_auth;

private:
  httplib::Server m_server;
  int m_port = 0;
  std::thread m_thread;
};

} // namespace autodriver::testing
