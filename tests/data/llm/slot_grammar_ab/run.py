"""The first port answer of each naive-only task from a local model, compile-only, under the port grammar
kagent sends (`base`) or under `slot_grammar.py` beside this file (`scoped`). From the repository root,
with a llama.cpp server on 127.0.0.1:8765: `python3 tests/data/llm/slot_grammar_ab/run.py ARM OUTDIR [TASK...]`."""
import json, sys, time
from pathlib import Path
import openai

sys.path.insert(0, str(Path(__file__).parent))
from slot_grammar import scoped_slots_grammar  # noqa: E402
from kernel_agent.task import load_task
from kernel_agent.optimize.space import Space
from kernel_agent.llm.context import parent_view
from kernel_agent.llm.porting import port_prompt_context, fills_reader
from kernel_agent.llm.prompts import render
from kernel_agent.llm import grammar as G
from kernel_agent.skeletons import fitting
from kernel_agent.check import check
from kernel_agent.llm.proposer import PORT_MAX_TOKENS, _port_header

arm, out = sys.argv[1], Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
names = sys.argv[3:] or sorted(p.stem for p in Path("tasks/naive").glob("*.yaml"))
client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="x", timeout=900)
for name in names:
    task = load_task(Path(f"tasks/naive/{name}.yaml"))
    space = Space.of_task(task)
    sk = fitting(task)[0]
    ctx = port_prompt_context(task, parent_view(space, space.default("baseline")), sk, [])
    view = ctx["skeleton"]
    asked = [s["name"] for s in view["slots"]]; optional = {s["name"] for s in view["slots"] if s["optional"]}
    if arm == "base":
        gram = G.slots_grammar(asked, optional)
    else:
        gram = scoped_slots_grammar(sk, task, asked, optional)
    msgs = [{"role": "system", "content": render("system_port.j2", arch="sm_90")},
            {"role": "user", "content": render("port.j2", **ctx)}]
    t = time.time()
    r = client.chat.completions.create(model="qwen", messages=msgs, temperature=0.2, max_tokens=PORT_MAX_TOKENS,
                                       seed=0, extra_body={"grammar": gram})
    text = r.choices[0].message.content or ""
    secs = time.time() - t
    read = fills_reader(sk, task, {}, _port_header(sk.name, task.name))
    parsed, port = read(text, r.choices[0].finish_reason == "stop")
    verdict, msg = "unparsed", parsed.feedback
    if port is not None:
        f = out / f"{name}.cu"; f.write_text(port.instance.source)
        o = check(task, f, arch="sm_90")
        verdict, msg = o.status.value, o.message[:300]
    rec = {"task": name, "skeleton": sk.name, "arm": arm, "seconds": round(secs, 1), "verdict": verdict,
           "message": msg, "text": text, "tokens": r.usage.completion_tokens if r.usage else None}
    with open(out / "results.jsonl", "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    print(name, sk.name, verdict, round(secs), msg[:150].replace("\n", " "), flush=True)
