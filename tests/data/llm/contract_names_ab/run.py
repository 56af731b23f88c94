"""First port answers of the local model, each kernel checked on the CPU emulator: `base`, the slot
contracts' examples as the skeleton files write them and any lines in a block; `names`, the examples
kept to the task's names and operation (`kernel_agent/llm/contract_examples.py`), a dim's or an
expression's block one line (`porting.answer_grammar`) and `return EXPR;` there read as EXPR. From the repository root, with a llama.cpp server on 127.0.0.1:8765:
`python3 tests/data/llm/contract_names_ab/run.py ARM OUTDIR SEEDS TASK...` (SEEDS: e.g. 0,1,2)."""
import json, re, sys, time
from pathlib import Path
import openai

import kernel_agent.llm.porting as porting
import kernel_agent.skeletons.instance as instance
from kernel_agent.task import load_task
from kernel_agent.optimize.space import Space
from kernel_agent.llm.context import parent_view
from kernel_agent.llm.prompts import render
from kernel_agent.llm import grammar as G
from kernel_agent.skeletons import fitting
from kernel_agent.check import check
from kernel_agent.llm.proposer import PORT_MAX_TOKENS, _port_header

arm, out, seeds = sys.argv[1], Path(sys.argv[2]), [int(s) for s in sys.argv[3].split(",")]
out.mkdir(parents=True, exist_ok=True)
if arm == "base":  # the contracts as the skeleton files write them, any lines in a block, no `return` dropped
    porting.in_scope_examples = lambda contract, *_: contract
    instance._LONE_RETURN = re.compile(r"(?!)")
    G._content = lambda one_line, optional: "line*"
names = sys.argv[4:] or sorted(p.stem for p in Path("tasks/naive").glob("*.yaml"))
client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="x", timeout=900)
for name in names:
    task = load_task(Path(f"tasks/naive/{name}.yaml"))
    space = Space.of_task(task)
    sk = fitting(task)[0]
    ctx = porting.port_prompt_context(task, parent_view(space, space.default("baseline")), sk, [])
    view = ctx["skeleton"]
    asked = [s["name"] for s in view["slots"]]
    optional = {s["name"] for s in view["slots"] if s["optional"]}
    msgs = [{"role": "system", "content": render("system_port.j2", arch="sm_90")},
            {"role": "user", "content": render("port.j2", **ctx)}]
    grammar = G.slots_grammar(asked, optional) if arm == "base" else porting.answer_grammar(sk, asked, optional)
    for seed in seeds:
        t = time.time()
        r = client.chat.completions.create(model="qwen", messages=msgs, temperature=0.7 if seed else 0.2,
                                           max_tokens=PORT_MAX_TOKENS, seed=seed,
                                           extra_body={"grammar": grammar})
        text = r.choices[0].message.content or ""
        secs = time.time() - t
        read = porting.fills_reader(sk, task, {}, _port_header(sk.name, task.name))
        parsed, port = read(text, r.choices[0].finish_reason == "stop")
        verdict, msg = "unparsed", parsed.feedback
        if port is not None:
            f = out / f"{name}-{arm}-{seed}.cu"
            f.write_text(port.instance.source)
            o = check(task, f, arch="sm_90", emulate=True)
            verdict, msg = o.status.value, o.message[:300]
        rec = {"task": name, "skeleton": sk.name, "arm": arm, "seed": seed, "seconds": round(secs, 1),
               "verdict": verdict, "message": msg, "text": text}
        with open(out / "results.jsonl", "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(name, arm, seed, verdict, round(secs), msg[:150].replace("\n", " "), flush=True)
