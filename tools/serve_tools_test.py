#!/usr/bin/env python3
"""End-to-end test of tool calls and reasoning in `moex serve` with the official `openai` client
(and LangChain's ChatOpenAI when installed) on a tiny random-weight checkpoint that renders
Qwen3's own chat template from llama.cpp's corpus (tools passed to it).

What it covers, honestly: a random model does not write tool calls, so the server runs with its
hidden test hook `--test-replies FILE`: the model decodes as usual, but the ids of each answer
are replaced by the tokenization of a canned reply (request k gets reply k). Everything after
the model is real: incremental detokenization, the <think> and Hermes parsers, the response
and stream shapes, finish reasons, the client libraries' parsing. The request side (tools,
tool_choice, a tool result turn through the template, 400s, a developer message rendered as a
system one) is real with no hook.

usage: serve_tools_test.py --moex BIN --work DIR --templates CORPUS_DIR
"""
import json
import sys
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).parent))
from serve_openai_test import Server, check, run  # noqa: E402
import serve_openai_test  # noqa: E402

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
CALL2 = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Z\\u00fcrich"}}\n</tool_call>'
THINK = "<think>\nThe user wants the weather.\n</think>\n\n"
UNCLOSED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa'
# Request k of the test gets REPLIES[k]: the order of requests below follows this list.
REPLIES = [
    CALL,                                     # 0 whole
    CALL,                                     # 1 streamed
    "Let me check.\n" + CALL + "\n" + CALL2,  # 2 parallel, whole
    "Let me check.\n" + CALL + "\n" + CALL2,  # 3 parallel, streamed
    "Let me check.\n" + CALL + "\n" + CALL2,  # 4 parallel_tool_calls false
    THINK + CALL,                             # 5 reasoning then a call, whole
    THINK + "It is sunny.",                   # 6 reasoning streamed
    UNCLOSED,                                 # 7 never closed, max_tokens
    '<tool_call>{"name": "get_weather", "arguments": [}</tool_call> ok',  # 8 malformed
    "It is 21 C in Paris.",                   # 9 the tool result turn's answer
    THINK + "No tools here.",                 # 10 tool_choice none: text as is, think split
    CALL,                                     # 11 LangChain
]


def stream(client, **kw):
    """Streams a chat request; returns (content, reasoning, calls by index, finish, chunks)."""
    content, reasoning, calls, finish, chunks = "", "", {}, None, []
    for ch in client.chat.completions.create(stream=True, **kw):
        chunks.append(ch)
        if not ch.choices:
            continue
        c = ch.choices[0]
        d = c.delta
        content += d.content or ""
        reasoning += (d.model_extra or {}).get("reasoning_content") or ""
        for tc in d.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            if tc.id:
                check(slot["id"] is None, f"tool call {tc.index}: id sent once")
                slot["id"] = tc.id
            if tc.function and tc.function.name:
                slot["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
        finish = c.finish_reason or finish
    return content, reasoning, calls, finish, chunks


def main():
    a, work, d = serve_openai_test.setup("Qwen-Qwen3-0.6B.jinja")
    replies = work / "replies.json"
    replies.write_text(json.dumps(REPLIES))

    srv = Server(a.moex, d, work, "server", "--test-replies", replies)
    log = srv.log.read_text()
    check("tool-call parser hermes, reasoning think" in log, "serve prints the parsers it uses")
    client = srv.client()
    user = [{"role": "user", "content": "Weather in Paris?"}]
    try:
        # 0: one call, whole.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200)
        m = r.choices[0].message
        check(r.choices[0].finish_reason == "tool_calls", "finish_reason tool_calls")
        check(m.content is None, f"content null with only a call ({m.content!r})")
        tc = m.tool_calls or []
        check(len(tc) == 1 and tc[0].id.startswith("call_") and tc[0].type == "function"
              and tc[0].function.name == "get_weather"
              and json.loads(tc[0].function.arguments) == {"city": "Paris"},
              f"one tool call with id, name, arguments ({tc})")

        # 1: one call, streamed.
        content, _, calls, finish, _ = stream(client, model="m", messages=user, tools=TOOLS,
                                              max_tokens=200)
        check(content == "" and finish == "tool_calls", f"stream: no content ({content!r}), "
              f"finish {finish}")
        check(list(calls) == [0] and calls[0]["name"] == "get_weather" and calls[0]["id"]
              and json.loads(calls[0]["arguments"]) == {"city": "Paris"}, f"stream: {calls}")

        # 2, 3: text then two calls.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200)
        m = r.choices[0].message
        args = [json.loads(t.function.arguments) for t in m.tool_calls or []]
        check(m.content == "Let me check.\n" and args == [{"city": "Paris"}, {"city": "Zürich"}]
              and len({t.id for t in m.tool_calls}) == 2,
              f"text before the calls stays content, two calls with distinct ids ({m})")
        content, _, calls, finish, _ = stream(client, model="m", messages=user, tools=TOOLS,
                                              max_tokens=200)
        check(content == "Let me check.\n" and sorted(calls) == [0, 1]
              and [json.loads(calls[i]["arguments"]) for i in (0, 1)]
              == [{"city": "Paris"}, {"city": "Zürich"}] and finish == "tool_calls",
              f"stream: two calls at indexes 0 and 1 ({content!r}, {calls})")

        # 4: parallel_tool_calls false keeps the first call and ends there.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200,
                                           parallel_tool_calls=False)
        check(len(r.choices[0].message.tool_calls or []) == 1
              and r.choices[0].finish_reason == "tool_calls", "parallel_tool_calls false: one call")

        # 5, 6: reasoning.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200)
        m = r.choices[0].message
        check((m.model_extra or {}).get("reasoning_content") == "\nThe user wants the weather.\n"
              and m.tool_calls and m.content is None, f"reasoning_content and a call ({m})")
        content, reasoning, calls, finish, _ = stream(client, model="m", messages=user,
                                                      max_tokens=200)
        check(reasoning == "\nThe user wants the weather.\n" and content == "It is sunny."
              and not calls and finish == "stop",
              f"stream: delta.reasoning_content then content ({reasoning!r}, {content!r})")

        # 7: a call never closed ends at max_tokens as content (once its name was known, the
        # stream had begun it: its arguments so far are a prefix of the content's).
        content, _, calls, finish, chunks = stream(client, model="m", messages=user, tools=TOOLS,
                                                   max_tokens=12)
        begun = all(c["name"] == "get_weather" and c["arguments"] in content
                    for c in calls.values()) and len(calls) <= 1
        check(finish == "length" and begun and content.startswith("<tool_call>")
              and UNCLOSED.startswith(content),
              f"unclosed call: length, the text as content ({content!r}, {calls})")

        # 8: malformed call JSON stays content.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200)
        m = r.choices[0].message
        check(m.content == REPLIES[8] and not m.tool_calls and r.choices[0].finish_reason == "stop",
              f"malformed call: content, finish stop ({m.content!r})")

        # 9: a tool result turn renders through the template (arguments sent as a string).
        turn = user + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}]
        r = client.chat.completions.create(model="m", messages=turn, tools=TOOLS, max_tokens=50)
        check(r.choices[0].message.content == "It is 21 C in Paris."
              and r.usage.prompt_tokens > 30, f"tool result turn answered ({r.usage})")
        rendered = work / "turn.txt"
        # What the server hands the template: content "" beside calls, arguments an object.
        shown = json.loads(json.dumps(turn))
        shown[1]["content"] = ""
        shown[1]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
        (work / "turn.json").write_text(json.dumps(shown))
        (work / "tools.json").write_text(json.dumps(TOOLS))
        out = run([a.moex, "chat-template", "-m", d, "--messages", work / "turn.json", "--tools",
                   work / "tools.json", "--add-generation-prompt"]).stdout
        rendered.write_text(out)
        check("<tool_response>\n21 C\n</tool_response>" in out
              and '{"name": "get_weather", "arguments": {"city": "Paris"}}' in out
              and '{"type": "function", "function": {"name": "get_weather"' in out,
              "the template shows the tools, the call and its result")

        # 10: tool_choice none: no parsing of calls, thinking still split.
        r = client.chat.completions.create(model="m", messages=user, tools=TOOLS, max_tokens=200,
                                           tool_choice="none")
        m = r.choices[0].message
        check(m.content == "No tools here." and not m.tool_calls, f"tool_choice none ({m})")

        # 400s naming the field; none of them takes a reply.
        for kw, param in [
            ({"tool_choice": "required"}, "tool_choice"),
            ({"tools": TOOLS, "tool_choice": {"type": "function",
                                              "function": {"name": "get_news"}}},
             "tool_choice.function.name"),
            ({"tools": [{"type": "function", "function": {"name": "f", "strict": 1}}]},
             "tools[0].function.strict"),
            ({"tools": [{"type": "function"}]}, "tools[0].function"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
             "tools[0].function.parameters"),
            ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
        ]:
            try:
                client.chat.completions.create(model="m", messages=user, max_tokens=5, **kw)
                check(False, f"{param}: refused")
            except openai.BadRequestError as e:
                check(e.status_code == 400 and e.body.get("param") == param,
                      f"400 naming {param} ({e.body.get('message')})")
        try:
            client.chat.completions.create(model="m", max_tokens=5, messages=user + [
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {
                    "name": "f", "arguments": "{not json"}}]}])
            check(False, "bad arguments refused")
        except openai.BadRequestError as e:
            check(e.body.get("param") == "messages[1].tool_calls[0].function.arguments",
                  f"400 naming the bad arguments ({e.body.get('param')})")

        # 11: a second client library: LangChain's ChatOpenAI with bind_tools.
        try:
            from langchain_openai import ChatOpenAI
        except ImportError:
            print("skip LangChain: langchain-openai is not installed (scripts/setup.sh)")
            ChatOpenAI = None
        if ChatOpenAI is not None:
            llm = ChatOpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="x", model="m",
                             max_tokens=200, max_retries=0)
            msg = llm.bind_tools(TOOLS).invoke("Weather in Paris?")
            check(len(msg.tool_calls) == 1 and msg.tool_calls[0]["name"] == "get_weather"
                  and msg.tool_calls[0]["args"] == {"city": "Paris"}
                  and msg.tool_calls[0]["id"].startswith("call_"),
                  f"LangChain bind_tools: the call parsed ({msg.tool_calls})")

        # OpenAI's developer role: Qwen3's template names no such role and drops the message;
        # the server renders it as a system message (the replies taken here are not read).
        check("developer messages as system" in log, "serve says developer messages go as system")

        def prompt_tokens(first):
            msgs = ([{"role": first, "content": "Answer in French."}] if first else []) + user
            return client.chat.completions.create(model="m", messages=msgs,
                                                  max_tokens=1).usage.prompt_tokens
        dev, system, none = prompt_tokens("developer"), prompt_tokens("system"), prompt_tokens(None)
        check(dev == system > none, f"a developer message is rendered as a system one "
              f"(prompt tokens: developer {dev}, system {system}, neither {none})")
    finally:
        rc = srv.stop()
    check(rc == 0, "SIGTERM exits 0")
    print(f"{serve_openai_test.failures} failure(s)")
    return 1 if serve_openai_test.failures else 0


if __name__ == "__main__":
    sys.exit(main())
