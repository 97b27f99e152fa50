"""OpenAI's Responses API (/v1/responses, the stateless flavour Ollama serves
to Codex) through the real `openai` client, on SmolLM2-135M and
Qwen2.5-Coder-1.5B. Run from test_server.py (its Server and store).

References: transformers' greedy answer and prompt ids for SmolLM2
(tests/golden/smollm2-135m.json "english"); the same conversation through
/v1/chat/completions (instructions and message items answer as system and
user messages; logprobs); jsonschema for text.format; and from first principles
the stream (deltas adding up to the response, sequence numbers counting
from 0) and max_output_tokens (status incomplete). A conversation of
function_call items is held to Qwen2.5's template as transformers renders
it (jinja2): the prompt's length in tokens.
"""
import json

import jsonschema
import openai

from checks import check, error_body

TOOL = {"type": "function", "name": "get_weather", "description": "Get the current weather in a city", "strict": False,
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}},
                       "required": ["city"], "additionalProperties": False}}
CHAT_TOOL = {"type": "function", "function": {k: TOOL[k] for k in ("name", "description", "parameters")}}
SYSTEM = "You are a helpful assistant. When a tool result arrives, answer the user's question with it in one sentence."


def sse(body):
    """The (event, data) pairs of a raw SSE body."""
    out, ev = [], None
    for line in body.decode().split("\n"):
        if line.startswith("event: "):
            ev = line[7:]
        elif line.startswith("data: "):
            out.append((ev, json.loads(line[6:])))
    return out


def test_responses(s, smol, qwen, english, render_qwen):
    o = s.openai
    ask = english["messages"][0]["content"]
    r = o.responses.create(model=smol, input=ask, max_output_tokens=20, temperature=0)
    check(r.output_text == english["text_20"] and r.status == "incomplete" and r.incomplete_details.reason ==
          "max_output_tokens" and r.usage.input_tokens == len(english["prompt_ids"]) and r.usage.output_tokens == 20
          and r.id.startswith("resp_") and [i.type for i in r.output] == ["message"],
          "responses.create: transformers' greedy 20 tokens, status incomplete (max_output_tokens), usage", repr(r))
    status, body = s.raw("POST", "/v1/responses", json.dumps({"model": smol, "input": ask, "max_output_tokens": 20,
                                                             "temperature": 0, "stream": True}))
    evs = sse(body)
    text = "".join(d["delta"] for e, d in evs if e == "response.output_text.delta")
    check(status == 200 and [e for e, _ in evs][:4] == ["response.created", "response.in_progress",
                                                       "response.output_item.added", "response.content_part.added"]
          and [d["sequence_number"] for _, d in evs] == list(range(len(evs))) and all(e == d["type"] for e, d in evs)
          and text == english["text_20"] and evs[-1][0] == "response.incomplete"
          and evs[-1][1]["response"]["output"][0]["content"][0]["text"] == text,
          "the stream: created, in_progress, the item's events, deltas adding up to the answer, sequence numbers "
          "from 0, response.incomplete holding the output", str(evs[:3])[:300])
    with o.responses.stream(model=smol, input=ask, max_output_tokens=300, temperature=0) as st:
        done = st.get_final_response()
    check(done.status == "completed" and done.output_text.startswith(english["text_20"]),
          "the SDK's stream helper: response.completed with the whole answer", repr(done)[:300])

    # instructions and message items answer as the chat route does for system + user messages
    inp = [{"role": "developer", "content": "Answer in one short sentence."},
           {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]}]
    r = o.responses.create(model=smol, instructions="You are a physicist.", input=inp, max_output_tokens=24, temperature=0)
    c = o.chat.completions.create(model=smol, max_tokens=24, temperature=0, messages=[
        {"role": "system", "content": "You are a physicist."}, {"role": "system", "content": "Answer in one short sentence."},
        {"role": "user", "content": ask}])
    check(r.output_text == c.choices[0].message.content, "instructions, a developer and a user item: the chat "
          "route's answer to the same messages", f"{r.output_text!r} vs {c.choices[0].message.content!r}")

    # tools: a function_call item; streamed the same; its output sent back answers as the chat shape does
    q = "What is the weather in Paris right now?"
    r = o.responses.create(model=qwen, instructions=SYSTEM, input=q, tools=[TOOL], max_output_tokens=40, temperature=0)
    fc = [i for i in r.output if i.type == "function_call"]
    args = json.loads(fc[0].arguments) if fc else None
    check(len(fc) == 1 and fc[0].name == "get_weather" and fc[0].call_id and fc[0].status == "completed"
          and isinstance(args, dict) and args.get("city", "").lower() == "paris" and r.status == "completed",
          "tools: one function_call item (call_id, name, JSON arguments valid for the schema)", repr(r.output))
    with o.responses.stream(model=qwen, instructions=SYSTEM, input=q, tools=[TOOL], max_output_tokens=40,
                            temperature=0) as st:
        kinds = [e.type for e in st]
        sf = [i for i in st.get_final_response().output if i.type == "function_call"]
    check(len(sf) == 1 and fc and sf[0].arguments == fc[0].arguments and "response.function_call_arguments.done" in kinds,
          "tools streamed: the same call through function_call_arguments events", f"{kinds} {sf!r}")
    result = "22 degrees Celsius and sunny"
    if fc:
        turn2 = [{"role": "user", "content": q}, {"type": "function_call", "call_id": fc[0].call_id, "name": "get_weather",
                                                  "arguments": fc[0].arguments},
                 {"type": "function_call_output", "call_id": fc[0].call_id, "output": result}]
        r2 = o.responses.create(model=qwen, instructions=SYSTEM, input=turn2, tools=[TOOL], max_output_tokens=40,
                                temperature=0)
        c2 = o.chat.completions.create(model=qwen, tools=[CHAT_TOOL], max_tokens=40, temperature=0, messages=[
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": q},
            {"role": "assistant", "content": None, "tool_calls": [{"id": fc[0].call_id, "type": "function", "function": {
                "name": "get_weather", "arguments": fc[0].arguments}}]},
            {"role": "tool", "tool_call_id": fc[0].call_id, "content": result}])
        # the prompt: transformers' render of the chat shape (tokenized by wick, whose tokenizer parity has its tests)
        hf = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q},
              {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                  "name": "get_weather", "arguments": args}}]}, {"role": "tool", "content": result}]
        ids = s.post("/tokenize", {"model": qwen, "content": render_qwen(hf, [CHAT_TOOL]), "parse_special": True})[1]
        check(r2.usage.input_tokens == len(ids["tokens"]) == c2.usage.prompt_tokens and "22" in r2.output_text
              and "22" in c2.choices[0].message.content,
              "function_call and function_call_output items: the prompt transformers renders for the chat shape, "
              "an answer using the result", f"{r2.usage!r} {len(ids['tokens'])} {r2.output_text!r}")
        # an assistant message replayed between a call and its output joins the call's turn (Ollama's rule)
        mid = [turn2[0], turn2[1], {"role": "assistant", "content": "Checking."}, turn2[2]]
        r3 = o.responses.create(model=qwen, instructions=SYSTEM, input=mid, tools=[TOOL], max_output_tokens=1)
        hf3 = [dict(m) for m in hf]
        hf3[2]["content"] = "Checking."
        ids3 = s.post("/tokenize", {"model": qwen, "content": render_qwen(hf3, [CHAT_TOOL]), "parse_special": True})[1]
        check(r3.usage.input_tokens == len(ids3["tokens"]), "an assistant message between a call and its output: "
              "one assistant turn with the text and the call, as transformers renders it",
              f"{r3.usage.input_tokens} vs {len(ids3['tokens'])}")
    r = o.responses.create(model=qwen, input="Say hello.", tools=[TOOL], tool_choice="required", max_output_tokens=30,
                           temperature=0)
    check([i.type for i in r.output] == ["function_call"], "tool_choice required: a call even where the model would "
          "not call", repr(r.output))
    three = "I need the current weather in three cities: Paris, London and Tokyo. Use the tool for each city."
    rs = [o.responses.create(model=qwen, input=three, tools=[TOOL], max_output_tokens=150, temperature=0, **kw)
          for kw in ({}, {"parallel_tool_calls": False}, {"tool_choice": "required"},
                     {"tool_choice": "required", "parallel_tool_calls": False})]
    calls = [[i for i in r.output if i.type == "function_call"] for r in rs]
    check(len(calls[0]) == 3 and len(calls[1]) == 1 and calls[1][0].arguments == calls[0][0].arguments,
          "three calls, and with parallel_tool_calls false the first alone", repr(calls[:2]))
    # tagged calls (tool_choice required's <tool_call> blocks): the answer ends with the first
    check(len(calls[2]) == 3 and len(calls[3]) == 1 and calls[3][0].arguments == calls[2][0].arguments
          and rs[3].status == "completed" and rs[3].usage.output_tokens < rs[2].usage.output_tokens / 2
          and [i.type for i in rs[3].output] == ["function_call"],
          "tool_choice required and parallel_tool_calls false: the first call, the answer ending with it", repr(rs[3]))

    # a namespace of tools (Codex's MCP servers): its function called by name, with the namespace
    ns = {"type": "namespace", "name": "weather", "description": "Weather tools",
          "tools": [{k: v for k, v in TOOL.items()}]}
    r = o.responses.create(model=qwen, input=q, tools=[ns], tool_choice="required", max_output_tokens=40, temperature=0)
    nc = [i for i in r.output if i.type == "function_call"]
    check(len(nc) >= 1 and nc[0].name == "get_weather" and nc[0].namespace == "weather"
          and json.loads(nc[0].arguments).get("city", "").lower() == "paris",
          "a namespace tool: the call names the function and its namespace", repr(r.output))

    # a request shaped as Codex sends it (its client_metadata, include, prompt_cache_key, store false, a call's
    # arguments given back as an object): answered, the usage's cache counts adding up
    codex = {"model": qwen, "instructions": SYSTEM, "stream": True, "store": False, "tool_choice": "auto",
             "parallel_tool_calls": False, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k",
             "client_metadata": {"session_id": "s"}, "tools": [TOOL], "max_output_tokens": 40, "temperature": 0,
             "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
                       {"type": "message", "role": "user", "content": [{"type": "input_text", "text": q}]},
                       {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
                       {"type": "function_call_output", "call_id": "c1", "output": result}]}
    status, body = s.raw("POST", "/v1/responses", json.dumps(codex))
    evs = sse(body) if status == 200 else []
    last = evs[-1][1]["response"] if evs else {}
    u = last.get("usage") or {}
    check(status == 200 and evs[-1][0] == "response.completed" and "22" in json.dumps(last.get("output"))
          and u["input_tokens_details"]["cached_tokens"] + u["input_tokens_details"]["cache_write_tokens"] == u["input_tokens"],
          "a Codex-shaped request: completed, the answer using the result, cached + written = input tokens", body[-400:])

    # text.format, logprobs
    schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"],
              "additionalProperties": False}
    r = o.responses.create(model=smol, input="The capital of France?", max_output_tokens=40, temperature=0,
                           text={"format": {"type": "json_schema", "name": "answer", "schema": schema}})
    try:
        jsonschema.validate(json.loads(r.output_text), schema)
        ok = True
    except Exception as e:  # noqa: BLE001 - the check's message shows it
        ok = e
    check(ok is True, "text.format json_schema: the answer validates (jsonschema)", f"{ok} {r.output_text!r}")
    r = o.responses.create(model=smol, input=ask, max_output_tokens=5, temperature=0, top_logprobs=2,
                           include=["message.output_text.logprobs"])
    c = o.chat.completions.create(model=smol, messages=english["messages"], max_tokens=5, temperature=0, logprobs=True,
                                  top_logprobs=2)
    lp = r.output[0].content[0].logprobs or []
    want = c.choices[0].logprobs.content
    check(len(lp) == 5 and [(x.token, x.logprob) for x in lp] == [(x.token, x.logprob) for x in want],
          "include message.output_text.logprobs: the chat route's logprobs, token for token", f"{lp!r}"[:300])

    # errors: OpenAI's shape, a 400 naming what wick cannot honour
    bad = [({"previous_response_id": "resp_1"}, "wick keeps no responses"),
           ({"tools": [{"type": "web_search"}]}, "function tools only"),
           ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}]},
            "does not support images"),
           ({"extra_body": {"stop": ["x"]}}, "not a field of the Responses API"),
           ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference")]
    for kw, words in bad:
        args = {"model": smol, "input": "hi", "max_output_tokens": 5}
        args.update(kw)
        got = error_body(lambda: o.responses.create(**args), openai.BadRequestError)
        check(isinstance(got, dict) and words in got.get("message", ""), f"a bad request ({words}): 400 naming it", got)
    got = error_body(lambda: o.responses.create(model="no-such-model", input="hi"), openai.NotFoundError)
    check(isinstance(got, dict) and "not found" in got.get("message", ""), "an unknown model: 404", got)
