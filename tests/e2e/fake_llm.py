#!/usr/bin/env python3
"""A loopback stand-in for an OpenAI-compatible endpoint, for the e2e tests (no real model).

  fake_llm.py ANSWERS.json PORT_FILE LOG_FILE

ANSWERS.json is a list of {"status": N, "content": "..."} served in order to POST
/v1/chat/completions (the last one again once the list is used up); the chosen port is written
to PORT_FILE; each request body is appended to LOG_FILE as one JSON line."""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

answers = json.load(open(sys.argv[1]))
served = [0]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[3], "a") as log:
            log.write(body.decode("utf-8", "replace").replace("\n", " ") + "\n")
        a = answers[min(served[0], len(answers) - 1)]
        served[0] += 1
        if a.get("status", 200) != 200:
            out = json.dumps({"error": {"message": a.get("content", "error")}}).encode()
            self.send_response(a["status"])
        else:
            out = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": a["content"]}}],
                              "usage": {"prompt_tokens": 200, "completion_tokens": 40}}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
