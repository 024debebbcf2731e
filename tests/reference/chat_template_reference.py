#!/usr/bin/env python3
"""Reference outputs for Hearth's chat-template interpreter, rendered by Hugging Face transformers.

Writes, under tests/fixtures/chat_template/:
  templates/smollm2.jinja   the template stored in the SmolLM2-135M-Instruct GGUF
  real_templates.json       real model templates x conversations -> transformers' prompt or error
  jinja_semantics.json      small templates exercising one Jinja feature each -> output or error

Rendering goes through transformers' own chat-template code: render_jinja_template (what
apply_chat_template calls) for the real templates, and the environment it compiles with
(_compile_jinja_template: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, transformers' tojson/raise_exception/strftime_now) for the snippets.

    pip install transformers jinja2 gguf
    python3 tests/reference/chat_template_reference.py [--model PATH.gguf]
"""

import argparse
import json
import os
import sys
from pathlib import Path

from transformers.utils.chat_template_utils import _compile_jinja_template, render_jinja_template

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "chat_template"
TEMPLATES = OUT / "templates"

# --- conversations -----------------------------------------------------------------------------

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello! How are you?"}
A1 = {"role": "assistant", "content": "I'm fine, thanks. How can I help?"}
U2 = {"role": "user", "content": "  What is 2+2?  \n"}
A2 = {"role": "assistant", "content": " It is 4. "}
U3 = {"role": "user", "content": "And 3+3?"}
UNICODE = {
    "role": "user",
    "content": "Grüße aus Köln 👋 — 日本語のテキスト, עברית, 🤖🚀 \"quotes\" 'single' "
    "back\\slash, tab\tand NBSP\u00a0end\u2028line",
}

CONVERSATIONS = {
    "single": [U1],
    "system": [SYS, U1],
    "multi": [U1, A1, U2],
    "system_multi": [SYS, U1, A1, U2, A2, U3],
    "ends_with_assistant": [U1, A1],
    "unicode": [SYS, UNICODE],
    "bad_alternation": [U1, {"role": "user", "content": "Are you there?"}],
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]

TOOL_CALL_CONVERSATION = [
    {"role": "user", "content": "What's the weather in Zürich?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call12345",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call12345",
        "name": "get_weather",
        "content": '{"temperature": 21.5, "condition": "sunny"}',
    },
]

# (template file, bos, eos, conversations, supports tools)
MODELS = [
    ("smollm2.jinja", "<|im_start|>", "<|im_end|>", True, False),
    ("llama2-chat.jinja", "<s>", "</s>", True, False),
    ("codellama-instruct.jinja", "<s>", "</s>", True, False),
    ("llama3-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", True, False),
    ("llama3.1-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", True, True),
    ("llama3.2-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>", True, True),
    ("mistral-7b-instruct-v0.1.jinja", "<s>", "</s>", True, False),
    ("mistral-7b-instruct-v0.3.jinja", "<s>", "</s>", True, True),
    ("mistral-nemo-instruct-2407.jinja", "<s>", "</s>", True, True),
    ("qwen2.5-instruct.jinja", "", "<|im_end|>", True, True),
    ("qwen3.jinja", "", "<|im_end|>", True, True),
    ("phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>", True, False),
    ("gemma-7b-it.jinja", "<bos>", "<eos>", True, False),
]


def render_real(template, messages, tools, add_generation_prompt, **kwargs):
    context = {
        "messages": messages,
        "tools": tools,
        "documents": None,
        "add_generation_prompt": add_generation_prompt,
        **kwargs,
    }
    case = {"context": context}
    try:
        rendered, _ = render_jinja_template(
            conversations=[messages],
            tools=tools,
            chat_template=template,
            add_generation_prompt=add_generation_prompt,
            **kwargs,
        )
        case["expected"] = rendered[0]
    except Exception as e:  # noqa: BLE001 - any template error is a reference outcome
        case["error"] = str(e)
    return case


def real_template_cases():
    cases = []
    for file, bos, eos, _, tools_ok in MODELS:
        template = (TEMPLATES / file).read_text()
        extra = {"bos_token": bos, "eos_token": eos}
        if file.startswith("llama3.2"):
            extra["date_string"] = "26 Jul 2024"
        for conv_name, messages in CONVERSATIONS.items():
            for agp in (True, False):
                case = render_real(template, messages, None, agp, **extra)
                case["name"] = f"{file}/{conv_name}/agp={agp}"
                case["template"] = file
                cases.append(case)
        if tools_ok:
            for conv_name, messages in (("tools_first_turn", [SYS, U1]), ("tool_call", TOOL_CALL_CONVERSATION)):
                case = render_real(template, messages, TOOLS, True, **extra)
                case["name"] = f"{file}/{conv_name}"
                case["template"] = file
                cases.append(case)
    # Llama 3.1's other tool paths: tools in the system prompt, built-in tools, dict tool output.
    llama31 = (TEMPLATES / "llama3.1-instruct.jinja").read_text()
    base = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    variants = [
        ("tools_in_system", TOOL_CALL_CONVERSATION, TOOLS, {"tools_in_user_message": False}),
        (
            "builtin_tools",
            [
                SYS,
                {"role": "user", "content": "Search the weather"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"type": "function", "function": {"name": "brave_search", "arguments": {"query": "weather Zürich"}}}
                    ],
                },
                {"role": "ipython", "content": {"result": ["sunny", 21]}},
            ],
            None,
            {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"], "date_string": "01 Jan 2025"},
        ),
        (
            "two_tool_calls_error",
            [U1, {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}}] * 2}],
            TOOLS,
            {},
        ),
    ]
    for name, messages, tools, kwargs in variants:
        case = render_real(llama31, messages, tools, True, **base, **kwargs)
        case["name"] = f"llama3.1-instruct.jinja/{name}"
        case["template"] = "llama3.1-instruct.jinja"
        cases.append(case)
    # Qwen3 with reasoning in the history and thinking switched off.
    qwen3 = (TEMPLATES / "qwen3.jinja").read_text()
    thinking = [
        U1,
        {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHi! I'm fine."},
        U3,
        {"role": "assistant", "content": "<think>\n3+3=6\n</think>\n\n6"},
    ]
    for agp, kwargs in ((True, {"enable_thinking": False}), (False, {})):
        case = render_real(qwen3, thinking, None, agp, bos_token="", eos_token="<|im_end|>", **kwargs)
        case["name"] = f"qwen3.jinja/thinking/agp={agp}"
        case["template"] = "qwen3.jinja"
        cases.append(case)
    # A 20-message conversation, also used for timing.
    long_conv = [SYS]
    for k in range(10):
        long_conv.append({"role": "user", "content": f"Question number {k}: what is {k} squared?"})
        long_conv.append({"role": "assistant", "content": f"The answer to question {k} is {k * k}."})
    for file in ("smollm2.jinja", "llama3.1-instruct.jinja", "mistral-7b-instruct-v0.3.jinja"):
        bos, eos = next((m[1], m[2]) for m in MODELS if m[0] == file)
        case = render_real((TEMPLATES / file).read_text(), long_conv[1:] if "mistral" in file else long_conv, None, True,
                           bos_token=bos, eos_token=eos)
        case["name"] = f"{file}/twenty_messages"
        case["template"] = file
        cases.append(case)
    return cases


# --- single-feature snippets -------------------------------------------------------------------

CONV = [
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "user", "content": "  What is 2+2?  "},
]

SNIPPETS = [
    # text, output, whitespace control
    ("text", "plain text", {}),
    ("output", "a{{ x }}b", {"x": "X"}),
    ("undefined prints nothing", "[{{ missing }}]", {}),
    ("none and bools", "{{ none }} {{ true }} {{ false }} {{ None }} {{ True }}", {}),
    ("numbers", "{{ 1 + 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 * 3 - 1 }} {{ -4 }} {{ 1.5 + 1 }} {{ 10 / 4 }} {{ 10 / 2 }}", {}),
    ("powers", "{{ 2 ** 10 }} {{ 2 ** 3 ** 2 }} {{ 2 ** -1 }} {{ 4 ** 0.5 }}", {}),
    ("floats", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }} {{ 3.0 }} {{ -0.5 }} {{ 1_000 }} {{ 2.5e3 }}", {}),
    ("float division", "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 / 3 }}", {}),
    ("string escapes", "{{ 'a\\nb\\t\"c\"' }}|{{ \"it's\" }}|{{ '\\u00e9\\x41\\101' }}|{{ 'back\\\\slash' }}|{{ '\\q' }}", {}),
    ("adjacent strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("comment", "a{# gone #}b{#- trimmed -#}  c", {}),
    ("trim_blocks", "{% if true %}\nx\n{% endif %}\ny", {}),
    ("lstrip_blocks", "a\n    {% if true %}\n    b\n    {% endif %}\nc", {}),
    ("lstrip not for output", "a\n    {{ 'b' }}\n    {% if true %}c{% endif %}", {}),
    ("minus trims", "a   {{- 'b' -}}   c  {%- if true -%}  d  {%- endif %}  e", {}),
    ("plus keeps", "a\n  {%+ if true %}b{% endif +%}\nc", {}),
    ("output keeps newline", "{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("trailing newline dropped", "x\n", {}),
    ("two trailing newlines", "x\n\n", {}),
    ("crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("raw", "{% raw %}{{ not parsed }}{% endraw %}|{%- raw -%}  x  {%- endraw -%}|", {}),
    ("line starting after block", "{% if true %}\n  {% if true %}x{% endif %}\n{% endif %}", {}),
    ("comment lstrip", "a\n  {# c #}\nb", {}),
    # statements
    ("if elif else", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %},{% endfor %}", {}),
    ("for loop variables", "{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {"items": ["a", "b", "c"]}),
    ("loop prev next", "{% for x in items %}[{{ loop.previtem }}|{{ x }}|{{ loop.nextitem }}]{% endfor %}", {"items": ["a", "b", "c"]}),
    ("loop cycle", "{% for x in range(5) %}{{ loop.cycle('odd', 'even') }} {% endfor %}", {}),
    ("for else", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("for else with filter", "{% for x in [1, 2] if x > 5 %}x{% else %}none passed{% endfor %}", {}),
    ("break continue", "{% for n in [1, 2, 3, 4] %}{% if n == 2 %}{% continue %}{% endif %}{% if n == 4 %}{% break %}{% endif %}{{ n }}{% endfor %}", {}),
    ("for with condition and loop", "{% for x in [1, 2, 3, 4] if x % 2 == 0 %}{{ loop.index }}:{{ x }}/{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}", {}),
    ("for over items with condition", "{% for k, v in d.items() if k != 'b' %}{{ k }}={{ v }};{% endfor %}", {"d": {"a": 1, "b": 2, "c": 3}}),
    ("for over dict", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("for over string", "{% for c in 'héllo' %}{{ c }}.{% endfor %}", {}),
    ("for tuple target parens", "{% for (a, b) in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}", {}),
    ("nested loops", "{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}/{{ loop.index }} {% endfor %}", {}),
    ("set and scope", "{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}{{ a }}{% endfor %}{{ a }}{% if true %}{% set b = 3 %}{% endif %}{{ b }}", {}),
    ("set in loop resets", "{% set x = 0 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("set tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("block set", "{% set x %}Hello {{ name }}!{% endset %}[{{ x }}]", {"name": "you"}),
    ("block set filter", "{% set x | upper | trim %}  shout  {% endset %}[{{ x }}]", {}),
    ("namespace", "{% set ns = namespace(total=0, seen=false) %}{% for x in [1, 2, 3] %}{% set ns.total = ns.total + x %}{% if x == 2 %}{% set ns.seen = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.seen }}", {}),
    ("namespace added attribute", "{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}{{ ns.missing }}", {}),
    ("namespace from dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}", {}),
    ("namespace list accumulate", "{% set ns = namespace(items=[]) %}{% for x in 'abc' %}{% set ns.items = ns.items + [x | upper] %}{% endfor %}{{ ns.items | join(',') }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }} {{ greet() }}", {}),
    ("macro recursion", "{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}", {}),
    ("macro sees globals", "{% set g = 'G' %}{% macro m() %}{{ g }}{{ x }}{% endmacro %}{{ m() }}", {"x": "X"}),
    ("macro varargs kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", {}),
    ("macro default uses param", "{% macro m(a, b=a * 2) %}{{ a }}-{{ b }}{% endmacro %}{{ m(3) }}", {}),
    ("call block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ x }}{% endcall %}", {"x": 1}),
    ("call block args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each([1, 2]) %}[{{ item }}]{% endcall %}", {}),
    ("filter block", "{% filter upper %}hello {{ 'you' }}{% endfilter %}", {}),
    ("with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("generation tag", "{% generation %}kept{% endgeneration %}", {}),
    # expressions
    ("comparisons", "{{ 1 < 2 }}{{ 2 <= 1 }}{{ 'a' == 'a' }}{{ 'a' != 'a' }}{{ 3 > 2 }}{{ 1 >= 1 }}{{ 1 == 1.0 }}{{ true == 1 }}{{ 'b' > 'a' }}", {}),
    ("chained comparison", "{{ 1 < 2 < 3 }}{{ 1 < 3 < 2 }}", {}),
    ("list comparison", "{{ [1, 2] < [1, 3] }}{{ [1, 2] == [1, 2] }}{{ (1, 2) == [1, 2] }}", {}),
    ("logic returns operands", "{{ true and false }}{{ true or false }}{{ not true }}{{ not (1 == 2) }}{{ 0 or 'x' }}{{ 'a' and 'b' }}{{ '' or none }}", {}),
    ("in", "{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'q' not in d }}{{ 'x' in missing }}", {"d": {"k": 1}}),
    ("tests", "{{ x is defined }}{{ y is defined }}{{ y is not defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ n is not none }}", {"x": 1, "n": None, "s": "s"}),
    ("type tests", "{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is boolean }}{{ true is number }}{{ true is integer }}{{ d is mapping }}{{ l is mapping }}{{ l is sequence }}{{ s is iterable }}{{ d is iterable }}{{ 1 is iterable }}{{ f is callable }}", {"d": {}, "l": [], "s": "x", "f": None}),
    ("value tests", "{{ 2 is even }}{{ 3 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 'a' is eq 'a' }}{{ 1 is equalto 2 }}{{ 3 is gt 2 }}{{ 3 is lt 2 }}{{ 3 is ge 3 }}{{ 2 is le 1 }}{{ 1 is ne 2 }}{{ 2 is in [1, 2] }}", {}),
    ("case tests", "{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aBc' is lower }}{{ none is sameas none }}{{ true is true }}{{ false is false }}{{ 1 is true }}", {}),
    ("filter and test tests", "{{ 'upper' is filter }}{{ 'nope' is filter }}{{ 'defined' is test }}", {}),
    ("conditional expression", "{{ 'yes' if flag else 'no' }}|{{ 'a' if false }}|{{ 1 if x else 2 if y else 3 }}", {"flag": True, "y": True}),
    ("concat operator", "{{ 'n=' ~ 3 ~ none ~ missing ~ [1] }}", {}),
    ("string concat plus", "{{ 'a' + 'b' }}{{ [1] + [2] }}{{ (1,) + (2,) }}", {}),
    ("string repetition", "{{ 'ab' * 3 }}{{ 2 * 'x' }}{{ [0] * 3 }}{{ 'a' * 0 }}{{ 'a' * -1 }}", {}),
    ("unary", "{{ -x }}{{ +x }}{{ -(-2) }}{{ - 1.5 }}", {"x": 3}),
    ("operator precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 * 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }} {{ 1 + 2 ~ 3 }} {{ not 1 == 2 }}", {}),
    ("filter precedence", "{{ -3 | abs }} {{ 'a' ~ 'b' | upper }} {{ 1 + 2 | string }}", {}),
    ("list and dict literals", "{{ [1, 'a', none, true, 1.5] }} {{ {'a': 1, 'b': [1, 2]} }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }} {{ (1, 2) }}", {}),
    ("repr of strings", "{{ [\"it's\", 'q\"', 'both\\'\"', 'nl\\n', 'é'] }}", {}),
    ("nested brackets in output", "{{ {'a': {'b': 1}} }}", {}),
    ("subscripts", "{{ l[0] }}{{ l[-1] }}{{ d['a'] }}{{ d.a }}{{ l[9] }}|{{ d.b }}|{{ s[1] }}{{ s[-1] }}{{ l.0 }}", {"l": [1, 2, 3], "d": {"a": "A"}, "s": "héllo"}),
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[1:3] }} {{ l[-2:] }} {{ l[5:] }} {{ l[3:1:-1] }} {{ s[::-1] }} {{ s[1:3] }} {{ t[1:] }}", {"l": [1, 2, 3, 4], "s": "héllo", "t": [1, 2, 3]}),
    ("tuple slice", "{{ (1, 2, 3)[1:] }}", {}),
    ("attribute vs item", "{{ d.items is defined }}{{ d['items'] }}{{ d.get('x', 5) }}{{ d.get('items') }}{{ d.keys() | list }}{{ d.values() | list }}", {"d": {"items": 1}}),
    ("dict items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d | items | list }}", {"d": {"x": 1, "y": "z"}}),
    ("missing attribute chains", "{{ d.x is defined }}{{ d.x is not defined }}{{ s.foo is defined }}{{ n.x is defined }}", {"d": {"a": 1}, "s": "str", "n": None}),
    ("dict get default none", "[{{ d.get('missing') }}]", {"d": {}}),
    ("global functions", "{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(5, 0, -2) | list }}{{ dict(a=1) }}{{ strftime_now is defined }}{{ raise_exception is defined }}{{ namespace is defined }}", {}),
    # filters
    ("trim filter", "[{{ '  x  ' | trim }}][{{ 'xxhixx' | trim('x') }}][{{ '\u00a0\u3000y\n' | trim }}]", {}),
    ("length filter", "{{ 'héllo' | length }}{{ [1, 2] | length }}{{ {'a': 1} | length }}{{ missing | length }}{{ 'abc' | count }}", {}),
    ("case filters", "{{ 'hello WORLD' | upper }} {{ 'Hello' | lower }} {{ 'hello world' | capitalize }} {{ 'hello world-wide (x)' | title }} {{ 'ÄÖü straße' | upper }}", {}),
    ("replace filter", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '-') }}", {}),
    ("join filter", "{{ [1, 2, 3] | join(', ') }} {{ ['a', 'b'] | join }} {{ users | join(', ', attribute='name') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("default filter", "{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('x') }} {{ missing | d }}", {}),
    ("first last", "{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ 'abc' | first }}{{ 'abc' | last }}{{ [] | first }}", {}),
    ("list filter", "{{ 'abc' | list }} {{ {'a': 1, 'b': 2} | list }} {{ (1, 2) | list }}", {}),
    ("string filter", "{{ 1 | string }} {{ none | string }} {{ [1, 'a'] | string }} {{ 1.5 | string }}", {}),
    ("int float filters", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '3.5' | float }} {{ 'x' | float }} {{ 2 | float }} {{ ' 12 ' | int }} {{ '0x1A' | int(0, 16) }}", {}),
    ("abs round", "{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 7 | round }}", {}),
    ("tojson", "{{ x | tojson }}", {"x": {"b": [1, 2.5, None, True, False], "a": "é\n\"q\"\\ \u2028 \u0001", "c": {}}}),
    ("tojson indent", "{{ x | tojson(indent=2) }}", {"x": {"b": [1, {}], "a": [], "c": {"d": "e"}}}),
    ("tojson options", "{{ x | tojson(ensure_ascii=true) }} {{ x | tojson(sort_keys=true) }} {{ x | tojson(separators=(',', ':')) }}", {"x": {"z": "ü😀", "a": [1, 2]}}),
    ("tojson scalars", "{{ 'str' | tojson }} {{ 1 | tojson }} {{ 1.0 | tojson }} {{ none | tojson }} {{ true | tojson }} {{ [] | tojson }} {{ (1, 2) | tojson }}", {}),
    ("tojson indent string", "{{ x | tojson(indent='\\t') }}", {"x": {"a": [1]}}),
    ("map", "{{ users | map(attribute='name') | list }} {{ ['a', 'b'] | map('upper') | list }} {{ users | map(attribute='age', default=0) | list }}", {"users": [{"name": "x", "age": 3}, {"name": "y"}]}),
    ("select reject", "{{ [1, 2, 3, 4] | select('even') | list }} {{ [1, 2, 3, 4] | reject('even') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ [1, 5, 9] | select('gt', 4) | list }}", {}),
    ("selectattr", "{{ msgs | selectattr('role', 'equalto', 'user') | list | length }} {{ (msgs | selectattr('role', 'equalto', 'user') | list)[-1].content }} {{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}", {"msgs": CONV}),
    ("selectattr truthy", "{% for i in items | selectattr('on') %}{{ i.n }}{% endfor %}", {"items": [{"n": 1, "on": True}, {"n": 2, "on": False}, {"n": 3}]}),
    ("unique sort reverse", "{{ [3, 1, 2, 1] | unique | list }} {{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ ['b', 'A', 'a'] | sort }} {{ ['b', 'A', 'a'] | sort(case_sensitive=true) }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}", {}),
    ("sort by attribute", "{{ users | sort(attribute='age') | map(attribute='name') | join(',') }}", {"users": [{"name": "x", "age": 3}, {"name": "y", "age": 1}, {"name": "z", "age": 2}]}),
    ("dictsort", "{{ d | dictsort }} {{ d | dictsort(by='value') }} {{ d | dictsort(reverse=true) }}", {"d": {"b": 1, "a": 3, "c": 2}}),
    ("min max sum", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3] | sum }} {{ users | sum(attribute='n') }} {{ ['b', 'A'] | max }}", {"users": [{"n": 2}, {"n": 5}]}),
    ("batch", "{{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }}", {}),
    ("indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'x' | indent('> ', first=true) }}", {}),
    ("wordcount center", "{{ 'hello big world' | wordcount }} [{{ 'ab' | center(7) }}] [{{ 'abc' | center(6) }}]", {}),
    ("escape safe", "{{ '<a href=\"x\">&\\'</a>' | escape }} {{ '<b>' | e }} {{ '<b>' | safe }}", {}),
    ("items filter on undefined", "[{{ missing | items | list }}]", {}),
    ("attr filter", "{{ d | attr('a') }}[{{ d | attr('items') is defined }}]", {"d": {"a": 1}}),
    # string methods
    ("strip methods", "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxhixx'.strip('x') }}][{{ '\\n\\nhi\\n'.rstrip('\\n') }}][{{ 'abcba'.strip('ab') }}]", {}),
    ("split methods", "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ ''.split() }} {{ ''.split(',') }}", {}),
    ("startswith endswith", "{{ 'hello'.startswith('he') }}{{ 'hello'.endswith('lo') }}{{ 'hello'.startswith(('x', 'h')) }}{{ 'hi'.endswith('xhi') }}", {}),
    ("case methods", "{{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'aBc'.swapcase() }} {{ \"they're bill's\".title() }}", {}),
    ("find count replace", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ 'héllo'.find('l') }} {{ 'aaa'.replace('a', 'bb') }} {{ 'aaa'.replace('a', 'b', 1) }}", {}),
    ("join format methods", "{{ ', '.join(['a', 'b']) }} {{ '{} and {}'.format('x', 1) }} {{ '{name}!'.format(name='N') }} {{ '{0}{0}'.format('r') }} {{ '{{}}'.format() }}", {}),
    ("predicate methods", "{{ '123'.isdigit() }}{{ '12a'.isdigit() }}{{ 'abc'.isalpha() }}{{ '  '.isspace() }}{{ 'ABC'.isupper() }}{{ 'abc'.islower() }}{{ 'ab1'.isalnum() }}", {}),
    ("misc string methods", "{{ '42'.zfill(5) }} {{ 'a-b-c'.partition('-') }} {{ 'a-b-c'.rpartition('-') }} {{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.txt'.removesuffix('.txt') }}", {}),
    ("method on message", "{% for m in msgs %}{{ m['content'].strip() | length }},{{ m.role.upper() }};{% endfor %}", {"msgs": CONV}),
    ("list methods", "{{ [1, 2, 3].index(2) }} {{ [1, 1, 2].count(1) }}", {}),
    ("bound method value", "{% set f = 'a-b'.split %}{{ f('-') }}", {}),
    # errors (message checked where it is the template's own)
    ("raise_exception", "{{ raise_exception('Custom failure: ' ~ 42) }}", {}),
    ("undefined attribute of undefined", "{{ missing.attr }}", {}),
    ("undefined item of undefined", "{{ missing['x'] }}", {}),
    ("undefined in arithmetic", "{{ missing + 1 }}", {}),
    ("undefined comparison", "{{ missing < 1 }}", {}),
    ("calling undefined", "{{ missing() }}", {}),
    ("type error add", "{{ 'a' + 1 }}", {}),
    ("division by zero", "{{ 1 / 0 }}", {}),
    ("unknown filter", "{{ x | nosuchfilter }}", {}),
    ("unknown test", "{{ x is nosuchtest }}", {}),
    ("unknown tag", "{% nosuchtag %}", {}),
    ("unclosed if", "{% if true %}x", {}),
    ("unclosed for", "{% for x in y %}x", {}),
    ("else without if", "{% else %}{% endif %}{{", {}),
    ("unterminated string", "{{ 'abc }}", {}),
    ("unterminated output", "{{ x ", {}),
    ("unterminated comment", "{# abc", {}),
    ("break outside loop", "{% break %}", {}),
    ("list append is unsafe", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("dunder attribute", "{{ ''.__class__ }}", {}),
    ("dunder chain", "{{ ''.__class__.__mro__ }}", {}),
    ("namespace underscore", "{% set ns = namespace() %}{% set ns._x = 1 %}", {}),
    ("set attribute on dict", "{% set d = {'a': 1} %}{% set d.a = 2 %}{{ d.a }}", {}),
    ("range too big", "{% for i in range(10**9) %}{% endfor %}", {}),
    ("iterate none", "{% for x in none %}{% endfor %}", {}),
    ("unpack mismatch", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("macro too many args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}),
    ("bad slice step", "{{ [1, 2][::0] }}", {}),
    ("string modulo", "{{ '%s' % 'x' }}", {}),
    ("tojson undefined", "{{ missing | tojson }}", {}),
    ("first of empty is undefined", "{{ ([] | first).x }}", {}),
    # found by differential fuzzing against transformers
    ("last of undefined", "{{ missing | last | d('none') }}", {}),
    ("sameas undefined", "{{ a is sameas b }}{{ missing is callable }}", {}),
    ("title after sharp s", "{{ 'straße' | title }} {{ 'straße'.title() }}", {}),
    ("int of control characters", "{{ '0x1A\x1c' | int(0, 16) }} {{ '\x1c12' | int }} {{ ' \t7\n' | int }}", {}),
    ("test with stray argument", "{{ x is defined x }}", {}),
    ("leading zeros", "{{ 0001 }}", {}),
    ("int of undefined", "{{ missing | int }}", {}),
    ("float of undefined", "{{ missing | float }}", {}),
    ("dict in dict", "{{ {} in {'a': 1} }}", {}),
    ("zeros literal", "{{ 000 }} {{ 0 }} {{ 0.5 }}", {}),
]


def snippet_cases():
    cases = []
    for name, template, context in SNIPPETS:
        case = {"name": name, "template": template, "context": context}
        try:
            case["expected"] = _compile_jinja_template(template).render(**context)
        except Exception as e:  # noqa: BLE001
            case["error"] = f"{type(e).__name__}: {e}"
        cases.append(case)
    return cases


def write_smollm2_template(model_path):
    from gguf import GGUFReader

    reader = GGUFReader(model_path)
    field = reader.fields["tokenizer.chat_template"]
    text = bytes(field.parts[field.data[0]]).decode("utf-8")
    (TEMPLATES / "smollm2.jinja").write_text(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data_home = os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share"))
    parser.add_argument("--model", default=os.path.join(data_home, "hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    args = parser.parse_args()
    write_smollm2_template(args.model)
    real = real_template_cases()
    snippets = snippet_cases()
    with open(OUT / "real_templates.json", "w") as f:
        json.dump({"cases": real}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(OUT / "jinja_semantics.json", "w") as f:
        json.dump({"cases": snippets}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum("error" in c for c in real)
    print(f"{len(real)} real-template cases ({n_err} errors), {len(snippets)} snippets", file=sys.stderr)


if __name__ == "__main__":
    main()
