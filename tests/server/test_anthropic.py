"""Anthropic's Messages API (/v1/messages and /v1/messages/count_tokens,
as Ollama serves it to Claude Code) through the real `anthropic` client, on
SmolLM2-135M and Qwen2.5-Coder-1.5B. Run from test_server.py (its Server
and store).

References: transformers' greedy answer and prompt ids for SmolLM2
(tests/golden/smollm2-135m.json "english": the answer must be its 20
tokens, count_tokens its prompt's length); Qwen2.5's chat template rendered
by jinja2 as transformers renders it (a conversation with a tool_use and a
tool_result block must render as the same turn in transformers' tool-call
shape); jsonschema for structured output; and from first principles the
stop sequence (the greedy text cut before it) and the stream (its deltas
add up to the message returned whole).
"""
import json

import anthropic
import jsonschema

from checks import check, error_body

WEATHER = {"name": "get_weather", "description": "Get the current weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
                            "required": ["city"]}}
GREEDY = {"temperature": 0}  # not a parameter of anthropic 2.x's create(): sent as older clients send it


def test_anthropic(s, smol, qwen, english, render_qwen):
    a = anthropic.Anthropic(base_url=f"http://{s.host}", api_key="unused", max_retries=0)
    msgs = english["messages"]
    r = a.messages.create(model=smol, max_tokens=20, messages=msgs, extra_body=GREEDY)
    text = r.content[0].text if r.content and r.content[0].type == "text" else None
    check(text == english["text_20"] and r.stop_reason == "max_tokens" and r.role == "assistant"
          and r.id.startswith("msg_") and r.usage.output_tokens == 20
          and r.usage.input_tokens + (r.usage.cache_read_input_tokens or 0) == len(english["prompt_ids"]),
          "anthropic messages.create: transformers' greedy 20 tokens, stop_reason max_tokens, usage counts",
          repr(r))
    n = a.messages.count_tokens(model=smol, messages=msgs)
    check(n.input_tokens == len(english["prompt_ids"]), "count_tokens: the prompt's length as transformers tokenizes it",
          f"{n.input_tokens} vs {len(english['prompt_ids'])}")

    # the stream: its events in Anthropic's order, its deltas adding up to the message
    with a.messages.stream(model=smol, max_tokens=20, messages=msgs, extra_body=GREEDY) as st:
        events = [e.type for e in st]
        final = st.get_final_message()
    raw = events[:1] + [e for e in events[1:] if e != "text"]  # "text": the SDK's own per-delta event
    check(final.content[0].text == english["text_20"] and final.stop_reason == "max_tokens"
          and raw[:2] == ["message_start", "content_block_start"] and raw[-3:] == ["content_block_stop", "message_delta",
                                                                                 "message_stop"]
          and set(raw[2:-3]) == {"content_block_delta"} and final.usage.output_tokens == 20,
          "anthropic stream: message_start, one text block of deltas, message_delta, message_stop; the same answer",
          f"{events} {final!r}")
    status, body = s.raw("POST", "/v1/messages", json.dumps({"model": smol, "max_tokens": 5, "stream": True,
                                                            "messages": msgs, "temperature": 0}))
    kinds = [ln[7:] for ln in body.decode().split("\n") if ln.startswith("event: ")]
    # Claude Code's beta requests: /v1/messages?beta=true with the beta API's service fields
    status, beta = s.raw("POST", "/v1/messages?beta=true", json.dumps({
        "model": smol, "max_tokens": 20, "messages": msgs, "temperature": 0, "metadata": {"user_id": "u"},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}, "cache_control": {"type": "ephemeral"}}))
    check(status == 200 and json.loads(beta)["content"][0]["text"] == english["text_20"],
          "a beta request (?beta=true, metadata, context_management, cache_control): the same answer", beta[:300])
    check(status == 200 and kinds[:2] == ["message_start", "ping"], "the raw stream: event lines, a ping after message_start",
          body[:300])

    # a stop sequence: the text before it, stop_reason stop_sequence naming it
    word = english["text_20"].split()[5]  # "dance" in transformers' greedy answer
    r = a.messages.create(model=smol, max_tokens=20, messages=msgs, stop_sequences=["zzz", word], extra_body=GREEDY)
    want = english["text_20"][:english["text_20"].index(word)]
    check(r.content[0].text == want and r.stop_reason == "stop_sequence" and r.stop_sequence == word,
          "stop_sequences: the greedy text cut before the sequence, stop_reason stop_sequence naming it", repr(r))

    # system blocks joined (Ollama's rule) and a tool_use / tool_result turn render as transformers renders Qwen's template
    conv = [{"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "text", "text": "22 degrees"}]}]}]
    system = [{"type": "text", "text": "You are a weather bot."}, {"type": "text", "text": " Be brief."}]
    hf = [{"role": "system", "content": "You are a weather bot. Be brief."},
          {"role": "user", "content": "What is the weather in Paris?"},
          {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
              "name": "get_weather", "arguments": {"city": "Paris"}}}]},
          {"role": "tool", "content": "22 degrees"}]
    tool = {"type": "function", "function": {"name": WEATHER["name"], "description": WEATHER["description"],
                                             "parameters": WEATHER["input_schema"]}}
    prompt = render_qwen(hf, [tool])
    ids = s.post("/tokenize", {"model": qwen, "content": prompt, "add_special": False, "parse_special": True})[1]["tokens"]
    n = a.messages.count_tokens(model=qwen, system=system, messages=conv, tools=[WEATHER])
    check(n.input_tokens == len(ids), "count_tokens of a tool_use and tool_result turn with system blocks: the tokens "
          "of transformers' render of the same turn", f"{n.input_tokens} vs {len(ids)}")

    # a tool_result carries the name of the tool_use it answers (a Go TEMPLATE naming .ToolName shows it)
    tpl = "{{ range .Messages }}{{ .Role }}:{{ if .ToolName }}[{{ .ToolName }}]{{ end }}{{ .Content }}\n{{ end }}"
    st, body = s.post("/api/create", {"model": "smol-toolname", "from": smol, "template": tpl})
    n = a.messages.count_tokens(model="smol-toolname", messages=conv)
    want = "user:What is the weather in Paris?\nassistant:\ntool:[get_weather]22 degrees\n"
    ids = s.post("/tokenize", {"model": smol, "content": want, "parse_special": True})[1]["tokens"]
    check(st == 200 and n.input_tokens == len(ids), "a tool_result's message names its tool_use's tool (.ToolName)",
          f"{n.input_tokens} vs {len(ids)}")
    s.raw("DELETE", "/api/delete", json.dumps({"model": "smol-toolname"}))

    # tools: a call as a tool_use block (streamed: input_json_delta), tool_choice forcing and forbidding one
    ask = [{"role": "user", "content": "What is the weather in Paris right now?"}]
    r = a.messages.create(model=qwen, max_tokens=40, messages=ask, tools=[WEATHER], extra_body=GREEDY)
    uses = [b for b in r.content if b.type == "tool_use"]
    check(r.stop_reason == "tool_use" and len(uses) == 1 and uses[0].name == "get_weather" and uses[0].id
          and isinstance(uses[0].input, dict) and uses[0].input.get("city", "").lower() == "paris",
          "tools: one tool_use block (an id, the name, input valid for the schema), stop_reason tool_use", repr(r))
    with a.messages.stream(model=qwen, max_tokens=40, messages=ask, tools=[WEATHER], extra_body=GREEDY) as st:
        final = st.get_final_message()
    su = [b for b in final.content if b.type == "tool_use"]
    check(len(su) == 1 and su[0].input == uses[0].input and final.stop_reason == "tool_use",
          "tools streamed: the SDK assembles the same tool_use from input_json_delta", repr(final))
    r = a.messages.create(model=qwen, max_tokens=6, messages=ask, tools=[WEATHER], extra_body=GREEDY,
                          tool_choice={"type": "any"})
    check(r.stop_reason == "max_tokens", "a call cut by max_tokens: stop_reason max_tokens (not tool_use)", repr(r))
    hi = [{"role": "user", "content": "Say hello."}]
    r = a.messages.create(model=qwen, max_tokens=30, messages=hi, tools=[WEATHER], extra_body=GREEDY,
                          tool_choice={"type": "tool", "name": "get_weather"})
    forced = [b for b in r.content if b.type == "tool_use"]
    check(len(forced) == 1 and forced[0].name == "get_weather" and isinstance(forced[0].input.get("city"), str),
          "tool_choice {type: tool}: a call of that tool even where the model would not call", repr(r))
    r = a.messages.create(model=qwen, max_tokens=30, messages=ask, tools=[WEATHER], extra_body=GREEDY,
                          tool_choice={"type": "none"})
    check(not [b for b in r.content if b.type == "tool_use"] and r.stop_reason != "tool_use",
          "tool_choice {type: none}: no tool_use", repr(r))

    # structured output: output_config.format's schema holds
    schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"],
              "additionalProperties": False}
    r = a.messages.create(model=smol, max_tokens=40, messages=[{"role": "user", "content": "The capital of France?"}],
                          output_config={"format": {"type": "json_schema", "schema": schema}}, extra_body=GREEDY)
    try:
        jsonschema.validate(json.loads(r.content[0].text), schema)
        ok = True
    except Exception as e:  # noqa: BLE001 - the check's message shows it
        ok = e
    check(ok is True, "output_config.format: the answer validates against the schema (jsonschema)", f"{ok} {r!r}")

    # thinking asked of a model that cannot think: none (Ollama's relax_thinking), the answer unchanged
    r = a.messages.create(model=smol, max_tokens=20, messages=msgs, extra_body=GREEDY,
                          thinking={"type": "enabled", "budget_tokens": 1024})
    check([b.type for b in r.content] == ["text"] and r.content[0].text == english["text_20"],
          "thinking on a model that does not think: the plain answer, no thinking block", repr(r))

    # the models, as the anthropic SDK lists them (Anthropic's shape for a client sending anthropic-version)
    names = {m["name"] for m in s.post_get("/api/tags")["models"]}
    listed = a.models.list()
    one = a.models.retrieve(smol)
    check({m.id for m in listed.data} == names and all(m.type == "model" and m.created_at for m in listed.data)
          and listed.has_more is False and one.id.startswith(smol) and one.type == "model",
          "models.list and models.retrieve: the stored models in Anthropic's shape", repr(listed)[:300])

    # errors: Anthropic's shape and exception classes
    bad = [({"extra_body": {"bogus": 1}}, "bogus: Extra inputs are not permitted"),
           ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
           ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64",
                                                                                     "media_type": "image/png",
                                                                                     "data": "AA=="}}]}]},
            "does not support images"),
           ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "server tool"),
           ({"extra_body": {"temperature": 3}}, "temperature")]
    for kw, words in bad:
        args = {"model": smol, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        args.update(kw)
        got = error_body(lambda: a.messages.create(**args), anthropic.BadRequestError)
        check(isinstance(got, dict) and got.get("type") == "error" and got["error"]["type"] == "invalid_request_error"
              and words in got["error"]["message"], f"a bad request ({words}): 400 invalid_request_error naming it", got)
    status, body = s.raw("GET", "/v1/messages")
    check(status == 405 and json.loads(body)["error"]["type"] == "api_error", "GET /v1/messages: 405 in Anthropic's "
          "shape", body)
    status, body = s.raw("POST", "/v1/messages", json.dumps({"model": smol, "messages": msgs}))
    check(status == 400 and "max_tokens" in json.loads(body)["error"]["message"], "no max_tokens: 400", body)
    got = error_body(lambda: a.messages.create(model="no-such-model", max_tokens=5, messages=msgs), anthropic.NotFoundError)
    check(isinstance(got, dict) and got["error"]["type"] == "not_found_error", "an unknown model: 404 not_found_error", got)
