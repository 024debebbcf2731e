"""hearth-cli serve against the official OpenAI Python client and raw HTTP, on the default model.

Each test class starts its own server on an ephemeral port of 127.0.0.1 and stops it with
SIGTERM, checking that the process exits cleanly. Usage: openai_client_test.py HEARTH_CLI MODEL
"""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import openai

CLI = ""
MODEL = ""
GREEDY = {"temperature": 0}


class Server:
    """A running `hearth-cli serve`; the port is the one it printed."""

    def __init__(self, *flags, env=None):
        self.proc = subprocess.Popen(
            [CLI, "serve", "--model", MODEL, "--port", "0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        line = self.proc.stdout.readline()
        match = re.search(r"at (http://127\.0\.0\.1:(\d+)/v1)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()!r}")
        self.url = match.group(1)
        self.port = int(match.group(2))

    def client(self, key="unused"):
        return openai.OpenAI(base_url=self.url, api_key=key, max_retries=0, timeout=120)

    def stop(self, timeout=60):
        """SIGTERM; returns the exit status and what the server wrote to stderr."""
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err


def raw(port, method, path, body=None, headers=None, timeout=60):
    """One HTTP request; returns (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    all_headers = {"Content-Type": "application/json"}
    all_headers.update(headers or {})
    conn.request(method, path, body=body, headers=all_headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data


def chat_body(content, **fields):
    return {"model": "hearth", "messages": [{"role": "user", "content": content}], **fields}


def metric(port, name):
    _, _, body = raw(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


class ServerTestCase(unittest.TestCase):
    flags = ()

    @classmethod
    def setUpClass(cls):
        cls.server = Server(*cls.flags)
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        status, err = cls.server.stop()
        if status != 0:
            raise AssertionError(f"the server exited with {status} after SIGTERM: {err}")

    def assert_serving(self):
        """The next normal request succeeds."""
        r = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, **GREEDY
        )
        self.assertTrue(r.choices[0].message.content)

    def assert_error(self, status, body, expected):
        self.assertEqual(status, expected, body[:300])
        error = json.loads(body)["error"]
        self.assertIsInstance(error["message"], str)
        self.assertTrue(error["message"])
        self.assertIn("type", error)
        self.assertIn("param", error)
        self.assertIn("code", error)
        return error


class OpenAiClientTest(ServerTestCase):
    def test_models_lists_the_loaded_model(self):
        models = self.client.models.list().data
        self.assertEqual(len(models), 1)
        self.assertIn("SmolLM2", models[0].id)
        self.assertEqual(self.client.models.retrieve(models[0].id).id, models[0].id)
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("no-such-model")

    def test_chat_answers_through_the_chat_template(self):
        r = self.client.chat.completions.create(
            model="hearth",
            messages=[
                {"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "What color is the sky on a clear day?"},
            ],
            max_tokens=24,
            **GREEDY,
        )
        self.assertEqual(r.object, "chat.completion")
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertIn("blue", r.choices[0].message.content.lower())
        self.assertIn(r.choices[0].finish_reason, ("stop", "length"))
        self.assertGreater(r.usage.prompt_tokens, 10)
        self.assertGreater(r.usage.completion_tokens, 0)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens)

    def test_a_repeated_system_prompt_is_served_from_the_cache(self):
        system = "You are a careful assistant. " * 80  # several cache pages
        def ask(question, **extra):
            return self.client.chat.completions.create(
                model="hearth", max_tokens=6, **GREEDY, **extra,
                messages=[{"role": "system", "content": system},
                          {"role": "user", "content": question}])
        first = ask("Name a tree.")
        again = ask("Name a river.")
        cached = again.usage.prompt_tokens_details.cached_tokens
        self.assertGreater(cached, 100)
        self.assertLess(cached, again.usage.prompt_tokens)
        self.assertLessEqual(first.usage.prompt_tokens_details.cached_tokens, cached)
        streamed = list(ask("Name a mountain.", stream=True,
                            stream_options={"include_usage": True}))
        self.assertGreater(streamed[-1].usage.prompt_tokens_details.cached_tokens, 100)

    def test_streamed_chat_equals_the_whole_answer(self):
        kwargs = dict(model="hearth", messages=[{"role": "user", "content": "Count to ten."}],
                      max_tokens=40, **GREEDY)
        whole = self.client.chat.completions.create(**kwargs)
        chunks = list(self.client.chat.completions.create(
            stream=True, stream_options={"include_usage": True}, **kwargs))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, whole.choices[0].message.content)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
        self.assertEqual(finishes[-1], whole.choices[0].finish_reason)
        self.assertTrue(all(f is None for f in finishes[:-1]))
        self.assertEqual(chunks[-1].choices, [])  # the usage chunk comes last
        self.assertEqual(chunks[-1].usage.completion_tokens, whole.usage.completion_tokens)
        self.assertEqual(len({c.id for c in chunks}), 1)

    def test_completions_with_max_tokens_and_several_prompts(self):
        r = self.client.completions.create(
            model="hearth", prompt=["The capital of France is", "1, 2, 3,"], max_tokens=6,
            **GREEDY)
        self.assertEqual(len(r.choices), 2)
        self.assertEqual(sorted(c.index for c in r.choices), [0, 1])
        for c in r.choices:
            self.assertEqual(c.finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 12)
        # The same prompt alone gives the same text.
        alone = self.client.completions.create(model="hearth", prompt="1, 2, 3,", max_tokens=6,
                                               **GREEDY)
        self.assertEqual(alone.choices[0].text, r.choices[1].text)

    def test_max_completion_tokens_caps_a_chat_answer(self):
        r = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Write a long story."}],
            max_completion_tokens=5, **GREEDY)
        self.assertEqual(r.usage.completion_tokens, 5)
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_chat_logprobs(self):
        r = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Say hello."}], max_tokens=8,
            logprobs=True, top_logprobs=3, **GREEDY)
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), r.usage.completion_tokens)
        self.assertEqual("".join(t.token for t in content).strip(),
                         r.choices[0].message.content.strip())
        for t in content:
            self.assertLessEqual(t.logprob, 0.0)
            self.assertEqual(len(t.top_logprobs), 3)
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(t.logprob, t.top_logprobs[0].logprob, places=4)
            self.assertEqual(bytes(t.bytes), t.token.encode())

    def test_completion_logprobs_and_text_offsets(self):
        r = self.client.completions.create(model="hearth", prompt="Once upon a time",
                                           max_tokens=8, logprobs=2, **GREEDY)
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 8)
        self.assertEqual(len(lp.token_logprobs), 8)
        self.assertEqual(len(lp.top_logprobs), 8)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        offsets = [0]
        for t in lp.tokens[:-1]:
            offsets.append(offsets[-1] + len(t))
        self.assertEqual(lp.text_offset, offsets)
        self.assertTrue(all(len(top) == 2 for top in lp.top_logprobs))

    def test_stop_strings_end_the_answer_before_them(self):
        kwargs = dict(model="hearth", messages=[{"role": "user", "content": "Count to ten."}],
                      max_tokens=40, **GREEDY)
        full = self.client.chat.completions.create(**kwargs).choices[0].message.content
        self.assertGreater(len(full), 12, full)
        stop = full[6:9]
        expected = full[: full.index(stop)]
        for stops in (stop, [stop, "never appears"]):
            r = self.client.chat.completions.create(stop=stops, **kwargs)
            self.assertEqual(r.choices[0].message.content, expected)
            self.assertEqual(r.choices[0].finish_reason, "stop")
            streamed = self.client.chat.completions.create(stream=True, stop=stops, **kwargs)
            self.assertEqual("".join(c.choices[0].delta.content or "" for c in streamed),
                             expected)

    def test_a_seed_reproduces_a_sampled_answer(self):
        kwargs = dict(model="hearth", messages=[{"role": "user", "content": "Tell me a story."}],
                      max_tokens=24, temperature=1.0, top_p=0.95)
        a = self.client.chat.completions.create(seed=1234, **kwargs).choices[0].message.content
        b = self.client.chat.completions.create(seed=1234, **kwargs).choices[0].message.content
        self.assertEqual(a, b)
        others = {self.client.chat.completions.create(seed=s, **kwargs).choices[0].message.content
                  for s in (1, 2, 3)}
        self.assertGreater(len(others | {a}), 1, "different seeds all gave the same answer")

    def test_several_choices(self):
        r = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Name an animal."}],
            max_tokens=12, n=3, temperature=1.0, seed=7)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        self.assertTrue(all(c.message.content for c in r.choices))
        self.assertLessEqual(r.usage.completion_tokens, 3 * 12)
        again = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Name an animal."}],
            max_tokens=12, n=3, temperature=1.0, seed=7)
        self.assertEqual([c.message.content for c in r.choices],
                         [c.message.content for c in again.choices])
        streamed = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Name an animal."}],
            max_tokens=12, n=3, temperature=1.0, seed=7, stream=True)
        texts = ["", "", ""]
        for chunk in streamed:
            for c in chunk.choices:
                texts[c.index] += c.delta.content or ""
        self.assertEqual(texts, [c.message.content for c in r.choices])

    def test_sampling_fields_are_accepted_and_unknown_fields_ignored(self):
        r = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": "Hello"}], max_tokens=6,
            temperature=0.7, top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5, seed=3,
            user="test-user",
            extra_body={"top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
                        "some_future_field": {"x": 1}})
        self.assertTrue(r.choices[0].message.content)

    def test_logit_bias_bans_and_forces_a_token(self):
        prompt = "The capital of France is"

        def first_token(bias=None, prompt=prompt):
            r = self.client.completions.create(model="hearth", prompt=prompt, max_tokens=1,
                                               logit_bias=bias or {}, **GREEDY)
            return r.choices[0].text

        greedy = first_token()
        # Find the greedy token's id by banning halves of the vocabulary: the answer changes
        # exactly when the banned half holds it.
        vocab = 49152
        lo, hi = 0, vocab
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if first_token({str(i): -100 for i in range(lo, mid)}) != greedy:
                hi = mid
            else:
                lo = mid
        self.assertNotEqual(first_token({str(lo): -100}), greedy)
        # +100 forces it after any prompt.
        self.assertEqual(first_token({str(lo): 100}, prompt="1, 2, 3,"), greedy)
        with self.assertRaises(openai.BadRequestError):
            first_token({str(vocab + 5): 10})

class RawHttpTest(ServerTestCase):
    def test_server_sent_events_framing(self):
        status, headers, body = raw(self.server.port, "POST", "/v1/chat/completions",
                                    chat_body("Hello", max_tokens=6, stream=True,
                                              stream_options={"include_usage": True},
                                              ignore_eos=True))
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/event-stream"))
        text = body.decode()
        self.assertTrue(text.endswith("data: [DONE]\n\n"), text[-200:])
        events = [e for e in text.split("\n\n") if e and not e.startswith(":")]
        self.assertEqual(events[-1], "data: [DONE]")
        chunks = [json.loads(e[len("data: "):]) for e in events[:-1]]
        for e in events[:-1]:
            self.assertTrue(e.startswith("data: {"), e)
            self.assertNotIn("\n", e)
        self.assertTrue(all(c["object"] == "chat.completion.chunk" for c in chunks))
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 6)
        self.assertEqual(chunks[-2]["choices"][0]["finish_reason"], "length")

    def test_health_metrics_and_unknown_routes(self):
        status, _, body = raw(self.server.port, "GET", "/health")
        self.assertEqual((status, json.loads(body)["status"]), (200, "ok"))
        status, headers, body = raw(self.server.port, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        text = body.decode()
        for name in ("hearth_requests_total", "hearth_prompt_tokens_total",
                     "hearth_generation_tokens_total", "hearth_queue_length",
                     "hearth_time_to_first_token_seconds_bucket",
                     "hearth_time_per_output_token_seconds_bucket", "hearth_memory_bytes"):
            self.assertIn(name, text)
        self.assert_error(*raw(self.server.port, "GET", "/v1/nothing-here")[::2], 404)
        # Paths a client chooses do not become metric labels.
        self.assertNotIn("nothing-here", raw(self.server.port, "GET", "/metrics")[2].decode())

    def test_hostile_requests_get_json_errors_and_the_server_keeps_serving(self):
        port = self.server.port
        cases = [
            ("malformed JSON", b'{"messages": [{"role": "user", "content": "hi"}', 400),
            ("truncated JSON", b'{"messages": [{"role": "us', 400),
            ("not an object", b'[1, 2, 3]', 400),
            ("empty body", b"", 400),
            ("messages of the wrong type", json.dumps({"messages": 5}).encode(), 400),
            ("content of the wrong type",
             json.dumps({"messages": [{"role": "user", "content": 7}]}).encode(), 400),
            ("unknown role",
             json.dumps({"messages": [{"role": "wizard", "content": "x"}]}).encode(), 400),
            ("max_tokens a string", json.dumps(chat_body("x", max_tokens="ten")).encode(), 400),
            ("negative max_tokens", json.dumps(chat_body("x", max_tokens=-5)).encode(), 400),
            ("huge max_tokens", json.dumps(chat_body("x", max_tokens=10**12)).encode(), 400),
            ("max_tokens past the context",
             json.dumps(chat_body("x", max_tokens=10**6)).encode(), 400),
            ("temperature a string", json.dumps(chat_body("x", temperature="hot")).encode(), 400),
            ("negative temperature", json.dumps(chat_body("x", temperature=-1)).encode(), 400),
            ("top_p above one", json.dumps(chat_body("x", top_p=1.5)).encode(), 400),
            ("n zero", json.dumps(chat_body("x", n=0)).encode(), 400),
            ("stop of the wrong type", json.dumps(chat_body("x", stop=5)).encode(), 400),
            ("logit_bias not ids", json.dumps(chat_body("x", logit_bias={"a": 1})).encode(), 400),
            ("invalid UTF-8", b'{"messages": [{"role": "user", "content": "\xff\xfe\xc3"}]}',
             400),
            ("a prompt too long for the context",
             json.dumps(chat_body("word " * 20000)).encode(), 400),
            ("deep nesting", b"[" * 100000, 400),
        ]
        for name, body, expected in cases:
            with self.subTest(name):
                status, _, data = raw(port, "POST", "/v1/chat/completions", body)
                self.assert_error(status, data, expected)
        status, _, data = raw(port, "POST", "/v1/completions", b'{"prompt": {"x": 1}}')
        self.assert_error(status, data, 400)
        status, _, data = raw(port, "POST", "/v1/chat/completions", b"x=1",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assert_error(status, data, 415)
        self.assert_serving()

    def test_a_ten_megabyte_body_is_refused(self):
        body = json.dumps(chat_body("a" * (10 << 20))).encode()
        try:
            status, _, data = raw(self.server.port, "POST", "/v1/chat/completions", body)
            self.assert_error(status, data, 413)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close before reading it all; it must still serve others
        self.assert_serving()

    def test_a_foreign_host_header_is_refused(self):
        for host in ("evil.example.com", "attacker.test:8080", "192.168.1.20"):
            status, _, data = raw(self.server.port, "GET", "/v1/models",
                                  headers={"Host": host})
            self.assert_error(status, data, 403)
        status, _, _ = raw(self.server.port, "GET", "/v1/models",
                           headers={"Host": f"localhost:{self.server.port}"})
        self.assertEqual(status, 200)
        self.assert_serving()

    def test_cross_origin_requests_are_off_by_default(self):
        status, headers, _ = raw(self.server.port, "GET", "/v1/models",
                                 headers={"Origin": "http://example.com"})
        self.assertNotIn("Access-Control-Allow-Origin", headers)
        status, _, data = raw(self.server.port, "OPTIONS", "/v1/chat/completions",
                              headers={"Origin": "http://example.com",
                                       "Access-Control-Request-Method": "POST"})
        self.assert_error(status, data, 403)

    def test_a_client_that_trickles_bytes_does_not_stop_others(self):
        body = json.dumps(chat_body("Hi", max_tokens=3, **GREEDY)).encode()
        request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Content-Type: application/json\r\nContent-Length: " +
                   str(len(body)).encode() + b"\r\n\r\n" + body)
        answer = {}

        def trickle():
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=60) as s:
                for i in range(0, len(request), 8):
                    s.sendall(request[i:i + 8])
                    time.sleep(0.05)
                answer["head"] = s.recv(4096)

        t = threading.Thread(target=trickle)
        t.start()
        started = time.monotonic()
        self.assert_serving()  # while the trickle is still arriving
        self.assertLess(time.monotonic() - started, 5)
        t.join(timeout=120)
        self.assertTrue(answer.get("head", b"").startswith(b"HTTP/1.1 200"), answer)

    def test_a_burst_of_connections_is_served(self):
        # Many clients connecting at once while the engine keeps every core busy (an agent's
        # parallel calls): none may be reset because the listen queue overflowed.
        busy = threading.Thread(target=raw, args=(
            self.server.port, "POST", "/v1/chat/completions",
            chat_body("Write a long story.", max_tokens=300, ignore_eos=True, **GREEDY)))
        busy.start()
        time.sleep(0.5)
        request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        heads = [b""] * 64

        def connect(i):
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as s:
                s.sendall(request)
                heads[i] = s.recv(64)

        threads = [threading.Thread(target=connect, args=(i,)) for i in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        busy.join()
        for head in heads:
            self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)

    def test_a_client_that_sends_half_a_body_and_leaves(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"mess")
        self.assert_serving()

    def test_a_client_that_disconnects_cancels_its_generation(self):
        for stream in (True, False):
            with self.subTest(stream=stream):
                body = json.dumps(chat_body("Write a very long story about the sea.",
                                            max_tokens=1500, stream=stream,
                                            extra_field_ignored=True, ignore_eos=True,
                                            **GREEDY)).encode()
                s = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: " +
                          str(len(body)).encode() + b"\r\n\r\n" + body)
                if stream:
                    received = b""
                    while b"data: " not in received:
                        received += s.recv(4096)
                else:
                    time.sleep(1.0)
                self.assertEqual(metric(self.server.port, "hearth_queue_length"), 1)
                s.close()
                deadline = time.monotonic() + 20
                while metric(self.server.port, "hearth_queue_length") != 0:
                    self.assertLess(time.monotonic(), deadline, "the generation was not cancelled")
                    time.sleep(0.1)
        self.assert_serving()


class ConcurrencyTest(ServerTestCase):
    flags = ("--max-batch", "32")
    PROMPTS = [
        "What is the capital of Italy?", "Count from one to five.", "Name a fruit.",
        "Say hello in French.", "What is 2 + 2?", "Describe the moon in one sentence.",
        "List three colors.", "What do bees make?", "Name a planet.", "Spell the word cat.",
    ]

    def stream_text(self, prompt, max_tokens):
        chunks = self.client.chat.completions.create(
            model="hearth", messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens, stream=True, **GREEDY)
        text, finishes = "", []
        for c in chunks:
            self.assertEqual(len(c.choices), 1)
            text += c.choices[0].delta.content or ""
            finishes.append(c.choices[0].finish_reason)
        self.assertIsNotNone(finishes[-1], "the stream was cut")
        return text

    def test_thirty_two_streaming_clients_get_what_they_get_alone(self):
        jobs = [(self.PROMPTS[(client + i) % len(self.PROMPTS)], (4, 8, 12)[(client + 2 * i) % 3])
                for client in range(32) for i in range(10)]
        alone = {job: self.stream_text(*job) for job in sorted(set(jobs))}
        # The jobs again, 32 clients at once, each running its ten one after another: requests
        # join and leave the running batch at different steps.
        def client(index):
            return [(job, self.stream_text(*job)) for job in jobs[index * 10:(index + 1) * 10]]

        with ThreadPoolExecutor(max_workers=32) as pool:
            results = [r for rs in pool.map(client, range(32)) for r in rs]
        self.assertEqual(len(results), 320)
        for job, text in results:
            self.assertEqual(text, alone[job], job)


class ApiKeyTest(unittest.TestCase):
    def test_every_route_but_health_needs_the_key(self):
        server = Server(env={"HEARTH_API_KEY": "s3cret-key"})
        try:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-key"},
                            {"Authorization": "Bearer s3cret-keyX"}):
                for method, path in (("GET", "/v1/models"), ("GET", "/metrics"),
                                     ("POST", "/v1/chat/completions")):
                    status, _, data = raw(server.port, method, path,
                                          chat_body("hi", max_tokens=2), headers=headers)
                    self.assertEqual(status, 401, (headers, path))
                    self.assertEqual(json.loads(data)["error"]["code"], "invalid_api_key")
            self.assertEqual(raw(server.port, "GET", "/health")[0], 200)
            with self.assertRaises(openai.AuthenticationError):
                server.client("wrong").models.list()
            r = server.client("s3cret-key").chat.completions.create(
                model="hearth", messages=[{"role": "user", "content": "Hi"}], max_tokens=3,
                **GREEDY)
            self.assertTrue(r.choices[0].message.content)
        finally:
            self.assertEqual(server.stop()[0], 0)

    def test_listening_beyond_loopback_needs_a_key(self):
        proc = subprocess.run([CLI, "serve", "--model", MODEL, "--host", "0.0.0.0", "--port", "0"],
                              capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in os.environ.items() if k != "HEARTH_API_KEY"})
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--api-key", proc.stderr)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_ends_running_streams_and_exits_cleanly(self):
        server = Server("--shutdown-grace", "1")
        body = json.dumps(chat_body("Write a very long story.", max_tokens=1500, stream=True,
                                    ignore_eos=True, **GREEDY)).encode()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("POST", "/v1/chat/completions", body=body,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        first = resp.readline()
        self.assertTrue(first.startswith(b"data: "), first)
        started = time.monotonic()
        status, err = server.stop(timeout=30)
        rest = resp.read().decode()
        self.assertEqual(status, 0, err)
        self.assertLess(time.monotonic() - started, 15)
        self.assertTrue(rest.endswith("data: [DONE]\n\n"), rest[-300:])
        self.assertIn('"finish_reason"', rest)
        with self.assertRaises(OSError):
            raw(server.port, "GET", "/health", timeout=5)


if __name__ == "__main__":
    CLI, MODEL = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
